/* The matmul hot spot, AVX2 + FMA + F16C. Output is computed in tiles of up
   to 4 weight rows x 3 activation rows: each weight block is decoded once per
   tile and reused for 3 activation rows, each activation block is loaded once
   and reused for 4 weight rows, and the 12 partial sums stay in registers.
   Decode (M = 1) runs the 4x1 tile: one pass over the weights, 4 rows sharing
   each activation load. The per-block math (and so the result) is the same as
   the AVX2 vec_dots: exact int32 block sums, float accumulation in 8 lanes.
   The k-quants' tiles run the per-block math of their vec_dots
   (kquant_avx2.h); in models their matrices are mostly packed
   (repack_kquant_avx2.c), these serve the rest (rows not a multiple of 8,
   MLLM_REPACK=0). */
#include <stdlib.h>

#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/x86/kquant_avx2.h"
#include "core/alloc.h"
#include "backends/cpu/quant5.h"
#include "backends/cpu/x86/simd_avx2.h"

#define TILE_M 4 /* weight rows per tile */
#define TILE_N 3 /* activation rows per tile */
/* Weight rows per chunk: the chunk stays in L2 while all activation tiles
   stream past it. */
#define CHUNK_BYTES (192 * 1024)

#define ALWAYS_INLINE static inline __attribute__((always_inline))

typedef void (*tile_fn)(const char *W, size_t ws, const char *X, size_t xs, int64_t K, float *Y,
                        size_t ys);

/* Writes acc[r][m] lane sums (+ extra[r][m]) to Y[m][r]. */
#define STORE_TILE(RM, RN, acc, extra)                                            \
    for (int r = 0; r < (RM); r++)                                                \
        for (int m = 0; m < (RN); m++) Y[(size_t)m * ys + r] = mm256_hsum_ps(acc[r][m]) + (extra)

ALWAYS_INLINE void tile_q8_0(int RM, int RN, const char *W, size_t ws, const char *X, size_t xs,
                             int64_t K, float *Y, size_t ys) {
    __m256 acc[TILE_M][TILE_N];
#pragma GCC unroll 4
    for (int r = 0; r < RM; r++)
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) acc[r][m] = _mm256_setzero_ps();
    const int64_t nb = K / MLLM_QK8_0;
    for (int64_t b = 0; b < nb; b++) {
        __m256i qy[TILE_N];
        __m256 dy[TILE_N];
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            const mllm_block_q8_0 *yb = (const mllm_block_q8_0 *)(X + (size_t)m * xs) + b;
            qy[m] = _mm256_loadu_si256((const __m256i *)yb->qs);
            dy[m] = broadcast_f16(&yb->d);
        }
#pragma GCC unroll 4
        for (int r = 0; r < RM; r++) {
            const mllm_block_q8_0 *xb = (const mllm_block_q8_0 *)(W + (size_t)r * ws) + b;
            const __m256i qx = _mm256_loadu_si256((const __m256i *)xb->qs);
            const __m256i ax = _mm256_sign_epi8(qx, qx);
            const __m256 dx = broadcast_f16(&xb->d);
#pragma GCC unroll 4
            for (int m = 0; m < RN; m++) {
                const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(qy[m], qx)),
                                                    _mm256_set1_epi16(1));
                acc[r][m] = _mm256_fmadd_ps(_mm256_mul_ps(dx, dy[m]), _mm256_cvtepi32_ps(p), acc[r][m]);
            }
        }
    }
#pragma GCC unroll 4
    STORE_TILE(RM, RN, acc, 0.0f);
}

ALWAYS_INLINE void tile_q4_0(int RM, int RN, const char *W, size_t ws, const char *X, size_t xs,
                             int64_t K, float *Y, size_t ys) {
    __m256 acc[TILE_M][TILE_N];
#pragma GCC unroll 4
    for (int r = 0; r < RM; r++)
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) acc[r][m] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1), eight = _mm256_set1_epi8(8);
    const int64_t nb = K / MLLM_QK4_0;
    for (int64_t b = 0; b < nb; b++) {
        /* sum((u - 8) * y) = sum(u * y) - sum(8 * y): the second term is per
           activation block, so the weight nibbles stay unsigned. */
        __m256i qy[TILE_N], corr[TILE_N];
        __m256 dy[TILE_N];
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            const mllm_block_q8_0 *yb = (const mllm_block_q8_0 *)(X + (size_t)m * xs) + b;
            qy[m] = _mm256_loadu_si256((const __m256i *)yb->qs);
            corr[m] = _mm256_madd_epi16(_mm256_maddubs_epi16(eight, qy[m]), ones);
            dy[m] = broadcast_f16(&yb->d);
        }
#pragma GCC unroll 4
        for (int r = 0; r < RM; r++) {
            const mllm_block_q4_0 *xb = (const mllm_block_q4_0 *)(W + (size_t)r * ws) + b;
            const __m256i ux = unpack_nibbles_32(xb->qs);
            const __m256 dx = broadcast_f16(&xb->d);
#pragma GCC unroll 4
            for (int m = 0; m < RN; m++) {
                const __m256i p = _mm256_sub_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(ux, qy[m]), ones), corr[m]);
                acc[r][m] = _mm256_fmadd_ps(_mm256_mul_ps(dx, dy[m]), _mm256_cvtepi32_ps(p), acc[r][m]);
            }
        }
    }
#pragma GCC unroll 4
    STORE_TILE(RM, RN, acc, 0.0f);
}

ALWAYS_INLINE void tile_q4_1(int RM, int RN, const char *W, size_t ws, const char *X, size_t xs,
                             int64_t K, float *Y, size_t ys) {
    __m256 acc[TILE_M][TILE_N];
    float summs[TILE_M][TILE_N];
#pragma GCC unroll 4
    for (int r = 0; r < RM; r++)
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) acc[r][m] = _mm256_setzero_ps(), summs[r][m] = 0.0f;
    const int64_t nb = K / MLLM_QK4_1;
    for (int64_t b = 0; b < nb; b++) {
        __m256i qy[TILE_N];
        __m256 dy[TILE_N];
        float sy[TILE_N];
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            const mllm_block_q8_1 *yb = (const mllm_block_q8_1 *)(X + (size_t)m * xs) + b;
            qy[m] = _mm256_loadu_si256((const __m256i *)yb->qs);
            dy[m] = broadcast_f16(&yb->d);
            sy[m] = f16_to_f32_hw(yb->s);
        }
#pragma GCC unroll 4
        for (int r = 0; r < RM; r++) {
            const mllm_block_q4_1 *xb = (const mllm_block_q4_1 *)(W + (size_t)r * ws) + b;
            const __m256i ux = unpack_nibbles_32(xb->qs);
            const __m256 dx = broadcast_f16(&xb->d);
            const float mx = f16_to_f32_hw(xb->m);
#pragma GCC unroll 4
            for (int m = 0; m < RN; m++) {
                const __m256i p = dot_u8_i8_lanes(ux, qy[m]);
                acc[r][m] = _mm256_fmadd_ps(_mm256_mul_ps(dx, dy[m]), _mm256_cvtepi32_ps(p), acc[r][m]);
                summs[r][m] += mx * sy[m];
            }
        }
    }
#pragma GCC unroll 4
    STORE_TILE(RM, RN, acc, summs[r][m]);
}

/* q5_0 x q8_0 and q5_1 x q8_1: the AVX2 vec_dots' per-block math
   (quant5_avx2.c), so results equal them bit for bit, with each weight block
   decoded once per tile. q5_0: q - 16 as int8 (the nibble, 0xf0 or-ed in
   where the fifth bit is clear); q5_1: q in 0..31 plus the min term. */
ALWAYS_INLINE void tile_q5(int RM, int RN, bool Q51, const char *W, size_t ws, const char *X, size_t xs,
                           int64_t K, float *Y, size_t ys) {
    __m256 acc[TILE_M][TILE_N];
    float summs[TILE_M][TILE_N];
#pragma GCC unroll 4
    for (int r = 0; r < RM; r++)
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) acc[r][m] = _mm256_setzero_ps(), summs[r][m] = 0.0f;
    const __m256i hi_off = _mm256_set1_epi8((char)0xf0), fifth = _mm256_set1_epi8(0x10);
    const size_t wb = Q51 ? sizeof(mllm_block_q5_1) : sizeof(mllm_block_q5_0);
    const size_t yb = Q51 ? sizeof(mllm_block_q8_1) : sizeof(mllm_block_q8_0);
    const int64_t nb = K / MLLM_QK5;
    for (int64_t b = 0; b < nb; b++) {
        __m256i qy[TILE_N];
        __m256 dy[TILE_N];
        float sy[TILE_N];
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            const char *y = X + (size_t)m * xs + (size_t)b * yb;
            if (Q51) {
                const mllm_block_q8_1 *y1 = (const mllm_block_q8_1 *)y;
                qy[m] = _mm256_loadu_si256((const __m256i *)y1->qs);
                dy[m] = broadcast_f16(&y1->d);
                sy[m] = f16_to_f32_hw(y1->s);
            } else {
                const mllm_block_q8_0 *y0 = (const mllm_block_q8_0 *)y;
                qy[m] = _mm256_loadu_si256((const __m256i *)y0->qs);
                dy[m] = broadcast_f16(&y0->d);
                sy[m] = 0.0f;
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < RM; r++) {
            const char *xw = W + (size_t)r * ws + (size_t)b * wb;
            __m256i qx;
            float dx, mx = 0.0f;
            if (Q51) {
                const mllm_block_q5_1 *x1 = (const mllm_block_q5_1 *)xw;
                qx = _mm256_or_si256(unpack_nibbles_32(x1->qs), _mm256_and_si256(bits_to_bytes(x1->qh), fifth));
                dx = f16_to_f32_hw(x1->d);
                mx = f16_to_f32_hw(x1->m);
            } else {
                const mllm_block_q5_0 *x0 = (const mllm_block_q5_0 *)xw;
                qx = _mm256_or_si256(unpack_nibbles_32(x0->qs), _mm256_andnot_si256(bits_to_bytes(x0->qh), hi_off));
                dx = f16_to_f32_hw(x0->d);
            }
#pragma GCC unroll 4
            for (int m = 0; m < RN; m++) {
                /* d as the vec_dot computes it: one float product of the two scales */
                const __m256 d = _mm256_set1_ps(dx * _mm256_cvtss_f32(dy[m]));
                const __m256i p = Q51 ? dot_u8_i8_lanes(qx, qy[m]) : dot_i8_lanes(qx, qy[m]);
                acc[r][m] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc[r][m]);
                if (Q51) summs[r][m] += mx * sy[m];
            }
        }
    }
#pragma GCC unroll 4
    STORE_TILE(RM, RN, acc, summs[r][m]);
}

ALWAYS_INLINE void tile_q5_0(int RM, int RN, const char *W, size_t ws, const char *X, size_t xs, int64_t K,
                             float *Y, size_t ys) {
    tile_q5(RM, RN, false, W, ws, X, xs, K, Y, ys);
}
ALWAYS_INLINE void tile_q5_1(int RM, int RN, const char *W, size_t ws, const char *X, size_t xs, int64_t K,
                             float *Y, size_t ys) {
    tile_q5(RM, RN, true, W, ws, X, xs, K, Y, ys);
}

/* q4_K / q5_K / q6_K x q8_K32: each (weight row, activation row) pair
   accumulates the vec_dot's per-block lanes, so the result is the
   vec_dot's bit for bit. One weight row at a time against the RN
   activation rows (their blocks stay in L1), each weight block's scales
   decoded once for the RN rows. */
ALWAYS_INLINE void tile_kq(int RM, int RN, mllm_dtype wt, const char *W, size_t ws, const char *X, size_t xs,
                           int64_t K, float *Y, size_t ys) {
    const size_t wb = wt == MLLM_DTYPE_Q4_K ? sizeof(mllm_block_q4_k)
                    : wt == MLLM_DTYPE_Q5_K ? sizeof(mllm_block_q5_k) : sizeof(mllm_block_q6_k);
    const int64_t nb = K / MLLM_QK_K;
    for (int r = 0; r < RM; r++) {
        __m256 acc[TILE_N];
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) acc[m] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; b++) {
            const char *xb = W + (size_t)r * ws + (size_t)b * wb;
            kq45_scales p; /* decoded once for the RN activation rows */
            if (wt != MLLM_DTYPE_Q6_K) kq45_prep((const mllm_block_q4_k *)xb, &p);
#pragma GCC unroll 4
            for (int m = 0; m < RN; m++) {
                const mllm_block_q8_k32 *yb = (const mllm_block_q8_k32 *)(X + (size_t)m * xs) + b;
                acc[m] = wt == MLLM_DTYPE_Q6_K ? kq32_block_q6_k(acc[m], (const mllm_block_q6_k *)xb, yb)
                                               : kq32_block_k45(acc[m], xb, &p, yb, wt == MLLM_DTYPE_Q5_K);
            }
        }
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) Y[(size_t)m * ys + r] = mm256_hsum_ps(acc[m]) + 0.0f;
    }
}

ALWAYS_INLINE void tile_q4_k(int RM, int RN, const char *W, size_t ws, const char *X, size_t xs, int64_t K,
                             float *Y, size_t ys) {
    tile_kq(RM, RN, MLLM_DTYPE_Q4_K, W, ws, X, xs, K, Y, ys);
}
ALWAYS_INLINE void tile_q5_k(int RM, int RN, const char *W, size_t ws, const char *X, size_t xs, int64_t K,
                             float *Y, size_t ys) {
    tile_kq(RM, RN, MLLM_DTYPE_Q5_K, W, ws, X, xs, K, Y, ys);
}
ALWAYS_INLINE void tile_q6_k(int RM, int RN, const char *W, size_t ws, const char *X, size_t xs, int64_t K,
                             float *Y, size_t ys) {
    tile_kq(RM, RN, MLLM_DTYPE_Q6_K, W, ws, X, xs, K, Y, ys);
}

/* Float weights (f32 / f16 / bf16): 8 values per step, one accumulator per
   output; the tail (K % 8) is summed in double like the generic dot. */
#define FLOAT_TILE(NAME, T, LOAD8, TO_F32)                                                          \
    ALWAYS_INLINE void NAME(int RM, int RN, const char *W, size_t ws, const char *X, size_t xs,    \
                            int64_t K, float *Y, size_t ys) {                                      \
        __m256 acc[TILE_M][TILE_N];                                                                \
        _Pragma("GCC unroll 4") for (int r = 0; r < RM; r++)                                       \
            _Pragma("GCC unroll 4") for (int m = 0; m < RN; m++) acc[r][m] = _mm256_setzero_ps();  \
        int64_t k = 0;                                                                             \
        for (; k + 8 <= K; k += 8) {                                                               \
            __m256 xv[TILE_N];                                                                     \
            _Pragma("GCC unroll 4") for (int m = 0; m < RN; m++)                                   \
                xv[m] = LOAD8((const T *)(X + (size_t)m * xs) + k);                                \
            _Pragma("GCC unroll 4") for (int r = 0; r < RM; r++) {                                 \
                const __m256 wv = LOAD8((const T *)(W + (size_t)r * ws) + k);                      \
                _Pragma("GCC unroll 4") for (int m = 0; m < RN; m++)                               \
                    acc[r][m] = _mm256_fmadd_ps(wv, xv[m], acc[r][m]);                             \
            }                                                                                      \
        }                                                                                          \
        for (int r = 0; r < RM; r++) {                                                             \
            for (int m = 0; m < RN; m++) {                                                         \
                const T *wr = (const T *)(W + (size_t)r * ws), *xr = (const T *)(X + (size_t)m * xs); \
                double s = mm256_hsum_ps(acc[r][m]);                                               \
                for (int64_t j = k; j < K; j++) s += (double)(TO_F32(wr[j]) * TO_F32(xr[j]));     \
                Y[(size_t)m * ys + r] = (float)s;                                                  \
            }                                                                                      \
        }                                                                                          \
    }

static inline float f32_id(float x) { return x; }
FLOAT_TILE(tile_f32, float, _mm256_loadu_ps, f32_id)
FLOAT_TILE(tile_f16, mllm_f16, load_f16x8, f16_to_f32_hw)
FLOAT_TILE(tile_bf16, mllm_bf16, load_bf16x8, mllm_bf16_to_f32)

/* tile_f32's row math (one accumulator of 8 lanes along K, 8 values a
   step, then mm256_hsum_ps; K a multiple of 8, so no tail) on rows whose
   8-value steps come from segments (kernels.h, dot_f32_segments): the same
   FMAs on the same values in the same order, so the same bits as the
   matmul over the gathered rows. NR rows x NP vectors at a time, as the
   tiles run them (each accumulator its own chain). */
ALWAYS_INLINE void dot_segments_tile(int NR, int NP, float *out, size_t out_stride, const float *const *segs,
                                     size_t d_stride, int seg, int n, int n_valid, const float *p, size_t p_stride,
                                     size_t row0) {
    const __m256 zero = _mm256_setzero_ps();
    __m256 acc[4][3];
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 3
        for (int m = 0; m < NP; m++) acc[r][m] = zero;
    for (int k = 0; k < n; k += 8) {
        const float *sg = segs[k / seg];
        __m256 pv[3];
#pragma GCC unroll 3
        for (int m = 0; m < NP; m++) pv[m] = _mm256_loadu_ps(p + (size_t)m * p_stride + (size_t)k);
        __m256 v[4];
        if (!sg || k >= n_valid) {
#pragma GCC unroll 4
            for (int r = 0; r < NR; r++) v[r] = zero;
        } else if (k + 8 <= n_valid) {
            const float *base = sg + row0 * d_stride + (size_t)(k % seg);
#pragma GCC unroll 4
            for (int r = 0; r < NR; r++) v[r] = _mm256_loadu_ps(base + (size_t)r * d_stride);
        } else { /* the last step: lanes from n_valid on are zeros, never read */
            const float *base = sg + row0 * d_stride + (size_t)(k % seg);
            const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_valid - k),
                                                    _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#pragma GCC unroll 4
            for (int r = 0; r < NR; r++) v[r] = _mm256_maskload_ps(base + (size_t)r * d_stride, mask);
        }
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++)
#pragma GCC unroll 3
            for (int m = 0; m < NP; m++) acc[r][m] = _mm256_fmadd_ps(v[r], pv[m], acc[r][m]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 3
        for (int m = 0; m < NP; m++)
            out[(size_t)m * out_stride + row0 + (size_t)r] = (float)(double)mm256_hsum_ps(acc[r][m]);
}

#define DOT_SEGMENTS_ARGS \
    out + (size_t)m * out_stride, out_stride, segs, d_stride, seg, n, n_valid, p + (size_t)m * p_stride, p_stride
void mllm_dot_f32_segments_avx2(float *out, size_t out_stride, int n_out, const float *const *segs, size_t d_stride,
                                int seg, int n, int n_valid, const float *p, size_t p_stride, int n_p) {
    for (int m = 0; m < n_p; m += 3) {
        const int np = n_p - m < 3 ? n_p - m : 3;
        int d = 0;
        for (; d + 4 <= n_out; d += 4) {
            if (np == 3) dot_segments_tile(4, 3, DOT_SEGMENTS_ARGS, (size_t)d);
            else if (np == 2) dot_segments_tile(4, 2, DOT_SEGMENTS_ARGS, (size_t)d);
            else dot_segments_tile(4, 1, DOT_SEGMENTS_ARGS, (size_t)d);
        }
        for (; d < n_out; d++) {
            if (np == 3) dot_segments_tile(1, 3, DOT_SEGMENTS_ARGS, (size_t)d);
            else if (np == 2) dot_segments_tile(1, 2, DOT_SEGMENTS_ARGS, (size_t)d);
            else dot_segments_tile(1, 1, DOT_SEGMENTS_ARGS, (size_t)d);
        }
    }
}
#undef DOT_SEGMENTS_ARGS

/* Instantiates the 6 tile shapes we use: 4 or 1 weight rows x 3, 2, 1
   activation rows. table[rm == 4][rn - 1]. */
#define TILE_SET(T)                                                                                \
    static void T##_4x3(const char *W, size_t ws, const char *X, size_t xs, int64_t K, float *Y,   \
                        size_t ys) { T(4, 3, W, ws, X, xs, K, Y, ys); }                            \
    static void T##_4x2(const char *W, size_t ws, const char *X, size_t xs, int64_t K, float *Y,   \
                        size_t ys) { T(4, 2, W, ws, X, xs, K, Y, ys); }                            \
    static void T##_4x1(const char *W, size_t ws, const char *X, size_t xs, int64_t K, float *Y,   \
                        size_t ys) { T(4, 1, W, ws, X, xs, K, Y, ys); }                            \
    static void T##_1x3(const char *W, size_t ws, const char *X, size_t xs, int64_t K, float *Y,   \
                        size_t ys) { T(1, 3, W, ws, X, xs, K, Y, ys); }                            \
    static void T##_1x2(const char *W, size_t ws, const char *X, size_t xs, int64_t K, float *Y,   \
                        size_t ys) { T(1, 2, W, ws, X, xs, K, Y, ys); }                            \
    static void T##_1x1(const char *W, size_t ws, const char *X, size_t xs, int64_t K, float *Y,   \
                        size_t ys) { T(1, 1, W, ws, X, xs, K, Y, ys); }                            \
    static const tile_fn T##_set[2][3] = {{T##_1x1, T##_1x2, T##_1x3}, {T##_4x1, T##_4x2, T##_4x3}};

TILE_SET(tile_q8_0)
TILE_SET(tile_q4_0)
TILE_SET(tile_q4_1)
TILE_SET(tile_q5_0)
TILE_SET(tile_q5_1)
TILE_SET(tile_q4_k)
TILE_SET(tile_q5_k)
TILE_SET(tile_q6_k)
TILE_SET(tile_f32)
TILE_SET(tile_f16)
TILE_SET(tile_bf16)

static const tile_fn (*tiles_for(mllm_dtype wt))[3] {
    switch (wt) {
    case MLLM_DTYPE_Q8_0: return tile_q8_0_set;
    case MLLM_DTYPE_Q4_0: return tile_q4_0_set;
    case MLLM_DTYPE_Q4_1: return tile_q4_1_set;
    case MLLM_DTYPE_Q5_0: return tile_q5_0_set;
    case MLLM_DTYPE_Q5_1: return tile_q5_1_set;
    case MLLM_DTYPE_Q4_K: return tile_q4_k_set;
    case MLLM_DTYPE_Q5_K: return tile_q5_k_set;
    case MLLM_DTYPE_Q6_K: return tile_q6_k_set;
    case MLLM_DTYPE_F32: return tile_f32_set;
    case MLLM_DTYPE_F16: return tile_f16_set;
    case MLLM_DTYPE_BF16: return tile_bf16_set;
    default: return NULL;
    }
}

/* Prefill with f16 / bf16 weights: with many activation rows, the
   outer-product GEMM on packed f32 panels (gemm_float_avx2.c) beats the
   dot-product tiles, which spend 7 loads and as many conversions per 12
   multiply-adds and read whole rows from L2. Activations are widened to f32
   once per call (exact). The buffers are per thread and only grow (freed
   when the thread exits).
   The GEMM sums along K in another order than the tiles, so a row's result
   differs (in the last bits) between 16+ rows and fewer: f16 / bf16 models
   are not batch-invariant, like llama.cpp. f32 weights, which include
   attention's two products, stay on the tiles, whose result does not depend
   on the batch: a prompt gives the same logits whatever part of it came
   from a cached prefix. */
#define WIDEN_MIN_M MLLM_SMALL_BATCH_MAX
#define PANEL_FLOATS (1024 * 16)

static float *widen_scratch(size_t n_floats) {
    return mllm_x86_thread_scratch(MLLM_X86_SCRATCH_WIDEN, n_floats * sizeof(float));
}

void mllm_widen_row_avx2(mllm_dtype t, const void *src, float *dst, int64_t K) {
    int64_t k = 0;
    if (t == MLLM_DTYPE_F16) {
        for (; k + 8 <= K; k += 8) _mm256_storeu_ps(dst + k, load_f16x8((const mllm_f16 *)src + k));
        for (; k < K; k++) dst[k] = f16_to_f32_hw(((const mllm_f16 *)src)[k]);
    } else {
        for (; k + 8 <= K; k += 8) _mm256_storeu_ps(dst + k, load_bf16x8((const mllm_bf16 *)src + k));
        for (; k < K; k++) dst[k] = mllm_bf16_to_f32(((const mllm_bf16 *)src)[k]);
    }
}

static bool mul_mat_widened(mllm_dtype wt, const char *w, size_t w_stride, int64_t K, const char *x,
                            size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1) {
    float *buf = widen_scratch(PANEL_FLOATS + (size_t)M * (size_t)K);
    if (!buf) return false; /* out of memory: the tiles need no buffer */
    float *xf = buf + PANEL_FLOATS;
    for (int64_t m = 0; m < M; m++) mllm_widen_row_avx2(wt, x + (size_t)m * x_stride, xf + (size_t)m * K, K);
    mllm_gemm_float_avx2(wt, w, w_stride, K, xf, (size_t)K, M, Y, y_stride, r0, r1, buf);
    return true;
}

bool mllm_gemm_avx2(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const float *X, size_t x_stride,
                    int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1) {
    float *panel = widen_scratch(PANEL_FLOATS);
    if (!panel) return false;
    mllm_gemm_float_avx2(wt, W, w_stride, K, X, x_stride / sizeof(float), M, Y, y_stride, r0, r1, panel);
    return true;
}

/* A small batch (2 to WIDEN_MIN_M - 1 rows: a server's decode step) with
   bf16 weights: the activation rows are widened to f32 once per call
   (exact), then tiles of 3 weight rows x up to 4 activation rows convert
   each weight vector once for 4 multiply-adds and read the activations as
   plain loads (12 accumulators, 3 weights and 1 activation: the 16 AVX2
   registers). tile_bf16 spends 7 conversions (2 instructions each) per 12
   multiply-adds, this one 3. Each output is the same chain as tile_bf16's
   (one 8-lane accumulator along K, mm256_hsum_ps, the tail in double): the
   same bits. Measured one thread, bf16 1408 x 512, Zen 4 (bench_kernels):
   4 rows 60 -> 81 GFLOP/s, 8 rows 66 -> 81 (2x6 and 1x8 tiles were slower
   over 2-12 rows). f16 stays on tile_f16: F16C converts in one instruction,
   and its 4x3 tiles measured as fast (8 rows 95 GFLOP/s). */
#define WIDE_WR 3
#define WIDE_WN 4
#define WIDE_TILE(NAME, T, LOAD8, TO_F32)                                                           \
    ALWAYS_INLINE void NAME(int RM, int RN, const char *W, size_t ws, const float *X, int64_t K,   \
                            float *Y, size_t ys) {                                                 \
        __m256 acc[WIDE_WR][WIDE_WN];                                                              \
        _Pragma("GCC unroll 4") for (int r = 0; r < RM; r++)                                       \
            _Pragma("GCC unroll 4") for (int m = 0; m < RN; m++) acc[r][m] = _mm256_setzero_ps();  \
        int64_t k = 0;                                                                             \
        for (; k + 8 <= K; k += 8) {                                                               \
            __m256 wv[WIDE_WR];                                                                    \
            _Pragma("GCC unroll 4") for (int r = 0; r < RM; r++)                                   \
                wv[r] = LOAD8((const T *)(W + (size_t)r * ws) + k);                                \
            _Pragma("GCC unroll 4") for (int m = 0; m < RN; m++) {                                 \
                const __m256 xv = _mm256_loadu_ps(X + (size_t)m * (size_t)K + k);                  \
                _Pragma("GCC unroll 4") for (int r = 0; r < RM; r++)                               \
                    acc[r][m] = _mm256_fmadd_ps(wv[r], xv, acc[r][m]);                             \
            }                                                                                      \
        }                                                                                          \
        for (int r = 0; r < RM; r++) {                                                             \
            for (int m = 0; m < RN; m++) {                                                         \
                const T *wr = (const T *)(W + (size_t)r * ws);                                     \
                const float *xr = X + (size_t)m * (size_t)K;                                       \
                double s = mm256_hsum_ps(acc[r][m]);                                               \
                for (int64_t j = k; j < K; j++) s += (double)(TO_F32(wr[j]) * xr[j]);             \
                Y[(size_t)m * ys + r] = (float)s;                                                  \
            }                                                                                      \
        }                                                                                          \
    }
WIDE_TILE(wide_bf16, mllm_bf16, load_bf16x8, mllm_bf16_to_f32)

typedef void (*wide_fn)(const char *W, size_t ws, const float *X, int64_t K, float *Y, size_t ys);
#define WIDE_FN(T, RM, RN)                                                                      \
    static void T##_##RM##x##RN(const char *W, size_t ws, const float *X, int64_t K, float *Y, \
                                size_t ys) { T(RM, RN, W, ws, X, K, Y, ys); }
/* table[rm == WIDE_WR][rn - 1] */
#define WIDE_SET(T)                                                                             \
    WIDE_FN(T, 1, 1) WIDE_FN(T, 1, 2) WIDE_FN(T, 1, 3) WIDE_FN(T, 1, 4)                         \
    WIDE_FN(T, 3, 1) WIDE_FN(T, 3, 2) WIDE_FN(T, 3, 3) WIDE_FN(T, 3, 4)                         \
    static const wide_fn T##_set[2][WIDE_WN] = {{T##_1x1, T##_1x2, T##_1x3, T##_1x4},           \
                                                {T##_3x1, T##_3x2, T##_3x3, T##_3x4}};
WIDE_SET(wide_bf16)

static bool mul_mat_small_batch(mllm_dtype wt, const char *w, size_t ws, int64_t K, const char *x, size_t xs,
                                int64_t M, float *Y, size_t ys, int64_t r0, int64_t r1) {
    float *xf = widen_scratch((size_t)M * (size_t)K);
    if (!xf) return false; /* out of memory: the tiles need no buffer */
    for (int64_t m = 0; m < M; m++) mllm_widen_row_avx2(wt, x + (size_t)m * xs, xf + (size_t)m * K, K);
    const wide_fn(*set)[WIDE_WN] = wide_bf16_set;
    for (int64_t m = 0; m < M; m += WIDE_WN) {
        const int rn = (int)(M - m < WIDE_WN ? M - m : WIDE_WN);
        const float *xm = xf + (size_t)m * (size_t)K;
        float *ym = Y + (size_t)m * ys;
        int64_t r = r0;
        for (; r + WIDE_WR <= r1; r += WIDE_WR) set[1][rn - 1](w + (size_t)r * ws, ws, xm, K, ym + r, ys);
        for (; r < r1; r++) set[0][rn - 1](w + (size_t)r * ws, ws, xm, K, ym + r, ys);
    }
    return true;
}

/* Decode with f16 / bf16 weights: one row at a time, 4 accumulators over
   32 values per step. One weight stream instead of the 4x1 tile's four
   interleaved ones: measured on the 0.6B f16 model, 1 thread 11.6 -> 14.8
   tokens/s, 2 threads 22.2 -> 25.6 (the rows here are 2-6 KiB long). */
#define ROW_GEMV(NAME, T, LOAD8, TO_F32)                                                         \
    static void NAME(const char *W, size_t ws, const T *x, int64_t K, float *Y, int64_t r0, int64_t r1) { \
        for (int64_t r = r0; r < r1; r++) {                                                      \
            const T *w = (const T *)(W + (size_t)r * ws);                                        \
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                          \
            int64_t k = 0;                                                                       \
            for (; k + 32 <= K; k += 32) {                                                       \
                a0 = _mm256_fmadd_ps(LOAD8(w + k), LOAD8(x + k), a0);                            \
                a1 = _mm256_fmadd_ps(LOAD8(w + k + 8), LOAD8(x + k + 8), a1);                    \
                a2 = _mm256_fmadd_ps(LOAD8(w + k + 16), LOAD8(x + k + 16), a2);                  \
                a3 = _mm256_fmadd_ps(LOAD8(w + k + 24), LOAD8(x + k + 24), a3);                  \
            }                                                                                    \
            for (; k + 8 <= K; k += 8) a0 = _mm256_fmadd_ps(LOAD8(w + k), LOAD8(x + k), a0);     \
            double s = mm256_hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3))); \
            for (; k < K; k++) s += (double)(TO_F32(w[k]) * TO_F32(x[k]));                       \
            Y[r] = (float)s;                                                                     \
        }                                                                                        \
    }
ROW_GEMV(gemv_f16, mllm_f16, load_f16x8, f16_to_f32_hw)
ROW_GEMV(gemv_bf16, mllm_bf16, load_bf16x8, mllm_bf16_to_f32)

bool mllm_mul_mat_avx2(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X,
                       size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1) {
    const tile_fn(*set)[3] = tiles_for(wt);
    if (!set) return false;
    /* Decode with q5 weights: the row-by-row vec_dot runs ~1.6x faster than
       the 4x1 tile here (measured on Qwen2.5-Coder-0.5B, tg 31 vs 19 t/s);
       same per-block math, so the result does not change. */
    if (M == 1 && (wt == MLLM_DTYPE_Q5_0 || wt == MLLM_DTYPE_Q5_1)) return false;
    if (M == 1 && wt == MLLM_DTYPE_F16) {
        gemv_f16(W, w_stride, X, K, Y, r0, r1);
        return true;
    }
    if (M == 1 && wt == MLLM_DTYPE_BF16) {
        gemv_bf16(W, w_stride, X, K, Y, r0, r1);
        return true;
    }
    if ((wt == MLLM_DTYPE_F16 || wt == MLLM_DTYPE_BF16) && M >= WIDEN_MIN_M &&
        mul_mat_widened(wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1))
        return true;
    if (wt == MLLM_DTYPE_BF16 && M > 1 && M < WIDEN_MIN_M &&
        mul_mat_small_batch(wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1))
        return true;
    const char *w = W, *x = X;
    int64_t chunk = (int64_t)(CHUNK_BYTES / (w_stride ? w_stride : 1)) & ~(int64_t)(TILE_M - 1);
    if (chunk < TILE_M || M == 1) chunk = r1 - r0; /* decode: one pass, no reuse to gain */
    for (int64_t rc = r0; rc < r1; rc += chunk) {
        const int64_t re = rc + chunk < r1 ? rc + chunk : r1;
        for (int64_t m = 0; m < M; m += TILE_N) {
            const int rn = (int)(M - m < TILE_N ? M - m : TILE_N);
            const char *xm = x + (size_t)m * x_stride;
            float *ym = Y + (size_t)m * y_stride;
            int64_t r = rc;
            for (; r + TILE_M <= re; r += TILE_M)
                set[1][rn - 1](w + (size_t)r * w_stride, w_stride, xm, x_stride, K, ym + r, y_stride);
            for (; r < re; r++)
                set[0][rn - 1](w + (size_t)r * w_stride, w_stride, xm, x_stride, K, ym + r, y_stride);
        }
    }
    return true;
}
