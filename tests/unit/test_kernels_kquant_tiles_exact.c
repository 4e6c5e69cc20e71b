/* The AVX2 tiles of q4_Kx8, q5_Kx8 and q6_Kx8 (x86/repack_kquant_avx2.c)
   bit for bit (memcmp) against a scalar model of one SIMD lane (one output
   row x one activation row), written from the plain GGUF blocks. Per
   256-value block, with exact int32 sums and each float step rounded as in
   the tiles (fmaf is the fused multiply-add):
     q4_K / q5_K: yt_j = (float)(bsums[2j] + bsums[2j+1]) * dy[j];
       sb = m_0 * yt_0, then sb = fma(m_j, yt_j, sb) for j = 1..7;
       acc = fma(-sb, dmin, acc);
       sa = 0, then sa = fma((float)(sc_j * sum_j(q * y)), dy[j], sa), j = 0..7;
       acc = fma(sa, d, acc)
     q6_K: sa = 0, then sa = fma((float)a_u, dy[u], sa) for u = 0..7, a_u the
       exact sum over values 32u..32u+31 of scale * (q - 32) * y;
       acc = fma(sa, d, acc)
   This is what the 4-row tiles computed before their register schedule was
   reworked, so any schedule or tile width must keep it: checked through
   the AVX2 matmul and through the sets of 8 (repack_kquant_avx2.h) at the
   widths 5 and 8. Shapes: 1 to 13
   activation rows (every tile width and its rest), 1 to 9 blocks per row,
   sub-ranges of groups, a matrix of several L2 chunks; weights of random
   bytes (every bit pattern) and extremes (every quant and scale at its top,
   activations +-127). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/kquants.h"
#include "backends/cpu/repack.h"
#include "testutil.h"
#if MLLM_HAVE_X86_KERNELS
#include "backends/cpu/x86/repack_kquant_avx2.h"
#endif

#if MLLM_HAVE_X86_KERNELS
static uint64_t g_rng = 977;
static uint32_t next_u32(void) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 11);
}
/* A positive f16 scale in [0.001, 0.05]. */
static mllm_f16 random_scale(void) {
    return mllm_f32_to_f16(0.001f + 0.049f * (float)(next_u32() % 1000) / 1000.0f);
}

/* q4_K / q5_K's 6-bit scale and min of sub-block j from the 12 bytes. */
static void scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63, *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* One lane: weight row w (nb plain blocks of type t) against activation
   row x (nb q8_K32 blocks). */
static float lane_model(mllm_dtype t, const char *w, int64_t nb, const mllm_block_q8_k32 *x) {
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const mllm_block_q8_k32 *y = x + b;
        if (t == MLLM_DTYPE_Q6_K) {
            const mllm_block_q6_k *q = (const mllm_block_q6_k *)w + b;
            float sa = 0.0f;
            for (int u = 0; u < 8; u++) {
                int32_t a = 0;
                for (int e = 32 * u; e < 32 * u + 32; e++) {
                    const int half = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
                    const uint8_t lb = q->ql[64 * half + 32 * (quarter % 2) + l];
                    const int lo = quarter < 2 ? lb & 15 : lb >> 4;
                    const int hi = (q->qh[32 * half + l] >> (2 * quarter)) & 3;
                    a += q->scales[e / 16] * (lo + 16 * hi - 32) * y->qs[e];
                }
                sa = fmaf((float)a, y->d[u], sa);
            }
            acc = fmaf(sa, mllm_f16_to_f32(q->d), acc);
            continue;
        }
        const bool q5 = t == MLLM_DTYPE_Q5_K;
        const mllm_block_q4_k *q4 = (const mllm_block_q4_k *)w + b;
        const mllm_block_q5_k *q5b = (const mllm_block_q5_k *)w + b;
        const uint8_t *scales = q5 ? q5b->scales : q4->scales, *qs = q5 ? q5b->qs : q4->qs;
        const float d = mllm_f16_to_f32(q5 ? q5b->d : q4->d), dmin = mllm_f16_to_f32(q5 ? q5b->dmin : q4->dmin);
        float sb = 0.0f, sa = 0.0f;
        for (int j = 0; j < 8; j++) {
            int sc, m;
            scale_min(scales, j, &sc, &m);
            const float yt = (float)(y->bsums[2 * j] + y->bsums[2 * j + 1]) * y->d[j];
            sb = j == 0 ? (float)m * yt : fmaf((float)m, yt, sb);
        }
        acc = fmaf(-sb, dmin, acc);
        for (int j = 0; j < 8; j++) {
            int sc, m;
            scale_min(scales, j, &sc, &m);
            int32_t dot = 0;
            for (int l = 0; l < 32; l++) {
                const uint8_t byte = qs[32 * (j / 2) + l];
                int v = j % 2 ? byte >> 4 : byte & 15;
                if (q5) v |= (q5b->qh[l] >> j & 1) << 4;
                dot += v * y->qs[32 * j + l];
            }
            sa = fmaf((float)(sc * dot), y->d[j], sa);
        }
        acc = fmaf(sa, d, acc);
    }
    return acc;
}

/* Random bytes everywhere (every quant and scale pattern), sane f16 scales;
   extremes: every quant and 6-bit scale at its top (q6_K: scale -128). */
static void fill_weights(mllm_dtype t, char *W, int64_t N, int64_t K, bool extremes) {
    const size_t rs = mllm_dtype_row_size(t, K);
    for (size_t i = 0; i < (size_t)N * rs; i++) W[i] = extremes ? (char)0xff : (char)next_u32();
    for (int64_t r = 0; r < N; r++)
        for (int64_t b = 0; b < K / 256; b++) {
            char *blk = W + (size_t)r * rs + (size_t)b * mllm_dtype_row_size(t, 256);
            if (t == MLLM_DTYPE_Q6_K) {
                mllm_block_q6_k *q = (mllm_block_q6_k *)blk;
                q->d = random_scale();
                if (extremes) memset(q->scales, 0x80, sizeof q->scales);
            } else if (t == MLLM_DTYPE_Q5_K) {
                ((mllm_block_q5_k *)blk)->d = random_scale();
                ((mllm_block_q5_k *)blk)->dmin = random_scale();
            } else {
                ((mllm_block_q4_k *)blk)->d = random_scale();
                ((mllm_block_q4_k *)blk)->dmin = random_scale();
            }
        }
}

static void check_exact(mllm_dtype t, int64_t N, int64_t K, int64_t M, int64_t r0, int64_t r1, bool extremes) {
    const mllm_dtype pt = (mllm_dtype)mllm_repack_type_for(t, K, N);
    assert_true((int)pt >= 0);
    const mllm_dtype pvt = mllm_dtype_get(pt)->vec_dot_type;
    assert_int_equal(pvt, MLLM_DTYPE_Q8_K32);
    /* activation rows with a stride that is not a whole block count */
    const size_t rs = mllm_dtype_row_size(t, K), xs = mllm_dtype_row_size(pvt, K) + 12, ys = (size_t)N + 3;
    char *W = malloc((size_t)N * rs), *P = malloc((size_t)N * rs);
    fill_weights(t, W, N, K, extremes);
    char *X = tu_quant_activations(pvt, M, K, xs, extremes);
    mllm_repack_groups(pt, W, P, K, 0, N / 8);
    const size_t ny = (size_t)M * ys;
    float *want = malloc(ny * sizeof(float)), *got = malloc(ny * sizeof(float));
    for (size_t i = 0; i < ny; i++) want[i] = got[i] = -777.0f;
    for (int64_t m = 0; m < M; m++)
        for (int64_t row = r0; row < r1; row++)
            want[(size_t)m * ys + row] = lane_model(t, W + (size_t)row * rs, K / 256,
                                                    (const mllm_block_q8_k32 *)(X + (size_t)m * xs));
    /* width 0: the AVX2 matmul (its driver's width); then the sets of 8
       through mllm_mul_mat_packed_tiles_n at the widths 5 and 8 */
    static const int widths[] = {0, 5, 8};
    for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
        for (size_t i = 0; i < ny; i++) got[i] = -777.0f;
        if (widths[wi] == 0)
            assert_true(mllm_mul_mat_packed_avx2(pt, P, rs, K, X, xs, M, got, ys, r0, r1));
        else
            assert_true(mllm_mul_mat_packed_tiles_n(mllm_kquant_x8_tiles8_avx2(pt), widths[wi], pt, P, rs, K, X, xs,
                                                    M, got, ys, r0, r1));
        char what[128];
        snprintf(what, sizeof what, "%s N=%lld K=%lld M=%lld [%lld,%lld)%s width %d", mllm_dtype_name(pt),
                 (long long)N, (long long)K, (long long)M, (long long)r0, (long long)r1, extremes ? " extremes" : "",
                 widths[wi]);
        tu_assert_same_floats(want, got, ny, what); /* the rows outside [r0, r1) included: untouched */
    }
    free(W), free(P), free(X), free(want), free(got);
}
#endif

static void test_avx2_kquant_tiles_exact(void **state) {
    (void)state;
#if MLLM_HAVE_X86_KERNELS
    if (!mllm_cpu_has_avx2()) {
        printf("SKIPPED avx2 k-quant packed tiles bit for bit: this CPU has no AVX2\n");
        return;
    }
    static const mllm_dtype types[] = {MLLM_DTYPE_Q4_K, MLLM_DTYPE_Q5_K, MLLM_DTYPE_Q6_K};
    static const int64_t Ks[] = {256, 768, 2304};
    static const struct { int64_t n, r0, r1; } ranges[] = {{8, 0, 8}, {40, 8, 32}, {24, 0, 24}};
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t ki = 0; ki < 3; ki++)
            for (int64_t M = 1; M <= 13; M++)
                for (size_t ri = 0; ri < 3; ri++)
                    check_exact(types[ti], ranges[ri].n, Ks[ki], M, ranges[ri].r0, ranges[ri].r1,
                                (M + (int64_t)ri + (int64_t)ki) % 5 == 0);
    /* several L2 chunks of groups (the last one short), every tile width */
    for (size_t ti = 0; ti < 3; ti++) check_exact(types[ti], 416, 1280, 19, 8, 408, false);
#else
    printf("SKIPPED avx2 k-quant packed tiles bit for bit: not an x86 build\n");
#endif
}

int main(void) {
    mllm_cpu_init();
    printf("cpu path: %s\n", mllm_cpu_path());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_avx2_kquant_tiles_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
