/* llama2.c checkpoints: stories260K.bin must give the same config and the
   same weight bytes as ggml-org's stories260K.gguf (the READMEs state they
   are bit-identical); truncated or padded files are rejected. */
#include "testutil.h"
#include "core/dtype.h"
#include "formats/llama2c.h"
#include "formats/model_file.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_matches_gguf(void **state) {
    (void)state;
    const char *bin = tu_shared("models/stories260K/stories260K.bin");
    const char *gg = tu_shared("anchor-data/models/stories260K.gguf");
    if (!bin || !gg) return;
    mllm_model_file *a, *b;
    assert_int_equal(tu_open(bin, &a), MLLM_OK);
    assert_int_equal(tu_open(gg, &b), MLLM_OK);
    assert_int_equal(a->kind, MLLM_FILE_LLAMA2C);
    assert_null(a->gguf);
    const mllm_hparams *c = tu_cfg(a);
    assert_string_equal(c->arch, "llama");
    assert_int_equal(c->n_embd, 64);
    assert_int_equal(c->n_ff, 172);
    assert_int_equal(c->n_layer, 5);
    assert_int_equal(c->n_head, 8);
    assert_int_equal(c->n_head_kv, 4);
    assert_int_equal(c->head_dim, 8);
    assert_int_equal(c->n_vocab, 512);
    assert_int_equal(c->n_ctx_train, 512);
    assert_false(c->rope_neox);
    assert_true(c->tied_embd);
    assert_true(c->rope_theta == 10000.0f);
    assert_true(c->rms_eps == 1e-5f);
    /* Every llama2.c weight equals the GGUF tensor of the same name. */
    assert_int_equal(a->n_weights, 5 * 9 + 2);
    for (size_t i = 0; i < a->n_weights; i++) {
        const mllm_weight *wa = &a->weights[i];
        const mllm_weight *wb = mllm_model_file_find(b, wa->name);
        if (!wb) fail_msg("GGUF lacks %s", wa->name);
        assert_int_equal(wa->dtype, MLLM_DTYPE_F32);
        assert_int_equal(wb->dtype, MLLM_DTYPE_F32);
        assert_memory_equal(wa->ne, wb->ne, sizeof wa->ne);
        assert_int_equal(wa->size, wb->size);
        if (memcmp(wa->data, wb->data, wa->size) != 0) fail_msg("%s differs", wa->name);
    }
    /* The GGUF's separate output.weight is the tied embedding. */
    const mllm_weight *out = mllm_model_file_find(b, "output.weight");
    const mllm_weight *emb = mllm_model_file_find(a, "token_embd.weight");
    assert_non_null(out);
    assert_memory_equal(out->data, emb->data, emb->size);
    mllm_model_file_close(a);
    mllm_model_file_close(b);
    free((void *)bin);
    free((void *)gg);
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void expect_reject(const char *path, const char *needle) {
    mllm_model_file *f = (mllm_model_file *)1;
    assert_int_not_equal(tu_open(path, &f), MLLM_OK);
    assert_null(f);
    if (!strstr(mllm_last_error(), needle)) fail_msg("expected '%s' in: %s", needle, mllm_last_error());
}

static void test_truncated_and_bad(void **state) {
    (void)state;
    const char *bin = tu_shared("models/stories260K/stories260K.bin");
    if (!bin) return;
    size_t len;
    uint8_t *buf = tu_read_file(bin, &len);
    assert_non_null(buf);
    const char *tmp = tu_tmp("l2c.bin");
    static const size_t cuts[] = {0, 3, 27, 28, 29, 1000, 1056536, 1056539};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        write_bytes(tmp, buf, cuts[i] < len ? cuts[i] : len - 1);
        expect_reject(tmp, "l2c.bin");
    }
    /* One extra byte also breaks the exact-size rule. */
    uint8_t *big = malloc(len + 1);
    memcpy(big, buf, len);
    big[len] = 0;
    write_bytes(tmp, big, len + 1);
    expect_reject(tmp, "implies 1056540 bytes");
    free(big);
    /* A negative vocab (untied classifier) needs V*E more floats. */
    int32_t v = -512;
    memcpy(buf + 20, &v, 4);
    write_bytes(tmp, buf, len);
    expect_reject(tmp, "not a llama2.c checkpoint");
    /* Header values out of range. */
    v = 0;
    memcpy(buf + 20, &v, 4);
    write_bytes(tmp, buf, len);
    expect_reject(tmp, "vocab_size");
    int32_t heads = 7;
    memcpy(buf + 20, &(int32_t){512}, 4);
    memcpy(buf + 12, &heads, 4);
    write_bytes(tmp, buf, len);
    expect_reject(tmp, "divide");
    free(buf);
    free((void *)tmp);
    free((void *)bin);
}

static void test_check_arith(void **state) {
    (void)state;
    mllm_llama2c_header h = {64, 172, 5, 8, 4, 512, 512};
    bool shared = false;
    assert_int_equal(mllm_llama2c_check(&h, 1056540, "x", &shared), MLLM_OK);
    assert_true(shared);
    h.vocab_size = -512;
    assert_int_equal(mllm_llama2c_check(&h, 1056540 + 512 * 64 * 4, "x", &shared), MLLM_OK);
    assert_false(shared);
    mllm_llama2c_header huge = {1 << 20, 1 << 20, 1 << 20, 1, 1, 1 << 24, 1 << 20};
    assert_int_not_equal(mllm_llama2c_check(&huge, 12345, "x", &shared), MLLM_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_gguf),
        cmocka_unit_test(test_truncated_and_bad),
        cmocka_unit_test(test_check_arith),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
