/* AVX2 matmul over the x8 packed layouts (repack.h). One ymm accumulator
   holds 8 output rows; a tile is one 8-row group x up to X8_TILE_W (q4_0x8,
   q4_1x8, q8_0x8) or 4 (q5_0x8) activation rows, so each weight vector is
   unpacked once and used for all of them.

   q4_0x8 per 32-value block: 4 loads give, after a mask and a shift, 8 ymm
   of (8 rows x 4 values); each meets the 4 matching activation bytes
   broadcast to all lanes (maddubs: unsigned nibble x signed byte). The 8
   int16 products per lane pair sum to at most 8 * 2 * 15 * 127 = 30480, so
   they add up in int16 and one madd gives the block's int32 dot per row;
   the q4_0 offset comes off as q8_0s's precomputed 8 * sum(y). */
#include "backends/cpu/x86/repack_avx2.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/x86/repack_kquant_avx2.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "core/alloc.h"


#define TILE_N PACKED_TILE_N
/* Activation rows per tile of q4_0x8, q4_1x8 and q8_0x8 (up to TILE_MAX):
   2 ymm per row (its int sums, its float acc) plus 5-6 for the weights and
   constants fill the 16 ymm at 5 rows; past that GCC keeps the accs on the
   stack (one load in the fma and one store per row and block), which still
   pays: on Zen 3, 8 rows in one tile beat 4 + 4 by ~7%. Clang's code for
   the wider tiles spills more and runs slower than its 4-row tiles, so it
   keeps 4 (bench/history/2026-12-01_to_2026-12-03.md). */
#ifndef X8_TILE_W
#ifdef __clang__
#define X8_TILE_W 4
#else
#define X8_TILE_W 8
#endif
#endif
#define TILE_MAX 8
/* Loops over a tile's rows, unrolled in full (RN is a constant there):
   clang 14 leaves them rolled under "GCC unroll 8" (or its "unroll"), the
   row arrays then in memory; "unroll(full)" unrolls them. */
#ifdef __clang__
#define UNROLL_ROWS _Pragma("clang loop unroll(full)")
#else
#define UNROLL_ROWS _Pragma("GCC unroll 8")
#endif

/* The q8_1 / q8_0 activation blocks with their f16 scales as floats (the
   exact values): the tiles then take each with one vbroadcastss, where a
   broadcast_f16 is a broadcast and a conversion for every activation row,
   block and 8-row group. Converted once per call (act_with_float_scales). */
typedef struct { float d, s; int8_t qs[32]; } act_q8_1f;
typedef struct { float d; int8_t qs[32]; } act_q8_0f;


/* q4_0x8 x q8_0s and q4_1x8 x q8_1 (as act_q8_1f) share the integer part:
   the 8 rows' nibbles against each activation block's 32 int8 values, int16
   pair sums one lane per row (unsigned nibble x signed byte). They differ
   after it: q4_0 takes q8_0s's precomputed 8 * sum(y) off (its offset),
   q4_1 adds its min term m * s_y. Q41 is a constant at each call. */
ALWAYS_INLINE void tile_q4x8(int RN, bool Q41, const uint8_t *wb, int64_t nb, const char *X, size_t xs,
                             float *Y, size_t ys) {
    const size_t bsize = Q41 ? sizeof(mllm_block_q4_1x8) : sizeof(mllm_block_q4_0x8);
    const size_t ysize = Q41 ? sizeof(act_q8_1f) : sizeof(mllm_block_q8_0s);
    const size_t qoff = Q41 ? offsetof(act_q8_1f, qs) : offsetof(mllm_block_q8_0s, qs);
    __m256 acc[TILE_MAX];
UNROLL_ROWS
    for (int m = 0; m < RN; m++) acc[m] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1), m4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; b++, wb += bsize) {
        prefetch_ahead(wb, bsize);
        const uint8_t *qs = Q41 ? ((const mllm_block_q4_1x8 *)wb)->qs : ((const mllm_block_q4_0x8 *)wb)->qs;
        const char *yb[TILE_MAX];
        __m256i s16[TILE_MAX];
UNROLL_ROWS
        for (int m = 0; m < RN; m++) {
            yb[m] = X + (size_t)m * xs + (size_t)b * ysize;
            s16[m] = _mm256_setzero_si256();
        }
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) {
            const __m256i raw = _mm256_loadu_si256((const __m256i *)(qs + 32 * t));
            const __m256i lo = _mm256_and_si256(raw, m4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
UNROLL_ROWS
            for (int m = 0; m < RN; m++) {
                const char *yq = yb[m] + qoff;
                s16[m] = _mm256_add_epi16(s16[m], _mm256_maddubs_epi16(lo, bcast4(yq + 8 * t)));
                s16[m] = _mm256_add_epi16(s16[m], _mm256_maddubs_epi16(hi, bcast4(yq + 8 * t + 4)));
                KEEP_IN_REG(s16[m]);
            }
        }
        /* d[8] leads both blocks */
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)wb));
        const __m256 mx = Q41 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const mllm_block_q4_1x8 *)wb)->m))
                              : _mm256_setzero_ps();
UNROLL_ROWS
        for (int m = 0; m < RN; m++) {
            __m256i isum = _mm256_madd_epi16(s16[m], ones);
            if (Q41) {
                const act_q8_1f *y = (const act_q8_1f *)yb[m];
                acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dx, _mm256_set1_ps(y->d)), acc[m]);
                acc[m] = _mm256_fmadd_ps(mx, _mm256_set1_ps(y->s), acc[m]);
            } else {
                const mllm_block_q8_0s *y = (const mllm_block_q8_0s *)yb[m];
                isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(y->s8));
                acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dx, _mm256_set1_ps(y->d)), acc[m]);
            }
        }
    }
UNROLL_ROWS
    for (int m = 0; m < RN; m++) _mm256_storeu_ps(Y + (size_t)m * ys, acc[m]);
}

ALWAYS_INLINE void tile_q4_0x8(int RN, const mllm_block_q4_0x8 *w, int64_t nb, const char *X,
                               size_t xs, float *Y, size_t ys) {
    tile_q4x8(RN, false, (const uint8_t *)w, nb, X, xs, Y, ys);
}

ALWAYS_INLINE void tile_q4_1x8(int RN, const mllm_block_q4_1x8 *w, int64_t nb, const char *X,
                               size_t xs, float *Y, size_t ys) {
    tile_q4x8(RN, true, (const uint8_t *)w, nb, X, xs, Y, ys);
}

/* Bit k of each byte moved to bit 4 (then masked): 16-bit shifts keep each
   byte's own bits at bit 4 since k <= 7. k is a constant after unrolling. */
ALWAYS_INLINE __m256i bit_to_4(__m256i v, int k) {
    const __m256i b4 = _mm256_set1_epi8(0x10);
    switch (k) {
    case 0: return _mm256_and_si256(_mm256_slli_epi16(v, 4), b4);
    case 1: return _mm256_and_si256(_mm256_slli_epi16(v, 3), b4);
    case 2: return _mm256_and_si256(_mm256_slli_epi16(v, 2), b4);
    case 3: return _mm256_and_si256(_mm256_slli_epi16(v, 1), b4);
    case 4: return _mm256_and_si256(v, b4);
    case 5: return _mm256_and_si256(_mm256_srli_epi16(v, 1), b4);
    case 6: return _mm256_and_si256(_mm256_srli_epi16(v, 2), b4);
    default: return _mm256_and_si256(_mm256_srli_epi16(v, 3), b4);
    }
}

/* q5_0x8 x q8_0s: q4_0x8's nibbles with the fifth bits or-ed in (values
   0..31); two maddubs reach 2 * 2 * 31 * 128 = 15872, so each t's products
   widen to int32 at once; the offset 16 comes off as 2 * s8. */
ALWAYS_INLINE void tile_q5_0x8(int RN, const mllm_block_q5_0x8 *w, int64_t nb, const char *X, size_t xs,
                               float *Y, size_t ys) {
    __m256 acc[TILE_N];
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) acc[m] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1), m4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; b++, w++) {
        prefetch_ahead(w, sizeof *w);
        const __m256i qh = _mm256_loadu_si256((const __m256i *)w->qh);
        const mllm_block_q8_0s *yb[TILE_N];
        __m256i s32[TILE_N];
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            yb[m] = (const mllm_block_q8_0s *)(X + (size_t)m * xs) + b;
            s32[m] = _mm256_setzero_si256();
        }
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) {
            const __m256i raw = _mm256_loadu_si256((const __m256i *)(w->qs + 32 * t));
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(raw, m4), bit_to_4(qh, 2 * t));
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4), bit_to_4(qh, 2 * t + 1));
#pragma GCC unroll 4
            for (int m = 0; m < RN; m++) {
                const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, bcast4(yb[m]->qs + 8 * t)),
                                                   _mm256_maddubs_epi16(hi, bcast4(yb[m]->qs + 8 * t + 4)));
                s32[m] = _mm256_add_epi32(s32[m], _mm256_madd_epi16(p, ones));
            }
        }
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w->d));
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            const __m256i isum = _mm256_sub_epi32(s32[m], _mm256_set1_epi32(2 * yb[m]->s8));
            acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dx, _mm256_set1_ps(yb[m]->d)), acc[m]);
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) _mm256_storeu_ps(Y + (size_t)m * ys, acc[m]);
}

/* q8_0x8 x q8_0 (as act_q8_0f): signed x signed, so maddubs gets |w| and
   y with w's sign; a pair sum reaches 2 * 127 * 127, so each product vector
   is widened at once. */
ALWAYS_INLINE void tile_q8_0x8(int RN, const mllm_block_q8_0x8 *w, int64_t nb, const char *X,
                               size_t xs, float *Y, size_t ys) {
    __m256 acc[TILE_MAX];
UNROLL_ROWS
    for (int m = 0; m < RN; m++) acc[m] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; b++, w++) {
        prefetch_ahead(w, sizeof *w);
        const act_q8_0f *y[TILE_MAX];
        __m256i isum[TILE_MAX];
UNROLL_ROWS
        for (int m = 0; m < RN; m++) {
            y[m] = (const act_q8_0f *)(X + (size_t)m * xs) + b;
            isum[m] = _mm256_setzero_si256();
        }
UNROLL_ROWS
        for (int g = 0; g < 8; g++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(w->qs + 32 * g));
            const __m256i aq = _mm256_sign_epi8(q, q);
UNROLL_ROWS
            for (int m = 0; m < RN; m++) {
                const __m256i sy = _mm256_sign_epi8(bcast4(y[m]->qs + 4 * g), q);
                isum[m] = _mm256_add_epi32(isum[m], _mm256_madd_epi16(_mm256_maddubs_epi16(aq, sy), ones));
                KEEP_IN_REG(isum[m]);
            }
        }
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)w->d));
UNROLL_ROWS
        for (int m = 0; m < RN; m++)
            acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[m]), _mm256_mul_ps(dx, _mm256_set1_ps(y[m]->d)), acc[m]);
    }
UNROLL_ROWS
    for (int m = 0; m < RN; m++) _mm256_storeu_ps(Y + (size_t)m * ys, acc[m]);
}

/* M rows of nb q8_1 (Q41) or q8_0 blocks as act_q8_1f / act_q8_0f rows of
   *stride bytes; NULL when out of memory. */
static const char *act_with_float_scales(bool Q41, const char *X, size_t xs, int64_t M, int64_t nb, size_t *stride) {
    const size_t bs = Q41 ? sizeof(act_q8_1f) : sizeof(act_q8_0f);
    *stride = (size_t)nb * bs;
    char *out = mllm_x86_thread_scratch(MLLM_X86_SCRATCH_ACT, (size_t)M * *stride);
    if (!out) return NULL;
    for (int64_t m = 0; m < M; m++) {
        const char *x = X + (size_t)m * xs;
        char *o = out + (size_t)m * *stride;
        for (int64_t b = 0; b < nb; b++, o += bs)
            if (Q41) {
                const mllm_block_q8_1 *y = (const mllm_block_q8_1 *)x + b;
                act_q8_1f *a = (act_q8_1f *)o;
                a->d = f16_to_f32_hw(y->d);
                a->s = f16_to_f32_hw(y->s);
                memcpy(a->qs, y->qs, 32);
            } else {
                const mllm_block_q8_0 *y = (const mllm_block_q8_0 *)x + b;
                act_q8_0f *a = (act_q8_0f *)o;
                a->d = f16_to_f32_hw(y->d);
                memcpy(a->qs, y->qs, 32);
            }
    }
    return out;
}

PACKED_GROUP_SET8(tile_q4_0x8, mllm_block_q4_0x8)
PACKED_GROUP_SET8(tile_q8_0x8, mllm_block_q8_0x8)
PACKED_GROUP_SET8(tile_q4_1x8, mllm_block_q4_1x8)
PACKED_GROUP_SET(tile_q5_0x8, mllm_block_q5_0x8)
/* Activation rows per k-quant tile (q4_Kx8, q5_Kx8, q6_Kx8): 5 on GCC,
   where 5 rows ran M = 5 in 0.70-0.74x and M = 9 in 0.72-0.85x the time of
   4-row tiles (bench/history/2026-12-01_to_2026-12-03.md, "AVX2 k-quant tiles: register schedule"); clang 14 spills the
   wider tiles, so 4 there. */
#ifndef KQ_TILE_W
#ifdef __clang__
#define KQ_TILE_W 4
#else
#define KQ_TILE_W 5
#endif
#endif
_Static_assert(KQ_TILE_W >= 1 && KQ_TILE_W <= 8, "the k-quant sets hold tiles of 1..8 rows");
_Static_assert(X8_TILE_W >= 1 && X8_TILE_W <= TILE_MAX, "a set8 holds tiles of 1..8 rows");

bool mllm_mul_mat_packed_avx2(mllm_dtype wt, const void *W, size_t w_stride, int64_t K,
                              const void *X, size_t x_stride, int64_t M, float *Y,
                              size_t y_stride, int64_t r0, int64_t r1) {
    if (wt == MLLM_DTYPE_Q4_1_X8 || wt == MLLM_DTYPE_Q8_0_X8) {
        const bool q41 = wt == MLLM_DTYPE_Q4_1_X8;
        if (r0 % 8 != 0 || r1 % 8 != 0 || K % 32 != 0) return false;
        size_t as;
        const char *A = act_with_float_scales(q41, X, x_stride, M, K / 32, &as);
        if (!A) return false;
        return mllm_mul_mat_packed_tiles_n(q41 ? tile_q4_1x8_set8 : tile_q8_0x8_set8, X8_TILE_W, wt, W, w_stride, K,
                                           A, as, M, Y, y_stride, r0, r1);
    }
    if (wt == MLLM_DTYPE_Q4_0_X8)
        return mllm_mul_mat_packed_tiles_n(tile_q4_0x8_set8, X8_TILE_W, wt, W, w_stride, K, X, x_stride, M, Y,
                                           y_stride, r0, r1);
    /* k-quants: tiles of up to KQ_TILE_W rows (a verification pass of 5
       tokens is one sweep over the weights, 9 two of 5 + 4) */
    const mllm_packed_group_fn *kq8 = mllm_kquant_x8_tiles8_avx2(wt);
    if (kq8)
        return mllm_mul_mat_packed_tiles_n(kq8, KQ_TILE_W, wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1);
    const mllm_packed_group_fn *set = wt == MLLM_DTYPE_Q5_0_X8 ? tile_q5_0x8_set : mllm_kquant_x8_tiles_avx2(wt);
    return mllm_mul_mat_packed_tiles(set, wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1);
}
