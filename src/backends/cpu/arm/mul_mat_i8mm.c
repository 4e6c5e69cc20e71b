/* q8_0 and q4_0 matmuls with SMMLA (Armv8.6 i8mm; built with +i8mm, run
   only where HWCAP2_I8MM says the CPU has it): one instruction multiplies a
   2x8 int8 tile of two weight rows by two activation rows, so a 32-value
   block of a 2x2 output tile is 4 SMMLA. The per-block int32 sums are exact
   and each output's float accumulation is vec_dot_generic.c's, block by
   block in the same order, so every output equals the generic kernel's bit
   for bit, whatever the tile it falls in (batch invariance holds). Odd rows
   and an odd last activation row go through the SDOT vec_dot. */
#include <string.h>

#include "backends/cpu/arm/arm_kernels.h"
#include "backends/cpu/arm/neon_util.h"
#include "backends/cpu/kernels_internal.h"

#define ROWS_PER_PASS 16 /* weight rows kept in cache across activation pairs */

static inline float f16f(mllm_f16 h) {
    __fp16 v;
    memcpy(&v, &h, sizeof v);
    return (float)v;
}

/* acc += the 2x2 products of rows (a0, a1) and (b0, b1), 32 values each:
   [a0.b0, a0.b1, a1.b0, a1.b1]. */
static inline int32x4_t mmla32(int32x4_t acc, int8x16_t a0l, int8x16_t a0h, int8x16_t a1l, int8x16_t a1h,
                               const int8_t *b0, const int8_t *b1) {
    const int8x16_t b0l = vld1q_s8(b0), b0h = vld1q_s8(b0 + 16), b1l = vld1q_s8(b1), b1h = vld1q_s8(b1 + 16);
    acc = vmmlaq_s32(acc, vcombine_s8(vget_low_s8(a0l), vget_low_s8(a1l)), vcombine_s8(vget_low_s8(b0l), vget_low_s8(b1l)));
    acc = vmmlaq_s32(acc, vcombine_s8(vget_high_s8(a0l), vget_high_s8(a1l)), vcombine_s8(vget_high_s8(b0l), vget_high_s8(b1l)));
    acc = vmmlaq_s32(acc, vcombine_s8(vget_low_s8(a0h), vget_low_s8(a1h)), vcombine_s8(vget_low_s8(b0h), vget_low_s8(b1h)));
    return vmmlaq_s32(acc, vcombine_s8(vget_high_s8(a0h), vget_high_s8(a1h)), vcombine_s8(vget_high_s8(b0h), vget_high_s8(b1h)));
}

/* Y[m..m+1][r..r+1] for two q8_0 weight rows and two q8_0 activation rows. */
static void tile_q8_0(const mllm_block_q8_0 *w0, const mllm_block_q8_0 *w1, const mllm_block_q8_0 *x0,
                      const mllm_block_q8_0 *x1, int nb, float out[4]) {
    float s00 = 0, s01 = 0, s10 = 0, s11 = 0;
    for (int i = 0; i < nb; i++) {
        const int32x4_t p = mmla32(vdupq_n_s32(0), vld1q_s8(w0[i].qs), vld1q_s8(w0[i].qs + 16), vld1q_s8(w1[i].qs),
                                   vld1q_s8(w1[i].qs + 16), x0[i].qs, x1[i].qs);
        const float d0 = f16f(w0[i].d), d1 = f16f(w1[i].d), e0 = f16f(x0[i].d), e1 = f16f(x1[i].d);
        s00 += (float)vgetq_lane_s32(p, 0) * (d0 * e0);
        s01 += (float)vgetq_lane_s32(p, 1) * (d0 * e1);
        s10 += (float)vgetq_lane_s32(p, 2) * (d1 * e0);
        s11 += (float)vgetq_lane_s32(p, 3) * (d1 * e1);
    }
    out[0] = s00, out[1] = s01, out[2] = s10, out[3] = s11;
}

/* The same for q4_0 weights (values: nibble - 8; low nibble j is value j,
   high nibble value j + 16) and q8_0 activations. */
static void tile_q4_0(const mllm_block_q4_0 *w0, const mllm_block_q4_0 *w1, const mllm_block_q8_0 *x0,
                      const mllm_block_q8_0 *x1, int nb, float out[4]) {
    const int8x16_t eight = vdupq_n_s8(8);
    float s00 = 0, s01 = 0, s10 = 0, s11 = 0;
    for (int i = 0; i < nb; i++) {
        const uint8x16_t v0 = vld1q_u8(w0[i].qs), v1 = vld1q_u8(w1[i].qs);
        const int32x4_t p = mmla32(vdupq_n_s32(0), vsubq_s8(neon_lo_nibbles(v0), eight), vsubq_s8(neon_hi_nibbles(v0), eight),
                                   vsubq_s8(neon_lo_nibbles(v1), eight), vsubq_s8(neon_hi_nibbles(v1), eight), x0[i].qs, x1[i].qs);
        const float d0 = f16f(w0[i].d), d1 = f16f(w1[i].d), e0 = f16f(x0[i].d), e1 = f16f(x1[i].d);
        s00 += (float)vgetq_lane_s32(p, 0) * d0 * e0;
        s01 += (float)vgetq_lane_s32(p, 1) * d0 * e1;
        s10 += (float)vgetq_lane_s32(p, 2) * d1 * e0;
        s11 += (float)vgetq_lane_s32(p, 3) * d1 * e1;
    }
    out[0] = s00, out[1] = s01, out[2] = s10, out[3] = s11;
}

bool mllm_mul_mat_i8mm(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X, size_t x_stride,
                       int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1) {
    mllm_vec_dot_fn dot;
    if (wt == MLLM_DTYPE_Q8_0) dot = mllm_vec_dot_q8_0_dotprod;
    else if (wt == MLLM_DTYPE_Q4_0) dot = mllm_vec_dot_q4_0_dotprod;
    else return false;
    const int nb = (int)(K / 32);
    const char *w = W, *x = X;
    for (int64_t rb = r0; rb < r1; rb += ROWS_PER_PASS) {
        const int64_t re = rb + ROWS_PER_PASS < r1 ? rb + ROWS_PER_PASS : r1;
        int64_t m = 0;
        for (; m + 2 <= M; m += 2) {
            const void *xa = x + (size_t)m * x_stride, *xb = x + (size_t)(m + 1) * x_stride;
            float *ya = Y + (size_t)m * y_stride, *yb = Y + (size_t)(m + 1) * y_stride;
            int64_t r = rb;
            for (; r + 2 <= re; r += 2) {
                const void *wa = w + (size_t)r * w_stride, *wb = w + (size_t)(r + 1) * w_stride;
                float o[4];
                if (wt == MLLM_DTYPE_Q8_0) tile_q8_0(wa, wb, xa, xb, nb, o);
                else tile_q4_0(wa, wb, xa, xb, nb, o);
                ya[r] = o[0], yb[r] = o[1], ya[r + 1] = o[2], yb[r + 1] = o[3];
            }
            for (; r < re; r++) {
                dot((int)K, ya + r, w + (size_t)r * w_stride, xa);
                dot((int)K, yb + r, w + (size_t)r * w_stride, xb);
            }
        }
        if (m < M)
            mllm_mul_mat_generic(dot, W, w_stride, K, x + (size_t)m * x_stride, x_stride, 1, Y + (size_t)m * y_stride,
                                 y_stride, rb, re);
    }
    return true;
}
