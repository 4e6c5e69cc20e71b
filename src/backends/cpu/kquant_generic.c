/* k-quants: q8_K (ggml's quantize_row_q8_K_ref rules) and q8_K32
   activations, q4_K, q5_K and q6_K dequantization and their dots with
   q8_K32, the plain-C specification of the SIMD kernels. The weight
   quantizers are in kquant_quantize.c. */
#include <math.h>
#include <string.h>

#include "backends/cpu/kquants.h"

/* bsums[g] = sum of quants 16g..16g+15 of a 256-value block. */
static void fill_bsums(const int8_t *qs, int16_t *bsums) {
    for (int g = 0; g < MLLM_QK_K / 16; g++) {
        int sum = 0;
        for (int k = 0; k < 16; k++) sum += qs[16 * g + k];
        bsums[g] = (int16_t)sum;
    }
}

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
        fill_bsums(y[i].qs, y[i].bsums);
        y[i].d = 1.0f / iscale;
    }
}

/* Per 32 values, q8_0's activation rule with d kept as a float:
   d = amax / 127, q = round_half_even(x * 127 / amax) (rintf in the
   default rounding mode, as the AVX2 path's _mm256_round_ps). */
void mllm_quantize_row_q8_k32_generic(const float *src, void *dst, int64_t n) {
    mllm_block_q8_k32 *y = dst;
    for (int64_t i = 0; i < n / MLLM_QK_K; i++) {
        for (int j = 0; j < 8; j++) {
            const float *x = src + i * MLLM_QK_K + 32 * j;
            float amax = 0.0f;
            for (int l = 0; l < 32; l++) amax = fmaxf(amax, fabsf(x[l]));
            const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
            y[i].d[j] = amax / 127.0f;
            for (int l = 0; l < 32; l++) y[i].qs[32 * j + l] = (int8_t)rintf(x[l] * id);
        }
        fill_bsums(y[i].qs, y[i].bsums);
    }
}

void mllm_dequantize_row_q8_k32(const void *src, float *dst, int64_t n) {
    const mllm_block_q8_k32 *x = src;
    for (int64_t i = 0; i < n / MLLM_QK_K; i++)
        for (int j = 0; j < MLLM_QK_K; j++) dst[i * MLLM_QK_K + j] = x[i].d[j / 32] * (float)x[i].qs[j];
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

/* Sub-block j's exact sums against q8_K32: a[j] = sc_j * sum(q * y),
   b[j] = m_j * sum(y) (kq32_combine). q holds the 256 unsigned quants. */
static void k45_sums(const uint8_t *q, const uint8_t *scales, const mllm_block_q8_k32 *y, int32_t a[8],
                     int32_t b[8]) {
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        kq_scale_min(j, scales, &sc, &m);
        int32_t dot = 0;
        for (int l = 0; l < 32; l++) dot += q[32 * j + l] * y->qs[32 * j + l];
        a[j] = sc * dot;
        b[j] = m * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
    }
}

/* The 256 nibbles of a q4_K block, in value order. */
static void q4_k_unpack(const mllm_block_q4_k *b, uint8_t *q) {
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            q[64 * c + l] = b->qs[32 * c + l] & 0x0f;
            q[64 * c + 32 + l] = b->qs[32 * c + l] >> 4;
        }
}

void mllm_vec_dot_q4_k_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q4_k *x = vx;
    const mllm_block_q8_k32 *y = vy;
    uint8_t q[MLLM_QK_K];
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        int32_t a[8], b[8];
        q4_k_unpack(&x[i], q);
        k45_sums(q, x[i].scales, &y[i], a, b);
        sum += kq32_combine(a, b, y[i].d, mllm_f16_to_f32(x[i].d), mllm_f16_to_f32(x[i].dmin));
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
    const mllm_block_q8_k32 *y = vy;
    uint8_t q[MLLM_QK_K];
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        int32_t a[8], b[8];
        q5_k_unpack(&x[i], q);
        k45_sums(q, x[i].scales, &y[i], a, b);
        sum += kq32_combine(a, b, y[i].d, mllm_f16_to_f32(x[i].d), mllm_f16_to_f32(x[i].dmin));
    }
    *s = sum;
}

void mllm_vec_dot_q6_k_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q6_k *x = vx;
    const mllm_block_q8_k32 *y = vy;
    static const int32_t zero[8];
    int8_t q[MLLM_QK_K];
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        q6_k_unpack(&x[i], q);
        int32_t a[8];
        for (int j = 0; j < 8; j++) { /* 16-value sub-blocks 2j, 2j + 1 */
            a[j] = 0;
            for (int g = 2 * j; g < 2 * j + 2; g++) {
                int32_t dot = 0;
                for (int l = 0; l < 16; l++) dot += q[16 * g + l] * y[i].qs[16 * g + l];
                a[j] += x[i].scales[g] * dot;
            }
        }
        sum += kq32_combine(a, zero, y[i].d, mllm_f16_to_f32(x[i].d), 0.0f);
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
