/* Requantizing at load (mllm_load_params.requant, mllm run --draft-quant):
   a model loaded with requant = T computes what the file mllm convert
   --quant T writes computes, bit for bit, both where the CPU packs the
   matrices and where it does not (MLLM_REPACK=0); matrices whose rows are
   already as small as T's keep their bytes; a name that is not a weight
   type is refused with a message naming it. */
#include "testutil.h"
#include "convert/convert.h"
#include "synth/synth.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int32_t k_ids[] = {1, 5, 9, 42, 7, 3, 100, 11, 250, 17};
#define N_IDS (sizeof k_ids / sizeof *k_ids)

static const char *convert(const char *in, const char *quant, bool gguf);

/* The paths tu_tmp made (the caller owns them), freed after the tests. */
static char *g_paths[128];
static int g_n_paths;
static const char *kept(const char *path) {
    if (g_n_paths == 128) fail_msg("more than 128 paths");
    return g_paths[g_n_paths++] = (char *)path;
}
static int free_paths(void **state) {
    (void)state;
    while (g_n_paths > 0) free(g_paths[--g_n_paths]);
    return 0;
}

/* The tiny qwen3 of preset in dtype: synthesized (f32, q8_0, q4_0), or the
   f32 one converted (k-quants, which synth does not write). */
static const char *synth(const char *preset, const char *dtype) {
    if (!strncmp(dtype, "q4_k", 4) || !strncmp(dtype, "q5_k", 4) || !strncmp(dtype, "q6_k", 4))
        return convert(synth(preset, "f32"), dtype, true);
    char name[96];
    snprintf(name, sizeof name, "rq-%s-%s.gguf", preset, dtype);
    const char *path = kept(tu_tmp(name));
    if (mllm_synth_write("qwen3", preset, dtype, "gguf", path, NULL, NULL))
        fail_msg("synth %s %s: %s", preset, dtype, mllm_last_error());
    return path;
}

static const char *convert(const char *in, const char *quant, bool gguf) {
    char name[128];
    snprintf(name, sizeof name, "rq-conv-%s-%s.%s", strrchr(in, '/') + 1, quant, gguf ? "gguf" : "mllm");
    const char *out = kept(tu_tmp(name));
    mllm_convert_params p;
    mllm_convert_default_params(&p);
    p.in = in, p.out = out, p.quant = quant, p.to_gguf = gguf;
    if (mllm_convert(&p) != MLLM_OK) fail_msg("convert %s: %s", in, mllm_last_error());
    return out;
}

/* Last position's logits of path loaded with requant (NULL: none). */
static float *logits(const char *path, const char *requant, int *nv) {
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 2;
    lp.requant = requant;
    return tu_logits_after_lp(path, &lp, k_ids, N_IDS, nv);
}

static void expect_same(const char *a, const char *ra, const char *b, const char *rb) {
    int na, nb;
    float *la = logits(a, ra, &na), *lb = logits(b, rb, &nb);
    assert_int_equal(na, nb);
    char what[512];
    snprintf(what, sizeof what, "%s (requant %s) vs %s (requant %s)", a, ra ? ra : "none", b, rb ? rb : "none");
    tu_assert_same_floats(lb, la, (size_t)na, what);
    free(la);
    free(lb);
}

static void expect_differ(const char *a, const char *ra, const char *b) {
    int na, nb;
    float *la = logits(a, ra, &na), *lb = logits(b, NULL, &nb);
    assert_int_equal(na, nb);
    assert_true(memcmp(la, lb, (size_t)na * sizeof *la) != 0);
    free(la);
    free(lb);
}

/* f32 and q8_0 sources to q4_0 / q4_1 / q8_0, and q6_K rows of 256 values
   to q4_0: the same logits as the converted file, packed (.mllm) or not
   (GGUF, repacked at load). */
static void test_same_as_convert(void **state) {
    (void)state;
    static const struct { const char *preset, *src, *to; } cases[] = {
        {"tiny", "f32", "q4_0"},     {"tiny", "f32", "q4_1"},     {"tiny", "f32", "q8_0"},
        {"tiny", "q8_0", "q4_0"},    {"tiny256", "q6_k", "q4_0"}, {"tiny256", "f32", "q4_k"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *src = synth(cases[i].preset, cases[i].src);
        expect_same(src, cases[i].to, convert(src, cases[i].to, false), NULL);
        expect_same(src, cases[i].to, convert(src, cases[i].to, true), NULL);
        expect_differ(src, cases[i].to, src); /* it did change the weights */
    }
}

/* Without packed kernels (MLLM_REPACK=0) the matrices are requantized to
   the plain type: the converted GGUF loaded the same way. */
static void test_unpacked(void **state) {
    (void)state;
    const char *src = synth("tiny", "f32"), *conv = convert(src, "q4_0", true);
    setenv("MLLM_REPACK", "0", 1);
    expect_same(src, "q4_0", conv, NULL);
    unsetenv("MLLM_REPACK");
}

/* Rows already as small as the type's are kept: q8_0 asked of synth's
   q4_0 model (q4_0 matrices, a q8_0 embedding), q4_0 of q4_K rows (144
   bytes both); q4_0 of that q4_0 model changes its embedding only, as
   convert does. */
static void test_smaller_kept(void **state) {
    (void)state;
    const char *q4 = synth("tiny", "q4_0"), *k4 = synth("tiny256", "q4_k");
    expect_same(q4, "q8_0", q4, NULL);
    expect_same(k4, "q4_0", k4, NULL);
    expect_same(q4, "q4_0", convert(q4, "q4_0", true), NULL);
    expect_differ(q4, "q4_0", q4);
}

static void test_bad_name(void **state) {
    (void)state;
    const char *src = synth("tiny", "f32");
    static const char *bad[] = {"q3_k", "f16", "q8_k", "q4_0x8", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mllm_load_params lp;
        mllm_load_default_params(&lp);
        lp.requant = bad[i];
        mllm_model *m = NULL;
        assert_int_equal(mllm_model_load(src, &lp, &m), MLLM_ERR_INVALID_ARG);
        assert_null(m);
        char want[64];
        snprintf(want, sizeof want, "requant '%s': expected q4_0", bad[i]);
        assert_non_null(strstr(mllm_last_error(), want));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_as_convert),
        cmocka_unit_test(test_unpacked),
        cmocka_unit_test(test_smaller_kept),
        cmocka_unit_test(test_bad_name),
    };
    return cmocka_run_group_tests(tests, NULL, free_paths);
}
