/* The avx512 path's k-quant packed matmul (VNNI, x86/repack_kquant_avx512.c)
   for q4_Kx8, q5_Kx8 and q6_Kx8 against the AVX2 tiles
   (x86/repack_kquant_avx2.c): the same exact integer sums per sub-block and
   the same float steps in the same order, so the outputs are bit-identical
   (memcmp); and against the generic references, the packed generic matmul
   and the plain generic one, within normalised MSE 1e-10 (the float terms
   are summed in another order there; test_kernels_repack.c has why).

   Covered: every activation count 1..20 (tiles of 9 and their rest), odd
   block counts (K = 1, 3, 5, 17 x 256), odd group counts (the ymm-sized
   tail run as a pair with itself), sub-ranges of rows, several chunks of
   groups, and extremes that reach the integer bounds the kernel's comment
   states (all-15 / 31 / 63 weights, scales and mins of 63, q6 scales of
   -128 and 127, activations of -128 and 127). SKIPPED where the CPU has no
   AVX-512 F/BW/VL/DQ/VNNI, or on a non-x86 build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/repack.h"
#include "backends/cpu.h"
#include "testutil.h"

#define TOL 1e-10

#if MLLM_HAVE_X86_KERNELS
/* Weights at their largest: all quants at the top of their range (every
   third row at the bottom, for q6 that is v - 32 = -32), 6-bit scales and
   mins of 63, q6 scales alternating -128 and 127. */
static void extreme_weights(mllm_dtype t, char *W, int64_t N, int64_t K) {
    const size_t rs = mllm_dtype_row_size(t, K);
    for (int64_t r = 0; r < N; r++)
        for (int64_t b = 0; b < K / 256; b++) {
            const uint8_t q = r % 3 ? 0xff : 0x00;
            if (t == MLLM_DTYPE_Q4_K) {
                mllm_block_q4_k *x = (mllm_block_q4_k *)(W + (size_t)r * rs) + b;
                memset(x->scales, 0xff, sizeof x->scales);
                memset(x->qs, q, sizeof x->qs);
            } else if (t == MLLM_DTYPE_Q5_K) {
                mllm_block_q5_k *x = (mllm_block_q5_k *)(W + (size_t)r * rs) + b;
                memset(x->scales, 0xff, sizeof x->scales);
                memset(x->qs, q, sizeof x->qs);
                memset(x->qh, q, sizeof x->qh);
            } else {
                mllm_block_q6_k *x = (mllm_block_q6_k *)(W + (size_t)r * rs) + b;
                memset(x->ql, q, sizeof x->ql);
                memset(x->qh, q, sizeof x->qh);
                for (int s = 0; s < 16; s++) x->scales[s] = (int8_t)((r + s) % 2 ? -128 : 127);
            }
        }
}

/* Activation quants of -128 / 127 (bsums kept consistent). */
static void extreme_acts(char *X, size_t xs, int64_t M, int64_t K) {
    for (int64_t m = 0; m < M; m++)
        for (int64_t b = 0; b < K / 256; b++) {
            mllm_block_q8_k32 *y = (mllm_block_q8_k32 *)(X + (size_t)m * xs) + b;
            for (int j = 0; j < 256; j++) y->qs[j] = (int8_t)((m + b + j / 16) % 2 ? -128 : 127);
            for (int g = 0; g < 16; g++) {
                int s = 0;
                for (int k = 0; k < 16; k++) s += y->qs[16 * g + k];
                y->bsums[g] = (int16_t)s;
            }
        }
}

static void check_kq_avx512(mllm_dtype t, int64_t N, int64_t K, int64_t M, int64_t r0, int64_t r1, bool extremes) {
    const int packed = mllm_repack_type_for(t, K, N);
    assert_true(packed > 0);
    const mllm_dtype vt = mllm_dtype_get(t)->vec_dot_type;
    assert_int_equal(mllm_dtype_get(packed)->vec_dot_type, vt);
    const size_t rs = mllm_dtype_row_size(t, K), xs = mllm_dtype_row_size(vt, K) + 40, ys = (size_t)N + 5;
    char *W = tu_quant_matrix(t, N, K, 41 + (uint64_t)K), *P = malloc((size_t)N * rs);
    if (extremes) extreme_weights(t, W, N, K);
    char *X = malloc((size_t)M * xs);
    float *src = malloc((size_t)K * sizeof(float));
    for (int64_t m = 0; m < M; m++) {
        tu_fill_random(src, (size_t)K, 700 + (uint64_t)m);
        mllm_cpu_quantize_row(vt, src, X + (size_t)m * xs, K);
    }
    if (extremes) extreme_acts(X, xs, M, K);
    mllm_repack_groups((mllm_dtype)packed, W, P, K, 0, N / 8);
    const size_t ny = (size_t)M * ys;
    float *ref = malloc(ny * sizeof(float)), *gen = malloc(ny * sizeof(float));
    float *a2 = malloc(ny * sizeof(float)), *a5 = malloc(ny * sizeof(float));
    for (size_t i = 0; i < ny; i++) ref[i] = gen[i] = a2[i] = a5[i] = -777.0f;
    mllm_mul_mat_generic(mllm_cpu_vec_dot_for(t, "generic"), W, rs, K, X, xs, M, ref, ys, r0, r1);
    mllm_mul_mat_packed_generic((mllm_dtype)packed, P, rs, K, X, xs, M, gen, ys, r0, r1);
    assert_true(mllm_mul_mat_packed_avx2((mllm_dtype)packed, P, rs, K, X, xs, M, a2, ys, r0, r1));
    assert_true(mllm_mul_mat_packed_kq_avx512((mllm_dtype)packed, P, rs, K, X, xs, M, a5, ys, r0, r1));
    char what[96];
    snprintf(what, sizeof what, "%s N=%lld K=%lld M=%lld [%lld,%lld)%s", mllm_dtype_name(packed), (long long)N,
             (long long)K, (long long)M, (long long)r0, (long long)r1, extremes ? " extremes" : "");
    tu_assert_matmul_matches(what, a5, a2, gen, ref, M, ys, r0, r1, TOL);
    free(W), free(P), free(X), free(src), free(ref), free(gen), free(a2), free(a5);
}

static bool have_avx512(const char *what) {
    if (mllm_cpu_isa_available(MLLM_CPU_ISA_AVX512)) return true;
    printf("SKIPPED avx512 %s (VNNI): this CPU has no AVX-512 F/BW/VL/DQ/VNNI\n", what);
    return false;
}

static const mllm_dtype k_kq[] = {MLLM_DTYPE_Q4_K, MLLM_DTYPE_Q5_K, MLLM_DTYPE_Q6_K};
#endif

/* Every activation count 1..20 on odd block and group counts and ranges. */
static void test_kq_avx512_shapes(void **state) {
    (void)state;
#if MLLM_HAVE_X86_KERNELS
    if (!have_avx512("k-quant tiles")) return;
    static const struct { int64_t n, r0, r1; } ranges[] = {{8, 0, 8}, {24, 0, 24}, {40, 8, 32}, {56, 16, 56}, {64, 0, 64}};
    static const int64_t Ks[] = {256, 768, 1280};
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t ki = 0; ki < 3; ki++)
            for (int64_t M = 1; M <= 20; M++)
                for (size_t ri = 0; ri < sizeof ranges / sizeof ranges[0]; ri++)
                    check_kq_avx512(k_kq[ti], ranges[ri].n, Ks[ki], M, ranges[ri].r0, ranges[ri].r1,
                                    (size_t)M % 3 == ri % 3);
#else
    printf("SKIPPED avx512 k-quant tiles (VNNI): not an x86 build\n");
#endif
}

/* Prefill-sized: more groups than one chunk holds (the last one odd),
   two tiles and a rest of activation rows over each chunk. */
static void test_kq_avx512_large(void **state) {
    (void)state;
#if MLLM_HAVE_X86_KERNELS
    if (!have_avx512("k-quant tiles, large")) return;
    for (size_t ti = 0; ti < 3; ti++) {
        check_kq_avx512(k_kq[ti], 1032, 4352, 19, 0, 1032, false);
        check_kq_avx512(k_kq[ti], 520, 4352, 9, 8, 512, true);
    }
#else
    printf("SKIPPED avx512 k-quant tiles, large (VNNI): not an x86 build\n");
#endif
}

/* What it does not take: nothing written. */
static void test_kq_avx512_refuses(void **state) {
    (void)state;
#if MLLM_HAVE_X86_KERNELS
    if (!have_avx512("k-quant tiles, refusals")) return;
    const size_t rs = mllm_dtype_row_size(MLLM_DTYPE_Q4_K, 256);
    char *P = calloc(16, rs), *X = calloc(1, rs * 4);
    float y[32];
    for (int i = 0; i < 32; i++) y[i] = -777.0f;
    assert_false(mllm_mul_mat_packed_kq_avx512(MLLM_DTYPE_Q4_K_X8, P, rs, 256, X, rs, 1, y, 16, 3, 16));
    assert_false(mllm_mul_mat_packed_kq_avx512(MLLM_DTYPE_Q6_K_X8, P, rs, 256, X, rs, 1, y, 16, 0, 12));
    assert_false(mllm_mul_mat_packed_kq_avx512(MLLM_DTYPE_Q8_0_X8, P, rs, 256, X, rs, 1, y, 16, 0, 16));
    assert_false(mllm_mul_mat_packed_kq_avx512(MLLM_DTYPE_Q4_0_X8, P, rs, 256, X, rs, 1, y, 16, 0, 16));
    assert_false(mllm_mul_mat_packed_kq_avx512(MLLM_DTYPE_Q4_K, P, rs, 256, X, rs, 1, y, 16, 0, 16));
    for (int i = 0; i < 32; i++) assert_true(y[i] == -777.0f);
    free(P), free(X);
#else
    printf("SKIPPED avx512 k-quant tiles, refusals (VNNI): not an x86 build\n");
#endif
}

int main(void) {
    mllm_cpu_init();
    printf("cpu path: %s\n", mllm_cpu_path());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kq_avx512_shapes),
        cmocka_unit_test(test_kq_avx512_large),
        cmocka_unit_test(test_kq_avx512_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
