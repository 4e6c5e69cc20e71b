/* NEON tiles for the x8 packed layouts (repack.h), written once for two
   variants: the including file defines MLLM_DOTL(acc, w, y, lane) (acc +=,
   for each of the 4 int32 lanes r, the dot of w's bytes 4r..4r+3 with y's
   bytes 4 lane..4 lane+3: SDOT by element, or the widening multiplies of
   neon_util.h) and MLLM_SFX (the name suffix).

   Why the x8 layout suits SDOT as it is: 16 bytes of a packed block hold 4
   consecutive values of 4 rows, so one SDOT-by-element against the 4
   matching activation bytes gives 4 rows' partial sums, one row per int32
   lane: no horizontal sums, and one scale vector per 4 rows. A tile is one
   8-row group (two int32x4 accumulators) x RN activation rows (1..4), so
   each weight vector is unpacked once for all of them (prefill).

   Every per-block integer sum is exact and the float steps are
   mllm_mul_mat_packed_generic's (repack.c, repack_kquant.c) in the same
   order, lane by lane, with separate multiplies and adds (no FMA:
   -std=c17 keeps -ffp-contract=off): the results equal the generic packed
   kernels bit for bit (tests/unit/test_kernels_arm_packed.c). */
#include <stdbool.h>
#include <string.h>

#include "backends/cpu/arm/arm_kernels.h"
#include "backends/cpu/arm/neon_util.h"
#include "backends/cpu/kquants.h"
#include "backends/cpu/repack.h"

#define MLLM_CAT2(a, b) a##b
#define MLLM_CAT(a, b) MLLM_CAT2(a, b)
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define TILE_N 4

/* 8 f16 values (row scales) as two f32x4 (rows 0..3, 4..7). */
ALWAYS_INLINE void f16x8(const mllm_f16 *p, float32x4_t *lo, float32x4_t *hi) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(p));
    *lo = vcvt_f32_f16(vget_low_f16(h));
    *hi = vcvt_high_f32_f16(h);
}

/* The exact f32 value of an f16 (as mllm_f16_to_f32). */
ALWAYS_INLINE float f16f(mllm_f16 h) {
    __fp16 v;
    memcpy(&v, &h, sizeof v);
    return (float)v;
}

/* q4_0x8 x q8_0s and q4_1x8 x q8_1: the nibbles of packed chunk t (32
   bytes: rows 0..3, then 4..7) hold values 8t..8t+3 (low) and 8t+4..8t+7
   (high), which are int32 lanes 2t and 2t + 1 of the activation's 32 bytes.
   Q41 is a constant at each call. */
ALWAYS_INLINE void tile_q4x8(int RN, bool Q41, const uint8_t *wb, int64_t nb, const char *X, size_t xs, float *Y,
                             size_t ys) {
    const size_t bsize = Q41 ? sizeof(mllm_block_q4_1x8) : sizeof(mllm_block_q4_0x8);
    const size_t ysize = Q41 ? sizeof(mllm_block_q8_1) : sizeof(mllm_block_q8_0s);
    float32x4_t acc0[TILE_N], acc1[TILE_N];
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) acc0[m] = acc1[m] = vdupq_n_f32(0.0f);
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    for (int64_t b = 0; b < nb; b++, wb += bsize) {
        const uint8_t *qs = Q41 ? ((const mllm_block_q4_1x8 *)wb)->qs : ((const mllm_block_q4_0x8 *)wb)->qs;
        const uint8x16x4_t r0 = vld1q_u8_x4(qs), r1 = vld1q_u8_x4(qs + 64);
        const uint8x16_t raw[8] = {r0.val[0], r0.val[1], r0.val[2], r0.val[3],
                                   r1.val[0], r1.val[1], r1.val[2], r1.val[3]};
        int8x16_t lo[8], hi[8];
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            lo[k] = vreinterpretq_s8_u8(vandq_u8(raw[k], m4));
            hi[k] = vreinterpretq_s8_u8(vshrq_n_u8(raw[k], 4));
        }
        float32x4_t d0, d1; /* d[8] leads both blocks */
        f16x8((const mllm_f16 *)wb, &d0, &d1);
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            const char *yb = X + (size_t)m * xs + (size_t)b * ysize;
            const int8_t *yq = Q41 ? ((const mllm_block_q8_1 *)yb)->qs : ((const mllm_block_q8_0s *)yb)->qs;
            const int8x16_t y0 = vld1q_s8(yq), y1 = vld1q_s8(yq + 16);
            int32x4_t s0 = vdupq_n_s32(0), s1 = vdupq_n_s32(0);
            s0 = MLLM_DOTL(s0, lo[0], y0, 0), s1 = MLLM_DOTL(s1, lo[1], y0, 0);
            s0 = MLLM_DOTL(s0, hi[0], y0, 1), s1 = MLLM_DOTL(s1, hi[1], y0, 1);
            s0 = MLLM_DOTL(s0, lo[2], y0, 2), s1 = MLLM_DOTL(s1, lo[3], y0, 2);
            s0 = MLLM_DOTL(s0, hi[2], y0, 3), s1 = MLLM_DOTL(s1, hi[3], y0, 3);
            s0 = MLLM_DOTL(s0, lo[4], y1, 0), s1 = MLLM_DOTL(s1, lo[5], y1, 0);
            s0 = MLLM_DOTL(s0, hi[4], y1, 1), s1 = MLLM_DOTL(s1, hi[5], y1, 1);
            s0 = MLLM_DOTL(s0, lo[6], y1, 2), s1 = MLLM_DOTL(s1, lo[7], y1, 2);
            s0 = MLLM_DOTL(s0, hi[6], y1, 3), s1 = MLLM_DOTL(s1, hi[7], y1, 3);
            if (Q41) { /* (d * dy) * s + m * sy */
                const mllm_block_q8_1 *y = (const mllm_block_q8_1 *)yb;
                const float dy = f16f(y->d), sy = f16f(y->s);
                float32x4_t m0, m1;
                f16x8(((const mllm_block_q4_1x8 *)wb)->m, &m0, &m1);
                acc0[m] = vaddq_f32(acc0[m], vaddq_f32(vmulq_f32(vmulq_n_f32(d0, dy), vcvtq_f32_s32(s0)), vmulq_n_f32(m0, sy)));
                acc1[m] = vaddq_f32(acc1[m], vaddq_f32(vmulq_f32(vmulq_n_f32(d1, dy), vcvtq_f32_s32(s1)), vmulq_n_f32(m1, sy)));
            } else { /* (d * dy) * (s - 8 sum(y)) */
                const mllm_block_q8_0s *y = (const mllm_block_q8_0s *)yb;
                const int32x4_t s8 = vdupq_n_s32(y->s8);
                acc0[m] = vaddq_f32(acc0[m], vmulq_f32(vmulq_n_f32(d0, y->d), vcvtq_f32_s32(vsubq_s32(s0, s8))));
                acc1[m] = vaddq_f32(acc1[m], vmulq_f32(vmulq_n_f32(d1, y->d), vcvtq_f32_s32(vsubq_s32(s1, s8))));
            }
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) {
        vst1q_f32(Y + (size_t)m * ys, acc0[m]);
        vst1q_f32(Y + (size_t)m * ys + 4, acc1[m]);
    }
}

ALWAYS_INLINE void tile_q4_0x8(int RN, const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {
    tile_q4x8(RN, false, w, nb, X, xs, Y, ys);
}

ALWAYS_INLINE void tile_q4_1x8(int RN, const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {
    tile_q4x8(RN, true, w, nb, X, xs, Y, ys);
}

/* q8_0x8 x q8_0: packed chunk g (32 bytes) holds values 4g..4g+3 of the 8
   rows, int32 lane g of the activation's 32 bytes. (d * dy) * s. */
ALWAYS_INLINE void tile_q8_0x8(int RN, const void *vw, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {
    const mllm_block_q8_0x8 *w = vw;
    float32x4_t acc0[TILE_N], acc1[TILE_N];
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) acc0[m] = acc1[m] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; b++, w++) {
        int8x16_t q[16];
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const int8x16x4_t v = vld1q_s8_x4(w->qs + 64 * k);
            q[4 * k] = v.val[0], q[4 * k + 1] = v.val[1], q[4 * k + 2] = v.val[2], q[4 * k + 3] = v.val[3];
        }
        float32x4_t d0, d1;
        f16x8(w->d, &d0, &d1);
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            const mllm_block_q8_0 *y = (const mllm_block_q8_0 *)(X + (size_t)m * xs) + b;
            const int8x16_t y0 = vld1q_s8(y->qs), y1 = vld1q_s8(y->qs + 16);
            int32x4_t s0 = vdupq_n_s32(0), s1 = vdupq_n_s32(0);
            s0 = MLLM_DOTL(s0, q[0], y0, 0), s1 = MLLM_DOTL(s1, q[1], y0, 0);
            s0 = MLLM_DOTL(s0, q[2], y0, 1), s1 = MLLM_DOTL(s1, q[3], y0, 1);
            s0 = MLLM_DOTL(s0, q[4], y0, 2), s1 = MLLM_DOTL(s1, q[5], y0, 2);
            s0 = MLLM_DOTL(s0, q[6], y0, 3), s1 = MLLM_DOTL(s1, q[7], y0, 3);
            s0 = MLLM_DOTL(s0, q[8], y1, 0), s1 = MLLM_DOTL(s1, q[9], y1, 0);
            s0 = MLLM_DOTL(s0, q[10], y1, 1), s1 = MLLM_DOTL(s1, q[11], y1, 1);
            s0 = MLLM_DOTL(s0, q[12], y1, 2), s1 = MLLM_DOTL(s1, q[13], y1, 2);
            s0 = MLLM_DOTL(s0, q[14], y1, 3), s1 = MLLM_DOTL(s1, q[15], y1, 3);
            const float dy = f16f(y->d);
            acc0[m] = vaddq_f32(acc0[m], vmulq_f32(vmulq_n_f32(d0, dy), vcvtq_f32_s32(s0)));
            acc1[m] = vaddq_f32(acc1[m], vmulq_f32(vmulq_n_f32(d1, dy), vcvtq_f32_s32(s1)));
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) {
        vst1q_f32(Y + (size_t)m * ys, acc0[m]);
        vst1q_f32(Y + (size_t)m * ys + 4, acc1[m]);
    }
}

/* q5_0x8 x q8_0s: q4_0x8's nibbles with the fifth bits or-ed in (qh[4r +
   j]: bit 2t for value 8t + j, bit 2t + 1 for 8t + 4 + j; the same byte
   positions as a qs chunk), values 0..31; (d * dy) * (s - 2 * 8 sum(y)). */
ALWAYS_INLINE void tile_q5_0x8(int RN, const void *vw, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {
    const mllm_block_q5_0x8 *w = vw;
    float32x4_t acc0[TILE_N], acc1[TILE_N];
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) acc0[m] = acc1[m] = vdupq_n_f32(0.0f);
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    for (int64_t b = 0; b < nb; b++, w++) {
        const uint8x16x4_t r0 = vld1q_u8_x4(w->qs), r1 = vld1q_u8_x4(w->qs + 64);
        const uint8x16x2_t h = vld1q_u8_x2(w->qh);
        const uint8x16_t raw[8] = {r0.val[0], r0.val[1], r0.val[2], r0.val[3],
                                   r1.val[0], r1.val[1], r1.val[2], r1.val[3]};
        int8x16_t lo[8], hi[8];
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) { /* chunk t = k / 2, rows 4 (k % 2).. */
            const uint8x16_t qh = h.val[k % 2];
            lo[k] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(raw[k], m4), mllm_neon_bit_to_4(qh, 2 * (k / 2))));
            hi[k] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(raw[k], 4), mllm_neon_bit_to_4(qh, 2 * (k / 2) + 1)));
        }
        float32x4_t d0, d1;
        f16x8(w->d, &d0, &d1);
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            const mllm_block_q8_0s *y = (const mllm_block_q8_0s *)(X + (size_t)m * xs) + b;
            const int8x16_t y0 = vld1q_s8(y->qs), y1 = vld1q_s8(y->qs + 16);
            int32x4_t s0 = vdupq_n_s32(0), s1 = vdupq_n_s32(0);
            s0 = MLLM_DOTL(s0, lo[0], y0, 0), s1 = MLLM_DOTL(s1, lo[1], y0, 0);
            s0 = MLLM_DOTL(s0, hi[0], y0, 1), s1 = MLLM_DOTL(s1, hi[1], y0, 1);
            s0 = MLLM_DOTL(s0, lo[2], y0, 2), s1 = MLLM_DOTL(s1, lo[3], y0, 2);
            s0 = MLLM_DOTL(s0, hi[2], y0, 3), s1 = MLLM_DOTL(s1, hi[3], y0, 3);
            s0 = MLLM_DOTL(s0, lo[4], y1, 0), s1 = MLLM_DOTL(s1, lo[5], y1, 0);
            s0 = MLLM_DOTL(s0, hi[4], y1, 1), s1 = MLLM_DOTL(s1, hi[5], y1, 1);
            s0 = MLLM_DOTL(s0, lo[6], y1, 2), s1 = MLLM_DOTL(s1, lo[7], y1, 2);
            s0 = MLLM_DOTL(s0, hi[6], y1, 3), s1 = MLLM_DOTL(s1, hi[7], y1, 3);
            const int32x4_t s16 = vdupq_n_s32(2 * y->s8);
            acc0[m] = vaddq_f32(acc0[m], vmulq_f32(vmulq_n_f32(d0, y->d), vcvtq_f32_s32(vsubq_s32(s0, s16))));
            acc1[m] = vaddq_f32(acc1[m], vmulq_f32(vmulq_n_f32(d1, y->d), vcvtq_f32_s32(vsubq_s32(s1, s16))));
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) {
        vst1q_f32(Y + (size_t)m * ys, acc0[m]);
        vst1q_f32(Y + (size_t)m * ys + 4, acc1[m]);
    }
}

/* The 6-bit scales and mins of the 8 rows (kq_scale_min, 8 rows at once)
   as int32x4 pairs: sc[j][h], mn[j][h] for sub-block j, rows 4h..4h+3.
   scales[8k + r] is byte k of row r. */
ALWAYS_INLINE void k4_scales(const uint8_t *s, int32x4_t sc[8][2], int32x4_t mn[8][2]) {
    uint8x8_t v[12];
#pragma GCC unroll 12
    for (int k = 0; k < 12; k++) v[k] = vld1_u8(s + 8 * k);
    const uint8x8_t m6 = vdup_n_u8(63), m4 = vdup_n_u8(0x0f), m30 = vdup_n_u8(0x30);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        uint8x8_t a, b;
        if (j < 4) {
            a = vand_u8(v[j], m6);
            b = vand_u8(v[j + 4], m6);
        } else {
            a = vorr_u8(vand_u8(v[j + 4], m4), vand_u8(vshr_n_u8(v[j - 4], 2), m30));
            b = vorr_u8(vshr_n_u8(v[j + 4], 4), vand_u8(vshr_n_u8(v[j], 2), m30));
        }
        const uint16x8_t a16 = vmovl_u8(a), b16 = vmovl_u8(b);
        sc[j][0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(a16)));
        sc[j][1] = vreinterpretq_s32_u32(vmovl_high_u16(a16));
        mn[j][0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(b16)));
        mn[j][1] = vreinterpretq_s32_u32(vmovl_high_u16(b16));
    }
}

/* q4_Kx8 and q5_Kx8 x q8_K32: chunk c (256 bytes), row group t (32 bytes)
   holds positions 4t..4t+3 of sub-blocks 2c (low nibbles) and 2c + 1 (high)
   for the 8 rows; they meet int32 lane t % 4 of the activation's 16-byte
   vector (32 j + 4 t) / 16. q5_K (Q5, a constant at each call) or-s in the
   fifth bits: qh's 32-byte group t has the same byte positions as qs's, bit
   2c for the low nibbles, 2c + 1 for the high (values 0..31). Per sub-block
   j the exact a = sc_j * dot and b = m_j * (bsums[2j] + bsums[2j + 1]);
   then kq32_combine's float steps: sa += dy_j * a, sb += dy_j * b in j
   order, block = d * sa - dmin * sb. d, dmin and scales sit at the same
   offsets in both layouts. */
ALWAYS_INLINE void tile_k45x8(int RN, bool Q5, const uint8_t *wb, int64_t nb, const char *X, size_t xs, float *Y,
                              size_t ys) {
    const size_t bsize = Q5 ? sizeof(mllm_block_q5_kx8) : sizeof(mllm_block_q4_kx8);
    float32x4_t acc0[TILE_N], acc1[TILE_N];
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) acc0[m] = acc1[m] = vdupq_n_f32(0.0f);
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    for (int64_t b = 0; b < nb; b++, wb += bsize) {
        const mllm_block_q4_kx8 *w = (const mllm_block_q4_kx8 *)wb; /* d, dmin, scales */
        const uint8_t *qs = Q5 ? ((const mllm_block_q5_kx8 *)wb)->qs : w->qs;
        int32x4_t sc[8][2], mn[8][2];
        k4_scales(w->scales, sc, mn);
        const mllm_block_q8_k32 *y[TILE_N];
        float32x4_t sa0[TILE_N], sa1[TILE_N], sb0[TILE_N], sb1[TILE_N];
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            y[m] = (const mllm_block_q8_k32 *)(X + (size_t)m * xs) + b;
            sa0[m] = sa1[m] = sb0[m] = sb1[m] = vdupq_n_f32(0.0f);
        }
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            int8x16_t lo[16], hi[16];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                const uint8x16x4_t v = vld1q_u8_x4(qs + 256 * c + 64 * k);
#pragma GCC unroll 4
                for (int e = 0; e < 4; e++) {
                    uint8x16_t l = vandq_u8(v.val[e], m4), h = vshrq_n_u8(v.val[e], 4);
                    if (Q5) {
                        const uint8x16_t qh = vld1q_u8(((const mllm_block_q5_kx8 *)wb)->qh + 64 * k + 16 * e);
                        l = vorrq_u8(l, mllm_neon_bit_to_4(qh, 2 * c));
                        h = vorrq_u8(h, mllm_neon_bit_to_4(qh, 2 * c + 1));
                    }
                    lo[4 * k + e] = vreinterpretq_s8_u8(l);
                    hi[4 * k + e] = vreinterpretq_s8_u8(h);
                }
            }
#pragma GCC unroll 4
            for (int m = 0; m < RN; m++) {
                const int8x16x4_t yv = vld1q_s8_x4(y[m]->qs + 64 * c); /* sub-block 2c: val 0, 1; 2c + 1: val 2, 3 */
                int32x4_t dt[2][2] = {{vdupq_n_s32(0), vdupq_n_s32(0)}, {vdupq_n_s32(0), vdupq_n_s32(0)}};
                /* the lane must be a literal (SDOT by element, DUP) */
#define K4_STEP(t)                                                                   \
    dt[0][0] = MLLM_DOTL(dt[0][0], lo[2 * (t)], yv.val[(t) / 4], (t) % 4);          \
    dt[0][1] = MLLM_DOTL(dt[0][1], lo[2 * (t) + 1], yv.val[(t) / 4], (t) % 4);      \
    dt[1][0] = MLLM_DOTL(dt[1][0], hi[2 * (t)], yv.val[2 + (t) / 4], (t) % 4);      \
    dt[1][1] = MLLM_DOTL(dt[1][1], hi[2 * (t) + 1], yv.val[2 + (t) / 4], (t) % 4);
                K4_STEP(0) K4_STEP(1) K4_STEP(2) K4_STEP(3) K4_STEP(4) K4_STEP(5) K4_STEP(6) K4_STEP(7)
#undef K4_STEP
#pragma GCC unroll 2
                for (int e = 0; e < 2; e++) { /* sub-block j = 2c + e, in kq32_combine's j order */
                    const int j = 2 * c + e;
                    const float dy = y[m]->d[j];
                    const int32_t bsj = y[m]->bsums[2 * j] + y[m]->bsums[2 * j + 1];
                    sa0[m] = vaddq_f32(sa0[m], vmulq_n_f32(vcvtq_f32_s32(vmulq_s32(sc[j][0], dt[e][0])), dy));
                    sa1[m] = vaddq_f32(sa1[m], vmulq_n_f32(vcvtq_f32_s32(vmulq_s32(sc[j][1], dt[e][1])), dy));
                    sb0[m] = vaddq_f32(sb0[m], vmulq_n_f32(vcvtq_f32_s32(vmulq_n_s32(mn[j][0], bsj)), dy));
                    sb1[m] = vaddq_f32(sb1[m], vmulq_n_f32(vcvtq_f32_s32(vmulq_n_s32(mn[j][1], bsj)), dy));
                }
            }
        }
        float32x4_t d0, d1, n0, n1;
        f16x8(w->d, &d0, &d1);
        f16x8(w->dmin, &n0, &n1);
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            acc0[m] = vaddq_f32(acc0[m], vsubq_f32(vmulq_f32(d0, sa0[m]), vmulq_f32(n0, sb0[m])));
            acc1[m] = vaddq_f32(acc1[m], vsubq_f32(vmulq_f32(d1, sa1[m]), vmulq_f32(n1, sb1[m])));
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) {
        vst1q_f32(Y + (size_t)m * ys, acc0[m]);
        vst1q_f32(Y + (size_t)m * ys + 4, acc1[m]);
    }
}

ALWAYS_INLINE void tile_q4_kx8(int RN, const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {
    tile_k45x8(RN, false, w, nb, X, xs, Y, ys);
}

ALWAYS_INLINE void tile_q5_kx8(int RN, const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {
    tile_k45x8(RN, true, w, nb, X, xs, Y, ys);
}

/* Bits 2k, 2k + 1 of each byte at bits 4, 5, the others 0 (k literal). */
ALWAYS_INLINE uint8x16_t bits2_to_4(uint8x16_t v, int k) {
    const uint8x16_t m = vdupq_n_u8(0x30);
    switch (k) {
    case 0: return vandq_u8(vshlq_n_u8(v, 4), m);
    case 1: return vandq_u8(vshlq_n_u8(v, 2), m);
    case 2: return vandq_u8(v, m);
    default: return vandq_u8(vshrq_n_u8(v, 2), m);
    }
}

/* q6_Kx8 x q8_K32, v = q + 32 in 0..63. For u in 0..7 (values 32u..32u+31
   of each row): ql chunk 4u + k (32 bytes, rows 0..3 then 4..7) holds the
   low 4 bits of values 32u + 4k + j (low nibble) and 32u + 16 + 4k + j
   (high); qh chunk 2u + h bits 2k, 2k + 1 the top 2 bits of 32u + 16h + 4k
   + j. Sub-block s = 2u + h (16 values) meets int32 lane k of activation
   vector 2u + h; its exact sum is sdot - 32 * bsums[s]; a_u = sc_2u * dot
   + sc_2u+1 * dot' (mllm_q6_kx8_dot's a[s / 2]), then kq32_combine's
   sa += dy_u * a_u, block = d * sa (the min term is 0). */
ALWAYS_INLINE void tile_q6_kx8(int RN, const void *vw, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {
    const mllm_block_q6_kx8 *w = vw;
    float32x4_t acc0[TILE_N], acc1[TILE_N];
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) acc0[m] = acc1[m] = vdupq_n_f32(0.0f);
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    for (int64_t b = 0; b < nb; b++, w++) {
        const mllm_block_q8_k32 *y[TILE_N];
        float32x4_t sa0[TILE_N], sa1[TILE_N];
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            y[m] = (const mllm_block_q8_k32 *)(X + (size_t)m * xs) + b;
            sa0[m] = sa1[m] = vdupq_n_f32(0.0f);
        }
#pragma GCC unroll 1
        for (int u = 0; u < 8; u++) {
            const uint8x16x4_t la = vld1q_u8_x4(w->ql + 128 * u), lb = vld1q_u8_x4(w->ql + 128 * u + 64);
            const uint8x16x4_t hq = vld1q_u8_x4(w->qh + 64 * u);
            const uint8x16_t L[4][2] = {{la.val[0], la.val[1]}, {la.val[2], la.val[3]},
                                        {lb.val[0], lb.val[1]}, {lb.val[2], lb.val[3]}};
            /* v[h][k][half] */
            int8x16_t v[2][4][2];
#pragma GCC unroll 2
            for (int hf = 0; hf < 2; hf++)
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) {
                    v[0][k][hf] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(L[k][hf], m4), bits2_to_4(hq.val[hf], k)));
                    v[1][k][hf] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(L[k][hf], 4), bits2_to_4(hq.val[2 + hf], k)));
                }
            /* row scales of sub-blocks 2u (val[0]) and 2u + 1 (val[1]) */
            const int8x8x2_t sc8 = vld2_s8(w->scales + 16 * u);
            const int16x8_t e0 = vmovl_s8(sc8.val[0]), e1 = vmovl_s8(sc8.val[1]);
            const int32x4_t sc[2][2] = {{vmovl_s16(vget_low_s16(e0)), vmovl_high_s16(e0)},
                                        {vmovl_s16(vget_low_s16(e1)), vmovl_high_s16(e1)}};
#pragma GCC unroll 4
            for (int m = 0; m < RN; m++) {
                const int8x16x2_t yv = vld1q_s8_x2(y[m]->qs + 32 * u);
                int32x4_t a[2];
#pragma GCC unroll 2
                for (int hf = 0; hf < 2; hf++) {
                    int32x4_t d0 = vdupq_n_s32(-32 * y[m]->bsums[2 * u]), d1 = vdupq_n_s32(-32 * y[m]->bsums[2 * u + 1]);
                    d0 = MLLM_DOTL(d0, v[0][0][hf], yv.val[0], 0), d1 = MLLM_DOTL(d1, v[1][0][hf], yv.val[1], 0);
                    d0 = MLLM_DOTL(d0, v[0][1][hf], yv.val[0], 1), d1 = MLLM_DOTL(d1, v[1][1][hf], yv.val[1], 1);
                    d0 = MLLM_DOTL(d0, v[0][2][hf], yv.val[0], 2), d1 = MLLM_DOTL(d1, v[1][2][hf], yv.val[1], 2);
                    d0 = MLLM_DOTL(d0, v[0][3][hf], yv.val[0], 3), d1 = MLLM_DOTL(d1, v[1][3][hf], yv.val[1], 3);
                    a[hf] = vmlaq_s32(vmulq_s32(sc[0][hf], d0), sc[1][hf], d1);
                }
                const float dy = y[m]->d[u];
                sa0[m] = vaddq_f32(sa0[m], vmulq_n_f32(vcvtq_f32_s32(a[0]), dy));
                sa1[m] = vaddq_f32(sa1[m], vmulq_n_f32(vcvtq_f32_s32(a[1]), dy));
            }
        }
        float32x4_t d0, d1;
        f16x8(w->d, &d0, &d1);
#pragma GCC unroll 4
        for (int m = 0; m < RN; m++) {
            acc0[m] = vaddq_f32(acc0[m], vmulq_f32(d0, sa0[m]));
            acc1[m] = vaddq_f32(acc1[m], vmulq_f32(d1, sa1[m]));
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < RN; m++) {
        vst1q_f32(Y + (size_t)m * ys, acc0[m]);
        vst1q_f32(Y + (size_t)m * ys + 4, acc1[m]);
    }
}

/* tile_<T>_1 .. _4 and the table tile_<T>_set for RN = 1..4. */
#define PACKED_SET(T)                                                                                    \
    static void T##_1(const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {       \
        T(1, w, nb, X, xs, Y, ys);                                                                      \
    }                                                                                                   \
    static void T##_2(const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {       \
        T(2, w, nb, X, xs, Y, ys);                                                                      \
    }                                                                                                   \
    static void T##_3(const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {       \
        T(3, w, nb, X, xs, Y, ys);                                                                      \
    }                                                                                                   \
    static void T##_4(const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) {       \
        T(4, w, nb, X, xs, Y, ys);                                                                      \
    }                                                                                                   \
    static const mllm_packed_group_fn T##_set[TILE_N] = {T##_1, T##_2, T##_3, T##_4};

PACKED_SET(tile_q4_0x8)
PACKED_SET(tile_q4_1x8)
PACKED_SET(tile_q8_0x8)
PACKED_SET(tile_q4_kx8)
PACKED_SET(tile_q5_kx8)
PACKED_SET(tile_q5_0x8)
PACKED_SET(tile_q6_kx8)

const mllm_packed_group_fn *MLLM_CAT(mllm_packed_tiles_, MLLM_SFX)(mllm_dtype t) {
    switch (t) {
    case MLLM_DTYPE_Q4_0_X8: return tile_q4_0x8_set;
    case MLLM_DTYPE_Q4_1_X8: return tile_q4_1x8_set;
    case MLLM_DTYPE_Q8_0_X8: return tile_q8_0x8_set;
    case MLLM_DTYPE_Q4_K_X8: return tile_q4_kx8_set;
    case MLLM_DTYPE_Q5_K_X8: return tile_q5_kx8_set;
    case MLLM_DTYPE_Q5_0_X8: return tile_q5_0x8_set;
    case MLLM_DTYPE_Q6_K_X8: return tile_q6_kx8_set;
    default: return NULL;
    }
}
