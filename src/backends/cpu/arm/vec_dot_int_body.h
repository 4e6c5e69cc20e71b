/* The integer dot products of the quantized types, written once for two
   NEON variants: the including file defines MLLM_DOT(acc, a, b) (acc +=
   the int32x4 partial sums of 16 int8 products: SDOT, or the widening
   multiply-add of neon_util.h) and MLLM_SFX (the name suffix). Every
   per-block integer sum is exact and the float steps are vec_dot_generic.c's
   and kquant_generic.c's in the same order, so the results equal the
   generic kernels bit for bit (tests/unit/test_kernels_arm.c checks it). */
#include <string.h>

#include "backends/cpu/arm/arm_kernels.h"
#include "backends/cpu/arm/neon_util.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/kquants.h"

#define MLLM_CAT2(a, b) a##b
#define MLLM_CAT(a, b) MLLM_CAT2(a, b)
#define MLLM_FN(what) MLLM_CAT(mllm_vec_dot_##what##_, MLLM_SFX)

/* The exact f32 value of an f16 (FCVT), as mllm_f16_to_f32 gives. */
static inline float f16f(mllm_f16 h) {
    __fp16 v;
    memcpy(&v, &h, sizeof v);
    return (float)v;
}

static inline int32_t dot32(const int8_t *a, const int8_t *b) {
    int32x4_t acc = MLLM_DOT(vdupq_n_s32(0), vld1q_s8(a), vld1q_s8(b));
    return vaddvq_s32(MLLM_DOT(acc, vld1q_s8(a + 16), vld1q_s8(b + 16)));
}

void MLLM_FN(q8_0)(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q8_0 *x = vx, *y = vy;
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK8_0; i++)
        sum += (float)dot32(x[i].qs, y[i].qs) * (f16f(x[i].d) * f16f(y[i].d));
    *s = sum;
}

/* 16 bytes of nibbles: lane j low is value j, high is value j + 16. */
static inline int32_t dot_nibbles(const uint8_t *q, int8_t offset, const int8_t *y) {
    const uint8x16_t v = vld1q_u8(q);
    const int8x16_t lo = vsubq_s8(neon_lo_nibbles(v), vdupq_n_s8(offset));
    const int8x16_t hi = vsubq_s8(neon_hi_nibbles(v), vdupq_n_s8(offset));
    return vaddvq_s32(MLLM_DOT(MLLM_DOT(vdupq_n_s32(0), lo, vld1q_s8(y)), hi, vld1q_s8(y + 16)));
}

void MLLM_FN(q4_0)(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q4_0 *x = vx;
    const mllm_block_q8_0 *y = vy;
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK4_0; i++)
        sum += (float)dot_nibbles(x[i].qs, 8, y[i].qs) * f16f(x[i].d) * f16f(y[i].d);
    *s = sum;
}

void MLLM_FN(q4_1)(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q4_1 *x = vx;
    const mllm_block_q8_1 *y = vy;
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK4_1; i++)
        sum += (f16f(x[i].d) * f16f(y[i].d)) * (float)dot_nibbles(x[i].qs, 0, y[i].qs) + f16f(x[i].m) * f16f(y[i].s);
    *s = sum;
}

/* q5_0 / q5_1: the fifth bit of value j is bit j of the block's 32-bit qh
   (little-endian): bytes b0, b1 give values 0..15 (0x10 where set). */
static inline uint8x16_t bits5(uint8_t b0, uint8_t b1) {
    static const uint8_t m[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t v = vcombine_u8(vdup_n_u8(b0), vdup_n_u8(b1));
    return vandq_u8(vtstq_u8(v, vld1q_u8(m)), vdupq_n_u8(0x10));
}

static inline int32_t dot_q5(const uint8_t *qs, const uint8_t *qh, int8_t offset, const int8_t *y) {
    const uint8x16_t v = vld1q_u8(qs);
    const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v, vdupq_n_u8(0x0f)), bits5(qh[0], qh[1]))),
                                  vdupq_n_s8(offset));
    const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v, 4), bits5(qh[2], qh[3]))), vdupq_n_s8(offset));
    return vaddvq_s32(MLLM_DOT(MLLM_DOT(vdupq_n_s32(0), lo, vld1q_s8(y)), hi, vld1q_s8(y + 16)));
}

void MLLM_FN(q5_0)(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q5_0 *x = vx;
    const mllm_block_q8_0 *y = vy;
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK5; i++)
        sum += (float)dot_q5(x[i].qs, x[i].qh, 16, y[i].qs) * (f16f(x[i].d) * f16f(y[i].d));
    *s = sum;
}

void MLLM_FN(q5_1)(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q5_1 *x = vx;
    const mllm_block_q8_1 *y = vy;
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK5; i++)
        sum += (f16f(x[i].d) * f16f(y[i].d)) * (float)dot_q5(x[i].qs, x[i].qh, 0, y[i].qs) + f16f(x[i].m) * f16f(y[i].s);
    *s = sum;
}

/* q4_K / q5_K: sub-block j's a[j] = sc_j * sum(q * y), b[j] from bsums, as
   kquant_generic.c's k45_sums; q: 32 unsigned quants per sub-block, given
   as two vectors per sub-block by the caller. */
static inline void k45_ab(int j, uint8x16_t q0, uint8x16_t q1, const uint8_t *scales, const mllm_block_q8_k32 *y,
                          int32_t *a, int32_t *b) {
    uint8_t sc, m;
    kq_scale_min(j, scales, &sc, &m);
    int32x4_t acc = MLLM_DOT(vdupq_n_s32(0), vreinterpretq_s8_u8(q0), vld1q_s8(y->qs + 32 * j));
    acc = MLLM_DOT(acc, vreinterpretq_s8_u8(q1), vld1q_s8(y->qs + 32 * j + 16));
    a[j] = sc * vaddvq_s32(acc);
    b[j] = m * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
}

void MLLM_FN(q4_k)(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q4_k *x = vx;
    const mllm_block_q8_k32 *y = vy;
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        int32_t a[8], b[8];
        for (int c = 0; c < 4; c++) { /* 32 bytes: sub-block 2c in the low nibbles, 2c + 1 in the high */
            const uint8x16_t v0 = vld1q_u8(x[i].qs + 32 * c), v1 = vld1q_u8(x[i].qs + 32 * c + 16);
            k45_ab(2 * c, vandq_u8(v0, m4), vandq_u8(v1, m4), x[i].scales, &y[i], a, b);
            k45_ab(2 * c + 1, vshrq_n_u8(v0, 4), vshrq_n_u8(v1, 4), x[i].scales, &y[i], a, b);
        }
        sum += kq32_combine(a, b, y[i].d, f16f(x[i].d), f16f(x[i].dmin));
    }
    *s = sum;
}

void MLLM_FN(q5_k)(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q5_k *x = vx;
    const mllm_block_q8_k32 *y = vy;
    const uint8x16_t m4 = vdupq_n_u8(0x0f), b4 = vdupq_n_u8(0x10);
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        int32_t a[8], b[8];
        const uint8x16_t h0 = vld1q_u8(x[i].qh), h1 = vld1q_u8(x[i].qh + 16);
        for (int c = 0; c < 4; c++) { /* the fifth bit of value 64c + l is bit 2c of qh[l], of 64c + 32 + l bit 2c + 1 */
            const uint8x16_t v0 = vld1q_u8(x[i].qs + 32 * c), v1 = vld1q_u8(x[i].qs + 32 * c + 16);
            const uint8x16_t bl = vdupq_n_u8((uint8_t)(1u << (2 * c))), bh = vdupq_n_u8((uint8_t)(2u << (2 * c)));
            k45_ab(2 * c, vorrq_u8(vandq_u8(v0, m4), vandq_u8(vtstq_u8(h0, bl), b4)),
                   vorrq_u8(vandq_u8(v1, m4), vandq_u8(vtstq_u8(h1, bl), b4)), x[i].scales, &y[i], a, b);
            k45_ab(2 * c + 1, vorrq_u8(vshrq_n_u8(v0, 4), vandq_u8(vtstq_u8(h0, bh), b4)),
                   vorrq_u8(vshrq_n_u8(v1, 4), vandq_u8(vtstq_u8(h1, bh), b4)), x[i].scales, &y[i], a, b);
        }
        sum += kq32_combine(a, b, y[i].d, f16f(x[i].d), f16f(x[i].dmin));
    }
    *s = sum;
}

/* q6_K value e = 128h + 32k + l: low 4 bits from ql[64h + 32(k & 1) + l]
   (low nibble for k < 2), high 2 bits are bits 2k, 2k + 1 of qh[32h + l];
   minus 32. Scales per 16 values. */
void MLLM_FN(q6_k)(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q6_k *x = vx;
    const mllm_block_q8_k32 *y = vy;
    static const int32_t zero[8];
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(3);
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        int32_t a[8] = {0};
        for (int h = 0; h < 2; h++) {
            for (int k = 0; k < 4; k++) {
                for (int half = 0; half < 2; half++) {
                    const int l0 = 16 * half, g = 8 * h + 2 * k + half;
                    const uint8x16_t lo = vld1q_u8(x[i].ql + 64 * h + 32 * (k & 1) + l0);
                    const uint8x16_t low4 = k < 2 ? vandq_u8(lo, m4) : vshrq_n_u8(lo, 4);
                    const uint8x16_t hb = vld1q_u8(x[i].qh + 32 * h + l0);
                    const uint8x16_t high2 = vandq_u8(vshlq_u8(hb, vdupq_n_s8((int8_t)(-2 * k))), m3);
                    const int8x16_t q =
                        vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(low4, vshlq_n_u8(high2, 4))), vdupq_n_s8(32));
                    a[g / 2] += x[i].scales[g] * vaddvq_s32(MLLM_DOT(vdupq_n_s32(0), q, vld1q_s8(y[i].qs + 16 * g)));
                }
            }
        }
        sum += kq32_combine(a, zero, y[i].d, f16f(x[i].d), 0.0f);
    }
    *s = sum;
}
