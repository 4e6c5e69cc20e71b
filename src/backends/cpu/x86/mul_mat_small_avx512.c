/* The avx512 path's bf16 matmul for 2 to 15 activation rows (a server's
   decode step; mul_mat_avx2.c's mul_mat_small_batch on AVX2). One
   zmm holds 8 values of two weight rows (its low half row r, its high half
   row r + 1) and meets 8 values of one activation row broadcast to both
   halves: each half is then exactly the AVX2 tiles' 8-lane chain of one
   output (the same multiply-adds in the same order, mm256_hsum_ps at the
   end, the tail in double), so the result is the same bits as on the AVX2
   path, and a row's outputs do not depend on the rest of the batch. 32
   registers hold 3 row pairs x up to 8 activation rows (24 accumulators):
   each weight vector is converted once for 8 multiply-adds. One thread,
   bf16 1408 x 512, Zen 4 (bench_kernels): 8 rows 66 (the AVX2 tiles before)
   -> 81 (mul_mat_small_batch) -> 85 GFLOP/s. */
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/x86/simd_avx2.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define PAIRS 3 /* weight row pairs per tile */
#define ROWS 8  /* activation rows per tile */

/* 8 bf16 values of row a in the low half, 8 of row b in the high half, as f32. */
ALWAYS_INLINE __m512 load_pair(const mllm_bf16 *a, const mllm_bf16 *b) {
    const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                              _mm_loadu_si128((const __m128i *)b), 1);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

/* NP pairs (rows w, w + ws, ...; the last pair's second row repeats its first
   when `odd`) x NR activation rows of xf (K apart) into Y[m][0 .. 2 NP). */
ALWAYS_INLINE void tile(int NP, int NR, bool odd, const char *w, size_t ws, const float *xf, int64_t K, float *Y,
                        size_t ys) {
    __m512 acc[PAIRS][ROWS];
#pragma GCC unroll 4
    for (int p = 0; p < NP; p++)
#pragma GCC unroll 8
        for (int m = 0; m < NR; m++) acc[p][m] = _mm512_setzero_ps();
    const mllm_bf16 *lo[PAIRS], *hi[PAIRS];
    for (int p = 0; p < NP; p++) {
        lo[p] = (const mllm_bf16 *)(w + (size_t)(2 * p) * ws);
        hi[p] = odd && p == NP - 1 ? lo[p] : (const mllm_bf16 *)(w + (size_t)(2 * p + 1) * ws);
    }
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        __m512 wv[PAIRS];
#pragma GCC unroll 4
        for (int p = 0; p < NP; p++) wv[p] = load_pair(lo[p] + k, hi[p] + k);
#pragma GCC unroll 8
        for (int m = 0; m < NR; m++) {
            const __m512 xv = _mm512_broadcast_f32x8(_mm256_loadu_ps(xf + (size_t)m * (size_t)K + k));
#pragma GCC unroll 4
            for (int p = 0; p < NP; p++) acc[p][m] = _mm512_fmadd_ps(wv[p], xv, acc[p][m]);
        }
    }
    for (int p = 0; p < NP; p++)
        for (int m = 0; m < NR; m++)
            for (int h = 0; h < (odd && p == NP - 1 ? 1 : 2); h++) {
                const mllm_bf16 *row = h ? hi[p] : lo[p];
                const float *xr = xf + (size_t)m * (size_t)K;
                const __m256 half = h ? _mm512_extractf32x8_ps(acc[p][m], 1) : _mm512_castps512_ps256(acc[p][m]);
                double s = mm256_hsum_ps(half);
                for (int64_t j = k; j < K; j++) s += (double)(mllm_bf16_to_f32(row[j]) * xr[j]);
                Y[(size_t)m * ys + (size_t)(2 * p + h)] = (float)s;
            }
}

/* The tile shapes a call uses: 3 pairs, or the last pair (even or odd), x
   1 to 8 activation rows. */
#define SHAPES(NP, ODD)                                                                                           \
    static void t_##NP##_##ODD(int nr, const char *w, size_t ws, const float *xf, int64_t K, float *Y, size_t ys) { \
        switch (nr) {                                                                                           \
        case 1: tile(NP, 1, ODD, w, ws, xf, K, Y, ys); break;                                                   \
        case 2: tile(NP, 2, ODD, w, ws, xf, K, Y, ys); break;                                                   \
        case 3: tile(NP, 3, ODD, w, ws, xf, K, Y, ys); break;                                                   \
        case 4: tile(NP, 4, ODD, w, ws, xf, K, Y, ys); break;                                                   \
        case 5: tile(NP, 5, ODD, w, ws, xf, K, Y, ys); break;                                                   \
        case 6: tile(NP, 6, ODD, w, ws, xf, K, Y, ys); break;                                                   \
        case 7: tile(NP, 7, ODD, w, ws, xf, K, Y, ys); break;                                                   \
        default: tile(NP, 8, ODD, w, ws, xf, K, Y, ys); break;                                                  \
        }                                                                                                       \
    }
SHAPES(3, 0)
SHAPES(1, 0)
SHAPES(1, 1)

typedef void (*shape_fn)(int nr, const char *w, size_t ws, const float *xf, int64_t K, float *Y, size_t ys);

bool mllm_mul_mat_small_avx512(mllm_dtype wt, const void *W, size_t ws, int64_t K, const void *X, size_t xs,
                               int64_t M, float *Y, size_t ys, int64_t r0, int64_t r1) {
    if (wt != MLLM_DTYPE_BF16 || M < 2 || M >= MLLM_SMALL_BATCH_MAX) return false;
    float *xf = mllm_x86_thread_scratch(MLLM_X86_SCRATCH_WIDEN, (size_t)M * (size_t)K * sizeof(float));
    if (!xf) return false; /* out of memory: the AVX2 tiles need no buffer */
    for (int64_t m = 0; m < M; m++) mllm_widen_row_avx2(wt, (const char *)X + (size_t)m * xs, xf + (size_t)m * K, K);
    const shape_fn full = t_3_0, pair = t_1_0, single = t_1_1;
    const char *w = W;
    for (int64_t m = 0; m < M; m += ROWS) {
        const int nr = (int)(M - m < ROWS ? M - m : ROWS);
        const float *xm = xf + (size_t)m * (size_t)K;
        float *ym = Y + (size_t)m * ys;
        int64_t r = r0;
        for (; r + 2 * PAIRS <= r1; r += 2 * PAIRS) full(nr, w + (size_t)r * ws, ws, xm, K, ym + r, ys);
        for (; r + 2 <= r1; r += 2) pair(nr, w + (size_t)r * ws, ws, xm, K, ym + r, ys);
        if (r < r1) single(nr, w + (size_t)r * ws, ws, xm, K, ym + r, ys);
    }
    return true;
}
