/* q5_0 / q5_1: quantizers step for step as ggml's quantize_row_q5_*_ref,
   dequantization, and dots with q8_0 / q8_1. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "backends/cpu/quant5.h"

static inline uint32_t load_qh(const uint8_t *qh) {
    uint32_t v;
    memcpy(&v, qh, 4); /* little-endian, as on disk */
    return v;
}

/* The 32 unsigned 5-bit quants of a block, in value order. */
static inline void unpack5(const uint8_t *qs, const uint8_t *qhb, int *q) {
    const uint32_t qh = load_qh(qhb);
    for (int j = 0; j < MLLM_QK5 / 2; j++) {
        q[j] = (qs[j] & 0x0f) | (int)(((qh >> j) & 1) << 4);
        q[j + 16] = (qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
    }
}

static inline void pack5(const uint8_t *q, uint8_t *qs, uint8_t *qhb) {
    uint32_t qh = 0;
    for (int j = 0; j < MLLM_QK5 / 2; j++) {
        qs[j] = (uint8_t)((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
        qh |= (uint32_t)((q[j] >> 4) & 1) << j;
        qh |= (uint32_t)((q[j + 16] >> 4) & 1) << (j + 16);
    }
    memcpy(qhb, &qh, 4);
}

/* Like q4_0 with 5 bits: d = max / -16, q = min(31, trunc(x/d + 16.5)). */
void mllm_quantize_row_q5_0(const float *src, void *dst, int64_t n) {
    mllm_block_q5_0 *y = dst;
    for (int64_t i = 0; i < n / MLLM_QK5; i++) {
        const float *x = src + i * MLLM_QK5;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < MLLM_QK5; j++) {
            if (amax < fabsf(x[j])) amax = fabsf(x[j]), max = x[j];
        }
        const float d = max / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = mllm_f32_to_f16(d);
        uint8_t q[MLLM_QK5];
        for (int j = 0; j < MLLM_QK5; j++) {
            const int8_t v = (int8_t)(x[j] * id + 16.5f);
            q[j] = (uint8_t)(v < 31 ? v : 31);
        }
        pack5(q, y[i].qs, y[i].qh);
    }
}

/* Like q4_1 with 5 bits: d = (max - min) / 31, q = trunc((x - min)/d + 0.5). */
void mllm_quantize_row_q5_1(const float *src, void *dst, int64_t n) {
    mllm_block_q5_1 *y = dst;
    for (int64_t i = 0; i < n / MLLM_QK5; i++) {
        const float *x = src + i * MLLM_QK5;
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < MLLM_QK5; j++) {
            if (x[j] < min) min = x[j];
            if (x[j] > max) max = x[j];
        }
        const float d = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = mllm_f32_to_f16(d);
        y[i].m = mllm_f32_to_f16(min);
        uint8_t q[MLLM_QK5];
        for (int j = 0; j < MLLM_QK5; j++) q[j] = (uint8_t)((x[j] - min) * id + 0.5f);
        pack5(q, y[i].qs, y[i].qh);
    }
}

void mllm_dequantize_row_q5_0(const void *src, float *dst, int64_t n) {
    const mllm_block_q5_0 *x = src;
    int q[MLLM_QK5];
    for (int64_t i = 0; i < n / MLLM_QK5; i++) {
        const float d = mllm_f16_to_f32(x[i].d);
        unpack5(x[i].qs, x[i].qh, q);
        for (int j = 0; j < MLLM_QK5; j++) dst[i * MLLM_QK5 + j] = (float)(q[j] - 16) * d;
    }
}

void mllm_dequantize_row_q5_1(const void *src, float *dst, int64_t n) {
    const mllm_block_q5_1 *x = src;
    int q[MLLM_QK5];
    for (int64_t i = 0; i < n / MLLM_QK5; i++) {
        const float d = mllm_f16_to_f32(x[i].d), m = mllm_f16_to_f32(x[i].m);
        unpack5(x[i].qs, x[i].qh, q);
        for (int j = 0; j < MLLM_QK5; j++) dst[i * MLLM_QK5 + j] = (float)q[j] * d + m;
    }
}

void mllm_vec_dot_q5_0_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q5_0 *x = vx;
    const mllm_block_q8_0 *y = vy;
    int q[MLLM_QK5];
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK5; i++) {
        unpack5(x[i].qs, x[i].qh, q);
        int sumi = 0;
        for (int j = 0; j < MLLM_QK5; j++) sumi += (q[j] - 16) * y[i].qs[j];
        sum += (float)sumi * (mllm_f16_to_f32(x[i].d) * mllm_f16_to_f32(y[i].d));
    }
    *s = sum;
}

void mllm_vec_dot_q5_1_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q5_1 *x = vx;
    const mllm_block_q8_1 *y = vy;
    int q[MLLM_QK5];
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK5; i++) {
        unpack5(x[i].qs, x[i].qh, q);
        int sumi = 0;
        for (int j = 0; j < MLLM_QK5; j++) sumi += q[j] * y[i].qs[j];
        sum += (mllm_f16_to_f32(x[i].d) * mllm_f16_to_f32(y[i].d)) * (float)sumi +
               mllm_f16_to_f32(x[i].m) * mllm_f16_to_f32(y[i].s);
    }
    *s = sum;
}
