/* k-quants (q4_K, q5_K, q6_K weights; q8_K32 activations, q8_K kept for
   GGUF). Weights are random blocks (every bit pattern, not only what a
   quantizer writes; the quantizers are tested in test_quantize_kquant.c).
   Checks:
     dequantization == an independent per-element decoder written here from
       the GGUF bit layout (exact), plus a hand-built q4_K block;
     q8_K quantizer: hand-computed quants, bsums, d;
     q8_K32 quantizer: hand-computed quants and scales per 32, bsums, and
       the AVX2 one gives the same bytes on odd lengths;
     vec_dot generic vs a double dot of the dequantized values: nmse < 1e-10
       (exact int sums per 32-value sub-block, float rounding only);
     AVX2 vec_dot vs generic: nmse < 1e-10 (the same sums, float order);
     mul_mat (M = 1, 3, 5; rows not a multiple of 4 or 8, so the plain
       layout's path) vs reference: < 1e-10, and equal to the vec_dot bit
       for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/kquants.h"
#include "core/dtype.h"
#include "testutil.h"

static uint64_t g_rng = 12345;
static uint32_t next_u32(void) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 11);
}
static void random_bytes(void *p, size_t n) {
    for (size_t i = 0; i < n; i++) ((uint8_t *)p)[i] = (uint8_t)next_u32();
}
/* A positive scale in [0.001, 0.05] as f16. */
static mllm_f16 random_scale(void) {
    return mllm_f32_to_f16(0.001f + 0.049f * (float)(next_u32() % 1000) / 1000.0f);
}

static void random_q4_k(mllm_block_q4_k *b, int n) {
    for (int i = 0; i < n; i++) {
        random_bytes(&b[i], sizeof b[i]);
        b[i].d = random_scale();
        b[i].dmin = random_scale();
    }
}
static void random_q5_k(mllm_block_q5_k *b, int n) {
    for (int i = 0; i < n; i++) {
        random_bytes(&b[i], sizeof b[i]);
        b[i].d = random_scale();
        b[i].dmin = random_scale();
    }
}
static void random_q6_k(mllm_block_q6_k *b, int n) {
    for (int i = 0; i < n; i++) {
        random_bytes(&b[i], sizeof b[i]);
        b[i].d = random_scale();
    }
}

/* Independent decoders: element by element, straight from the layout. */
static float ref_q4_k(const mllm_block_q4_k *b, int e) {
    const int sub = e / 32, chunk = e / 64, l = e % 32;
    const uint8_t *s = b->scales;
    int sc, m;
    if (sub < 4) {
        sc = s[sub] & 0x3f;
        m = s[sub + 4] & 0x3f;
    } else {
        sc = (s[sub + 4] & 0x0f) + 16 * (s[sub - 4] >> 6);
        m = (s[sub + 4] >> 4) + 16 * (s[sub] >> 6);
    }
    const uint8_t byte = b->qs[32 * chunk + l];
    const int q = (sub % 2 == 0) ? byte % 16 : byte / 16;
    return mllm_f16_to_f32(b->d) * (float)sc * (float)q - mllm_f16_to_f32(b->dmin) * (float)m;
}

/* q5_K: q4_K's scale/min and nibble rules plus bit (2*chunk + half) of qh[l]. */
static float ref_q5_k(const mllm_block_q5_k *b, int e) {
    const int sub = e / 32, chunk = e / 64, l = e % 32;
    const uint8_t *s = b->scales;
    int sc, m;
    if (sub < 4) {
        sc = s[sub] & 0x3f;
        m = s[sub + 4] & 0x3f;
    } else {
        sc = (s[sub + 4] & 0x0f) + 16 * (s[sub - 4] >> 6);
        m = (s[sub + 4] >> 4) + 16 * (s[sub] >> 6);
    }
    const uint8_t byte = b->qs[32 * chunk + l];
    const int low = (sub % 2 == 0) ? byte % 16 : byte / 16;
    const int high = (b->qh[l] >> sub) & 1; /* sub = 2*chunk + (0 | 1) */
    return mllm_f16_to_f32(b->d) * (float)sc * (float)(low + 16 * high) - mllm_f16_to_f32(b->dmin) * (float)m;
}

static void random_blocks(mllm_dtype t, void *x, int nb) {
    if (t == MLLM_DTYPE_Q4_K) random_q4_k(x, nb);
    else if (t == MLLM_DTYPE_Q5_K) random_q5_k(x, nb);
    else random_q6_k(x, nb);
}

static float ref_q6_k(const mllm_block_q6_k *b, int e) {
    const int half = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
    const uint8_t lbyte = b->ql[64 * half + 32 * (quarter % 2) + l];
    const int low = quarter < 2 ? lbyte % 16 : lbyte / 16;
    const int high = (b->qh[32 * half + l] / (1 << (2 * quarter))) % 4;
    const int q = low + 16 * high - 32;
    return mllm_f16_to_f32(b->d) * (float)b->scales[e / 16] * (float)q;
}

static void test_dequant_matches_layout(void **state) {
    (void)state;
    enum { NB = 8 };
    mllm_block_q4_k b4[NB];
    mllm_block_q6_k b6[NB];
    mllm_block_q5_k b5[NB];
    random_q5_k(b5, NB);
    random_q4_k(b4, NB);
    random_q6_k(b6, NB);
    float y[NB * MLLM_QK_K];
    mllm_cpu_type_get(MLLM_DTYPE_Q4_K)->to_float(b4, y, NB * MLLM_QK_K);
    for (int i = 0; i < NB * MLLM_QK_K; i++) assert_true(y[i] == ref_q4_k(&b4[i / 256], i % 256));
    mllm_cpu_type_get(MLLM_DTYPE_Q5_K)->to_float(b5, y, NB * MLLM_QK_K);
    for (int i = 0; i < NB * MLLM_QK_K; i++) assert_true(y[i] == ref_q5_k(&b5[i / 256], i % 256));
    mllm_cpu_type_get(MLLM_DTYPE_Q6_K)->to_float(b6, y, NB * MLLM_QK_K);
    for (int i = 0; i < NB * MLLM_QK_K; i++) assert_true(y[i] == ref_q6_k(&b6[i / 256], i % 256));
}

/* Sub-block j gets scale j+1 and min j; d = 1, dmin = 0.5; every byte 0x21
   (low nibble 1, high nibble 2). Value of sub-block j: (j+1)*q_j - j/2 with
   q_j = 1 for even j, 2 for odd j. */
static void test_q4_k_known_block(void **state) {
    (void)state;
    mllm_block_q4_k b;
    b.d = 0x3c00;
    b.dmin = 0x3800;
    const uint8_t scales[12] = {1, 2, 3, 4, 0, 1, 2, 3, 5 | (4 << 4), 6 | (5 << 4), 7 | (6 << 4), 8 | (7 << 4)};
    memcpy(b.scales, scales, 12);
    memset(b.qs, 0x21, sizeof b.qs);
    float y[256];
    mllm_dequantize_row_q4_k(&b, y, 256);
    for (int e = 0; e < 256; e++) {
        const int j = e / 32;
        const float want = (float)((j + 1) * (j % 2 == 0 ? 1 : 2)) - 0.5f * (float)j;
        assert_true(y[e] == want);
    }
}

/* x = j - 100: largest magnitude is x[255] = 155, so iscale = -127/155:
   q[255] = -127, q[100] = 0, q[0] = round(81.94) = 82, q[131] = round(-25.4) = -25. */
static void test_q8_k_known_block(void **state) {
    (void)state;
    float x[256];
    for (int j = 0; j < 256; j++) x[j] = (float)(j - 100);
    mllm_block_q8_k b;
    mllm_quantize_row_q8_k(x, &b, 256);
    assert_int_equal(b.qs[255], -127);
    assert_int_equal(b.qs[100], 0);
    assert_int_equal(b.qs[0], 82);
    assert_int_equal(b.qs[131], -25);
    assert_true(fabsf(b.d - (-155.0f / 127.0f)) < 1e-6f);
    for (int g = 0; g < 16; g++) {
        int sum = 0;
        for (int k = 0; k < 16; k++) sum += b.qs[16 * g + k];
        assert_int_equal(b.bsums[g], sum);
    }
    /* round trip on random data */
    enum { N = 4096 };
    float *v = malloc(N * sizeof(float)), *back = malloc(N * sizeof(float));
    mllm_block_q8_k *q = malloc(N / 256 * sizeof *q);
    tu_fill_random(v, N, 5);
    mllm_quantize_row_q8_k(v, q, N);
    mllm_dequantize_row_q8_k(q, back, N);
    const double e = tu_nmse(back, v, N);
    printf("q8_k round-trip nmse %.3g (bound 1e-4)\n", e);
    assert_true(e < 1e-4);
    free(v), free(back), free(q);
}

/* Block j of 32 values: x = (j + 1) * (l - 10) for l < 32, so amax = 21 (j + 1)
   at l = 31 and d[j] = 21 (j + 1) / 127; q = round_half_even(127 (l - 10) / 21). */
static void test_q8_k32_known_block(void **state) {
    (void)state;
    float x[256];
    for (int e = 0; e < 256; e++) x[e] = (float)((e / 32 + 1) * (e % 32 - 10));
    mllm_block_q8_k32 b;
    mllm_quantize_row_q8_k32_generic(x, &b, 256);
    for (int j = 0; j < 8; j++) {
        assert_true(b.d[j] == 21.0f * (float)(j + 1) / 127.0f);
        assert_int_equal(b.qs[32 * j + 31], 127);
        assert_int_equal(b.qs[32 * j + 10], 0);
        assert_int_equal(b.qs[32 * j + 0], -60); /* -1270 / 21 = -60.48 */
        assert_int_equal(b.qs[32 * j + 13], 18); /* 381 / 21 = 18.14 */
    }
    for (int g = 0; g < 16; g++) {
        int sum = 0;
        for (int k = 0; k < 16; k++) sum += b.qs[16 * g + k];
        assert_int_equal(b.bsums[g], sum);
    }
    /* an all-zero sub-block: d = 0, quants 0 */
    for (int l = 0; l < 32; l++) x[64 + l] = 0.0f;
    mllm_quantize_row_q8_k32_generic(x, &b, 256);
    assert_true(b.d[2] == 0.0f);
    for (int l = 0; l < 32; l++) assert_int_equal(b.qs[64 + l], 0);
    /* AVX2 = generic byte for byte, and the round trip is q8_0-tight */
    enum { N = 4352 };
    float *v = malloc(N * sizeof(float)), *back = malloc(N * sizeof(float));
    mllm_block_q8_k32 *q = malloc(N / 256 * sizeof *q), *q2 = malloc(N / 256 * sizeof *q2);
    tu_fill_random(v, N, 6);
    v[777] = 30.0f; /* one sub-block with a large value */
    mllm_quantize_row_q8_k32_generic(v, q, N);
#if MLLM_HAVE_X86_KERNELS
    if (mllm_cpu_has_avx2()) {
        mllm_quantize_row_q8_k32_avx2(v, q2, N);
        assert_memory_equal(q, q2, N / 256 * sizeof *q);
    } else
#endif
    {
        printf("SKIPPED avx2 q8_k32: this CPU has no AVX2\n");
    }
    mllm_dequantize_row_q8_k32(q, back, N);
    const double e = tu_nmse(back, v, N);
    printf("q8_k32 round-trip nmse %.3g (bound 2e-4)\n", e);
    assert_true(e < 2e-4);
    free(v), free(back), free(q), free(q2);
}

static double dot_double(const float *a, const float *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

static void check_dots(mllm_dtype t) {
    static const int lens[] = {256, 768, 4352};
    enum { TRIALS = 16 };
    const mllm_dtype_traits *tr = mllm_dtype_get(t);
    const mllm_cpu_type *ktr = mllm_cpu_type_get(t);
    for (int li = 0; li < 3; li++) {
        const int n = lens[li], nb = n / 256;
        void *x = malloc((size_t)nb * tr->type_size);
        mllm_block_q8_k32 *y = malloc((size_t)nb * sizeof *y);
        float *xf = malloc((size_t)n * sizeof(float)), *yf = malloc((size_t)n * sizeof(float));
        float gen[TRIALS], simd[TRIALS], ref[TRIALS];
        for (int k = 0; k < TRIALS; k++) {
            random_blocks(t, x, nb);
            tu_fill_random(yf, (size_t)n, 31 + (uint64_t)k);
            mllm_cpu_quantize_row(tr->vec_dot_type, yf, y, n);
            ktr->to_float(x, xf, n);
            mllm_dequantize_row_q8_k32(y, yf, n);
            ref[k] = (float)dot_double(xf, yf, n);
            mllm_cpu_vec_dot_for(t, "generic")(n, &gen[k], x, y);
            simd[k] = gen[k];
            if (mllm_cpu_has_avx2()) mllm_cpu_vec_dot_for(t, "avx2")(n, &simd[k], x, y);
        }
        const double e_ref = tu_nmse(gen, ref, TRIALS), e_simd = tu_nmse(simd, gen, TRIALS);
        printf("%s x q8_k32 n=%d: generic vs double ref %.3g, avx2 vs generic %.3g (bound 1e-10)\n", tr->name, n,
               e_ref, e_simd);
        assert_true(e_ref <= 1e-10);
        assert_true(e_simd <= 1e-10);
        free(x), free(y), free(xf), free(yf);
    }
}

static void test_vec_dots(void **state) {
    (void)state;
    if (!mllm_cpu_has_avx2()) printf("SKIPPED (AVX2 part): this CPU has no AVX2+FMA+F16C\n");
    check_dots(MLLM_DTYPE_Q4_K);
    check_dots(MLLM_DTYPE_Q5_K);
    check_dots(MLLM_DTYPE_Q6_K);
}

static void check_mul_mat(mllm_dtype t, int rows, int K, int M) {
    const mllm_dtype_traits *tr = mllm_dtype_get(t);
    const mllm_cpu_type *ktr = mllm_cpu_type_get(t);
    const int nb = K / 256;
    const size_t ws = (size_t)nb * tr->type_size, xs = (size_t)nb * sizeof(mllm_block_q8_k32);
    char *W = malloc(ws * (size_t)rows), *X = malloc(xs * (size_t)M);
    float *wf = malloc((size_t)rows * K * sizeof(float)), *xf = malloc((size_t)M * K * sizeof(float));
    float *Y = malloc((size_t)M * rows * sizeof(float)), *ref = malloc((size_t)M * rows * sizeof(float));
    for (int r = 0; r < rows; r++) {
        random_blocks(t, W + r * ws, nb);
        ktr->to_float(W + r * ws, wf + (size_t)r * K, K);
    }
    for (int m = 0; m < M; m++) {
        tu_fill_random(xf + (size_t)m * K, (size_t)K, 100 + (uint64_t)m);
        mllm_cpu_quantize_row(tr->vec_dot_type, xf + (size_t)m * K, X + m * xs, K);
        mllm_dequantize_row_q8_k32(X + m * xs, xf + (size_t)m * K, K);
    }
    mllm_cpu_mul_mat(t, W, ws, K, X, xs, M, Y, (size_t)rows, 0, rows);
    for (int m = 0; m < M; m++)
        for (int r = 0; r < rows; r++)
            ref[m * rows + r] = (float)dot_double(wf + (size_t)r * K, xf + (size_t)m * K, K);
    const double e = tu_nmse(Y, ref, (size_t)M * rows);
    if (e > 1e-10) printf("mul_mat %s rows=%d K=%d M=%d: nmse %.3g\n", tr->name, rows, K, M, e);
    assert_true(e <= 1e-10);
    /* the tiles run the vec_dot's per-block math: its bits, whatever M */
    for (int m = 0; m < M; m++)
        for (int r = 0; r < rows; r++) {
            float d;
            ktr->vec_dot(K, &d, W + r * ws, X + m * xs);
            assert_memory_equal(&d, &Y[m * rows + r], sizeof d);
        }
    free(W), free(X), free(wf), free(xf), free(Y), free(ref);
}

static void test_mul_mat(void **state) {
    (void)state;
    static const int Ms[] = {1, 3, 5};
    for (int mi = 0; mi < 3; mi++) {
        check_mul_mat(MLLM_DTYPE_Q4_K, 7, 512, Ms[mi]);
        check_mul_mat(MLLM_DTYPE_Q5_K, 5, 768, Ms[mi]);
        check_mul_mat(MLLM_DTYPE_Q6_K, 9, 1024, Ms[mi]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dequant_matches_layout), cmocka_unit_test(test_q4_k_known_block),
        cmocka_unit_test(test_q8_k_known_block),       cmocka_unit_test(test_q8_k32_known_block),
        cmocka_unit_test(test_vec_dots),
        cmocka_unit_test(test_mul_mat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
