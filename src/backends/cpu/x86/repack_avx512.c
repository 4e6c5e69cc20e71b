/* AVX-512 (F, BW, VL, DQ, VNNI) matmul for the q8_0x8 packed layout
   (repack.h) x q8_0 activations. vpdpbusd multiplies 4 unsigned bytes by 4
   signed ones and adds the sum to an int32 lane: one instruction where the
   AVX2 tile spends two sign ops, maddubs, madd and add. The weights are
   made unsigned by flipping their top bit (w ^ 0x80 = w + 128); the
   128 * sum(y) that adds is where each block's int32 sums start from
   (negated), and the activation scale is read as a float: both computed
   once per pass over a chunk of weight groups, so a block's tail is a
   convert, a multiply and an FMA per activation row. One zmm
   holds two 8-row groups (16 output rows), so 4 activation bytes broadcast
   from memory feed 16 rows; an odd last group runs on ymm.

   The block's integer dot is exact (any int8 values), and the scale and
   the accumulation are the AVX2 tile's, operation for operation: the
   output is bit-identical to mllm_mul_mat_packed_avx2's, which the kernel
   test checks. Measured on Whisper tiny.en's encoder (Sapphire Rapids):
   bench/history/2026-12-01_to_2026-12-03.md. The q4_0x8, q4_1x8 and q5_0x8 layouts have their own
   tiles (repack_avx512_q4.c), which mllm_mul_mat_packed_avx512 hands them
   to. */
#include <immintrin.h>
#include <string.h>

#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/repack.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define TN 8 /* activation rows per tile: 8 int32 + 8 float accumulators */
/* Block terms per pass (2 x 16 KB on the stack): K up to 16384 with 8 rows. */
#define SUM_MAX 4096
/* Weight bytes per chunk of groups, as the AVX2 driver's (repack.c): the
   chunk stays in L2 while every activation row passes over it. */
#define CHUNK_BYTES (160 * 1024)
#define PF_AHEAD 512 /* bytes ahead in a group's block stream */

static inline int32_t load4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* For row i < n, block b: neg[i * nb + b] = -128 * (sum of its values),
   d[i * nb + b] = its scale as a float. */
static void block_terms(const char *X, size_t xs, int64_t n, int64_t nb, int32_t *neg, float *d) {
    const __m256i flip = _mm256_set1_epi8((char)0x80), zero = _mm256_setzero_si256();
    for (int64_t i = 0; i < n; i++) {
        const mllm_block_q8_0 *y = (const mllm_block_q8_0 *)(X + (size_t)i * xs);
        for (int64_t b = 0; b < nb; b++) {
            /* y + 128 as unsigned bytes, summed 8 at a time */
            const __m256i u = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)y[b].qs), flip);
            const __m256i s = _mm256_sad_epu8(u, zero);
            const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
            const int64_t t = _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
            neg[i * nb + b] = (int32_t)(-128 * (t - 32 * 128));
            d[i * nb + b] = _cvtsh_ss(y[b].d);
        }
    }
}

/* Groups a and b (nb blocks each) x RN activation rows: Y[m * ys + 0..15]. */
ALWAYS_INLINE void tile16(int RN, const mllm_block_q8_0x8 *wa, const mllm_block_q8_0x8 *wb, int64_t nb,
                          const char *X, size_t xs, const int32_t *neg, const float *dy, float *Y, size_t ys) {
    __m512 acc[TN];
#pragma GCC unroll 8
    for (int m = 0; m < RN; m++) acc[m] = _mm512_setzero_ps();
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++) {
        for (int o = 0; o < 320; o += 64) { /* both groups' next blocks (272 bytes each) */
            _mm_prefetch((const char *)(wa + b) + PF_AHEAD + o, _MM_HINT_T0);
            _mm_prefetch((const char *)(wb + b) + PF_AHEAD + o, _MM_HINT_T0);
        }
        const mllm_block_q8_0 *y[TN];
        __m512i s[TN];
#pragma GCC unroll 8
        for (int m = 0; m < RN; m++) {
            y[m] = (const mllm_block_q8_0 *)(X + (size_t)m * xs) + b;
            s[m] = _mm512_set1_epi32(neg[(int64_t)m * nb + b]);
        }
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) {
            const __m256i lo = _mm256_loadu_si256((const __m256i *)(wa[b].qs + 32 * g));
            const __m256i hi = _mm256_loadu_si256((const __m256i *)(wb[b].qs + 32 * g));
            const __m512i u = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), flip);
#pragma GCC unroll 8
            for (int m = 0; m < RN; m++) s[m] = _mm512_dpbusd_epi32(s[m], u, _mm512_set1_epi32(load4(y[m]->qs + 4 * g)));
        }
        const __m256i d16 = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)wa[b].d)),
                                                    _mm_loadu_si128((const __m128i *)wb[b].d), 1);
        const __m512 dx = _mm512_cvtph_ps(d16);
#pragma GCC unroll 8
        for (int m = 0; m < RN; m++)
            acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[m]), _mm512_mul_ps(dx, _mm512_set1_ps(dy[(int64_t)m * nb + b])),
                                     acc[m]);
    }
#pragma GCC unroll 8
    for (int m = 0; m < RN; m++) _mm512_storeu_ps(Y + (size_t)m * ys, acc[m]);
}

/* One group (the odd last one) on ymm: Y[m * ys + 0..7]. */
ALWAYS_INLINE void tile8(int RN, const mllm_block_q8_0x8 *w, int64_t nb, const char *X, size_t xs,
                         const int32_t *neg, const float *dy, float *Y, size_t ys) {
    __m256 acc[TN];
#pragma GCC unroll 8
    for (int m = 0; m < RN; m++) acc[m] = _mm256_setzero_ps();
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++) {
        const mllm_block_q8_0 *y[TN];
        __m256i s[TN];
#pragma GCC unroll 8
        for (int m = 0; m < RN; m++) {
            y[m] = (const mllm_block_q8_0 *)(X + (size_t)m * xs) + b;
            s[m] = _mm256_set1_epi32(neg[(int64_t)m * nb + b]);
        }
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) {
            const __m256i u = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(w[b].qs + 32 * g)), flip);
#pragma GCC unroll 8
            for (int m = 0; m < RN; m++) s[m] = _mm256_dpbusd_epi32(s[m], u, _mm256_set1_epi32(load4(y[m]->qs + 4 * g)));
        }
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w[b].d));
#pragma GCC unroll 8
        for (int m = 0; m < RN; m++)
            acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[m]), _mm256_mul_ps(dx, _mm256_set1_ps(dy[(int64_t)m * nb + b])),
                                     acc[m]);
    }
#pragma GCC unroll 8
    for (int m = 0; m < RN; m++) _mm256_storeu_ps(Y + (size_t)m * ys, acc[m]);
}

typedef void (*tile16_fn)(const mllm_block_q8_0x8 *wa, const mllm_block_q8_0x8 *wb, int64_t nb, const char *X,
                          size_t xs, const int32_t *neg, const float *dy, float *Y, size_t ys);
typedef void (*tile8_fn)(const mllm_block_q8_0x8 *w, int64_t nb, const char *X, size_t xs, const int32_t *neg,
                         const float *dy, float *Y, size_t ys);
#define TILES(RN)                                                                                              \
    static void t16_##RN(const mllm_block_q8_0x8 *wa, const mllm_block_q8_0x8 *wb, int64_t nb, const char *X, \
                         size_t xs, const int32_t *neg, const float *dy, float *Y, size_t ys) {               \
        tile16(RN, wa, wb, nb, X, xs, neg, dy, Y, ys);                                                         \
    }                                                                                                          \
    static void t8_##RN(const mllm_block_q8_0x8 *w, int64_t nb, const char *X, size_t xs, const int32_t *neg, \
                        const float *dy, float *Y, size_t ys) {                                                \
        tile8(RN, w, nb, X, xs, neg, dy, Y, ys);                                                               \
    }
TILES(1) TILES(2) TILES(3) TILES(4) TILES(5) TILES(6) TILES(7) TILES(8)
static const tile16_fn k_t16[TN] = {t16_1, t16_2, t16_3, t16_4, t16_5, t16_6, t16_7, t16_8};
static const tile8_fn k_t8[TN] = {t8_1, t8_2, t8_3, t8_4, t8_5, t8_6, t8_7, t8_8};

bool mllm_mul_mat_packed_avx512(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X,
                                size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1) {
    if (wt == MLLM_DTYPE_Q4_0_X8 || wt == MLLM_DTYPE_Q4_1_X8 || wt == MLLM_DTYPE_Q5_0_X8) /* repack_avx512_q4.c */
        return mllm_mul_mat_packed_avx512_q4(wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1);
    if (wt == MLLM_DTYPE_Q4_K_X8 || wt == MLLM_DTYPE_Q5_K_X8 || wt == MLLM_DTYPE_Q6_K_X8) /* repack_kquant_avx512.c */
        return mllm_mul_mat_packed_kq_avx512(wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1);
    if (wt != MLLM_DTYPE_Q8_0_X8 || r0 % 8 != 0 || r1 % 8 != 0 || K % 32 != 0 || K / 32 > SUM_MAX / TN) return false;
    const int64_t nb = K / 32, g0 = r0 / 8, g1 = r1 / 8;
    const size_t group_bytes = 8 * w_stride;
    int64_t chunk = (int64_t)(CHUNK_BYTES / group_bytes) & ~(int64_t)1;
    if (chunk < 2 || M <= TN) chunk = g1 - g0; /* decode: one pass, nothing to reuse */
    /* rows whose block terms fit the buffers, a whole number of tiles */
    const int64_t mc = SUM_MAX / nb / TN * TN;
    int32_t neg[SUM_MAX];
    float dy[SUM_MAX];
    const char *w = W, *x = X;
    for (int64_t gc = g0; gc < g1; gc += chunk) {
        const int64_t ge = gc + chunk < g1 ? gc + chunk : g1;
        for (int64_t m0 = 0; m0 < M; m0 += mc) {
            const int64_t m1 = m0 + mc < M ? m0 + mc : M;
            block_terms(x + (size_t)m0 * x_stride, x_stride, m1 - m0, nb, neg, dy);
            for (int64_t m = m0; m < m1; m += TN) {
                const int rn = (int)(m1 - m < TN ? m1 - m : TN);
                const char *xm = x + (size_t)m * x_stride;
                const int32_t *nm = neg + (m - m0) * nb;
                const float *dm = dy + (m - m0) * nb;
                float *ym = Y + (size_t)m * y_stride;
                int64_t g = gc;
                for (; g + 2 <= ge; g += 2)
                    k_t16[rn - 1]((const mllm_block_q8_0x8 *)(w + (size_t)g * group_bytes),
                                  (const mllm_block_q8_0x8 *)(w + (size_t)(g + 1) * group_bytes), nb, xm, x_stride, nm,
                                  dm, ym + 8 * g, y_stride);
                if (g < ge)
                    k_t8[rn - 1]((const mllm_block_q8_0x8 *)(w + (size_t)g * group_bytes), nb, xm, x_stride, nm, dm,
                                 ym + 8 * g, y_stride);
            }
        }
    }
    return true;
}
