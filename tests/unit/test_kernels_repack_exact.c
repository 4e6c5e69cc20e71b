/* The AVX2 tiles of q4_0x8, q4_1x8, q5_0x8 and q8_0x8 (x86/repack_avx2.c)
   bit for bit (memcmp) against a scalar model of one SIMD lane: per block,
   the exact integer dot, then the float steps in the tiles' order, each
   rounded as there (fmaf is the fused multiply-add):
     q4_0: acc = fma((float)(dot - s8), d_w * d_y, acc)        (q5_0: 2 * s8)
     q4_1: acc = fma((float)dot, d_w * d_y, acc); acc = fma(m_w, s_y, acc)
     q8_0: acc = fma((float)dot, d_w * d_y, acc)
   This is what the tiles computed before they went wider than 4 activation
   rows and took the activations' f16 scales as floats, so any tile width,
   register schedule or activation conversion must keep it. Shapes: 1 to 13
   activation rows (every tile width and its rest), odd block counts,
   sub-ranges of groups; extremes: the top nibble / +-127 everywhere. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/repack.h"
#include "testutil.h"

#if MLLM_HAVE_X86_KERNELS
/* Value i (0..31) of row r of a packed q4 block (repack.h's layout). */
static int nib(const uint8_t *qs, int r, int i) {
    const uint8_t byte = qs[32 * (i / 8) + 4 * r + (i % 8 & 3)];
    return i % 8 < 4 ? byte & 15 : byte >> 4;
}

/* One lane's result: row r of group g, activation row x (nb blocks). */
static float lane_model(mllm_dtype pt, const char *W, size_t w_stride, int64_t nb, int64_t g, int r,
                        const char *x) {
    const char *grp = W + (size_t)g * 8 * w_stride;
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        int32_t dot = 0;
        if (pt == MLLM_DTYPE_Q4_0_X8) {
            const mllm_block_q4_0x8 *w = (const mllm_block_q4_0x8 *)grp + b;
            const mllm_block_q8_0s *y = (const mllm_block_q8_0s *)x + b;
            for (int i = 0; i < 32; i++) dot += nib(w->qs, r, i) * y->qs[i];
            acc = fmaf((float)(dot - y->s8), mllm_f16_to_f32(w->d[r]) * y->d, acc);
        } else if (pt == MLLM_DTYPE_Q5_0_X8) {
            const mllm_block_q5_0x8 *w = (const mllm_block_q5_0x8 *)grp + b;
            const mllm_block_q8_0s *y = (const mllm_block_q8_0s *)x + b;
            for (int i = 0; i < 32; i++) {
                const int hb = (w->qh[4 * r + (i % 8 & 3)] >> (2 * (i / 8) + (i % 8 >= 4))) & 1;
                dot += (nib(w->qs, r, i) | hb << 4) * y->qs[i];
            }
            acc = fmaf((float)(dot - 2 * y->s8), mllm_f16_to_f32(w->d[r]) * y->d, acc);
        } else if (pt == MLLM_DTYPE_Q4_1_X8) {
            const mllm_block_q4_1x8 *w = (const mllm_block_q4_1x8 *)grp + b;
            const mllm_block_q8_1 *y = (const mllm_block_q8_1 *)x + b;
            for (int i = 0; i < 32; i++) dot += nib(w->qs, r, i) * y->qs[i];
            acc = fmaf((float)dot, mllm_f16_to_f32(w->d[r]) * mllm_f16_to_f32(y->d), acc);
            acc = fmaf(mllm_f16_to_f32(w->m[r]), mllm_f16_to_f32(y->s), acc);
        } else {
            const mllm_block_q8_0x8 *w = (const mllm_block_q8_0x8 *)grp + b;
            const mllm_block_q8_0 *y = (const mllm_block_q8_0 *)x + b;
            for (int i = 0; i < 32; i++) dot += w->qs[32 * (i / 4) + 4 * r + i % 4] * y->qs[i];
            acc = fmaf((float)dot, mllm_f16_to_f32(w->d[r]) * mllm_f16_to_f32(y->d), acc);
        }
    }
    return acc;
}

static void check_exact(mllm_dtype t, int64_t N, int64_t K, int64_t M, int64_t r0, int64_t r1, bool extremes) {
    const mllm_dtype pt = (mllm_dtype)mllm_repack_type_for(t, K, N);
    const mllm_dtype pvt = mllm_dtype_get(pt)->vec_dot_type;
    const size_t rs = mllm_dtype_row_size(t, K), xs = mllm_dtype_row_size(pvt, K) + 12, ys = (size_t)N + 3;
    char *W = tu_quant_matrix(t, N, K, 41 + (uint64_t)K), *P = malloc((size_t)N * rs);
    char *X = tu_quant_activations(pvt, M, K, xs, extremes);
    if (extremes && t != MLLM_DTYPE_Q8_0) /* every nibble (and fifth bit) at its top */
        for (int64_t r = 0; r < N; r++)
            for (int64_t b = 0; b < K / 32; b++) {
                char *blk = W + (size_t)r * rs + (size_t)b * mllm_dtype_row_size(t, 32);
                memset(t == MLLM_DTYPE_Q4_0   ? ((mllm_block_q4_0 *)blk)->qs
                       : t == MLLM_DTYPE_Q4_1 ? ((mllm_block_q4_1 *)blk)->qs
                                              : ((mllm_block_q5_0 *)blk)->qs,
                       0xff, 16);
                if (t == MLLM_DTYPE_Q5_0) memset(((mllm_block_q5_0 *)blk)->qh, 0xff, 4);
            }
    if (extremes && t == MLLM_DTYPE_Q8_0)
        for (int64_t r = 0; r < N; r++)
            for (int64_t b = 0; b < K / 32; b++)
                for (int j = 0; j < 32; j++)
                    ((mllm_block_q8_0 *)(W + (size_t)r * rs))[b].qs[j] = (int8_t)((r + j) % 3 ? 127 : -127);
    mllm_repack_groups(pt, W, P, K, 0, N / 8);
    const size_t ny = (size_t)M * ys;
    float *want = malloc(ny * sizeof(float)), *got = malloc(ny * sizeof(float));
    for (size_t i = 0; i < ny; i++) want[i] = got[i] = -777.0f;
    for (int64_t m = 0; m < M; m++)
        for (int64_t row = r0; row < r1; row++)
            want[(size_t)m * ys + row] = lane_model(pt, P, rs, K / 32, row / 8, (int)(row % 8), X + (size_t)m * xs);
    assert_true(mllm_mul_mat_packed_avx2(pt, P, rs, K, X, xs, M, got, ys, r0, r1));
    char what[128];
    snprintf(what, sizeof what, "%s N=%lld K=%lld M=%lld [%lld,%lld)%s", mllm_dtype_name(pt), (long long)N,
             (long long)K, (long long)M, (long long)r0, (long long)r1, extremes ? " extremes" : "");
    tu_assert_same_floats(want, got, ny, what); /* the rows outside [r0, r1) included: untouched */
    free(W), free(P), free(X), free(want), free(got);
}

#endif

static void test_avx2_tiles_exact(void **state) {
    (void)state;
#if MLLM_HAVE_X86_KERNELS
    if (!mllm_cpu_has_avx2()) {
        printf("SKIPPED avx2 packed tiles bit for bit: this CPU has no AVX2\n");
        return;
    }
    static const mllm_dtype types[] = {MLLM_DTYPE_Q4_0, MLLM_DTYPE_Q4_1, MLLM_DTYPE_Q5_0, MLLM_DTYPE_Q8_0};
    static const int64_t Ks[] = {32, 96, 224, 576};
    static const struct { int64_t n, r0, r1; } ranges[] = {{8, 0, 8}, {40, 8, 32}, {64, 0, 64}};
    for (size_t ti = 0; ti < 4; ti++)
        for (size_t ki = 0; ki < 4; ki++)
            for (int64_t M = 1; M <= 13; M++)
                for (size_t ri = 0; ri < 3; ri++)
                    check_exact(types[ti], ranges[ri].n, Ks[ki], M, ranges[ri].r0, ranges[ri].r1,
                                (M + (int64_t)ri + (int64_t)ti) % 4 == 0);
    /* several L2 chunks of groups (the last one short) with wide tiles */
    for (size_t ti = 0; ti < 4; ti++) check_exact(types[ti], 1160, 1504, 19, 8, 1152, ti % 2 == 1);
#else
    printf("SKIPPED avx2 packed tiles bit for bit: not an x86 build\n");
#endif
}

int main(void) {
    mllm_cpu_init();
    printf("cpu path: %s\n", mllm_cpu_path());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_avx2_tiles_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
