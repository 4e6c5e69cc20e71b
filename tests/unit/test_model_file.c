/* mllm_model_file_open on GGUF files: config values from real files (known
   from their READMEs), shape checks naming the bad tensor, and rejection of
   unsupported architectures. */
#include "testutil.h"
#include "core/dtype.h"
#include "formats/gguf_writer.h"
#include "formats/model_file.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mllm_model_file *open_shared(const char *rel) {
    const char *p = tu_shared(rel);
    if (!p) return NULL;
    mllm_model_file *f = NULL;
    mllm_status st = tu_open(p, &f);
    if (st) fail_msg("%s: %s", rel, mllm_last_error());
    free((void *)p);
    return f;
}

static void test_stories260k_gguf(void **state) {
    (void)state;
    static const char *files[] = {"anchor-data/models/stories260K.gguf", "anchor-data/models/stories260K-F16.gguf",
                                  "anchor-data/models/stories260K-Q8_0-ffn_down-F16.gguf"};
    static const int embd_dtype[] = {MLLM_DTYPE_F32, MLLM_DTYPE_F16, MLLM_DTYPE_Q8_0};
    for (int i = 0; i < 3; i++) {
        mllm_model_file *f = open_shared(files[i]);
        if (!f) return;
        const mllm_hparams *c = tu_cfg(f);
        assert_int_equal(f->kind, MLLM_FILE_GGUF);
        assert_non_null(f->gguf);
        assert_string_equal(c->arch, "llama");
        assert_int_equal(c->n_embd, 64);
        assert_int_equal(c->n_layer, 5);
        assert_int_equal(c->n_head, 8);
        assert_int_equal(c->n_head_kv, 4);
        assert_int_equal(c->head_dim, 8);
        assert_int_equal(c->n_rot, 8);
        assert_int_equal(c->n_ff, 172);
        assert_int_equal(c->n_vocab, 512);
        assert_int_equal(c->n_ctx_train, 2048);
        assert_true(c->rope_theta == 10000.0f);
        assert_true(fabsf(c->rms_eps - 1e-5f) < 1e-9f);
        assert_false(c->rope_neox);
        assert_false(c->qkv_bias);
        assert_false(c->qk_norm);
        assert_false(c->tied_embd); /* ggml-org's file carries output.weight */
        assert_int_equal(c->rope_scaling, MLLM_ROPE_SCALING_NONE);
        assert_int_equal(f->n_weights, 48);
        const mllm_weight *w = mllm_model_file_find(f, "blk.4.ffn_down.weight");
        assert_non_null(w);
        assert_int_equal(w->ne[0], 172);
        assert_int_equal(w->ne[1], 64);
        w = mllm_model_file_find(f, "token_embd.weight");
        assert_int_equal(w->dtype, embd_dtype[i]);
        assert_null(mllm_model_file_find(f, "nope"));
        mllm_model_file_close(f);
    }
}

static void test_qwen3_tiny_gguf(void **state) {
    (void)state;
    static const char *files[] = {"anchor-data/models/qwen3-tiny-random-Q8_0.gguf",
                                  "anchor-data/models/qwen3-tiny-random-Q4_0.gguf"};
    for (int i = 0; i < 2; i++) {
        mllm_model_file *f = open_shared(files[i]);
        if (!f) return;
        const mllm_hparams *c = tu_cfg(f);
        assert_string_equal(c->arch, "qwen3");
        assert_int_equal(c->n_embd, 64);
        assert_int_equal(c->n_layer, 2);
        assert_int_equal(c->n_head, 4);
        assert_int_equal(c->n_head_kv, 2);
        assert_int_equal(c->head_dim, 16);
        assert_int_equal(c->n_rot, 16);
        assert_int_equal(c->n_ff, 128);
        assert_int_equal(c->n_vocab, 151936);
        assert_int_equal(c->n_ctx_train, 40960);
        assert_true(c->rope_theta == 1e6f);
        assert_true(fabsf(c->rms_eps - 1e-6f) < 1e-10f);
        assert_true(c->rope_neox);
        assert_true(c->qk_norm);
        assert_false(c->qkv_bias);
        assert_true(c->tied_embd);
        assert_int_equal(f->n_weights, 24);
        mllm_model_file_close(f);
    }
}

static void test_llama2_fixture(void **state) {
    (void)state;
    mllm_model_file *f = open_shared("models/gguf-fixtures/llama-2-tiny-random.gguf");
    if (!f) return;
    assert_int_equal(tu_cfg(f)->n_embd, 8);
    assert_int_equal(tu_cfg(f)->n_layer, 1);
    assert_int_equal(tu_cfg(f)->n_head, 2);
    assert_int_equal(tu_cfg(f)->n_ff, 32);
    assert_int_equal(tu_cfg(f)->n_vocab, 32000);
    assert_int_equal(tu_cfg(f)->n_ctx_train, 4096);
    mllm_model_file_close(f);
}

/* A minimal llama GGUF with E=4, one layer, V=8; `skip` omits one tensor,
   `bad` gives it a wrong shape, `arch` overrides the architecture. */
static const char *write_tiny(const char *arch, const char *skip, const char *bad) {
    static float zeros[4 * 8];
    mllm_gguf_writer *w;
    assert_int_equal(mllm_gguf_writer_new(&w), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_str(w, "general.architecture", arch), MLLM_OK);
    char key[64];
    snprintf(key, sizeof key, "%s.block_count", arch);
    mllm_gguf_writer_add_u32(w, key, 1);
    snprintf(key, sizeof key, "%s.embedding_length", arch);
    mllm_gguf_writer_add_u32(w, key, 4);
    snprintf(key, sizeof key, "%s.feed_forward_length", arch);
    mllm_gguf_writer_add_u32(w, key, 8);
    snprintf(key, sizeof key, "%s.attention.head_count", arch);
    mllm_gguf_writer_add_u32(w, key, 2);
    snprintf(key, sizeof key, "%s.vocab_size", arch);
    mllm_gguf_writer_add_u32(w, key, 8);
    static const struct { const char *name; int64_t ne0, ne1; } t[] = {
        {"token_embd.weight", 4, 8}, {"blk.0.attn_norm.weight", 4, 0}, {"blk.0.attn_q.weight", 4, 4},
        {"blk.0.attn_k.weight", 4, 4}, {"blk.0.attn_v.weight", 4, 4}, {"blk.0.attn_output.weight", 4, 4},
        {"blk.0.ffn_norm.weight", 4, 0}, {"blk.0.ffn_gate.weight", 4, 8}, {"blk.0.ffn_up.weight", 4, 8},
        {"blk.0.ffn_down.weight", 8, 4}, {"output_norm.weight", 4, 0}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        if (skip && !strcmp(skip, t[i].name)) continue;
        int64_t ne[2] = {t[i].ne0, t[i].ne1};
        if (bad && !strcmp(bad, t[i].name)) ne[0] = 2;
        assert_int_equal(mllm_gguf_writer_add_tensor(w, t[i].name, MLLM_DTYPE_F32, t[i].ne1 ? 2 : 1, ne, zeros), MLLM_OK);
    }
    const char *path = tu_tmp("tiny.gguf");
    assert_int_equal(mllm_gguf_writer_write(w, path), MLLM_OK);
    mllm_gguf_writer_free(w);
    return path;
}

static void expect_open_error(const char *path, mllm_status want, const char *needle) {
    mllm_model_file *f = (mllm_model_file *)1;
    mllm_status st = tu_open(path, &f);
    if (st != want) fail_msg("status %d, want %d: %s", st, want, mllm_last_error());
    assert_null(f);
    if (!strstr(mllm_last_error(), needle)) fail_msg("expected '%s' in: %s", needle, mllm_last_error());
}

static void test_written_tiny(void **state) {
    (void)state;
    const char *p = write_tiny("llama", NULL, NULL);
    mllm_model_file *f;
    assert_int_equal(tu_open(p, &f), MLLM_OK);
    assert_int_equal(tu_cfg(f)->n_vocab, 8); /* from llama.vocab_size: no tokenizer */
    assert_int_equal(tu_cfg(f)->head_dim, 2);
    assert_int_equal(tu_cfg(f)->n_head_kv, 2);
    assert_true(tu_cfg(f)->tied_embd);
    assert_int_equal(tu_cfg(f)->n_ctx_train, 2048);
    mllm_model_file_close(f);
    free((void *)p);
    p = write_tiny("llama", "blk.0.ffn_up.weight", NULL);
    expect_open_error(p, MLLM_ERR_FORMAT, "missing tensor 'blk.0.ffn_up.weight'");
    free((void *)p);
    p = write_tiny("llama", NULL, "blk.0.attn_k.weight");
    expect_open_error(p, MLLM_ERR_FORMAT, "'blk.0.attn_k.weight' has shape {2, 4");
    free((void *)p);
    p = write_tiny("gpt2", NULL, NULL);
    expect_open_error(p, MLLM_ERR_UNSUPPORTED, "'gpt2'");
    free((void *)p);
    p = write_tiny("qwen2", NULL, NULL);
    assert_int_equal(tu_open(p, &f), MLLM_OK);
    assert_true(tu_cfg(f)->rope_neox);
    mllm_model_file_close(f);
    free((void *)p);
    expect_open_error("/nonexistent/model.gguf", MLLM_ERR_IO, "/nonexistent/model.gguf");
    mllm_model_file_close(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stories260k_gguf),
        cmocka_unit_test(test_qwen3_tiny_gguf),
        cmocka_unit_test(test_llama2_fixture),
        cmocka_unit_test(test_written_tiny),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
