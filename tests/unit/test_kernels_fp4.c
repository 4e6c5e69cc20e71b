/* mxfp4 and w4a32 kernels (the quantizer bytes of mxfp4 are compared with
   ggml's in test_quantize_ref.c). Checks:
     mxfp4 known block: e8m0 scale and the e2m1 codes by hand;
     mxfp4 dequantization == an independent decoder written here from the
       OCP e2m1 definition (sign, 2-bit exponent, 1-bit mantissa), exact;
     w4a32 known group and dequantization formula, exact;
     round trip on uniform [-1, 1) rows (odd row counts, K = 96 / 320 / 1088
       for g32; 128 / 320 / 1088 for g64 where legal): NMSE bounds
       mxfp4 < 2.5e-2, w4a32 g32 < 8e-3, g64 < 1e-2 (4-bit: ~1/(12*2^8) for a
       uniform grid; e2m1's grid is coarser at the top);
     vec_dot generic vs double on the dequantized values < 1e-10 (exact int
       sums for mxfp4 x q8_0; f32 sums for w4a32: < 1e-9), AVX2 vs generic
       < 1e-10; mul_mat (M = 1, 2, 5; 7 rows) vs the generic loop < 1e-10. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu.h"
#include "backends/cpu/fp4.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "core/dtype.h"
#include "testutil.h"

/* e2m1 per the OCP MX spec: s | e(2) | m(1); e = 0: 0.5*m; else 2^(e-1)*(1 + m/2). */
static float e2m1(int code) {
    const int s = code >> 3, e = (code >> 1) & 3, m = code & 1;
    const float v = e == 0 ? 0.5f * (float)m : ldexpf(1.0f + 0.5f * (float)m, e - 1);
    return s ? -v : v;
}

static void test_mxfp4_known_block(void **state) {
    (void)state;
    /* amax = 6 -> floor(log2 6) = 2 -> e = 127 (scale 1; half-scale 0.5 on
       the doubled table). 6 -> code 7 (12*0.5), -6 -> 15, 1.5 -> 3, 0.75 ->
       0.5 or 1.0 (tie: first, 1 = 0.5), 2.5 -> 2 or 3 (tie, first: 4 = 2.0). */
    float x[32] = {0};
    x[0] = 6.0f, x[1] = -6.0f, x[2] = 1.5f, x[3] = 0.75f, x[16] = 2.5f, x[17] = -0.25f;
    mllm_block_mxfp4 b;
    mllm_quantize_row_mxfp4(x, &b, 32);
    assert_int_equal(b.e, 127);
    assert_int_equal(b.qs[0] & 15, 7);
    assert_int_equal(b.qs[1] & 15, 15);
    assert_int_equal(b.qs[2] & 15, 3);
    assert_int_equal(b.qs[3] & 15, 1);
    assert_int_equal(b.qs[0] >> 4, 4);
    assert_int_equal(b.qs[1] >> 4, 0); /* -0.25: |0 - -0.25| = |-0.5 - -0.25|, first (0) wins */
    float y[32];
    mllm_dequantize_row_mxfp4(&b, y, 32);
    assert_true(y[0] == 6.0f && y[1] == -6.0f && y[2] == 1.5f && y[3] == 0.5f && y[16] == 2.0f);
}

static void test_mxfp4_decoder(void **state) {
    (void)state;
    mllm_block_mxfp4 b[4];
    for (int i = 0; i < 4; i++) {
        b[i].e = (uint8_t)(120 + 3 * i + (i == 3 ? -119 : 0)); /* i = 3: e = 10, tiny */
        for (int j = 0; j < 16; j++) b[i].qs[j] = (uint8_t)(j * 17 + i * 5);
    }
    float y[128];
    mllm_dequantize_row_mxfp4(b, y, 128);
    for (int i = 0; i < 4; i++) {
        const float scale = ldexpf(1.0f, b[i].e - 127);
        for (int j = 0; j < 16; j++) {
            assert_true(y[32 * i + j] == e2m1(b[i].qs[j] & 15) * scale);
            assert_true(y[32 * i + j + 16] == e2m1(b[i].qs[j] >> 4) * scale);
        }
    }
}

static void test_w4a32_known_group(void **state) {
    (void)state;
    /* x = (j - 16) * 0.5: whichever scale the search keeps, every value
       must decode as d * (q - 8) with the stored d and nibbles (exact), and
       the group must be close to x. */
    float x[32];
    for (int j = 0; j < 32; j++) x[j] = (float)(j - 16) * 0.5f;
    mllm_block_w4a32_g32 b;
    mllm_quantize_row_w4a32_g32(x, &b, 32);
    float y[32];
    mllm_dequantize_row_w4a32_g32(&b, y, 32);
    const float d = mllm_f16_to_f32(b.d);
    for (int j = 0; j < 16; j++) {
        assert_true(y[j] == d * (float)((b.qs[j] & 15) - 8));
        assert_true(y[j + 16] == d * (float)((b.qs[j] >> 4) - 8));
    }
    assert_true(tu_nmse(y, x, 32) < 0.01);
    /* all-zero group: d = 0, every value decodes to 0 */
    float z[64] = {0}, zy[64];
    mllm_block_w4a32_g64 bz;
    mllm_quantize_row_w4a32_g64(z, &bz, 64);
    mllm_dequantize_row_w4a32_g64(&bz, zy, 64);
    assert_int_equal(bz.d, 0);
    for (int j = 0; j < 64; j++) assert_true(zy[j] == 0.0f);
}

static double dot_double(const float *a, const float *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

static void check_type(mllm_dtype t, double rt_bound, double dot_bound) {
    static const int lens[] = {96, 320, 1088};
    enum { TRIALS = 12 };
    const mllm_dtype_traits *tr = mllm_dtype_get(t);
    const mllm_cpu_type *ktr = mllm_cpu_type_get(t);
    const mllm_cpu_type *kta = mllm_cpu_type_get(tr->vec_dot_type);
    for (int li = 0; li < 3; li++) {
        const int n = lens[li] / tr->block_size * tr->block_size;
        float *w = malloc(sizeof(float) * n), *wb = malloc(sizeof(float) * n), *a = malloc(sizeof(float) * n),
              *ab = malloc(sizeof(float) * n);
        void *qw = malloc(mllm_dtype_row_size(t, n)), *qa = malloc(mllm_dtype_row_size(tr->vec_dot_type, n));
        float gen[TRIALS], simd[TRIALS], ref[TRIALS];
        double rt = 0;
        for (int k = 0; k < TRIALS; k++) {
            tu_fill_random(w, (size_t)n, 500 + (uint64_t)(k + 13 * li));
            tu_fill_random(a, (size_t)n, 900 + (uint64_t)(k + 13 * li));
            ktr->from_float(w, qw, n);
            ktr->to_float(qw, wb, n);
            rt += tu_nmse(wb, w, (size_t)n) / TRIALS;
            mllm_cpu_quantize_row(tr->vec_dot_type, a, qa, n);
            kta->to_float(qa, ab, n);
            ref[k] = (float)dot_double(wb, ab, n);
            mllm_cpu_vec_dot_for(t, "generic")(n, &gen[k], qw, qa);
            simd[k] = gen[k];
            if (mllm_cpu_has_avx2()) mllm_cpu_vec_dot_for(t, "avx2")(n, &simd[k], qw, qa);
        }
        const double e_ref = tu_nmse(gen, ref, TRIALS), e_simd = tu_nmse(simd, gen, TRIALS);
        printf("%s n=%d: round trip %.3g (bound %.3g), generic vs double %.3g, avx2 vs generic %.3g\n", tr->name,
               n, rt, rt_bound, e_ref, e_simd);
        assert_true(rt < rt_bound);
        assert_true(e_ref < dot_bound);
        assert_true(e_simd < dot_bound);
        free(w), free(wb), free(a), free(ab), free(qw), free(qa);
    }
}

static void test_round_trip_and_dots(void **state) {
    (void)state;
    if (!mllm_cpu_has_avx2()) printf("SKIPPED (AVX2 part): this CPU has no AVX2+FMA+F16C\n");
    check_type(MLLM_DTYPE_MXFP4, 2.5e-2, 1e-10);
    check_type(MLLM_DTYPE_W4A32_G32, 8e-3, 1e-9);
    check_type(MLLM_DTYPE_W4A32_G64, 1e-2, 1e-9);
}

static void check_mul_mat(mllm_dtype t, int rows, int K, int M) {
    const mllm_dtype_traits *tr = mllm_dtype_get(t);
    const mllm_cpu_type *ktr = mllm_cpu_type_get(t);
    const size_t ws = mllm_dtype_row_size(t, K), xs = mllm_dtype_row_size(tr->vec_dot_type, K);
    char *W = malloc(ws * rows), *X = malloc(xs * M);
    float *f = malloc(sizeof(float) * K), *Y = malloc(sizeof(float) * M * rows), *R = malloc(sizeof(float) * M * rows);
    for (int r = 0; r < rows; r++) {
        tu_fill_random(f, (size_t)K, 40 + (uint64_t)r);
        ktr->from_float(f, W + r * ws, K);
    }
    for (int m = 0; m < M; m++) {
        tu_fill_random(f, (size_t)K, 80 + (uint64_t)m);
        mllm_cpu_quantize_row(tr->vec_dot_type, f, X + m * xs, K);
    }
    mllm_cpu_mul_mat(t, W, ws, K, X, xs, M, Y, (size_t)rows, 0, rows);
    mllm_mul_mat_generic(mllm_cpu_vec_dot_for(t, "generic"), W, ws, K, X, xs, M, R, (size_t)rows, 0, rows);
    const double e = tu_nmse(Y, R, (size_t)M * rows);
    printf("mul_mat %s rows=%d K=%d M=%d: nmse vs generic %.3g\n", tr->name, rows, K, M, e);
    assert_true(e < 1e-10);
    free(W), free(X), free(f), free(Y), free(R);
}

static void test_mul_mat(void **state) {
    (void)state;
    static const int Ms[] = {1, 2, 5};
    for (int i = 0; i < 3; i++) {
        check_mul_mat(MLLM_DTYPE_MXFP4, 7, 320, Ms[i]);
        check_mul_mat(MLLM_DTYPE_W4A32_G32, 7, 352, Ms[i]);
        check_mul_mat(MLLM_DTYPE_W4A32_G64, 7, 384, Ms[i]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mxfp4_known_block), cmocka_unit_test(test_mxfp4_decoder),
        cmocka_unit_test(test_w4a32_known_group), cmocka_unit_test(test_round_trip_and_dots),
        cmocka_unit_test(test_mul_mat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
