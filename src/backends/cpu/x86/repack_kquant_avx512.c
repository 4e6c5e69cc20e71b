/* AVX-512 (F, BW, VL, DQ, VNNI) matmul for the k-quant packed layouts
   q4_Kx8, q5_Kx8 and q6_Kx8 (repack.h) x q8_K32 activations: the avx512
   path's counterpart of the AVX2 tiles in repack_kquant_avx2.c, for the
   passes of several activation rows (prompts, speculative verification),
   which the AVX2 tiles make compute-bound.

   The weights' 4-, 5- and 6-bit values are unsigned bytes as they come out
   of their masks, so vpdpbusd (4 unsigned bytes x 4 signed ones, summed
   into an int32 lane) takes them as they are: each sub-block's exact
   integer dot is 8 (q4/q5) or 4 (q6) instructions for 16 output rows,
   where the AVX2 tile spends a maddubs and an add per 8 rows and 4 values.
   One zmm holds two 8-row groups (16 output rows), so the 4 activation
   bytes broadcast from memory feed 16 rows; an odd last group runs as a
   pair with itself and stores the low 8 lanes only. A tile is up to 9
   activation rows (TN): a speculative pass verifying 8 proposals (9 rows,
   api/speculative.c) reads the weights once and unpacks each weight vector
   once (with 8, its ninth row was a tile of its own, costing about three
   rows' work); the hot loops still fit the 32 zmm registers.

   Bit-identical to the AVX2 tiles: they convert sc * dot (q4/q5: one
   sub-block's scale times its 32-value dot; q6: two 16-value sub-blocks,
   sc0 * dot0' + sc1 * dot1' with the -32 offset inside the dots) to float
   and go on in float. Here the dots stay int32 and the scale comes in
   float: |dot| <= 32 * 31 * 128 and |dot'| <= 16 * 32 * 128 = 2^16, times
   a scale of at most 63 (q4/q5) or 128 (q6), stay within 2^24, so
   float(dot) * float(sc) is exact, and q6's sum of two exact products,
   rounded once (an FMA), is the float the AVX2 tile converts from the
   exact integer sum. Every
   float step after that (the activation scales, the min term, the block
   scale d, the order over blocks) is the AVX2 tile's, operation for
   operation; the kernel test compares the outputs with memcmp. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "backends/cpu/repack.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define TN 9 /* activation rows per tile (see above) */
/* Weight bytes per chunk of groups, as the AVX2 driver's (repack.c): the
   chunk stays in L2 while every activation tile passes over it. */
#define CHUNK_BYTES (160 * 1024)
/* Prefetch distance in each group's block stream, as the AVX2 tiles'
   (simd_avx2.h MLLM_PF_AHEAD). */
#define PF_AHEAD 2048
/* vpternlogd: (a & c) | b */
#define A_AND_C_OR_B 0xEC

static inline int32_t load4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* 32 bytes of group a in the low half, the same 32 of group b high. */
ALWAYS_INLINE __m512i pair256(const uint8_t *a, const uint8_t *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}

/* 8 f16 of group a, then 8 of group b, as 16 floats. */
ALWAYS_INLINE __m512 pair_f16(const mllm_f16 *a, const mllm_f16 *b) {
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                                   _mm_loadu_si128((const __m128i *)b), 1));
}

/* Both groups' streams, PF_AHEAD bytes on (through uintptr_t: see
   simd_avx2.h prefetch_ahead on GCC 12 dropping it otherwise). */
ALWAYS_INLINE void prefetch_pair(const uint8_t *a, const uint8_t *b, size_t bytes) {
    const uintptr_t pa = (uintptr_t)a + PF_AHEAD, pb = (uintptr_t)b + PF_AHEAD;
    for (size_t o = 0; o < bytes; o += 64) {
        _mm_prefetch((const char *)(pa + o), _MM_HINT_T0);
        _mm_prefetch((const char *)(pb + o), _MM_HINT_T0);
    }
}

/* Bit k of each byte to bit 4, the rest cleared (k constant after
   unrolling; 16-bit shifts keep a byte's own bit there since k <= 7). */
ALWAYS_INLINE __m512i bit_to_4(__m512i v, int k) {
    const __m512i b4 = _mm512_set1_epi8(0x10);
    return _mm512_and_si512(k <= 4 ? _mm512_slli_epi16(v, 4 - k) : _mm512_srli_epi16(v, k - 4), b4);
}

/* One 32-value sub-block j = 2c + E (E: 0 low nibbles, 1 high ones, a
   constant at each call) of both groups against RN activation rows: the
   exact int32 dots, then sa += float(sc_j * dot) * dy_j as the AVX2 tile. */
ALWAYS_INLINE void k45_sub_block(int RN, bool Q5, int E, int c, const uint8_t *qa, const uint8_t *qb,
                                 const uint8_t *ha, const uint8_t *hb, const mllm_block_q8_k32 *const *y,
                                 const uint8_t *sc, __m512 *sa) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const int j = 2 * c + E;
    __m512i dot[TN];
#pragma GCC unroll 9
    for (int m = 0; m < RN; m++) dot[m] = _mm512_setzero_si512();
#pragma GCC unroll 9
    for (int t = 0; t < 8; t++) {
        /* chunk c, step t: the low nibbles are values 4t.. of sub-block 2c, the high ones of 2c + 1 */
        const __m512i raw = pair256(qa + 256 * c + 32 * t, qb + 256 * c + 32 * t);
        const __m512i q = E ? _mm512_srli_epi16(raw, 4) : raw;
        __m512i v;
        if (Q5) /* the fifth bit: bit j of the qh bytes */
            v = _mm512_ternarylogic_epi32(q, bit_to_4(pair256(ha + 32 * t, hb + 32 * t), j), m4, A_AND_C_OR_B);
        else
            v = _mm512_and_si512(q, m4);
#pragma GCC unroll 9
        for (int m = 0; m < RN; m++)
            dot[m] = _mm512_dpbusd_epi32(dot[m], v, _mm512_set1_epi32(load4(y[m]->qs + 32 * j + 4 * t)));
    }
    const __m512 scf = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(sc + 16 * j))));
    /* exact: the AVX2 tile's float(sc * dot) */
#pragma GCC unroll 9
    for (int m = 0; m < RN; m++)
        sa[m] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dot[m]), scf), _mm512_set1_ps(y[m]->d[j]), sa[m]);
}

/* q4_Kx8 / q5_Kx8 (Q5 a constant at each call): groups A and B (or A
   twice, keep = 0x00ff) x RN activation rows, Y[m * ys + 0..15]. */
ALWAYS_INLINE void tile_k45(int RN, bool Q5, const uint8_t *wa, const uint8_t *wb, int64_t nb, const char *X,
                            size_t xs, float *Y, size_t ys, __mmask16 keep) {
    const size_t bsize = Q5 ? sizeof(mllm_block_q5_kx8) : sizeof(mllm_block_q4_kx8);
    __m512 acc[TN];
#pragma GCC unroll 9
    for (int m = 0; m < RN; m++) acc[m] = _mm512_setzero_ps();
    const __m512i m4 = _mm512_set1_epi8(0x0f), m6 = _mm512_set1_epi8(63), m30 = _mm512_set1_epi8(0x30);
    /* qword order a0 b0 a1 b1 ...: 128-bit lane k = sub-block k of a's 8 rows, then b's */
    const __m512i ab = _mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t b = 0; b < nb; b++, wa += bsize, wb += bsize) {
        prefetch_pair(wa, wb, bsize);
        /* same offsets in both structs up to the quants */
        const mllm_block_q4_kx8 *A = (const mllm_block_q4_kx8 *)wa, *B = (const mllm_block_q4_kx8 *)wb;
        const uint8_t *qa = Q5 ? ((const mllm_block_q5_kx8 *)wa)->qs : A->qs;
        const uint8_t *qb = Q5 ? ((const mllm_block_q5_kx8 *)wb)->qs : B->qs;
        const uint8_t *ha = Q5 ? ((const mllm_block_q5_kx8 *)wa)->qh : NULL;
        const uint8_t *hb = Q5 ? ((const mllm_block_q5_kx8 *)wb)->qh : NULL;
        /* 6-bit scales and mins as the AVX2 tile unpacks them ([sub-block][row]
           bytes), for both groups at once */
        const __m512i v0 = pair256(A->scales, B->scales), v1 = pair256(A->scales + 32, B->scales + 32);
        const __m512i v2 = pair256(A->scales + 64, B->scales + 64);
        uint8_t sc[128], mn[128]; /* byte 16j + l: sub-block j, lane l (a's rows 0..7, b's) */
        _mm512_storeu_si512(sc, _mm512_permutexvar_epi64(ab, _mm512_and_si512(v0, m6)));
        _mm512_storeu_si512(mn, _mm512_permutexvar_epi64(ab, _mm512_and_si512(v1, m6)));
        _mm512_storeu_si512(sc + 64, _mm512_permutexvar_epi64(ab, _mm512_or_si512(_mm512_and_si512(v2, m4),
                                                                               _mm512_and_si512(_mm512_srli_epi16(v0, 2), m30))));
        _mm512_storeu_si512(mn + 64, _mm512_permutexvar_epi64(ab, _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v2, 4), m4),
                                                                               _mm512_and_si512(_mm512_srli_epi16(v1, 2), m30))));
        const mllm_block_q8_k32 *y[TN];
        /* The min term first, as the AVX2 tile: acc -= dmin * sum_j m_j *
           (ysum_j * dy_j), ysum_j = sub-block j's 32 activation quants. */
        float yt[TN][8];
#pragma GCC unroll 9
        for (int m = 0; m < RN; m++) {
            y[m] = (const mllm_block_q8_k32 *)(X + (size_t)m * xs) + b;
            const __m128i ysum = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)y[m]->bsums),
                                                _mm_loadu_si128((const __m128i *)(y[m]->bsums + 8)));
            _mm256_storeu_ps(yt[m], _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(ysum)), _mm256_loadu_ps(y[m]->d)));
        }
        {
            __m512 s[TN];
            /* j not unrolled: yt[m][j] reaches the FMAs as a broadcast from memory */
#pragma GCC unroll 1
            for (int j = 0; j < 8; j++) {
                const __m512 mf = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(mn + 16 * j))));
#pragma GCC unroll 9
                for (int m = 0; m < RN; m++)
                    s[m] = j == 0 ? _mm512_mul_ps(mf, _mm512_set1_ps(yt[m][0])) : _mm512_fmadd_ps(mf, _mm512_set1_ps(yt[m][j]), s[m]);
            }
            const __m512 dmin = pair_f16(A->dmin, B->dmin);
#pragma GCC unroll 9
            for (int m = 0; m < RN; m++) acc[m] = _mm512_fnmadd_ps(s[m], dmin, acc[m]);
        }
        __m512 sa[TN];
#pragma GCC unroll 9
        for (int m = 0; m < RN; m++) sa[m] = _mm512_setzero_ps();
#pragma GCC unroll 1
        for (int c = 0; c < 4; c++) { /* sub-blocks 2c, 2c + 1 in order */
            k45_sub_block(RN, Q5, 0, c, qa, qb, ha, hb, y, sc, sa);
            k45_sub_block(RN, Q5, 1, c, qa, qb, ha, hb, y, sc, sa);
        }
        const __m512 d = pair_f16(A->d, B->d);
#pragma GCC unroll 9
        for (int m = 0; m < RN; m++) acc[m] = _mm512_fmadd_ps(sa[m], d, acc[m]);
    }
#pragma GCC unroll 9
    for (int m = 0; m < RN; m++) _mm512_mask_storeu_ps(Y + (size_t)m * ys, keep, acc[m]);
}

/* q6_K's high 2 bits of the 4-value group i (0..3) of a qh vector, at bits
   4..5 of each byte (the rest cleared). */
ALWAYS_INLINE __m512i q6_high(__m512i qh, int i, __m512i m30) {
    switch (i) {
    case 0: return _mm512_and_si512(_mm512_slli_epi16(qh, 4), m30);
    case 1: return _mm512_and_si512(_mm512_slli_epi16(qh, 2), m30);
    case 2: return _mm512_and_si512(qh, m30);
    default: return _mm512_and_si512(_mm512_srli_epi16(qh, 2), m30);
    }
}

/* q6_Kx8: v = q + 32 in 0..63 against the activations; each 16-value
   sub-block's dot starts from -32 * its activation sum, so it is
   sum (v - 32) * y. */
ALWAYS_INLINE void tile_q6(int RN, const uint8_t *wa, const uint8_t *wb, int64_t nb, const char *X, size_t xs,
                           float *Y, size_t ys, __mmask16 keep) {
    __m512 acc[TN];
#pragma GCC unroll 9
    for (int m = 0; m < RN; m++) acc[m] = _mm512_setzero_ps();
    const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    for (int64_t b = 0; b < nb; b++, wa += sizeof(mllm_block_q6_kx8), wb += sizeof(mllm_block_q6_kx8)) {
        prefetch_pair(wa, wb, sizeof(mllm_block_q6_kx8));
        const mllm_block_q6_kx8 *A = (const mllm_block_q6_kx8 *)wa, *B = (const mllm_block_q6_kx8 *)wb;
        const mllm_block_q8_k32 *y[TN];
        int32_t off[TN][16]; /* -32 * bsums */
        __m512 sa[TN];
#pragma GCC unroll 9
        for (int m = 0; m < RN; m++) {
            y[m] = (const mllm_block_q8_k32 *)(X + (size_t)m * xs) + b;
            const __m512i bs = _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)y[m]->bsums));
            _mm512_storeu_si512(off[m], _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(bs, 5)));
            sa[m] = _mm512_setzero_ps();
        }
#pragma GCC unroll 1
        for (int u = 0; u < 8; u++) { /* values 32u..32u + 31: sub-blocks 2u, 2u + 1, activation scale d[u] */
            const __m512i qh0 = pair256(A->qh + 64 * u, B->qh + 64 * u);
            const __m512i qh1 = pair256(A->qh + 64 * u + 32, B->qh + 64 * u + 32);
            __m512i d0[TN], d1[TN];
#pragma GCC unroll 9
            for (int m = 0; m < RN; m++) d0[m] = _mm512_set1_epi32(off[m][2 * u]), d1[m] = _mm512_set1_epi32(off[m][2 * u + 1]);
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                const __m512i l = pair256(A->ql + 32 * (4 * u + i), B->ql + 32 * (4 * u + i));
                const __m512i va = _mm512_ternarylogic_epi32(l, q6_high(qh0, i, m30), m4, A_AND_C_OR_B);
                const __m512i vb = _mm512_ternarylogic_epi32(_mm512_srli_epi16(l, 4), q6_high(qh1, i, m30), m4, A_AND_C_OR_B);
#pragma GCC unroll 9
                for (int m = 0; m < RN; m++) {
                    const int8_t *yq = y[m]->qs + 32 * u + 4 * i;
                    d0[m] = _mm512_dpbusd_epi32(d0[m], va, _mm512_set1_epi32(load4(yq)));
                    d1[m] = _mm512_dpbusd_epi32(d1[m], vb, _mm512_set1_epi32(load4(yq + 16)));
                }
            }
            /* the two sub-blocks' int8 scales as int32 lanes, then float */
            const __m512i s16 = _mm512_cvtepi8_epi16(_mm256_inserti128_si256(
                _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(A->scales + 16 * u))),
                _mm_loadu_si128((const __m128i *)(B->scales + 16 * u)), 1));
            const __m512 s0 = _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(s16, 16), 16));
            const __m512 s1 = _mm512_cvtepi32_ps(_mm512_srai_epi32(s16, 16));
            /* exact products, one rounding of their sum (the FMA's): the AVX2 tile's float(isum) */
#pragma GCC unroll 9
            for (int m = 0; m < RN; m++) {
                const __m512 p = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d0[m]), s0, _mm512_mul_ps(_mm512_cvtepi32_ps(d1[m]), s1));
                sa[m] = _mm512_fmadd_ps(p, _mm512_set1_ps(y[m]->d[u]), sa[m]);
            }
        }
        const __m512 d = pair_f16(A->d, B->d);
#pragma GCC unroll 9
        for (int m = 0; m < RN; m++) acc[m] = _mm512_fmadd_ps(sa[m], d, acc[m]);
    }
#pragma GCC unroll 9
    for (int m = 0; m < RN; m++) _mm512_mask_storeu_ps(Y + (size_t)m * ys, keep, acc[m]);
}

typedef void (*kq_tile_fn)(const uint8_t *wa, const uint8_t *wb, int64_t nb, const char *X, size_t xs, float *Y,
                           size_t ys, __mmask16 keep);
#define TILES(RN)                                                                                                \
    static void q4_##RN(const uint8_t *wa, const uint8_t *wb, int64_t nb, const char *X, size_t xs, float *Y,   \
                        size_t ys, __mmask16 keep) {                                                             \
        tile_k45(RN, false, wa, wb, nb, X, xs, Y, ys, keep);                                                     \
    }                                                                                                            \
    static void q5_##RN(const uint8_t *wa, const uint8_t *wb, int64_t nb, const char *X, size_t xs, float *Y,   \
                        size_t ys, __mmask16 keep) {                                                             \
        tile_k45(RN, true, wa, wb, nb, X, xs, Y, ys, keep);                                                      \
    }                                                                                                            \
    static void q6_##RN(const uint8_t *wa, const uint8_t *wb, int64_t nb, const char *X, size_t xs, float *Y,   \
                        size_t ys, __mmask16 keep) {                                                             \
        tile_q6(RN, wa, wb, nb, X, xs, Y, ys, keep);                                                             \
    }
TILES(1) TILES(2) TILES(3) TILES(4) TILES(5) TILES(6) TILES(7) TILES(8) TILES(9)
static const kq_tile_fn k_q4[TN] = {q4_1, q4_2, q4_3, q4_4, q4_5, q4_6, q4_7, q4_8, q4_9};
static const kq_tile_fn k_q5[TN] = {q5_1, q5_2, q5_3, q5_4, q5_5, q5_6, q5_7, q5_8, q5_9};
static const kq_tile_fn k_q6[TN] = {q6_1, q6_2, q6_3, q6_4, q6_5, q6_6, q6_7, q6_8, q6_9};

bool mllm_mul_mat_packed_kq_avx512(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X,
                                   size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1) {
    const kq_tile_fn *set = wt == MLLM_DTYPE_Q4_K_X8   ? k_q4
                            : wt == MLLM_DTYPE_Q6_K_X8 ? k_q6
                            : wt == MLLM_DTYPE_Q5_K_X8 ? k_q5
                                                       : NULL;
    if (!set || r0 % 8 != 0 || r1 % 8 != 0 || K % 256 != 0) return false;
    const int64_t nb = K / 256, g0 = r0 / 8, g1 = r1 / 8;
    const size_t group_bytes = 8 * w_stride;
    int64_t chunk = (int64_t)(CHUNK_BYTES / group_bytes) & ~(int64_t)1;
    if (chunk < 2 || M <= TN) chunk = g1 - g0; /* up to one tile of rows: one pass, nothing to reuse */
    const uint8_t *w = W;
    const char *x = X;
    for (int64_t gc = g0; gc < g1; gc += chunk) {
        const int64_t ge = gc + chunk < g1 ? gc + chunk : g1;
        for (int64_t m = 0; m < M; m += TN) {
            const int rn = (int)(M - m < TN ? M - m : TN);
            const char *xm = x + (size_t)m * x_stride;
            float *ym = Y + (size_t)m * y_stride;
            int64_t g = gc;
            for (; g + 2 <= ge; g += 2)
                set[rn - 1](w + (size_t)g * group_bytes, w + (size_t)(g + 1) * group_bytes, nb, xm, x_stride,
                            ym + 8 * g, y_stride, 0xffff);
            if (g < ge) /* the odd last group, paired with itself: its 8 rows stored */
                set[rn - 1](w + (size_t)g * group_bytes, w + (size_t)g * group_bytes, nb, xm, x_stride, ym + 8 * g,
                            y_stride, 0x00ff);
        }
    }
    return true;
}
