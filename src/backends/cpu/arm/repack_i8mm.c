/* SMMLA tiles (Armv8.6 i8mm; built with +i8mm, run only where HWCAP2_I8MM
   says the CPU has it) for the 32-value x8 packed layouts q4_0x8, q4_1x8,
   q5_0x8 and q8_0x8 (repack.h), 2..4 activation rows; one activation row
   (decode) runs the SDOT tile (repack_dotprod.c), which does half the work
   of an SMMLA tile with a duplicated row.

   SMMLA multiplies a 2x8 int8 matrix (two weight rows, 8 consecutive values
   each) by the transpose of another (two activation rows): 4 int32 sums,
   [r0.m0, r0.m1, r1.m0, r1.m1]. The x8 layouts hold 4 values of 4 rows per
   16 bytes (made for SDOT by element), and they turn into SMMLA operands
   with one zip per 16 bytes, nothing repacked:
   - q4_0x8 / q4_1x8 / q5_0x8: 16 bytes of chunk t are rows 4h..4h+3, 4
     bytes each, low nibbles values 8t..8t+3 and high ones 8t+4..8t+7. Zipping
     the low and high nibble vectors by 32-bit lanes gives rows (4h, 4h+1)
     and (4h+2, 4h+3) with values 8t..8t+7 in order;
   - q8_0x8: 16 bytes of group g are values 4g..4g+3 of rows 4h..4h+3;
     zipping groups 2t and 2t+1 gives the same operands.
   The activations: rows 2p, 2p+1 zipped by 64-bit lanes (values 8t..8t+7
   of each). A tile is 8 weight rows x 2 activation-row pairs: per 32-value
   block 32 SMMLA for 4 activation rows, where the SDOT tile needs 64 SDOT
   (plus 16 + 8 zips here).
   An odd last activation row is paired with itself and its copy dropped.

   Bit-equal to the generic packed kernel, as the SDOT tiles: the per-block
   int32 sums are exact, and each output lane does the generic float steps
   (repack.c's block dots) in the same order, with separate multiplies and
   adds (-std=c17 keeps -ffp-contract=off); only the lane arrangement
   differs (tests/unit/test_kernels_arm_packed.c checks it). */
#include <stdbool.h>

#include "backends/cpu/arm/arm_kernels.h"
#include "backends/cpu/arm/neon_util.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define PAIRS 2 /* activation-row pairs per tile: MLLM_PACKED_TILE_N / 2 */

typedef enum { K_Q4_0, K_Q4_1, K_Q5_0, K_Q8_0 } kind;

/* The 16 weight operands of one packed block: A[t][q] = rows 2q, 2q+1,
   values 8t..8t+7. */
ALWAYS_INLINE void weight_ops(kind K, const uint8_t *wb, int8x16_t A[4][4]) {
    if (K == K_Q8_0) {
        const int8_t *qs = ((const mllm_block_q8_0x8 *)wb)->qs;
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) {
            const int8x16x4_t v = vld1q_s8_x4(qs + 64 * t); /* groups 2t (val 0, 1), 2t+1 (val 2, 3) */
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                const int32x4_t a = vreinterpretq_s32_s8(v.val[h]), b = vreinterpretq_s32_s8(v.val[2 + h]);
                A[t][2 * h] = vreinterpretq_s8_s32(vzip1q_s32(a, b));
                A[t][2 * h + 1] = vreinterpretq_s8_s32(vzip2q_s32(a, b));
            }
        }
        return;
    }
    const uint8_t *qs = K == K_Q4_0   ? ((const mllm_block_q4_0x8 *)wb)->qs
                        : K == K_Q4_1 ? ((const mllm_block_q4_1x8 *)wb)->qs
                                      : ((const mllm_block_q5_0x8 *)wb)->qs;
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    uint8x16x2_t qh = {{vdupq_n_u8(0), vdupq_n_u8(0)}};
    if (K == K_Q5_0) qh = vld1q_u8_x2(((const mllm_block_q5_0x8 *)wb)->qh); /* rows 0..3, 4..7 */
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++) {
        const uint8x16x2_t v = vld1q_u8_x2(qs + 32 * t);
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            uint8x16_t lo = vandq_u8(v.val[h], m4), hi = vshrq_n_u8(v.val[h], 4);
            if (K == K_Q5_0) { /* bit 2t: value 8t + j, bit 2t + 1: 8t + 4 + j */
                lo = vorrq_u8(lo, mllm_neon_bit_to_4(qh.val[h], 2 * t));
                hi = vorrq_u8(hi, mllm_neon_bit_to_4(qh.val[h], 2 * t + 1));
            }
            const uint32x4_t l = vreinterpretq_u32_u8(lo), u = vreinterpretq_u32_u8(hi);
            A[t][2 * h] = vreinterpretq_s8_u32(vzip1q_u32(l, u));
            A[t][2 * h + 1] = vreinterpretq_s8_u32(vzip2q_u32(l, u));
        }
    }
}

/* Activation block b of rows m0, m1 as the 4 operands B[t] (values
   8t..8t+7 of each row), with what the float step needs, as
   [m0, m1, m0, m1] vectors: dy, and s8 (q4_0 / q5_0, times 2 for q5_0) or
   sy (q4_1). The scales are gathered in vector registers (lane loads, one
   unzip), not through scalars: per block that is the tile's overhead over
   the SDOT one, which multiplies by a scalar lane. */
ALWAYS_INLINE void act_ops(kind K, const char *x0, const char *x1, int8x16_t B[4], float32x4_t *dy,
                           float32x4_t *sy, int32x4_t *s8) {
    const int8_t *q0, *q1;
    if (K == K_Q8_0) { /* f16 d: [d0, d1, ., .] widened, then its low half twice */
        q0 = ((const mllm_block_q8_0 *)x0)->qs, q1 = ((const mllm_block_q8_0 *)x1)->qs;
        uint16x4_t h = vld1_dup_u16((const uint16_t *)x0);
        h = vld1_lane_u16((const uint16_t *)x1, h, 1);
        const float32x4_t f = vcvt_f32_f16(vreinterpret_f16_u16(h));
        *dy = vreinterpretq_f32_f64(vdupq_laneq_f64(vreinterpretq_f64_f32(f), 0));
    } else if (K == K_Q4_1) { /* f16 (d, s) pairs: [d0, s0, d1, s1] */
        q0 = ((const mllm_block_q8_1 *)x0)->qs, q1 = ((const mllm_block_q8_1 *)x1)->qs;
        uint32x2_t h = vld1_dup_u32((const uint32_t *)x0);
        h = vld1_lane_u32((const uint32_t *)x1, h, 1);
        const float32x4_t f = vcvt_f32_f16(vreinterpret_f16_u32(h));
        *dy = vuzp1q_f32(f, f), *sy = vuzp2q_f32(f, f);
    } else { /* (int32 s8, float d) pairs: [s8_0, d0, s8_1, d1] */
        q0 = ((const mllm_block_q8_0s *)x0)->qs, q1 = ((const mllm_block_q8_0s *)x1)->qs;
        const int32x4_t v = vcombine_s32(vld1_s32((const int32_t *)x0), vld1_s32((const int32_t *)x1));
        *dy = vreinterpretq_f32_s32(vuzp2q_s32(v, v));
        *s8 = vuzp1q_s32(v, v);
        if (K == K_Q5_0) *s8 = vshlq_n_s32(*s8, 1); /* (v - 16): 2 * (8 sum y) */
    }
    const int64x2_t a0 = vreinterpretq_s64_s8(vld1q_s8(q0)), a1 = vreinterpretq_s64_s8(vld1q_s8(q0 + 16));
    const int64x2_t b0 = vreinterpretq_s64_s8(vld1q_s8(q1)), b1 = vreinterpretq_s64_s8(vld1q_s8(q1 + 16));
    B[0] = vreinterpretq_s8_s64(vzip1q_s64(a0, b0)), B[1] = vreinterpretq_s8_s64(vzip2q_s64(a0, b0));
    B[2] = vreinterpretq_s8_s64(vzip1q_s64(a1, b1)), B[3] = vreinterpretq_s8_s64(vzip2q_s64(a1, b1));
}

/* Row scales d[8] (and q4_1's m[8]) as [r, r, r+1, r+1] for row pair q. */
ALWAYS_INLINE float32x4_t pair_scale(float32x4_t lo, float32x4_t hi, int q) {
    switch (q) {
    case 0: return vzip1q_f32(lo, lo);
    case 1: return vzip2q_f32(lo, lo);
    case 2: return vzip1q_f32(hi, hi);
    default: return vzip2q_f32(hi, hi);
    }
}

ALWAYS_INLINE void f16x8(const mllm_f16 *p, float32x4_t *lo, float32x4_t *hi) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(p));
    *lo = vcvt_f32_f16(vget_low_f16(h));
    *hi = vcvt_high_f32_f16(h);
}

/* One tile: 8 weight rows (nb blocks from wb) x RN (2..4) activation rows. */
ALWAYS_INLINE void tile(kind K, int RN, const uint8_t *wb, int64_t nb, const char *X, size_t xs, float *Y,
                        size_t ys) {
    const size_t bsize = K == K_Q4_0   ? sizeof(mllm_block_q4_0x8)
                         : K == K_Q4_1 ? sizeof(mllm_block_q4_1x8)
                         : K == K_Q5_0 ? sizeof(mllm_block_q5_0x8)
                                       : sizeof(mllm_block_q8_0x8);
    const size_t ysize = K == K_Q8_0 ? sizeof(mllm_block_q8_0) : K == K_Q4_1 ? sizeof(mllm_block_q8_1) : sizeof(mllm_block_q8_0s);
    const int NP = (RN + 1) / 2;
    float32x4_t acc[PAIRS][4];
#pragma GCC unroll 2
    for (int p = 0; p < NP; p++)
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) acc[p][q] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; b++, wb += bsize) {
        int8x16_t A[4][4];
        weight_ops(K, wb, A);
        float32x4_t d0, d1, m0 = vdupq_n_f32(0.0f), m1 = vdupq_n_f32(0.0f);
        f16x8((const mllm_f16 *)wb, &d0, &d1); /* d[8] leads every block */
        if (K == K_Q4_1) f16x8(((const mllm_block_q4_1x8 *)wb)->m, &m0, &m1);
#pragma GCC unroll 2
        for (int p = 0; p < NP; p++) {
            const int ma = 2 * p, mb = 2 * p + 1 < RN ? 2 * p + 1 : 2 * p;
            int8x16_t B[4];
            float32x4_t dy, sy = vdupq_n_f32(0.0f);
            int32x4_t s8 = vdupq_n_s32(0);
            act_ops(K, X + (size_t)ma * xs + (size_t)b * ysize, X + (size_t)mb * xs + (size_t)b * ysize, B, &dy,
                    &sy, &s8);
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) {
                int32x4_t s = vmmlaq_s32(vdupq_n_s32(0), A[0][q], B[0]);
                s = vmmlaq_s32(s, A[1][q], B[1]);
                s = vmmlaq_s32(s, A[2][q], B[2]);
                s = vmmlaq_s32(s, A[3][q], B[3]);
                const float32x4_t dd = vmulq_f32(pair_scale(d0, d1, q), dy); /* d * dy */
                float32x4_t t;
                if (K == K_Q4_1) /* (d * dy) * s + m * sy */
                    t = vaddq_f32(vmulq_f32(dd, vcvtq_f32_s32(s)), vmulq_f32(pair_scale(m0, m1, q), sy));
                else if (K == K_Q8_0) /* (d * dy) * s */
                    t = vmulq_f32(dd, vcvtq_f32_s32(s));
                else /* (d * dy) * (s - s8) */
                    t = vmulq_f32(dd, vcvtq_f32_s32(vsubq_s32(s, s8)));
                acc[p][q] = vaddq_f32(acc[p][q], t);
            }
        }
    }
    /* lanes [r.m, r.m+1, r+1.m, r+1.m+1] back to rows of Y */
#pragma GCC unroll 2
    for (int p = 0; p < NP; p++) {
        float *y0 = Y + (size_t)(2 * p) * ys;
        vst1q_f32(y0, vuzp1q_f32(acc[p][0], acc[p][1]));
        vst1q_f32(y0 + 4, vuzp1q_f32(acc[p][2], acc[p][3]));
        if (2 * p + 1 < RN) {
            vst1q_f32(y0 + ys, vuzp2q_f32(acc[p][0], acc[p][1]));
            vst1q_f32(y0 + ys + 4, vuzp2q_f32(acc[p][2], acc[p][3]));
        }
    }
}

/* The RN = 1 entry: the SDOT tile of the same layout. */
#define I8MM_SET(name, K, DT)                                                                              \
    static void name##_1(const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {      \
        mllm_packed_tiles_dotprod(DT)[0](w, nb, X, xs, Y, ys);                                             \
    }                                                                                                      \
    static void name##_2(const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {      \
        tile(K, 2, w, nb, X, xs, Y, ys);                                                                   \
    }                                                                                                      \
    static void name##_3(const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {      \
        tile(K, 3, w, nb, X, xs, Y, ys);                                                                   \
    }                                                                                                      \
    static void name##_4(const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {      \
        tile(K, 4, w, nb, X, xs, Y, ys);                                                                   \
    }                                                                                                      \
    static const mllm_packed_group_fn name##_set[MLLM_PACKED_TILE_N] = {name##_1, name##_2, name##_3, name##_4};

_Static_assert(MLLM_PACKED_TILE_N == 2 * PAIRS, "a tile is PAIRS activation-row pairs");
I8MM_SET(mm_q4_0x8, K_Q4_0, MLLM_DTYPE_Q4_0_X8)
I8MM_SET(mm_q4_1x8, K_Q4_1, MLLM_DTYPE_Q4_1_X8)
I8MM_SET(mm_q5_0x8, K_Q5_0, MLLM_DTYPE_Q5_0_X8)
I8MM_SET(mm_q8_0x8, K_Q8_0, MLLM_DTYPE_Q8_0_X8)

const mllm_packed_group_fn *mllm_packed_tiles_i8mm(mllm_dtype t) {
    switch (t) {
    case MLLM_DTYPE_Q4_0_X8: return mm_q4_0x8_set;
    case MLLM_DTYPE_Q4_1_X8: return mm_q4_1x8_set;
    case MLLM_DTYPE_Q5_0_X8: return mm_q5_0x8_set;
    case MLLM_DTYPE_Q8_0_X8: return mm_q8_0x8_set;
    default: return NULL;
    }
}
