/* A token's logits must not depend on how the prompt was cut into batches:
   the server and multi-turn chat reuse a cached prefix and evaluate only
   the rest, and a reply must not change with what happened to be cached.
   For f32 and the quantized types every matmul tile and the attention give
   the same bits whatever the number of rows evaluated together (packed
   kernels: the same per-lane order for 1..4 rows; attention: P x V over a
   multiple of 8 positions), in every registered family. f16 / bf16 are not covered: their prefill GEMM
   sums in another order than decode (documented in mul_mat_avx2.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mllm/mllm.h>
#include "quantize/quantize.h"
#include "synth/synth.h"
#include "testutil.h"

#define N_IDS 300 /* past the first 256-position block of the V cache */

/* The k-quant files come from the tiny256 preset (rows of 256 values);
   MLLM_REPACK=0 at load keeps their plain layouts (the vec_dot path). */
static bool is_kquant(const char *dtype) { return strlen(dtype) >= 4 && !strncmp(dtype + 2, "_k", 2); }

static mllm_model *load_synth(const char *arch, const char *dtype) {
    char name[64], src_name[64];
    snprintf(name, sizeof name, "inv-%s-%s.gguf", arch, dtype);
    char *path = (char *)tu_tmp(name);
    const char *preset = is_kquant(dtype) ? "tiny256" : "tiny";
    /* synth writes f32/f16/bf16/q8_0/q4_0/q4_1; q5_0 and the k-quants come
       from quantizing f32 */
    const bool via_quantize = !strcmp(dtype, "q5_0") || is_kquant(dtype);
    if (access(path, F_OK) != 0) {
        snprintf(src_name, sizeof src_name, "inv-%s-%s-source-f32.gguf", arch, preset);
        char *src = via_quantize ? (char *)tu_tmp(src_name) : NULL;
        if (mllm_synth_write(arch, preset, via_quantize ? "f32" : dtype, "gguf", src ? src : path, NULL, NULL))
            fail_msg("synth %s %s: %s", arch, dtype, mllm_last_error());
        if (via_quantize) { /* written last, so a file at path is always the quantized one */
            mllm_quantize_params qp;
            mllm_quantize_default_params(&qp);
            qp.type = dtype;
            qp.pure = strcmp(dtype, "q4_k_m") != 0; /* q4_k_m: its mix of q4_K, q6_K and q5_0 / q8_0 */
            if (mllm_quantize_file(src, path, &qp, NULL)) fail_msg("quantize %s: %s", dtype, mllm_last_error());
            free(src);
        }
    }
    mllm_model *m = NULL;
    if (mllm_model_load(path, NULL, &m)) fail_msg("load %s: %s", path, mllm_last_error());
    free(path);
    return m;
}

/* Logits of the last of ids[0..N_IDS) when evaluated in the given cuts. */
static void logits_in_cuts(mllm_model *m, const int32_t *ids, const int *cuts, float *out, int n_vocab) {
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, NULL, &s), MLLM_OK);
    int at = 0;
    for (int c = 0; at < N_IDS; c++) {
        const int n = cuts[c] > 0 && at + cuts[c] <= N_IDS ? cuts[c] : N_IDS - at;
        assert_int_equal(mllm_session_eval(s, ids + at, (size_t)n), MLLM_OK);
        at += n;
    }
    memcpy(out, mllm_session_logits(s), (size_t)n_vocab * sizeof(float));
    mllm_session_free(s);
}

static void check_dtype_arch(const char *arch, const char *dtype) {
    mllm_model *m = load_synth(arch, dtype);
    const int n_vocab = mllm_model_n_vocab(m);
    int32_t ids[N_IDS];
    for (int i = 0; i < N_IDS; i++) ids[i] = (int32_t)((i * 37 + 11) % n_vocab);
    /* one batch; prefix + 16+ blocks + rest; odd pieces across the 256
       boundary; one by one */
    static const int cuts[][8] = {{N_IDS}, {13, 20, 240, 0}, {1, 17, 3, 9, 250, 0}, {-1}};
    float *ref = malloc((size_t)n_vocab * sizeof(float)), *got = malloc((size_t)n_vocab * sizeof(float));
    logits_in_cuts(m, ids, cuts[0], ref, n_vocab);
    for (size_t c = 1; c < sizeof cuts / sizeof cuts[0]; c++) {
        if (cuts[c][0] == -1) { /* one token per evaluation */
            static int ones[N_IDS];
            for (int i = 0; i < N_IDS; i++) ones[i] = 1;
            logits_in_cuts(m, ids, ones, got, n_vocab);
        } else {
            logits_in_cuts(m, ids, cuts[c], got, n_vocab);
        }
        int differ = 0;
        for (int v = 0; v < n_vocab; v++) differ += memcmp(&got[v], &ref[v], sizeof(float)) != 0;
        if (differ)
            printf("%s %s cut pattern %zu: %d of %d logits differ from one batch\n", arch, dtype, c, differ, n_vocab);
        assert_int_equal(differ, 0);
    }
    free(ref), free(got);
    mllm_model_free(m);
}

static void check_dtype(const char *dtype) { check_dtype_arch("qwen3", dtype); }

static void test_f32(void **state) { (void)state; check_dtype("f32"); }
static void test_q8_0(void **state) { (void)state; check_dtype("q8_0"); }
static void test_q4_0(void **state) { (void)state; check_dtype("q4_0"); }
static void test_q4_1(void **state) { (void)state; check_dtype("q4_1"); }
static void test_q5_0(void **state) { (void)state; check_dtype("q5_0"); }
/* q8_K32 activations: packed q4_Kx8 / q5_Kx8 / q6_Kx8 tiles (1..4 rows), then the
   plain layouts' vec_dots */
static void test_kquants(void **state) {
    (void)state;
    static const char *const types[] = {"q4_k_s", "q5_k_s", "q6_k", "q4_k_m"};
    for (int plain = 0; plain < 2; plain++) {
        if (plain) setenv("MLLM_REPACK", "0", 1);
        for (size_t i = 0; i < sizeof types / sizeof *types; i++) check_dtype(types[i]);
    }
    unsetenv("MLLM_REPACK");
}
/* Every family: Gemma 3's sliding windows (4 positions in the tiny preset)
   and post norms, SmolLM3's layers without RoPE, Qwen2's biases, Llama's
   interleaved RoPE and llama3 scaling. */
static void test_families(void **state) {
    (void)state;
    check_dtype_arch("gemma3", "q8_0");
    check_dtype_arch("smollm3", "q4_0");
    check_dtype_arch("qwen2", "q8_0");
    check_dtype_arch("llama", "q4_1");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f32), cmocka_unit_test(test_q8_0),
        cmocka_unit_test(test_q4_0), cmocka_unit_test(test_q4_1),
        cmocka_unit_test(test_q5_0), cmocka_unit_test(test_kquants),
        cmocka_unit_test(test_families),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
