/* The x8 packed layouts (backends/cpu/repack.h): packing is a byte-exact
   inverse of unpacking, packed rows read back as the plain rows, and the
   packed matmuls (generic and AVX2) give what the plain generic matmul
   gives, on odd K, odd activation counts and sub-ranges of rows.

   Tolerances (normalised MSE): every path computes the same exact integer
   dot per 32-value block; they differ only in how the per-block float terms
   are summed (lanes vs one sum, fused multiply-add or not), so 1e-10. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/repack.h"
#include "testutil.h"

#define TOL 1e-10

static const mllm_dtype k_types[] = {MLLM_DTYPE_Q4_0, MLLM_DTYPE_Q4_1, MLLM_DTYPE_Q5_0, MLLM_DTYPE_Q8_0, MLLM_DTYPE_Q4_K,
                                     MLLM_DTYPE_Q5_K, MLLM_DTYPE_Q6_K};
#define N_TYPES (sizeof k_types / sizeof k_types[0])

/* Odd row lengths: 1 block, a few, many (block sizes 32 and 256). */
static const int64_t *ks_for(mllm_dtype t) {
    static const int64_t k32[] = {32, 224, 4064}, k256[] = {256, 768, 4352};
    return mllm_dtype_get(t)->block_size == 256 ? k256 : k32;
}

static void test_pack_round_trip(void **state) {
    (void)state;
    for (size_t ti = 0; ti < N_TYPES; ti++)
        for (size_t ki = 0; ki < 3; ki++) {
            const mllm_dtype t = k_types[ti];
            const int64_t K = ks_for(t)[ki], N = 24;
            const int packed = mllm_repack_type_for(t, K, N);
            assert_true(packed > 0);
            assert_int_equal(mllm_repack_plain_type((mllm_dtype)packed), t);
            assert_int_equal(mllm_dtype_row_size((mllm_dtype)packed, K), mllm_dtype_row_size(t, K));
            const size_t bytes = (size_t)N * mllm_dtype_row_size(t, K);
            char *W = tu_quant_matrix(t, N, K, 11), *P = malloc(bytes), *U = malloc(bytes);
            mllm_repack_groups((mllm_dtype)packed, W, P, K, 0, N / 8);
            assert_true(memcmp(W, P, bytes) != 0); /* it did move bytes */
            mllm_unpack_groups((mllm_dtype)packed, P, U, K, 0, N / 8);
            assert_memory_equal(W, U, bytes);
            /* every row reads back as the plain row */
            float *a = malloc((size_t)K * sizeof(float)), *b = malloc((size_t)K * sizeof(float));
            for (int64_t r = 0; r < N; r++) {
                mllm_cpu_type_get(t)->to_float(W + (size_t)r * mllm_dtype_row_size(t, K), a, K);
                mllm_cpu_get_row((mllm_dtype)packed, P, mllm_dtype_row_size(t, K), K, r, b);
                assert_memory_equal(a, b, (size_t)K * sizeof(float));
            }
            free(a), free(b), free(W), free(P), free(U);
        }
    /* shapes that cannot be packed */
    assert_int_equal(mllm_repack_type_for(MLLM_DTYPE_Q4_0, 64, 12), -1);
    assert_int_equal(mllm_repack_type_for(MLLM_DTYPE_Q5_1, 64, 16), -1); /* no packed layout */
    assert_int_equal(mllm_repack_type_for(MLLM_DTYPE_F16, 64, 16), -1);
    assert_int_equal(mllm_repack_type_for(MLLM_DTYPE_Q4_K, 224, 16), -1);
}

/* q8_0s = the q8_0 activation bytes regrouped, with 8 * sum and d as float;
   generic and AVX2 converters agree byte for byte. */
static void test_q8_0s_activation(void **state) {
    (void)state;
    const int64_t K = 4064, nb = K / 32;
    float *x = malloc((size_t)K * sizeof(float));
    tu_fill_random(x, (size_t)K, 5);
    x[100] = 40.0f;
    mllm_block_q8_0 *q = malloc((size_t)nb * sizeof *q);
    mllm_block_q8_0s *s = malloc((size_t)nb * sizeof *s), *s2 = malloc((size_t)nb * sizeof *s2);
    mllm_quantize_row_q8_0_act_generic(x, q, K);
    mllm_quantize_row_q8_0s_generic(x, s, K);
    for (int64_t b = 0; b < nb; b++) {
        int sum = 0;
        for (int j = 0; j < 32; j++) sum += q[b].qs[j];
        assert_int_equal(s[b].s8, 8 * sum);
        assert_true(s[b].d == mllm_f16_to_f32(q[b].d));
        assert_memory_equal(s[b].qs, q[b].qs, 32);
    }
#if MLLM_HAVE_X86_KERNELS
    if (mllm_cpu_has_avx2()) {
        mllm_quantize_row_q8_0s_avx2(x, s2, K);
        assert_memory_equal(s, s2, (size_t)nb * sizeof *s);
    } else
#endif
    {
        printf("SKIPPED avx2 q8_0s: this CPU has no AVX2\n");
    }
    free(x), free(q), free(s), free(s2);
}

static void check_packed_mul_mat(mllm_dtype t, int64_t N, int64_t K, int64_t M, int64_t r0, int64_t r1) {
    const int packed = mllm_repack_type_for(t, K, N);
    assert_true(packed > 0);
    const mllm_dtype vt = mllm_dtype_get(t)->vec_dot_type;
    const mllm_dtype pvt = mllm_dtype_get(packed)->vec_dot_type;
    const size_t rs = mllm_dtype_row_size(t, K);
    char *W = tu_quant_matrix(t, N, K, 300), *P = malloc((size_t)N * rs);
    mllm_repack_groups((mllm_dtype)packed, W, P, K, 0, N / 8);
    const size_t xs = mllm_dtype_row_size(vt, K) + 32, pxs = mllm_dtype_row_size(pvt, K) + 8;
    char *X = malloc((size_t)M * xs), *PX = malloc((size_t)M * pxs);
    float *src = malloc((size_t)K * sizeof(float));
    for (int64_t m = 0; m < M; m++) {
        tu_fill_random(src, (size_t)K, 900 + (uint64_t)m);
        mllm_cpu_quantize_row(vt, src, X + (size_t)m * xs, K);
        mllm_cpu_quantize_row(pvt, src, PX + (size_t)m * pxs, K);
    }
    const size_t ys = (size_t)N + 3, ny = (size_t)M * ys;
    float *ref = malloc(ny * sizeof(float)), *gen = malloc(ny * sizeof(float)), *simd = malloc(ny * sizeof(float));
    for (size_t i = 0; i < ny; i++) ref[i] = gen[i] = simd[i] = -777.0f;
    mllm_mul_mat_generic(mllm_cpu_vec_dot_for(t, "generic"), W, rs, K, X, xs, M, ref, ys, r0, r1);
    mllm_mul_mat_packed_generic((mllm_dtype)packed, P, rs, K, PX, pxs, M, gen, ys, r0, r1);
    const bool aligned = r0 % 8 == 0 && r1 % 8 == 0;
    bool ran_simd = false;
#if MLLM_HAVE_X86_KERNELS
    if (mllm_cpu_has_avx2()) {
        ran_simd = mllm_mul_mat_packed_avx2((mllm_dtype)packed, P, rs, K, PX, pxs, M, simd, ys, r0, r1);
        assert_true(ran_simd == aligned);
    }
#endif
    (void)aligned;
    const double e_gen = tu_nmse(gen, ref, ny);
    const double e_simd = ran_simd ? tu_nmse(simd, gen, ny) : 0.0;
    if (e_gen > TOL || e_simd > TOL)
        printf("%s N=%lld K=%lld M=%lld [%lld,%lld): packed generic vs plain %.3g, avx2 vs generic %.3g\n",
               mllm_dtype_name(packed), (long long)N, (long long)K, (long long)M, (long long)r0,
               (long long)r1, e_gen, e_simd);
    assert_true(e_gen <= TOL);
    assert_true(e_simd <= TOL);
    /* rows outside [r0, r1) untouched */
    for (int64_t m = 0; m < M; m++)
        for (int64_t r = 0; r < (int64_t)ys; r++)
            if (r < r0 || r >= r1) {
                assert_true(gen[(size_t)m * ys + r] == -777.0f);
                if (ran_simd) assert_true(simd[(size_t)m * ys + r] == -777.0f);
            }
    free(W), free(P), free(X), free(PX), free(src), free(ref), free(gen), free(simd);
}

static void test_packed_mul_mat(void **state) {
    (void)state;
    if (!mllm_cpu_has_avx2()) printf("SKIPPED avx2 packed kernels: this CPU has no AVX2 (generic checked)\n");
    static const int64_t Ms[] = {1, 2, 3, 4, 5, 7, 9};
    static const struct { int64_t n, r0, r1; } ranges[] = {{8, 0, 8}, {40, 8, 32}, {40, 3, 37}, {64, 0, 64}};
    for (size_t ti = 0; ti < N_TYPES; ti++)
        for (size_t ki = 0; ki < 3; ki++)
            for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
                for (size_t ri = 0; ri < sizeof ranges / sizeof ranges[0]; ri++)
                    check_packed_mul_mat(k_types[ti], ranges[ri].n, ks_for(k_types[ti])[ki], Ms[mi],
                                         ranges[ri].r0, ranges[ri].r1);
}

/* Prefill-sized: more groups than one chunk holds, through mllm_cpu_mul_mat. */
static void test_packed_mul_mat_large(void **state) {
    (void)state;
    check_packed_mul_mat(MLLM_DTYPE_Q4_0, 1024, 2048, 13, 0, 1024);
    check_packed_mul_mat(MLLM_DTYPE_Q8_0, 512, 2048, 6, 128, 512);
    check_packed_mul_mat(MLLM_DTYPE_Q4_K, 256, 2048, 11, 0, 256);
    check_packed_mul_mat(MLLM_DTYPE_Q6_K, 256, 2048, 5, 64, 256);
    check_packed_mul_mat(MLLM_DTYPE_Q5_K, 256, 2048, 9, 0, 256);
}

/* The avx512 path's q8_0x8 matmul (VNNI, repack_avx512.c) against the AVX2
   one: the same exact integer dot per block, scaled and summed in the same
   order, so bit-identical (memcmp); and within TOL of the plain generic
   matmul. Odd group counts (its ymm tail), 1..19 activation rows (tiles of
   8 and their rest), one block to many, sub-ranges, several chunks and
   block-sum passes; extremes: weights and activations of +-127. */
#if defined(__x86_64__) || defined(_M_X64)
#define MAYBE_UNUSED
#else
#define MAYBE_UNUSED __attribute__((unused)) /* only x86 has an avx512 path to check */
#endif
MAYBE_UNUSED static void check_q8_avx512(int64_t N, int64_t K, int64_t M, int64_t r0, int64_t r1, bool extremes) {
    const size_t rs = mllm_dtype_row_size(MLLM_DTYPE_Q8_0, K), xs = rs + 40, ys = (size_t)N + 5;
    char *W = tu_quant_matrix(MLLM_DTYPE_Q8_0, N, K, 77 + (uint64_t)K), *P = malloc((size_t)N * rs);
    char *X = malloc((size_t)M * xs);
    float *src = malloc((size_t)K * sizeof(float));
    for (int64_t m = 0; m < M; m++) {
        tu_fill_random(src, (size_t)K, 500 + (uint64_t)m);
        mllm_cpu_quantize_row(MLLM_DTYPE_Q8_0, src, X + (size_t)m * xs, K);
    }
    if (extremes) {
        for (int64_t r = 0; r < N; r++)
            for (int64_t b = 0; b < K / 32; b++)
                for (int j = 0; j < 32; j++)
                    ((mllm_block_q8_0 *)(W + (size_t)r * rs))[b].qs[j] = (int8_t)((r + j) % 3 ? 127 : -127);
        for (int64_t m = 0; m < M; m++)
            for (int64_t b = 0; b < K / 32; b++)
                for (int j = 0; j < 32; j++)
                    ((mllm_block_q8_0 *)(X + (size_t)m * xs))[b].qs[j] = (int8_t)((m + j + b) % 2 ? -127 : 127);
    }
    mllm_repack_groups(MLLM_DTYPE_Q8_0_X8, W, P, K, 0, N / 8);
    const size_t ny = (size_t)M * ys;
    float *ref = malloc(ny * sizeof(float)), *a2 = malloc(ny * sizeof(float)), *a5 = malloc(ny * sizeof(float));
    for (size_t i = 0; i < ny; i++) ref[i] = a2[i] = a5[i] = -777.0f;
    mllm_mul_mat_generic(mllm_cpu_vec_dot_for(MLLM_DTYPE_Q8_0, "generic"), W, rs, K, X, xs, M, ref, ys, r0, r1);
    assert_true(mllm_mul_mat_packed_avx2(MLLM_DTYPE_Q8_0_X8, P, rs, K, X, xs, M, a2, ys, r0, r1));
    assert_true(mllm_mul_mat_packed_avx512(MLLM_DTYPE_Q8_0_X8, P, rs, K, X, xs, M, a5, ys, r0, r1));
    assert_memory_equal(a5, a2, ny * sizeof(float));
    for (int64_t m = 0; m < M; m++) /* rows outside [r0, r1) untouched */
        for (int64_t r = 0; r < (int64_t)ys; r++)
            if (r < r0 || r >= r1) assert_true(a5[(size_t)m * ys + r] == -777.0f);
    const double e = tu_nmse(a5, ref, ny);
    if (e > TOL) printf("q8_0x8 avx512 N=%lld K=%lld M=%lld: vs generic %.3g\n", (long long)N, (long long)K, (long long)M, e);
    assert_true(e <= TOL);
    free(W), free(P), free(X), free(src), free(ref), free(a2), free(a5);
}

static void test_packed_q8_0_avx512(void **state) {
    (void)state;
#if MLLM_HAVE_X86_KERNELS
    if (!mllm_cpu_isa_available(MLLM_CPU_ISA_AVX512)) {
        printf("SKIPPED avx512 q8_0x8 (VNNI): this CPU has no AVX-512 F/BW/VL/DQ/VNNI\n");
        return;
    }
    static const int64_t Ms[] = {1, 2, 5, 8, 9, 16, 19};
    static const struct { int64_t n, r0, r1; } ranges[] = {{8, 0, 8}, {24, 0, 24}, {40, 8, 32}, {56, 16, 56}, {64, 0, 64}};
    static const int64_t Ks[] = {32, 96, 416, 1536};
    for (size_t ki = 0; ki < 4; ki++)
        for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
            for (size_t ri = 0; ri < sizeof ranges / sizeof ranges[0]; ri++)
                check_q8_avx512(ranges[ri].n, Ks[ki], Ms[mi], ranges[ri].r0, ranges[ri].r1, (mi + ri) % 3 == 0);
    /* several chunks of groups (the last one odd) and block-sum passes */
    check_q8_avx512(1032, 4064, 150, 0, 1032, false);
    check_q8_avx512(1032, 4064, 70, 8, 1024, true);
    /* what it does not take: not multiples of 8, unpacked types, K over its buffers */
    float y[64];
    const size_t rs = mllm_dtype_row_size(MLLM_DTYPE_Q8_0, 64);
    char *P = calloc(16, rs), *X = calloc(1, rs);
    assert_false(mllm_mul_mat_packed_avx512(MLLM_DTYPE_Q8_0_X8, P, rs, 64, X, rs, 1, y, 16, 3, 16));
    assert_false(mllm_mul_mat_packed_avx512(MLLM_DTYPE_Q4_0, P, rs, 64, X, rs, 1, y, 16, 0, 16)); /* plain, not packed */
    assert_false(mllm_mul_mat_packed_avx512(MLLM_DTYPE_Q8_0_X8, P, rs, 16416, X, rs, 1, y, 16, 0, 16)); /* K > 16384 */
    free(P), free(X);
#else
    printf("SKIPPED avx512 q8_0x8 (VNNI): not an x86 build\n");
#endif
}

/* The avx512 path's q4_0x8, q4_1x8 and q5_0x8 matmuls (VNNI,
   repack_avx512_q4.c) against the AVX2 tiles: the same exact integer dot
   per block (any nibbles), the same float steps per lane, so bit-identical
   (memcmp); within TOL of the packed and the plain generic matmuls. Odd
   group counts (the ymm tail), 1..20 activation rows (tiles of 8 and their
   rest), odd block counts, sub-ranges, several chunks and block-term
   passes. extremes: every weight value at its top (15, or 31 with the fifth
   bit) and activations of +-127 (inputs of +-1). */
MAYBE_UNUSED static void check_q4_avx512(mllm_dtype t, int64_t N, int64_t K, int64_t M, int64_t r0, int64_t r1,
                                         bool extremes) {
    const mllm_dtype pt = (mllm_dtype)mllm_repack_type_for(t, K, N);
    const mllm_dtype vt = mllm_dtype_get(t)->vec_dot_type, pvt = mllm_dtype_get(pt)->vec_dot_type;
    const size_t rs = mllm_dtype_row_size(t, K), xs = mllm_dtype_row_size(vt, K) + 24;
    const size_t pxs = mllm_dtype_row_size(pvt, K) + 40, ys = (size_t)N + 5;
    char *W = tu_quant_matrix(t, N, K, 33 + (uint64_t)K), *P = malloc((size_t)N * rs);
    char *X = malloc((size_t)M * xs), *PX = malloc((size_t)M * pxs);
    float *src = malloc((size_t)K * sizeof(float));
    for (int64_t m = 0; m < M; m++) {
        tu_fill_random(src, (size_t)K, 700 + (uint64_t)m);
        if (extremes)
            for (int64_t j = 0; j < K; j++) src[j] = (j + m) % 3 ? 1.0f : -1.0f;
        mllm_cpu_quantize_row(vt, src, X + (size_t)m * xs, K);
        mllm_cpu_quantize_row(pvt, src, PX + (size_t)m * pxs, K);
    }
    if (extremes)
        for (int64_t r = 0; r < N; r++)
            for (int64_t b = 0; b < K / 32; b++) {
                char *blk = W + (size_t)r * rs + (size_t)b * mllm_dtype_row_size(t, 32);
                uint8_t *qs = t == MLLM_DTYPE_Q4_0 ? ((mllm_block_q4_0 *)blk)->qs
                              : t == MLLM_DTYPE_Q4_1 ? ((mllm_block_q4_1 *)blk)->qs
                                                     : ((mllm_block_q5_0 *)blk)->qs;
                memset(qs, 0xff, 16);
                if (t == MLLM_DTYPE_Q5_0) memset(((mllm_block_q5_0 *)blk)->qh, 0xff, 4);
            }
    mllm_repack_groups(pt, W, P, K, 0, N / 8);
    const size_t ny = (size_t)M * ys;
    float *ref = malloc(ny * sizeof(float)), *gen = malloc(ny * sizeof(float));
    float *a2 = malloc(ny * sizeof(float)), *a5 = malloc(ny * sizeof(float));
    for (size_t i = 0; i < ny; i++) ref[i] = gen[i] = a2[i] = a5[i] = -777.0f;
    mllm_mul_mat_generic(mllm_cpu_vec_dot_for(t, "generic"), W, rs, K, X, xs, M, ref, ys, r0, r1);
    mllm_mul_mat_packed_generic(pt, P, rs, K, PX, pxs, M, gen, ys, r0, r1);
    assert_true(mllm_mul_mat_packed_avx2(pt, P, rs, K, PX, pxs, M, a2, ys, r0, r1));
    assert_true(mllm_mul_mat_packed_avx512(pt, P, rs, K, PX, pxs, M, a5, ys, r0, r1));
    char what[96];
    snprintf(what, sizeof what, "%s avx512 N=%lld K=%lld M=%lld [%lld,%lld)", mllm_dtype_name(pt), (long long)N,
             (long long)K, (long long)M, (long long)r0, (long long)r1);
    tu_assert_matmul_matches(what, a5, a2, gen, ref, M, ys, r0, r1, TOL);
    free(W), free(P), free(X), free(PX), free(src), free(ref), free(gen), free(a2), free(a5);
}

static void test_packed_q4_avx512(void **state) {
    (void)state;
#if MLLM_HAVE_X86_KERNELS
    if (!mllm_cpu_isa_available(MLLM_CPU_ISA_AVX512)) {
        printf("SKIPPED avx512 q4_0x8/q4_1x8/q5_0x8 (VNNI): this CPU has no AVX-512 F/BW/VL/DQ/VNNI\n");
        return;
    }
    static const mllm_dtype types[] = {MLLM_DTYPE_Q4_0, MLLM_DTYPE_Q4_1, MLLM_DTYPE_Q5_0};
    static const int64_t Ms[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 20};
    static const struct { int64_t n, r0, r1; } ranges[] = {{8, 0, 8}, {24, 0, 24}, {40, 8, 32}, {56, 16, 56}, {64, 0, 64}};
    static const int64_t Ks[] = {32, 96, 416, 1504};
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t ki = 0; ki < 4; ki++)
            for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
                for (size_t ri = 0; ri < sizeof ranges / sizeof ranges[0]; ri++)
                    check_q4_avx512(types[ti], ranges[ri].n, Ks[ki], Ms[mi], ranges[ri].r0, ranges[ri].r1,
                                    (mi + ri + ti) % 3 == 0);
    /* several chunks of groups (the last one odd) and block-term passes */
    for (size_t ti = 0; ti < 3; ti++) {
        check_q4_avx512(types[ti], 1160, 4064, 150, 0, 1160, false);
        check_q4_avx512(types[ti], 1160, 4064, 70, 8, 1152, true);
    }
    /* what it does not take: not multiples of 8, K over its buffers */
    float y[64];
    const size_t rs = mllm_dtype_row_size(MLLM_DTYPE_Q4_1, 16416);
    char *P = calloc(16, rs), *X = calloc(1, rs * 2);
    assert_false(mllm_mul_mat_packed_avx512(MLLM_DTYPE_Q4_0_X8, P, rs, 64, X, rs, 1, y, 16, 3, 16));
    assert_false(mllm_mul_mat_packed_avx512(MLLM_DTYPE_Q4_1_X8, P, rs, 64, X, rs, 1, y, 16, 0, 12));
    assert_false(mllm_mul_mat_packed_avx512(MLLM_DTYPE_Q4_1_X8, P, rs, 16416, X, rs, 1, y, 16, 0, 16)); /* K > 16384 */
    free(P), free(X);
#else
    printf("SKIPPED avx512 q4_0x8/q4_1x8/q5_0x8 (VNNI): not an x86 build\n");
#endif
}

int main(void) {
    mllm_cpu_init();
    printf("cpu path: %s\n", mllm_cpu_path());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_round_trip),
        cmocka_unit_test(test_q8_0s_activation),
        cmocka_unit_test(test_packed_mul_mat),
        cmocka_unit_test(test_packed_mul_mat_large),
        cmocka_unit_test(test_packed_q8_0_avx512),
        cmocka_unit_test(test_packed_q4_avx512),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
