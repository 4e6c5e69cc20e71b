/* k-quants: q8_K activations (ggml's quantize_row_q8_K_ref rules), q4_K,
   q5_K and q6_K dequantization and their dots with q8_K. The weight
   quantizers are in kquant_quantize.c. */
#include <math.h>
#include <string.h>

#include "backends/cpu/kquants.h"

/* Scale so the largest-magnitude value maps to -127 (sign kept, like q4_0);
   d = 1/iscale, kept as a float. */
void mllm_quantize_row_q8_k(const float *src, void *dst, int64_t n) {
    mllm_block_q8_k *y = dst;
    for (int64_t i = 0; i < n / MLLM_QK_K; i++) {
        const float *x = src + i * MLLM_QK_K;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < MLLM_QK_K; j++) {
            if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j];
        }
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < MLLM_QK_K; j++) {
            const int v = kq_nearest_int(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int g = 0; g < MLLM_QK_K / 16; g++) {
            int sum = 0;
            for (int k = 0; k < 16; k++) sum += y[i].qs[16 * g + k];
            y[i].bsums[g] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}

void mllm_dequantize_row_q8_k(const void *src, float *dst, int64_t n) {
    const mllm_block_q8_k *x = src;
    for (int64_t i = 0; i < n / MLLM_QK_K; i++)
        for (int j = 0; j < MLLM_QK_K; j++) dst[i * MLLM_QK_K + j] = x[i].d * (float)x[i].qs[j];
}

void mllm_dequantize_row_q4_k(const void *src, float *dst, int64_t n) {
    const mllm_block_q4_k *x = src;
    for (int64_t i = 0; i < n / MLLM_QK_K; i++) {
        const float d = mllm_f16_to_f32(x[i].d), dmin = mllm_f16_to_f32(x[i].dmin);
        float *y = dst + i * MLLM_QK_K;
        for (int c = 0; c < 4; c++) { /* 64 values: sub-blocks 2c (low nibbles), 2c+1 (high) */
            uint8_t sc, m;
            kq_scale_min(2 * c, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = dmin * m;
            kq_scale_min(2 * c + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = dmin * m;
            const uint8_t *q = x[i].qs + 32 * c;
            for (int l = 0; l < 32; l++) y[64 * c + l] = d1 * (float)(q[l] & 0x0f) - m1;
            for (int l = 0; l < 32; l++) y[64 * c + 32 + l] = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

/* q6_K value e = 128h + 32k + l (h half, k quarter, l < 32): low 4 bits are
   nibble (k >= 2) of ql[64h + 32(k & 1) + l], high 2 bits are bits 2k..2k+1
   of qh[32h + l]; the scale is scales[e / 16]. Writes the 256 signed quants. */
static void q6_k_unpack(const mllm_block_q6_k *b, int8_t *q) {
    for (int h = 0; h < 2; h++) {
        for (int k = 0; k < 4; k++) {
            for (int l = 0; l < 32; l++) {
                const uint8_t lo = b->ql[64 * h + 32 * (k & 1) + l];
                const int low4 = k < 2 ? (lo & 0x0f) : (lo >> 4);
                const int high2 = (b->qh[32 * h + l] >> (2 * k)) & 3;
                q[128 * h + 32 * k + l] = (int8_t)((low4 | (high2 << 4)) - 32);
            }
        }
    }
}

void mllm_dequantize_row_q6_k(const void *src, float *dst, int64_t n) {
    const mllm_block_q6_k *x = src;
    int8_t q[MLLM_QK_K];
    for (int64_t i = 0; i < n / MLLM_QK_K; i++) {
        const float d = mllm_f16_to_f32(x[i].d);
        q6_k_unpack(&x[i], q);
        for (int e = 0; e < MLLM_QK_K; e++) dst[i * MLLM_QK_K + e] = d * (float)x[i].scales[e / 16] * (float)q[e];
    }
}

void mllm_vec_dot_q4_k_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q4_k *x = vx;
    const mllm_block_q8_k *y = vy;
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        int sumi = 0, summ = 0;
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            kq_scale_min(j, x[i].scales, &sc, &m);
            const uint8_t *q = x[i].qs + 32 * (j / 2);
            const int8_t *yq = y[i].qs + 32 * j;
            int dot = 0;
            for (int l = 0; l < 32; l++) dot += ((j & 1) ? (q[l] >> 4) : (q[l] & 0x0f)) * yq[l];
            sumi += sc * dot;
            summ += m * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        }
        sum += mllm_f16_to_f32(x[i].d) * y[i].d * (float)sumi - mllm_f16_to_f32(x[i].dmin) * y[i].d * (float)summ;
    }
    *s = sum;
}

/* The 256 unsigned 5-bit quants of a q5_K block, in value order. */
static void q5_k_unpack(const mllm_block_q5_k *b, uint8_t *q) {
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            const uint8_t lo = b->qs[32 * c + l], h = b->qh[l];
            q[64 * c + l] = (uint8_t)((lo & 0x0f) | (((h >> (2 * c)) & 1) << 4));
            q[64 * c + 32 + l] = (uint8_t)((lo >> 4) | (((h >> (2 * c + 1)) & 1) << 4));
        }
    }
}

void mllm_dequantize_row_q5_k(const void *src, float *dst, int64_t n) {
    const mllm_block_q5_k *x = src;
    uint8_t q[MLLM_QK_K];
    for (int64_t i = 0; i < n / MLLM_QK_K; i++) {
        const float d = mllm_f16_to_f32(x[i].d), dmin = mllm_f16_to_f32(x[i].dmin);
        q5_k_unpack(&x[i], q);
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            kq_scale_min(j, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = dmin * m;
            for (int l = 0; l < 32; l++) dst[i * MLLM_QK_K + 32 * j + l] = d1 * (float)q[32 * j + l] - m1;
        }
    }
}

void mllm_vec_dot_q5_k_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q5_k *x = vx;
    const mllm_block_q8_k *y = vy;
    uint8_t q[MLLM_QK_K];
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        q5_k_unpack(&x[i], q);
        int sumi = 0, summ = 0;
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            kq_scale_min(j, x[i].scales, &sc, &m);
            int dot = 0;
            for (int l = 0; l < 32; l++) dot += q[32 * j + l] * y[i].qs[32 * j + l];
            sumi += sc * dot;
            summ += m * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        }
        sum += mllm_f16_to_f32(x[i].d) * y[i].d * (float)sumi - mllm_f16_to_f32(x[i].dmin) * y[i].d * (float)summ;
    }
    *s = sum;
}

void mllm_vec_dot_q6_k_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q6_k *x = vx;
    const mllm_block_q8_k *y = vy;
    int8_t q[MLLM_QK_K];
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        q6_k_unpack(&x[i], q);
        int sumi = 0;
        for (int g = 0; g < MLLM_QK_K / 16; g++) {
            int dot = 0;
            for (int l = 0; l < 16; l++) dot += q[16 * g + l] * y[i].qs[16 * g + l];
            sumi += x[i].scales[g] * dot;
        }
        sum += mllm_f16_to_f32(x[i].d) * y[i].d * (float)sumi;
    }
    *s = sum;
}

/* q8_K x q8_K: only so that every supported row has a dot (tests, tools). */
void mllm_vec_dot_q8_k_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q8_k *x = vx, *y = vy;
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        int sumi = 0;
        for (int j = 0; j < MLLM_QK_K; j++) sumi += x[i].qs[j] * y[i].qs[j];
        sum += x[i].d * y[i].d * (float)sumi;
    }
    *s = sum;
}
