/* AVX2 matmul over the x8 packed layouts (repack.h). One ymm accumulator
   holds 8 output rows; a tile is one 8-row group x up to 4 activation rows,
   so each weight vector is unpacked once and used for all of them.

   q4_0x8 per 32-value block: 4 loads give, after a mask and a shift, 8 ymm
   of (8 rows x 4 values); each meets the 4 matching activation bytes
   broadcast to all lanes (maddubs: unsigned nibble x signed byte). The 8
   int16 products per lane pair sum to at most 8 * 2 * 15 * 127 = 30480, so
   they add up in int16 and one madd gives the block's int32 dot per row;
   the q4_0 offset comes off as q8_0s's precomputed 8 * sum(y). */
#include "backends/cpu/repack_avx2.h"


#define TILE_N PACKED_TILE_N
/* Groups per chunk: the chunk's weights stay in L2 while every activation
   tile passes over them (prefill). */
#define CHUNK_BYTES (160 * 1024)


/* The 8 rows' nibbles (q4_0x8 / q4_1x8 order) of one block against RN
   activation blocks' 32 int8 values: s16[m] gets the int16 pair sums, one
   lane per row (unsigned nibble x signed byte). */
ALWAYS_INLINE void nibble_dots(int RN, const uint8_t *qs, const int8_t *const yq[], __m256i s16[]) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) s16[m] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++) {
        const __m256i raw = _mm256_loadu_si256((const __m256i *)(qs + 32 * t));
        const __m256i lo = _mm256_and_si256(raw, m4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            s16[m] = _mm256_add_epi16(s16[m], _mm256_maddubs_epi16(lo, bcast4(yq[m] + 8 * t)));
            s16[m] = _mm256_add_epi16(s16[m], _mm256_maddubs_epi16(hi, bcast4(yq[m] + 8 * t + 4)));
        }
    }
}

ALWAYS_INLINE void tile_q4_0x8(int RN, const mllm_block_q4_0x8 *w, int64_t nb, const char *X,
                               size_t xs, float *Y, size_t ys) {
    __m256 acc[TILE_N];
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) acc[m] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; b++, w++) {
        prefetch_ahead(w, sizeof *w);
        const mllm_block_q8_0s *y[TILE_N];
        const int8_t *yq[TILE_N];
        __m256i s16[TILE_N];
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            y[m] = (const mllm_block_q8_0s *)(X + (size_t)m * xs) + b;
            yq[m] = y[m]->qs;
        }
        nibble_dots(RN, w->qs, yq, s16);
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w->d));
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            const __m256i isum = _mm256_sub_epi32(_mm256_madd_epi16(s16[m], ones), _mm256_set1_epi32(y[m]->s8));
            acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dx, _mm256_set1_ps(y[m]->d)), acc[m]);
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) _mm256_storeu_ps(Y + (size_t)m * ys, acc[m]);
}

/* q4_1x8 x q8_1: q4_0x8's integer part without the offset; the min term
   m * s_y is one more multiply-add per block. */
ALWAYS_INLINE void tile_q4_1x8(int RN, const mllm_block_q4_1x8 *w, int64_t nb, const char *X,
                               size_t xs, float *Y, size_t ys) {
    __m256 acc[TILE_N];
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) acc[m] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; b++, w++) {
        prefetch_ahead(w, sizeof *w);
        const mllm_block_q8_1 *y[TILE_N];
        const int8_t *yq[TILE_N];
        __m256i s16[TILE_N];
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            y[m] = (const mllm_block_q8_1 *)(X + (size_t)m * xs) + b;
            yq[m] = y[m]->qs;
        }
        nibble_dots(RN, w->qs, yq, s16);
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w->d));
        const __m256 mx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w->m));
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            const __m256i isum = _mm256_madd_epi16(s16[m], ones);
            acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dx, broadcast_f16(&y[m]->d)), acc[m]);
            acc[m] = _mm256_fmadd_ps(mx, broadcast_f16(&y[m]->s), acc[m]);
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) _mm256_storeu_ps(Y + (size_t)m * ys, acc[m]);
}

/* q8_0x8: signed x signed, so maddubs gets |w| and y with w's sign; a pair
   sum reaches 2 * 127 * 127, so each product vector is widened at once. */
ALWAYS_INLINE void tile_q8_0x8(int RN, const mllm_block_q8_0x8 *w, int64_t nb, const char *X,
                               size_t xs, float *Y, size_t ys) {
    __m256 acc[TILE_N];
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) acc[m] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; b++, w++) {
        prefetch_ahead(w, sizeof *w);
        const mllm_block_q8_0 *y[TILE_N];
        __m256i isum[TILE_N];
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            y[m] = (const mllm_block_q8_0 *)(X + (size_t)m * xs) + b;
            isum[m] = _mm256_setzero_si256();
        }
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(w->qs + 32 * g));
            const __m256i aq = _mm256_sign_epi8(q, q);
#pragma GCC unroll 4
            for (int m = 0; m < RN; m++) {
                const __m256i sy = _mm256_sign_epi8(bcast4(y[m]->qs + 4 * g), q);
                isum[m] = _mm256_add_epi32(isum[m], _mm256_madd_epi16(_mm256_maddubs_epi16(aq, sy), ones));
            }
        }
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w->d));
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++)
            acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[m]), _mm256_mul_ps(dx, broadcast_f16(&y[m]->d)), acc[m]);
    }
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) _mm256_storeu_ps(Y + (size_t)m * ys, acc[m]);
}



PACKED_GROUP_SET(tile_q4_0x8, mllm_block_q4_0x8)
PACKED_GROUP_SET(tile_q8_0x8, mllm_block_q8_0x8)
PACKED_GROUP_SET(tile_q4_1x8, mllm_block_q4_1x8)

bool mllm_mul_mat_packed_avx2(mllm_dtype wt, const void *W, size_t w_stride, int64_t K,
                              const void *X, size_t x_stride, int64_t M, float *Y,
                              size_t y_stride, int64_t r0, int64_t r1) {
    const mllm_packed_group_fn *set = wt == MLLM_DTYPE_Q4_0_X8   ? tile_q4_0x8_set
                                      : wt == MLLM_DTYPE_Q8_0_X8 ? tile_q8_0x8_set
                                      : wt == MLLM_DTYPE_Q4_1_X8 ? tile_q4_1x8_set
                                                                 : mllm_kquant_x8_tiles_avx2(wt);
    const int qk = mllm_dtype_get(wt) ? mllm_dtype_get(wt)->block_size : 0;
    if (!set || qk <= 0 || r0 % 8 != 0 || r1 % 8 != 0 || K % qk != 0) return false;
    const size_t group_bytes = 8 * w_stride;
    const int64_t nb = K / qk, g0 = r0 / 8, g1 = r1 / 8;
    int64_t chunk = (int64_t)(CHUNK_BYTES / group_bytes);
    if (chunk < 1 || M <= TILE_N) chunk = g1 - g0; /* decode: one pass, nothing to reuse */
    const char *w = W, *x = X;
    for (int64_t gc = g0; gc < g1; gc += chunk) {
        const int64_t ge = gc + chunk < g1 ? gc + chunk : g1;
        for (int64_t m = 0; m < M; m += TILE_N) {
            const int rn = (int)(M - m < TILE_N ? M - m : TILE_N);
            for (int64_t g = gc; g < ge; g++)
                set[rn - 1](w + (size_t)g * group_bytes, nb, x + (size_t)m * x_stride, x_stride,
                            Y + (size_t)m * y_stride + 8 * g, y_stride);
        }
    }
    return true;
}
