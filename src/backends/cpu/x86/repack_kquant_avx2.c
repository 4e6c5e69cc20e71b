/* AVX2 tiles for the q4_Kx8 / q5_Kx8 / q6_Kx8 packed layouts (repack.h)
   against q8_K32 activations: one ymm lane per output row, one tile = one
   8-row group x up to 8 activation rows (the AVX2 driver takes 4 at a time,
   repack_kquant_avx2.h has the sets of 8). Per-sub-block weight scales reach
   the lanes as int16 pairs (s, s), so one madd both widens the int16
   products and applies the scale; each 32-value sub-block's exact int32 sum
   is then converted and multiplied by its activation scale d[j] in float
   (kq32_combine, kquants.h, up to float order).

   Integer ranges: q4_K nibble x int8 pairs <= 3810, 8 of them per int16
   lane (one 32-value sub-block) <= 30480; q6_K 6-bit x int8 pairs <= 16002,
   2 per int16 lane <= 32004. Block sums stay far inside int32. */
#include "backends/cpu/x86/repack_avx2.h"
#include "backends/cpu/kquants.h"
#include "backends/cpu/x86/repack_kquant_avx2.h"

#include <stdbool.h>


/* Rows a tile's arrays hold: the sets have tiles of 1..8 activation rows
   (mllm_kquant_x8_tiles_avx2 hands out the first 4, the driver's width). */
#define TILE_N 8
/* Loops of a constant count (a tile's RN rows, the steps of a block), unrolled in full:
   clang 14 leaves them rolled under "GCC unroll" (the row arrays then in
   memory); "unroll(full)" unrolls them. KQ_ROLLED: a loop kept rolled. */
#ifdef __clang__
#define KQ_UNROLL _Pragma("clang loop unroll(full)")
#define KQ_ROLLED _Pragma("clang loop unroll(disable)")
#else
#define KQ_UNROLL _Pragma("GCC unroll 8")
#define KQ_ROLLED _Pragma("GCC unroll 1")
#endif


/* pshufb masks, per 128-bit half (rows 0..3 low, 4..7 high), Z = zero byte.
   DUP(o): lane of row r gets the int16 pair (b[o + r], b[o + r]) from a
   16-byte chunk b of [sub-block][row] bytes; PAIR: (b[r], b[8 + r]). */
#define Z -128
#define DUP(o)                                                                                   \
    _mm256_setr_epi8(o, Z, o, Z, o + 1, Z, o + 1, Z, o + 2, Z, o + 2, Z, o + 3, Z, o + 3, Z,     \
                     o + 4, Z, o + 4, Z, o + 5, Z, o + 5, Z, o + 6, Z, o + 6, Z, o + 7, Z, o + 7, Z)

/* Chunk c (sub-blocks 2c, 2c + 1) of one q4_Kx8 / q5_Kx8 block against
   RN activation blocks y: sa[m] += each sub-block's exact int32 sum times
   its activation scale, sub-block 2c first. scb: the 6-bit scales as
   [sub-block][row] bytes. */
ALWAYS_INLINE void k45_chunk(int RN, bool Q5, int c, const uint8_t *qs, const uint8_t *qh, const uint8_t *scb,
                             const mllm_block_q8_k32 *const *y, __m256 *sa) {
    /* the qh vectors are the same for every c: opaque pointer, so that
       they are loaded again per chunk (a load) rather than shared across
       the unrolled chunks (8 more live ymm, spilled) */
    if (Q5) __asm__("" : "+r"(qh));
    const __m256i m4 = _mm256_set1_epi8(0x0f), bit4 = _mm256_set1_epi8(0x10);
    const __m256i scc = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(scb + 16 * c)));
    KQ_UNROLL
    for (int h = 0; h < 2; h++) { /* sub-block j = 2c + h: nibble h of chunk c */
        const int j = 2 * c + h;
        const __m256i sc = _mm256_shuffle_epi8(scc, h ? DUP(8) : DUP(0));
        /* q4_K: 8 products of <= 3810 per int16 lane; q5_K (values to 31,
           <= 7874): 4, so two int16 sums of 4 steps each */
        __m256i s16[TILE_N], s32[TILE_N];
        KQ_UNROLL
        for (int t = 0; t < 8; t++) {
            const __m256i raw = _mm256_loadu_si256((const __m256i *)(qs + 256 * c + 32 * t));
            __m256i q = h ? _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4) : _mm256_and_si256(raw, m4);
            if (Q5) { /* bit j of the qh bytes, to bit 4 */
                const __m256i hb = _mm256_loadu_si256((const __m256i *)(qh + 32 * t));
                const __m256i hs = j <= 4 ? _mm256_slli_epi16(hb, 4 - j) : _mm256_srli_epi16(hb, j - 4);
                q = _mm256_or_si256(q, _mm256_and_si256(hs, bit4));
            }
            KQ_UNROLL
            for (int m = 0; m < RN; m++) {
                const __m256i p = _mm256_maddubs_epi16(q, bcast4(y[m]->qs + 32 * j + 4 * t));
                s16[m] = t % (Q5 ? 4 : 8) == 0 ? p : _mm256_add_epi16(s16[m], p);
                KEEP_IN_REG(s16[m]);
                if (Q5 && t == 3) s32[m] = _mm256_madd_epi16(s16[m], sc);
            }
        }
        /* the sub-block's exact sum times its own activation scale */
        KQ_UNROLL
        for (int m = 0; m < RN; m++) {
            __m256i a = _mm256_madd_epi16(s16[m], sc);
            if (Q5) a = _mm256_add_epi32(s32[m], a);
            sa[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a), _mm256_set1_ps(y[m]->d[j]), sa[m]);
        }
    }
}

/* q4_Kx8 and q5_Kx8 share everything but the fifth bit: Q5 is a constant
   at each call, so each tile compiles to its own straight code.

   Register schedule: each 32-value sub-block is one pass over its 8 weight
   vectors (the low nibbles of chunk c for sub-block 2c, the high ones for
   2c + 1, reloaded: a load is cheaper than holding 8 vectors), one int16
   sum per activation row, KEEP_IN_REG after each add. Without the barrier
   GCC reassociates a row's adds into a tree and holds every maddubs product
   of a chunk at once (4 rows: ~170 stack accesses per block). The float
   steps are the same and in the same order for every lane: sa over the
   sub-blocks 0..7, acc -= dmin * sb before acc += d * sa. */
ALWAYS_INLINE void tile_k45(int RN, bool Q5, const uint8_t *wb, int64_t nb, const char *X, size_t xs,
                            float *Y, size_t ys) {
    const size_t bsize = Q5 ? sizeof(mllm_block_q5_kx8) : sizeof(mllm_block_q4_kx8);
    __m256 acc[TILE_N];
    KQ_UNROLL
    for (int m = 0; m < RN; m++) acc[m] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0f), m6 = _mm256_set1_epi8(63), m30 = _mm256_set1_epi8(0x30);
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
        /* bytes 16c..16c + 15: sub-blocks 2c and 2c + 1 of the 8 rows */
        uint8_t scb[64];
        _mm256_storeu_si256((__m256i *)scb, sc03);
        _mm256_storeu_si256((__m256i *)(scb + 32), sc47);
        const mllm_block_q8_k32 *y[TILE_N];
        __m256 sa[TILE_N];
        /* The min term first: acc -= dmin * sum_j m_j * (ysum_j * dy_j),
           ysum_j = sum of sub-block j's 32 activation quants. */
        float yt[TILE_N][8];
        KQ_UNROLL
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
            KQ_UNROLL
            for (int j = 0; j < 8; j++) {
                const __m128i bytes = j % 2 ? _mm_unpackhi_epi64(mq[j / 2], mq[j / 2]) : mq[j / 2];
                const __m256 mf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)); /* m_j of the 8 rows */
                KQ_UNROLL
                for (int m = 0; m < RN; m++)
                    sb[m] = j == 0 ? _mm256_mul_ps(mf, _mm256_set1_ps(yt[m][0]))
                                   : _mm256_fmadd_ps(mf, _mm256_set1_ps(yt[m][j]), sb[m]);
            }
            const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w->dmin));
            KQ_UNROLL
            for (int m = 0; m < RN; m++) acc[m] = _mm256_fnmadd_ps(sb[m], dmin, acc[m]);
        }
        /* q5_K's shifts of qh depend on c: its chunks unrolled (immediate
           shifts), q4_K's kept rolled (a quarter of the code) */
        if (Q5) {
            KQ_UNROLL
            for (int c = 0; c < 4; c++) k45_chunk(RN, Q5, c, qs, qh, scb, y, sa);
        } else {
            KQ_ROLLED
            for (int c = 0; c < 4; c++) k45_chunk(RN, Q5, c, qs, qh, scb, y, sa);
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w->d));
        KQ_UNROLL
        for (int m = 0; m < RN; m++) acc[m] = _mm256_fmadd_ps(sa[m], d, acc[m]);
    }
    KQ_UNROLL
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

/* Register schedule as in tile_k45: one int32 sum per row and 32 values
   (u), built from int16 sums of two maddubs each (the most q6_K allows),
   each sum KEEP_IN_REG; the weight vectors of one sub-block at a time. */
ALWAYS_INLINE void tile_q6_kx8(int RN, const mllm_block_q6_kx8 *w, int64_t nb, const char *X,
                               size_t xs, float *Y, size_t ys) {
    __m256 acc[TILE_N];
    KQ_UNROLL
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
        KQ_UNROLL
        for (int m = 0; m < RN; m++) {
            y[m] = (const mllm_block_q8_k32 *)(X + (size_t)m * xs) + b;
            sa[m] = _mm256_setzero_ps();
        }
        KQ_ROLLED
        for (int u = 0; u < 8; u++) { /* values 32u..32u + 31: activation scale d[u] */
            /* scales of sub-blocks 2u, 2u + 1 as an int16 pair per row */
            const __m256i scp = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w->scales + 16 * u)));
            /* the -32 offset: 32 * (s0 * bsum0 + s1 * bsum1) off each row,
               as one madd of the pairs -32 * s (|-32 * s| <= 4096, int16)
               with the two bsums: exact, the same int32 as before */
            const __m256i scn = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(scp, 5));
            __m256i isum[TILE_N];
            KQ_UNROLL
            for (int m = 0; m < RN; m++) {
                isum[m] = _mm256_madd_epi16(scn, bcast4(y[m]->bsums + 2 * u));
                KEEP_IN_REG(isum[m]);
            }
            KQ_UNROLL
            for (int e = 0; e < 2; e++) { /* sub-block 2u + e: the low (e = 0) or high nibbles of ql */
                const __m256i sc = _mm256_shuffle_epi8(scp, e ? second : first);
                const __m256i qh = _mm256_loadu_si256((const __m256i *)(w->qh + 64 * u + 32 * e));
                KQ_UNROLL
                for (int i = 0; i < 4; i += 2) {
                    __m256i q[2];
                    KQ_UNROLL
                    for (int k = 0; k < 2; k++) {
                        const __m256i l = _mm256_loadu_si256((const __m256i *)(w->ql + 32 * (4 * u + i + k)));
                        q[k] = _mm256_or_si256(_mm256_and_si256(e ? _mm256_srli_epi16(l, 4) : l, m4), q6_high(qh, i + k, m30));
                    }
                    KQ_UNROLL
                    for (int m = 0; m < RN; m++) {
                        const int8_t *yq = y[m]->qs + 32 * u + 16 * e + 4 * i;
                        __m256i p = _mm256_maddubs_epi16(q[0], bcast4(yq));
                        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(q[1], bcast4(yq + 4)));
                        isum[m] = _mm256_add_epi32(isum[m], _mm256_madd_epi16(p, sc));
                        KEEP_IN_REG(isum[m]);
                    }
                }
            }
            KQ_UNROLL
            for (int m = 0; m < RN; m++) sa[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[m]), _mm256_set1_ps(y[m]->d[u]), sa[m]);
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w->d));
        KQ_UNROLL
        for (int m = 0; m < RN; m++) acc[m] = _mm256_fmadd_ps(sa[m], d, acc[m]);
    }
    KQ_UNROLL
    for (int m = 0; m < RN; m++) _mm256_storeu_ps(Y + (size_t)m * ys, acc[m]);
}


PACKED_GROUP_SET8(tile_q4_kx8, mllm_block_q4_kx8)
PACKED_GROUP_SET8(tile_q6_kx8, mllm_block_q6_kx8)
PACKED_GROUP_SET8(tile_q5_kx8, mllm_block_q5_kx8)

const mllm_packed_group_fn *mllm_kquant_x8_tiles8_avx2(mllm_dtype t) {
    switch (t) {
    case MLLM_DTYPE_Q4_K_X8: return tile_q4_kx8_set8;
    case MLLM_DTYPE_Q6_K_X8: return tile_q6_kx8_set8;
    case MLLM_DTYPE_Q5_K_X8: return tile_q5_kx8_set8;
    default: return NULL;
    }
}

/* The same tiles; the driver (mllm_mul_mat_packed_tiles) takes entries
   0..MLLM_PACKED_TILE_N - 1. */
const mllm_packed_group_fn *mllm_kquant_x8_tiles_avx2(mllm_dtype t) { return mllm_kquant_x8_tiles8_avx2(t); }
