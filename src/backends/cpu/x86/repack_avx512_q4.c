/* AVX-512 (F, BW, VL, DQ, VNNI) matmul for the q4_0x8, q4_1x8 and q5_0x8
   packed layouts (repack.h): the hot spot of batched serving of q4 models
   (8 sequences per forward, src/server). The weights' values are unsigned
   (nibbles 0..15, or 0..31 with q5_0's fifth bit), so vpdpbusd (4 unsigned
   bytes x 4 signed activation bytes, summed into an int32 lane) takes them
   as they are after a mask: one instruction per 4 values per lane where the
   AVX2 tile (repack_avx2.c) spends a maddubs, an int16 add and a final
   madd. One zmm holds two 8-row groups (16 output rows), so 4 activation
   bytes broadcast from memory feed 16 rows; an odd last group runs on ymm.
   A tile is up to 8 activation rows (the AVX2 one takes 4), so a batch of
   8 sequences reads each weight chunk once.

   Per block and row: q4_0's int32 sum starts from -8 * sum(y) (q8_0s's s8,
   the offset 8), q5_0's from -2 * s8 (the offset 16), q4_1's from 0 (its
   min comes as a float term m * s_y). The block's integer dot is exact, so
   it equals the AVX2 tile's; the float steps (convert, d_w * d_y, the FMA,
   q4_1's second FMA of m * s_y) are the AVX2 tile's, operation for
   operation and per lane, so the output is bit-identical to
   mllm_mul_mat_packed_avx2's (the kernel test checks it with memcmp). The
   activation scales (q8_1's f16 d and s, q8_0s's float d) and the int32
   starts are read into small arrays once per pass over a chunk of weight
   groups, so the block's tail is broadcasts from memory. Measured:
   bench/history/2026-12-01_to_2026-12-03.md ("AVX-512 VNNI q4_0/q4_1 tiles"). */
#include <immintrin.h>
#include <string.h>

#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/repack.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define TN 8 /* activation rows per tile: 8 int32 + 8 float accumulators */
/* Block terms per pass (3 x 16 KB on the stack): K up to 16384 with 8 rows. */
#define SUM_MAX 4096
/* Weight bytes per chunk of groups, as the AVX2 driver's (repack.c): the
   chunk stays in L2 while every activation tile passes over it. */
#define CHUNK_BYTES (160 * 1024)
/* Bytes ahead in a group's block stream. A server step's matmuls are small
   (96-768 rows a thread), so this reaches into the next groups: with 2048,
   shuffled 96-row slices of a q4_1x8 matrix ran at 190-270 GFLOP/s, with
   4096 at 275-295 (bench/history/2026-12-01_to_2026-12-03.md). */
#define PF_AHEAD 4096

/* The three layouts: which activation block, how the int32 sum starts, and
   whether a min term or fifth bits come in. KIND is a constant at each call. */
enum { K_Q4_0, K_Q4_1, K_Q5_0 };

ALWAYS_INLINE size_t wblock_bytes(int kind) {
    return kind == K_Q4_1 ? sizeof(mllm_block_q4_1x8) : kind == K_Q5_0 ? sizeof(mllm_block_q5_0x8) : sizeof(mllm_block_q4_0x8);
}
ALWAYS_INLINE size_t yblock_bytes(int kind) { return kind == K_Q4_1 ? sizeof(mllm_block_q8_1) : sizeof(mllm_block_q8_0s); }
ALWAYS_INLINE const uint8_t *wqs(int kind, const char *w) {
    return kind == K_Q4_1 ? ((const mllm_block_q4_1x8 *)w)->qs
           : kind == K_Q5_0 ? ((const mllm_block_q5_0x8 *)w)->qs
                            : ((const mllm_block_q4_0x8 *)w)->qs;
}
ALWAYS_INLINE const int8_t *yqs(int kind, const char *y) {
    return kind == K_Q4_1 ? ((const mllm_block_q8_1 *)y)->qs : ((const mllm_block_q8_0s *)y)->qs;
}

static inline int32_t load4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* For row i < n, block b (index i * nb + b): the activation scale and, for
   q4_1, the activation sum term s_y, as floats; for q4_0 and q5_0 the
   int32 sum's start (q4_1's is 0). */
static void block_terms(int kind, const char *X, size_t xs, int64_t n, int64_t nb, int32_t *start, float *dy,
                        float *sy) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t b = 0; b < nb; b++) {
            const char *y = X + (size_t)i * xs + (size_t)b * yblock_bytes(kind);
            if (kind == K_Q4_1) {
                dy[i * nb + b] = _cvtsh_ss(((const mllm_block_q8_1 *)y)->d);
                sy[i * nb + b] = _cvtsh_ss(((const mllm_block_q8_1 *)y)->s);
            } else {
                const mllm_block_q8_0s *q = (const mllm_block_q8_0s *)y;
                start[i * nb + b] = kind == K_Q5_0 ? -2 * q->s8 : -q->s8;
                dy[i * nb + b] = q->d;
            }
        }
}

/* Bit k of each byte to bit 4 (masked): repack_avx2.c's bit_to_4 on zmm.
   16-bit shifts keep each byte's own bits at bit 4 since k <= 7. */
ALWAYS_INLINE __m512i bit_to_4_512(__m512i v, int k) {
    const __m512i b4 = _mm512_set1_epi8(0x10);
    return _mm512_and_si512(k <= 4 ? _mm512_slli_epi16(v, (unsigned)(4 - k)) : _mm512_srli_epi16(v, (unsigned)(k - 4)), b4);
}
ALWAYS_INLINE __m256i bit_to_4_256(__m256i v, int k) {
    const __m256i b4 = _mm256_set1_epi8(0x10);
    return _mm256_and_si256(k <= 4 ? _mm256_slli_epi16(v, 4 - k) : _mm256_srli_epi16(v, k - 4), b4);
}

static inline __m512i join256(const void *a, const void *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}
/* 8 f16 at a and 8 at b as 16 floats. */
static inline __m512 join_f16(const void *a, const void *b) {
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                                   _mm_loadu_si128((const __m128i *)b), 1));
}

/* Groups wa and wb (nb blocks each) x RN activation rows: Y[m * ys + 0..15].
   Per block: the 4 x 32 bytes of nibbles of both groups, each meeting the
   8 activation bytes of its t (low nibbles: values 8t..8t+3, high:
   8t+4..8t+7). */
ALWAYS_INLINE void tile16(int KIND, int RN, const char *wa, const char *wb, int64_t nb, const char *X, size_t xs,
                          const int32_t *start, const float *dy, const float *sy, float *Y, size_t ys) {
    const size_t bs = wblock_bytes(KIND), ybs = yblock_bytes(KIND);
    __m512 acc[TN];
#pragma GCC unroll 8
    for (int m = 0; m < RN; m++) acc[m] = _mm512_setzero_ps();
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; b++, wa += bs, wb += bs) {
        for (size_t o = 0; o < bs; o += 64) {
            _mm_prefetch(wa + PF_AHEAD + o, _MM_HINT_T0);
            _mm_prefetch(wb + PF_AHEAD + o, _MM_HINT_T0);
        }
        const uint8_t *qa = wqs(KIND, wa), *qb = wqs(KIND, wb);
        __m512i qh = _mm512_setzero_si512();
        if (KIND == K_Q5_0) qh = join256(((const mllm_block_q5_0x8 *)wa)->qh, ((const mllm_block_q5_0x8 *)wb)->qh);
        const int8_t *y[TN];
        __m512i s[TN];
#pragma GCC unroll 8
        for (int m = 0; m < RN; m++) {
            y[m] = yqs(KIND, X + (size_t)m * xs + (size_t)b * ybs);
            s[m] = KIND == K_Q4_1 ? _mm512_setzero_si512() : _mm512_set1_epi32(start[(int64_t)m * nb + b]);
        }
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) {
            const __m512i raw = join256(qa + 32 * t, qb + 32 * t);
            __m512i lo = _mm512_and_si512(raw, m4), hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
            if (KIND == K_Q5_0) {
                lo = _mm512_or_si512(lo, bit_to_4_512(qh, 2 * t));
                hi = _mm512_or_si512(hi, bit_to_4_512(qh, 2 * t + 1));
            }
#pragma GCC unroll 8
            for (int m = 0; m < RN; m++) {
                s[m] = _mm512_dpbusd_epi32(s[m], lo, _mm512_set1_epi32(load4(y[m] + 8 * t)));
                s[m] = _mm512_dpbusd_epi32(s[m], hi, _mm512_set1_epi32(load4(y[m] + 8 * t + 4)));
            }
        }
        /* d[8] leads every layout; q4_1's m[8] follows it */
        const __m512 dx = join_f16(wa, wb);
        if (KIND == K_Q4_1) {
            const __m512 mx = join_f16(((const mllm_block_q4_1x8 *)wa)->m, ((const mllm_block_q4_1x8 *)wb)->m);
#pragma GCC unroll 8
            for (int m = 0; m < RN; m++) {
                const int64_t i = (int64_t)m * nb + b;
                acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[m]), _mm512_mul_ps(dx, _mm512_set1_ps(dy[i])), acc[m]);
                acc[m] = _mm512_fmadd_ps(mx, _mm512_set1_ps(sy[i]), acc[m]);
            }
        } else {
#pragma GCC unroll 8
            for (int m = 0; m < RN; m++)
                acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[m]), _mm512_mul_ps(dx, _mm512_set1_ps(dy[(int64_t)m * nb + b])),
                                         acc[m]);
        }
    }
#pragma GCC unroll 8
    for (int m = 0; m < RN; m++) _mm512_storeu_ps(Y + (size_t)m * ys, acc[m]);
}

/* One group (the odd last one) on ymm: Y[m * ys + 0..7]. */
ALWAYS_INLINE void tile8(int KIND, int RN, const char *w, int64_t nb, const char *X, size_t xs, const int32_t *start,
                         const float *dy, const float *sy, float *Y, size_t ys) {
    const size_t bs = wblock_bytes(KIND), ybs = yblock_bytes(KIND);
    __m256 acc[TN];
#pragma GCC unroll 8
    for (int m = 0; m < RN; m++) acc[m] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; b++, w += bs) {
        const uint8_t *q = wqs(KIND, w);
        __m256i qh = _mm256_setzero_si256();
        if (KIND == K_Q5_0) qh = _mm256_loadu_si256((const __m256i *)((const mllm_block_q5_0x8 *)w)->qh);
        const int8_t *y[TN];
        __m256i s[TN];
#pragma GCC unroll 8
        for (int m = 0; m < RN; m++) {
            y[m] = yqs(KIND, X + (size_t)m * xs + (size_t)b * ybs);
            s[m] = KIND == K_Q4_1 ? _mm256_setzero_si256() : _mm256_set1_epi32(start[(int64_t)m * nb + b]);
        }
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) {
            const __m256i raw = _mm256_loadu_si256((const __m256i *)(q + 32 * t));
            __m256i lo = _mm256_and_si256(raw, m4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
            if (KIND == K_Q5_0) {
                lo = _mm256_or_si256(lo, bit_to_4_256(qh, 2 * t));
                hi = _mm256_or_si256(hi, bit_to_4_256(qh, 2 * t + 1));
            }
#pragma GCC unroll 8
            for (int m = 0; m < RN; m++) {
                s[m] = _mm256_dpbusd_epi32(s[m], lo, _mm256_set1_epi32(load4(y[m] + 8 * t)));
                s[m] = _mm256_dpbusd_epi32(s[m], hi, _mm256_set1_epi32(load4(y[m] + 8 * t + 4)));
            }
        }
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w));
        if (KIND == K_Q4_1) {
            const __m256 mx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const mllm_block_q4_1x8 *)w)->m));
#pragma GCC unroll 8
            for (int m = 0; m < RN; m++) {
                const int64_t i = (int64_t)m * nb + b;
                acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[m]), _mm256_mul_ps(dx, _mm256_set1_ps(dy[i])), acc[m]);
                acc[m] = _mm256_fmadd_ps(mx, _mm256_set1_ps(sy[i]), acc[m]);
            }
        } else {
#pragma GCC unroll 8
            for (int m = 0; m < RN; m++)
                acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[m]), _mm256_mul_ps(dx, _mm256_set1_ps(dy[(int64_t)m * nb + b])),
                                         acc[m]);
        }
    }
#pragma GCC unroll 8
    for (int m = 0; m < RN; m++) _mm256_storeu_ps(Y + (size_t)m * ys, acc[m]);
}

typedef void (*tile16_fn)(const char *wa, const char *wb, int64_t nb, const char *X, size_t xs, const int32_t *start,
                          const float *dy, const float *sy, float *Y, size_t ys);
typedef void (*tile8_fn)(const char *w, int64_t nb, const char *X, size_t xs, const int32_t *start, const float *dy,
                         const float *sy, float *Y, size_t ys);
#define TILES(KIND, RN)                                                                                             \
    static void t16_##KIND##_##RN(const char *wa, const char *wb, int64_t nb, const char *X, size_t xs,            \
                                  const int32_t *start, const float *dy, const float *sy, float *Y, size_t ys) {   \
        tile16(KIND, RN, wa, wb, nb, X, xs, start, dy, sy, Y, ys);                                                  \
    }                                                                                                               \
    static void t8_##KIND##_##RN(const char *w, int64_t nb, const char *X, size_t xs, const int32_t *start,        \
                                 const float *dy, const float *sy, float *Y, size_t ys) {                          \
        tile8(KIND, RN, w, nb, X, xs, start, dy, sy, Y, ys);                                                        \
    }
#define KIND_TILES(KIND)                                                                                            \
    TILES(KIND, 1) TILES(KIND, 2) TILES(KIND, 3) TILES(KIND, 4) TILES(KIND, 5) TILES(KIND, 6) TILES(KIND, 7)       \
    TILES(KIND, 8)                                                                                                  \
    static const tile16_fn k_t16_##KIND[TN] = {t16_##KIND##_1, t16_##KIND##_2, t16_##KIND##_3, t16_##KIND##_4,      \
                                               t16_##KIND##_5, t16_##KIND##_6, t16_##KIND##_7, t16_##KIND##_8};     \
    static const tile8_fn k_t8_##KIND[TN] = {t8_##KIND##_1, t8_##KIND##_2, t8_##KIND##_3, t8_##KIND##_4,            \
                                             t8_##KIND##_5, t8_##KIND##_6, t8_##KIND##_7, t8_##KIND##_8};
KIND_TILES(K_Q4_0)
KIND_TILES(K_Q4_1)
KIND_TILES(K_Q5_0)

bool mllm_mul_mat_packed_avx512_q4(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X,
                                   size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1) {
    const int kind = wt == MLLM_DTYPE_Q4_0_X8 ? K_Q4_0 : wt == MLLM_DTYPE_Q4_1_X8 ? K_Q4_1 : wt == MLLM_DTYPE_Q5_0_X8 ? K_Q5_0 : -1;
    if (kind < 0 || r0 % 8 != 0 || r1 % 8 != 0 || K % 32 != 0 || K / 32 > SUM_MAX / TN) return false;
    const tile16_fn *t16 = kind == K_Q4_0 ? k_t16_K_Q4_0 : kind == K_Q4_1 ? k_t16_K_Q4_1 : k_t16_K_Q5_0;
    const tile8_fn *t8 = kind == K_Q4_0 ? k_t8_K_Q4_0 : kind == K_Q4_1 ? k_t8_K_Q4_1 : k_t8_K_Q5_0;
    const int64_t nb = K / 32, g0 = r0 / 8, g1 = r1 / 8;
    const size_t group_bytes = 8 * w_stride;
    int64_t chunk = (int64_t)(CHUNK_BYTES / group_bytes) & ~(int64_t)1;
    if (chunk < 2 || M <= TN) chunk = g1 - g0; /* decode and batches up to 8: one pass, each weight read once */
    /* rows whose block terms fit the buffers, a whole number of tiles */
    const int64_t mc = SUM_MAX / nb / TN * TN;
    int32_t start[SUM_MAX]; /* (row, block) */
    float dy[SUM_MAX], sy[SUM_MAX]; /* (row, block) */
    const char *w = W, *x = X;
    for (int64_t gc = g0; gc < g1; gc += chunk) {
        const int64_t ge = gc + chunk < g1 ? gc + chunk : g1;
        for (int64_t m0 = 0; m0 < M; m0 += mc) {
            const int64_t m1 = m0 + mc < M ? m0 + mc : M;
            block_terms(kind, x + (size_t)m0 * x_stride, x_stride, m1 - m0, nb, start, dy, sy);
            for (int64_t m = m0; m < m1; m += TN) {
                const int rn = (int)(m1 - m < TN ? m1 - m : TN);
                const char *xm = x + (size_t)m * x_stride;
                const size_t o = (size_t)(m - m0) * (size_t)nb; /* this tile's terms */
                float *ym = Y + (size_t)m * y_stride;
                int64_t g = gc;
                for (; g + 2 <= ge; g += 2)
                    t16[rn - 1](w + (size_t)g * group_bytes, w + (size_t)(g + 1) * group_bytes, nb, xm, x_stride,
                                start + o, dy + o, sy + o, ym + 8 * g, y_stride);
                if (g < ge)
                    t8[rn - 1](w + (size_t)g * group_bytes, nb, xm, x_stride, start + o, dy + o, sy + o, ym + 8 * g,
                               y_stride);
            }
        }
    }
    return true;
}
