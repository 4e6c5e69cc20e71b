/* AVX2 tiles for the q4_Kx8 / q5_Kx8 / q6_Kx8 packed layouts (repack.h)
   against q8_K32 activations: one ymm lane per output row, one tile = one
   8-row group x up to 4 activation rows. Per-sub-block weight scales reach
   the lanes as int16 pairs (s, s), so one madd both widens the int16
   products and applies the scale; each 32-value sub-block's exact int32 sum
   is then converted and multiplied by its activation scale d[j] in float
   (kq32_combine, kquants.h, up to float order).

   Integer ranges: q4_K nibble x int8 pairs <= 3810, 8 of them per int16
   lane (one 32-value sub-block) <= 30480; q6_K 6-bit x int8 pairs <= 16002,
   2 per int16 lane <= 32004. Block sums stay far inside int32. */
#include "backends/cpu/x86/repack_avx2.h"
#include "backends/cpu/kquants.h"

#include <stdbool.h>


#define TILE_N PACKED_TILE_N


/* pshufb masks, per 128-bit half (rows 0..3 low, 4..7 high), Z = zero byte.
   DUP(o): lane of row r gets the int16 pair (b[o + r], b[o + r]) from a
   16-byte chunk b of [sub-block][row] bytes; PAIR: (b[r], b[8 + r]). */
#define Z -128
#define DUP(o)                                                                                   \
    _mm256_setr_epi8(o, Z, o, Z, o + 1, Z, o + 1, Z, o + 2, Z, o + 2, Z, o + 3, Z, o + 3, Z,     \
                     o + 4, Z, o + 4, Z, o + 5, Z, o + 5, Z, o + 6, Z, o + 6, Z, o + 7, Z, o + 7, Z)

/* q4_Kx8 and q5_Kx8 share everything but the fifth bit: Q5 is a constant
   at each call, so each tile compiles to its own straight code. */
ALWAYS_INLINE void tile_k45(int RN, bool Q5, const uint8_t *wb, int64_t nb, const char *X, size_t xs,
                            float *Y, size_t ys) {
    const size_t bsize = Q5 ? sizeof(mllm_block_q5_kx8) : sizeof(mllm_block_q4_kx8);
    __m256 acc[TILE_N];
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) acc[m] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0f), m6 = _mm256_set1_epi8(63), m30 = _mm256_set1_epi8(0x30);
    const __m256i dup_even = DUP(0), dup_odd = DUP(8);
    const __m256i bit4 = _mm256_set1_epi8(0x10);
    for (int64_t b = 0; b < nb; b++, wb += bsize) {
        prefetch_ahead(wb, bsize);
        /* same offsets in both structs up to the quants */
        const mllm_block_q4_kx8 *w = (const mllm_block_q4_kx8 *)wb;
        const uint8_t *qs = Q5 ? ((const mllm_block_q5_kx8 *)wb)->qs : w->qs;
        const uint8_t *qh = Q5 ? ((const mllm_block_q5_kx8 *)wb)->qh : NULL;
        /* The 12 scale bytes of 8 rows, [byte][row], to 6-bit scales and
           mins as [sub-block][row] bytes (kq_scale_min, 8 rows at once). */
        const __m256i v0 = _mm256_loadu_si256((const __m256i *)w->scales);
        const __m256i v1 = _mm256_loadu_si256((const __m256i *)(w->scales + 32));
        const __m256i v2 = _mm256_loadu_si256((const __m256i *)(w->scales + 64));
        const __m256i sc03 = _mm256_and_si256(v0, m6), mn03 = _mm256_and_si256(v1, m6);
        const __m256i sc47 = _mm256_or_si256(_mm256_and_si256(v2, m4), _mm256_and_si256(_mm256_srli_epi16(v0, 2), m30));
        const __m256i mn47 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v2, 4), m4),
                                             _mm256_and_si256(_mm256_srli_epi16(v1, 2), m30));
        /* chunk c: sub-blocks 2c and 2c + 1 for all 8 rows, in both halves */
        const __m256i scb[4] = {_mm256_permute2x128_si256(sc03, sc03, 0x00), _mm256_permute2x128_si256(sc03, sc03, 0x11),
                                _mm256_permute2x128_si256(sc47, sc47, 0x00), _mm256_permute2x128_si256(sc47, sc47, 0x11)};
        const mllm_block_q8_k32 *y[TILE_N];
        __m256 sa[TILE_N];
        /* The min term first: acc -= dmin * sum_j m_j * (ysum_j * dy_j),
           ysum_j = sum of sub-block j's 32 activation quants. */
        float yt[TILE_N][8];
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            y[m] = (const mllm_block_q8_k32 *)(X + (size_t)m * xs) + b;
            const __m128i ysum = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)y[m]->bsums),
                                                _mm_loadu_si128((const __m128i *)(y[m]->bsums + 8)));
            _mm256_storeu_ps(yt[m], _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(ysum)), _mm256_loadu_ps(y[m]->d)));
            sa[m] = _mm256_setzero_ps();
        }
        {
            const __m128i mq[4] = {_mm256_castsi256_si128(mn03), _mm256_extracti128_si256(mn03, 1),
                                   _mm256_castsi256_si128(mn47), _mm256_extracti128_si256(mn47, 1)};
            __m256 sb[TILE_N];
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++) {
                const __m128i bytes = j % 2 ? _mm_unpackhi_epi64(mq[j / 2], mq[j / 2]) : mq[j / 2];
                const __m256 mf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)); /* m_j of the 8 rows */
#pragma GCC unroll 4
                for (int m = 0; m < RN; m++)
                    sb[m] = j == 0 ? _mm256_mul_ps(mf, _mm256_set1_ps(yt[m][0]))
                                   : _mm256_fmadd_ps(mf, _mm256_set1_ps(yt[m][j]), sb[m]);
            }
            const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w->dmin));
#pragma GCC unroll 4
            for (int m = 0; m < RN; m++) acc[m] = _mm256_fnmadd_ps(sb[m], dmin, acc[m]);
        }
#pragma GCC unroll 1
        for (int c = 0; c < 4; c++) {
            const __m256i sce = _mm256_shuffle_epi8(scb[c], dup_even), sco = _mm256_shuffle_epi8(scb[c], dup_odd);
            /* q4_K: 8 products of <= 3810 per int16 lane; q5_K (values to
               31, <= 7874): 4, so the sums are taken every 4 steps */
            const int n_half = Q5 ? 2 : 1, tn = Q5 ? 4 : 8;
            __m256i alo[TILE_N], ahi[TILE_N]; /* sc * sum(q * y) of sub-blocks 2c, 2c + 1, per row */
#pragma GCC unroll 4
            for (int m = 0; m < RN; m++) alo[m] = ahi[m] = _mm256_setzero_si256();
            for (int half = 0; half < n_half; half++) {
                __m256i slo[TILE_N], shi[TILE_N];
#pragma GCC unroll 4
                for (int m = 0; m < RN; m++) slo[m] = shi[m] = _mm256_setzero_si256();
#pragma GCC unroll 8
                for (int tt = 0; tt < tn; tt++) {
                    const int t = tn * half + tt;
                    const __m256i raw = _mm256_loadu_si256((const __m256i *)(qs + 256 * c + 32 * t));
                    __m256i lo = _mm256_and_si256(raw, m4);
                    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
                    if (Q5) { /* bits 2c and 2c + 1 of the qh bytes, to bit 4 */
                        const __m256i h = _mm256_loadu_si256((const __m256i *)(qh + 32 * t));
                        const __m256i hl = 2 * c <= 4 ? _mm256_slli_epi16(h, 4 - 2 * c) : _mm256_srli_epi16(h, 2 * c - 4);
                        const __m256i hh = 2 * c + 1 <= 4 ? _mm256_slli_epi16(h, 3 - 2 * c) : _mm256_srli_epi16(h, 2 * c - 3);
                        lo = _mm256_or_si256(lo, _mm256_and_si256(hl, bit4));
                        hi = _mm256_or_si256(hi, _mm256_and_si256(hh, bit4));
                    }
#pragma GCC unroll 4
                    for (int m = 0; m < RN; m++) {
                        const int8_t *yq = y[m]->qs + 64 * c + 4 * t;
                        slo[m] = _mm256_add_epi16(slo[m], _mm256_maddubs_epi16(lo, bcast4(yq)));
                        shi[m] = _mm256_add_epi16(shi[m], _mm256_maddubs_epi16(hi, bcast4(yq + 32)));
                        if (!Q5 || RN > 1) { /* see KEEP_IN_REG; q5_K with 1 row ran ~5% slower with it */
                            KEEP_IN_REG(slo[m]);
                            KEEP_IN_REG(shi[m]);
                        }
                    }
                }
#pragma GCC unroll 4
                for (int m = 0; m < RN; m++) {
                    alo[m] = _mm256_add_epi32(alo[m], _mm256_madd_epi16(slo[m], sce));
                    ahi[m] = _mm256_add_epi32(ahi[m], _mm256_madd_epi16(shi[m], sco));
                }
            }
            /* each sub-block's exact sum times its own activation scale */
#pragma GCC unroll 4
            for (int m = 0; m < RN; m++) {
                sa[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(alo[m]), _mm256_set1_ps(y[m]->d[2 * c]), sa[m]);
                sa[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ahi[m]), _mm256_set1_ps(y[m]->d[2 * c + 1]), sa[m]);
            }
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w->d));
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) acc[m] = _mm256_fmadd_ps(sa[m], d, acc[m]);
    }
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) _mm256_storeu_ps(Y + (size_t)m * ys, acc[m]);
}

ALWAYS_INLINE void tile_q4_kx8(int RN, const mllm_block_q4_kx8 *w, int64_t nb, const char *X,
                               size_t xs, float *Y, size_t ys) {
    tile_k45(RN, false, (const uint8_t *)w, nb, X, xs, Y, ys);
}

ALWAYS_INLINE void tile_q5_kx8(int RN, const mllm_block_q5_kx8 *w, int64_t nb, const char *X,
                               size_t xs, float *Y, size_t ys) {
    tile_k45(RN, true, (const uint8_t *)w, nb, X, xs, Y, ys);
}

/* q6_K's high 2 bits of the 4-value group i (0..3) of a qh vector, at bits
   4..5 of each byte. */
ALWAYS_INLINE __m256i q6_high(__m256i qh, int i, __m256i m30) {
    switch (i) {
    case 0: return _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30);
    case 1: return _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30);
    case 2: return _mm256_and_si256(qh, m30);
    default: return _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30);
    }
}

ALWAYS_INLINE void tile_q6_kx8(int RN, const mllm_block_q6_kx8 *w, int64_t nb, const char *X,
                               size_t xs, float *Y, size_t ys) {
    __m256 acc[TILE_N];
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) acc[m] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
    /* (s0, s0) and (s1, s1) from the int16 pair (s0, s1) of each lane */
    const __m256i first = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13,
                                           0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
    const __m256i second = _mm256_add_epi8(first, _mm256_set1_epi8(2));
    for (int64_t b = 0; b < nb; b++, w++) {
        prefetch_ahead(w, sizeof *w);
        const mllm_block_q8_k32 *y[TILE_N];
        __m256 sa[TILE_N];
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            y[m] = (const mllm_block_q8_k32 *)(X + (size_t)m * xs) + b;
            sa[m] = _mm256_setzero_ps();
        }
#pragma GCC unroll 1
        for (int u = 0; u < 8; u++) { /* values 32u..32u + 31: activation scale d[u] */
            /* scales of sub-blocks 2u, 2u + 1 as an int16 pair per row */
            const __m256i scp = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w->scales + 16 * u)));
            const __m256i sce = _mm256_shuffle_epi8(scp, first), sco = _mm256_shuffle_epi8(scp, second);
            const __m256i qh0 = _mm256_loadu_si256((const __m256i *)(w->qh + 64 * u));
            const __m256i qh1 = _mm256_loadu_si256((const __m256i *)(w->qh + 64 * u + 32));
            __m256i pe[TILE_N] = {0}, po[TILE_N] = {0}, isum[TILE_N];
            /* the -32 offset: 32 * (s0 * bsum0 + s1 * bsum1) off each row */
#pragma GCC unroll 4
            for (int m = 0; m < RN; m++)
                isum[m] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(scp, bcast4(y[m]->bsums + 2 * u)), 5));
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                const __m256i l = _mm256_loadu_si256((const __m256i *)(w->ql + 32 * (4 * u + i)));
                const __m256i qa = _mm256_or_si256(_mm256_and_si256(l, m4), q6_high(qh0, i, m30));
                const __m256i qb = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l, 4), m4), q6_high(qh1, i, m30));
#pragma GCC unroll 4
                for (int m = 0; m < RN; m++) {
                    const int8_t *yq = y[m]->qs + 32 * u + 4 * i;
                    const __m256i e = _mm256_maddubs_epi16(qa, bcast4(yq));
                    const __m256i o = _mm256_maddubs_epi16(qb, bcast4(yq + 16));
                    if (i % 2 == 0) {
                        pe[m] = e, po[m] = o;
                    } else {
                        isum[m] = _mm256_add_epi32(isum[m], _mm256_madd_epi16(_mm256_add_epi16(pe[m], e), sce));
                        isum[m] = _mm256_add_epi32(isum[m], _mm256_madd_epi16(_mm256_add_epi16(po[m], o), sco));
                    }
                }
            }
#pragma GCC unroll 4
            for (int m = 0; m < RN; m++) sa[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[m]), _mm256_set1_ps(y[m]->d[u]), sa[m]);
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w->d));
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) acc[m] = _mm256_fmadd_ps(sa[m], d, acc[m]);
    }
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) _mm256_storeu_ps(Y + (size_t)m * ys, acc[m]);
}


PACKED_GROUP_SET(tile_q4_kx8, mllm_block_q4_kx8)
PACKED_GROUP_SET(tile_q6_kx8, mllm_block_q6_kx8)
PACKED_GROUP_SET(tile_q5_kx8, mllm_block_q5_kx8)

const mllm_packed_group_fn *mllm_kquant_x8_tiles_avx2(mllm_dtype t) {
    switch (t) {
    case MLLM_DTYPE_Q4_K_X8: return tile_q4_kx8_set;
    case MLLM_DTYPE_Q6_K_X8: return tile_q6_kx8_set;
    case MLLM_DTYPE_Q5_K_X8: return tile_q5_kx8_set;
    default: return NULL;
    }
}
