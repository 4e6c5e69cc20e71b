/* GGUF reader: real files from ../shared (values known from their READMEs and
   from the llama2.c checkpoint of the same weights), write->read round trips
   through the writer, truncation at every header byte, and corruptions. */
#include "testutil.h"
#include "core/dtype.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool str_eq(mllm_gguf_str s, const char *c) { return s.len == strlen(c) && memcmp(s.ptr, c, s.len) == 0; }

static void test_stories260k(void **state) {
    (void)state;
    const char *path = tu_shared("anchor-data/models/stories260K.gguf");
    const char *bin = tu_shared("models/stories260K/stories260K.bin");
    if (!path || !bin) return;
    mllm_gguf *g = NULL;
    assert_int_equal(mllm_gguf_open(path, &g), MLLM_OK);
    assert_int_equal(mllm_gguf_version(g), 3);
    assert_int_equal(mllm_gguf_n_tensors(g), 48); /* 5 layers * 9 + 3 */
    mllm_gguf_str s;
    assert_true(mllm_gguf_get_str(g, "general.architecture", &s));
    assert_true(str_eq(s, "llama"));
    uint32_t u;
    assert_true(mllm_gguf_get_u32(g, "llama.embedding_length", &u));
    assert_int_equal(u, 64);
    assert_true(mllm_gguf_get_u32(g, "llama.block_count", &u));
    assert_int_equal(u, 5);
    assert_true(mllm_gguf_get_u32(g, "llama.feed_forward_length", &u));
    assert_int_equal(u, 172);
    assert_true(mllm_gguf_get_u32(g, "llama.context_length", &u));
    assert_int_equal(u, 2048);
    int64_t i64;
    assert_true(mllm_gguf_get_i64(g, "llama.attention.head_count_kv", &i64));
    assert_int_equal(i64, 4);
    float f;
    assert_true(mllm_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &f));
    assert_true(f > 0 && f < 1e-3f);
    /* Wrong-typed requests fail. */
    assert_false(mllm_gguf_get_str(g, "llama.block_count", &s));
    assert_false(mllm_gguf_get_u32(g, "general.architecture", &u));
    assert_false(mllm_gguf_get_u32(g, "no.such.key", &u));
    assert_int_equal(mllm_gguf_find_key(g, "no.such.key"), -1);
    mllm_gguf_type et;
    uint64_t n;
    const void *data;
    assert_true(mllm_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, &data));
    assert_int_equal(et, MLLM_GGUF_STRING);
    assert_int_equal(n, 512);
    assert_true(mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 1, &s));
    assert_true(str_eq(s, "<s>"));
    assert_true(mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 2, &s));
    assert_true(str_eq(s, "</s>"));
    assert_false(mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 512, &s));
    double d;
    assert_true(mllm_gguf_arr_f64(g, "tokenizer.ggml.scores", 0, &d));
    assert_true(mllm_gguf_arr_i64(g, "tokenizer.ggml.token_type", 1, &i64));
    assert_int_equal(i64, 3); /* <s> is CONTROL */
    assert_false(mllm_gguf_arr_f64(g, "tokenizer.ggml.tokens", 0, &d));

    /* The embedding bytes equal the llama2.c checkpoint's (after its 28-byte header). */
    const mllm_gguf_tensor *t = mllm_gguf_find_tensor(g, "token_embd.weight");
    assert_non_null(t);
    assert_int_equal(t->dtype, MLLM_DTYPE_F32);
    assert_int_equal(t->n_dims, 2);
    assert_int_equal(t->ne[0], 64);
    assert_int_equal(t->ne[1], 512);
    assert_int_equal(t->ne[2], 1);
    assert_int_equal(t->size, 64 * 512 * 4);
    size_t blen;
    uint8_t *b = tu_read_file(bin, &blen);
    assert_non_null(b);
    assert_true(blen > 28 + t->size);
    assert_memory_equal(t->data, b + 28, t->size);
    free(b);
    assert_null(mllm_gguf_find_tensor(g, "blk.5.attn_q.weight"));
    assert_non_null(mllm_gguf_find_tensor(g, "blk.4.ffn_down.weight"));
    mllm_gguf_close(g);
    free((void *)path); /* tu_shared's strings are malloc'd */
    free((void *)bin);
}

static void test_qwen3_tiny(void **state) {
    (void)state;
    const char *path = tu_shared("anchor-data/models/qwen3-tiny-random-Q8_0.gguf");
    if (!path) return;
    mllm_gguf *g = NULL;
    assert_int_equal(mllm_gguf_open(path, &g), MLLM_OK);
    assert_int_equal(mllm_gguf_n_tensors(g), 24); /* 2 layers * 11 + 2 */
    mllm_gguf_str s;
    assert_true(mllm_gguf_get_str(g, "general.architecture", &s));
    assert_true(str_eq(s, "qwen3"));
    assert_true(mllm_gguf_get_str(g, "tokenizer.ggml.pre", &s));
    assert_true(str_eq(s, "qwen2"));
    uint32_t u;
    assert_true(mllm_gguf_get_u32(g, "qwen3.context_length", &u));
    assert_int_equal(u, 40960);
    assert_true(mllm_gguf_get_u32(g, "qwen3.attention.head_count", &u));
    assert_int_equal(u, 4);
    assert_true(mllm_gguf_get_u32(g, "qwen3.attention.key_length", &u));
    assert_int_equal(u, 16);
    assert_true(mllm_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &u));
    assert_int_equal(u, 151643);
    assert_true(mllm_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &u));
    assert_int_equal(u, 151645);
    float f;
    assert_true(mllm_gguf_get_f32(g, "qwen3.rope.freq_base", &f));
    assert_true(f == 1e6f);
    bool bo = true;
    assert_true(mllm_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &bo));
    assert_false(bo);
    uint64_t n;
    mllm_gguf_type et;
    assert_true(mllm_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, NULL));
    assert_int_equal(n, 151936);
    assert_true(mllm_gguf_get_arr(g, "tokenizer.ggml.merges", &et, &n, NULL));
    assert_int_equal(n, 151387);
    /* "The quick brown fox" = 785, 3974, ... in the Qwen vocab. */
    assert_true(mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 785, &s));
    assert_true(str_eq(s, "The"));
    assert_true(mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 3974, &s));
    assert_true(str_eq(s, "\xc4\xa0quick"));
    assert_true(mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 151935, &s));
    assert_true(str_eq(s, "[PAD151935]"));
    const mllm_gguf_tensor *t = mllm_gguf_find_tensor(g, "token_embd.weight");
    assert_non_null(t);
    assert_int_equal(t->dtype, MLLM_DTYPE_Q8_0);
    assert_int_equal(t->ne[1], 151936);
    assert_int_equal(t->size, (size_t)151936 * 2 * 34);
    assert_null(mllm_gguf_find_tensor(g, "output.weight"));
    t = mllm_gguf_find_tensor(g, "blk.1.attn_k_norm.weight");
    assert_non_null(t);
    assert_int_equal(t->ne[0], 16);
    mllm_gguf_close(g);
    free((void *)path);
}

static void test_fixture_and_vocabs(void **state) {
    (void)state;
    const char *path = tu_shared("models/gguf-fixtures/llama-2-tiny-random.gguf");
    if (!path) return;
    mllm_gguf *g = NULL;
    assert_int_equal(mllm_gguf_open(path, &g), MLLM_OK);
    assert_int_equal(mllm_gguf_n_tensors(g), 12);
    uint32_t u;
    assert_true(mllm_gguf_get_u32(g, "llama.embedding_length", &u));
    assert_int_equal(u, 8);
    mllm_gguf_str s;
    assert_true(mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 29871, &s));
    assert_true(str_eq(s, "\xe2\x96\x81")); /* SentencePiece's space piece */
    for (uint64_t i = 0; i < mllm_gguf_n_tensors(g); i++) {
        assert_int_equal(mllm_gguf_tensor_at(g, i)->data != NULL, 1);
    }
    assert_null(mllm_gguf_tensor_at(g, 12));
    mllm_gguf_close(g);
    free((void *)path);
    static const char *vocabs[] = {"bert-bge", "deepseek-coder", "deepseek-llm", "falcon", "gpt-2",
                                   "llama-spm", "mpt", "phi-3", "refact", "starcoder"};
    for (size_t i = 0; i < sizeof vocabs / sizeof *vocabs; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "models/llama-cpp-vocab/ggml-vocab-%s.gguf", vocabs[i]);
        const char *p = tu_shared(rel);
        if (!p) continue;
        assert_int_equal(mllm_gguf_open(p, &g), MLLM_OK);
        assert_int_equal(mllm_gguf_n_tensors(g), 0);
        assert_true(mllm_gguf_get_str(g, "tokenizer.ggml.model", &s));
        mllm_gguf_close(g);
        free((void *)p);
    }
}

static void test_open_errors(void **state) {
    (void)state;
    mllm_gguf *g = (mllm_gguf *)1;
    assert_int_equal(mllm_gguf_open("/nonexistent/x.gguf", &g), MLLM_ERR_IO);
    assert_null(g);
    assert_non_null(strstr(mllm_last_error(), "/nonexistent/x.gguf"));
    assert_int_not_equal(mllm_gguf_open("/tmp", &g), MLLM_OK);
    mllm_gguf_close(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stories260k),
        cmocka_unit_test(test_qwen3_tiny),
        cmocka_unit_test(test_fixture_and_vocabs),
        cmocka_unit_test(test_open_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
