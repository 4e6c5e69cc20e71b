/* q8_0, q4_0 and q4_1 matmuls with SMMLA (Armv8.6 i8mm; built with +i8mm, run
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

/* Block i of a weight row as 32 int8 values (lo: values 0..15, hi: 16..31):
   q8_0 as stored, q4_0 nibble - 8, q4_1 the nibble (low nibble j is value
   j, high nibble value j + 16). */
static inline void unpack(mllm_dtype wt, const char *row, int i, int8x16_t *lo, int8x16_t *hi) {
    if (wt == MLLM_DTYPE_Q8_0) {
        const mllm_block_q8_0 *b = (const mllm_block_q8_0 *)row + i;
        *lo = vld1q_s8(b->qs), *hi = vld1q_s8(b->qs + 16);
        return;
    }
    const uint8_t *qs = wt == MLLM_DTYPE_Q4_0 ? ((const mllm_block_q4_0 *)row + i)->qs : ((const mllm_block_q4_1 *)row + i)->qs;
    const uint8x16_t v = vld1q_u8(qs);
    const int8x16_t off = vdupq_n_s8(wt == MLLM_DTYPE_Q4_0 ? 8 : 0);
    *lo = vsubq_s8(neon_lo_nibbles(v), off), *hi = vsubq_s8(neon_hi_nibbles(v), off);
}

/* The four f16 scales (two weight rows' d, two activation rows' d) as
   [d0, d0, d1, d1] and [e0, e1, e0, e1], the lane order of the SMMLA tile. */
static inline void scales(mllm_f16 d0, mllm_f16 d1, mllm_f16 e0, mllm_f16 e1, float32x4_t *dv, float32x4_t *ev) {
    const uint16_t dd[4] = {d0, d0, d1, d1}, ee[4] = {e0, e1, e0, e1};
    *dv = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(dd)));
    *ev = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(ee)));
}

/* Y[m..m+1][r..r+1] for two weight rows (w0, w1) and two activation rows
   (x0, x1: q8_0, or q8_1 for q4_1). The four outputs live in one vector;
   each lane does its generic vec_dot's float steps (vec_dot_generic.c) in
   the same order, with separate multiplies and adds (no FMA: -std=c17
   keeps -ffp-contract=off), so each lane rounds as the scalar code does. */
static void tile(mllm_dtype wt, const char *w0, const char *w1, const char *x0, const char *x1, int nb, float out[4]) {
    float32x4_t s = vdupq_n_f32(0.0f);
    for (int i = 0; i < nb; i++) {
        int8x16_t a0l, a0h, a1l, a1h;
        unpack(wt, w0, i, &a0l, &a0h);
        unpack(wt, w1, i, &a1l, &a1h);
        float32x4_t dv, ev;
        if (wt == MLLM_DTYPE_Q4_1) {
            const mllm_block_q4_1 *b0 = (const mllm_block_q4_1 *)w0 + i, *b1 = (const mllm_block_q4_1 *)w1 + i;
            const mllm_block_q8_1 *y0 = (const mllm_block_q8_1 *)x0 + i, *y1 = (const mllm_block_q8_1 *)x1 + i;
            const float32x4_t q = vcvtq_f32_s32(mmla32(vdupq_n_s32(0), a0l, a0h, a1l, a1h, y0->qs, y1->qs));
            float32x4_t mv, sv;
            scales(b0->d, b1->d, y0->d, y1->d, &dv, &ev);
            scales(b0->m, b1->m, y0->s, y1->s, &mv, &sv);
            /* (d * e) * q + m * s */
            s = vaddq_f32(s, vaddq_f32(vmulq_f32(vmulq_f32(dv, ev), q), vmulq_f32(mv, sv)));
            continue;
        }
        /* q8_0 / q4_0 weights, q8_0 activations */
        const mllm_block_q8_0 *y0 = (const mllm_block_q8_0 *)x0 + i, *y1 = (const mllm_block_q8_0 *)x1 + i;
        const float32x4_t q = vcvtq_f32_s32(mmla32(vdupq_n_s32(0), a0l, a0h, a1l, a1h, y0->qs, y1->qs));
        if (wt == MLLM_DTYPE_Q8_0) {
            scales(((const mllm_block_q8_0 *)w0 + i)->d, ((const mllm_block_q8_0 *)w1 + i)->d, y0->d, y1->d, &dv, &ev);
            s = vaddq_f32(s, vmulq_f32(q, vmulq_f32(dv, ev))); /* q * (d * e) */
        } else {
            scales(((const mllm_block_q4_0 *)w0 + i)->d, ((const mllm_block_q4_0 *)w1 + i)->d, y0->d, y1->d, &dv, &ev);
            s = vaddq_f32(s, vmulq_f32(vmulq_f32(q, dv), ev)); /* q * d * e */
        }
    }
    vst1q_f32(out, s);
}

bool mllm_mul_mat_i8mm(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X, size_t x_stride,
                       int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1) {
    mllm_vec_dot_fn dot;
    if (wt == MLLM_DTYPE_Q8_0) dot = mllm_vec_dot_q8_0_dotprod;
    else if (wt == MLLM_DTYPE_Q4_0) dot = mllm_vec_dot_q4_0_dotprod;
    else if (wt == MLLM_DTYPE_Q4_1) dot = mllm_vec_dot_q4_1_dotprod;
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
                tile(wt, wa, wb, xa, xb, nb, o);
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
