/* k-quant quantizers (q4_K, q5_K, q6_K), beyond the byte-for-byte ggml
   comparison of test_quantize_ref.c:
     hand-computed blocks: a constant block and a zero block;
     round trip quantize -> dequantize on gaussian rows, NMSE bounds
       (bits per weight: q4_K 4.5, q5_K 5.5, q6_K 6.56; a uniform quantizer
       loses ~6 dB per bit, measured values are printed):
         q4_K < 6e-3, q5_K < 1.6e-3, q6_K < 4e-4 (measured 4.9e-3, 1.3e-3, 3.1e-4);
     the quantized weights in a dot with q8_K activations vs the f32 dot:
       NMSE over 32 rows below 2x the round-trip bound. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/kquants.h"
#include "core/dtype.h"
#include "testutil.h"

/* x = 472.5 everywhere: min clamps to 0, every sub-block gets scale
   472.5/15 = 31.5 and min 0, so 6-bit scale 63 with d = 31.5/63 = 0.5
   (exact in f16: 0x3800), dmin = 0, and every quant is 472.5/31.5 = 15. */
static void test_q4_k_constant_block(void **state) {
    (void)state;
    float x[256];
    for (int i = 0; i < 256; i++) x[i] = 472.5f;
    mllm_block_q4_k b;
    mllm_quantize_row_q4_k(x, &b, 256);
    assert_int_equal(b.d, 0x3800);
    assert_int_equal(b.dmin, 0);
    /* scales 63 (bits 0-5) with the high bits of sub-blocks 4..7's scale (3)
       in bits 6-7; mins 0; low nibbles of sub-blocks 4..7's scale 0xF. */
    for (int j = 0; j < 4; j++) assert_int_equal(b.scales[j], 0xFF);
    for (int j = 4; j < 8; j++) assert_int_equal(b.scales[j], 0x00);
    for (int j = 8; j < 12; j++) assert_int_equal(b.scales[j], 0x0F);
    for (int i = 0; i < 128; i++) assert_int_equal(b.qs[i], 0xFF);
    float y[256];
    mllm_dequantize_row_q4_k(&b, y, 256);
    for (int i = 0; i < 256; i++) assert_true(y[i] == 472.5f);
}

static void test_zero_blocks(void **state) {
    (void)state;
    float x[256] = {0};
    uint8_t buf[256], zero[256] = {0};
    static const mllm_dtype types[] = {MLLM_DTYPE_Q4_K, MLLM_DTYPE_Q5_K, MLLM_DTYPE_Q6_K};
    for (int k = 0; k < 3; k++) {
        const mllm_dtype_traits *tr = mllm_dtype_get(types[k]);
        const mllm_cpu_type *ktr = mllm_cpu_type_get(types[k]);
        memset(buf, 0xAB, sizeof buf);
        ktr->from_float(x, buf, 256);
        assert_memory_equal(buf, zero, tr->type_size);
    }
}

static void fill_gauss(float *x, size_t n, uint64_t seed) {
    /* Box-Muller over the deterministic uniforms of testutil. */
    float *u = malloc(n * sizeof(float) + sizeof(float));
    tu_fill_random(u, n + 1, seed);
    for (size_t i = 0; i < n; i++) {
        const float a = 0.5f * (u[i] + 1.0f) * 0.999f + 0.0005f, b = u[i + 1];
        x[i] = 0.02f * sqrtf(-2.0f * logf(a)) * cosf(3.14159265f * b);
    }
    free(u);
}

static void check_round_trip(mllm_dtype t, double bound) {
    enum { ROWS = 32, K = 1024 };
    const mllm_dtype_traits *tr = mllm_dtype_get(t);
    const mllm_cpu_type *ktr = mllm_cpu_type_get(t);
    const size_t rs = mllm_dtype_row_size(t, K);
    float *w = malloc(sizeof(float) * ROWS * K), *back = malloc(sizeof(float) * ROWS * K);
    float *act = malloc(sizeof(float) * K), *dq = malloc(sizeof(float) * ROWS), *df = malloc(sizeof(float) * ROWS);
    uint8_t *q = malloc(rs * ROWS);
    mllm_block_q8_k32 *qa = malloc(sizeof(mllm_block_q8_k32) * K / 256);
    fill_gauss(w, (size_t)ROWS * K, 7 + (uint64_t)t);
    tu_fill_random(act, K, 99);
    mllm_cpu_quantize_row(tr->vec_dot_type, act, qa, K);
    for (int r = 0; r < ROWS; r++) {
        ktr->from_float(w + (size_t)r * K, q + r * rs, K);
        ktr->to_float(q + r * rs, back + (size_t)r * K, K);
        ktr->vec_dot(K, &dq[r], q + r * rs, qa);
        double s = 0;
        for (int i = 0; i < K; i++) s += (double)w[(size_t)r * K + i] * act[i];
        df[r] = (float)s;
    }
    const double e = tu_nmse(back, w, (size_t)ROWS * K), ed = tu_nmse(dq, df, ROWS);
    printf("%s: round-trip nmse %.3g (bound %.3g), dot nmse %.3g (bound %.3g)\n", tr->name, e, bound, ed,
           2 * bound);
    assert_true(e < bound);
    assert_true(ed < 2 * bound);
    free(w), free(back), free(act), free(dq), free(df), free(q), free(qa);
}

static void test_round_trips(void **state) {
    (void)state;
    check_round_trip(MLLM_DTYPE_Q4_K, 6e-3);
    check_round_trip(MLLM_DTYPE_Q5_K, 1.6e-3);
    check_round_trip(MLLM_DTYPE_Q6_K, 4e-4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q4_k_constant_block),
        cmocka_unit_test(test_zero_blocks),
        cmocka_unit_test(test_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
