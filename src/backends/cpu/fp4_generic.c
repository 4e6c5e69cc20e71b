/* mxfp4 (ggml's quantize_row_mxfp4_ref rules, byte for byte) and w4a32:
   quantizers, dequantization, generic dots. */
#include <math.h>
#include <string.h>

#include "backends/cpu/fp4.h"
#include "backends/cpu/kernels.h"

const int8_t mllm_mxfp4_values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* The nearest e2m1 code to x at scale e; the first of equals wins (ggml). */
static int mxfp4_best_index(float x, float e) {
    int best = 0;
    float best_err = fabsf((float)mllm_mxfp4_values[0] * e - x);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf((float)mllm_mxfp4_values[i] * e - x);
        if (err < best_err) best = i, best_err = err;
    }
    return best;
}

/* Shared exponent: floor(log2(amax)) - 2, so amax lands in e2m1's top
   binade (4..6 of the doubled values' 8..12). ggml converts a negative
   float to uint8_t there (amax < 2^-125), which C leaves undefined; we
   clamp to 0, the smallest scale. */
void mllm_quantize_row_mxfp4(const float *src, void *dst, int64_t n) {
    mllm_block_mxfp4 *y = dst;
    for (int64_t i = 0; i < n / MLLM_QK_MXFP4; i++) {
        const float *x = src + i * MLLM_QK_MXFP4;
        float amax = 0.0f;
        for (int j = 0; j < MLLM_QK_MXFP4; j++)
            if (amax < fabsf(x[j])) amax = fabsf(x[j]);
        uint8_t e = 0;
        if (amax > 0.0f) {
            const float fe = floorf(log2f(amax)) - 2 + 127;
            e = fe <= 0.0f ? 0 : fe >= 255.0f ? 255 : (uint8_t)fe;
        }
        const float d = mllm_e8m0_to_f32_half(e);
        y[i].e = e;
        for (int j = 0; j < MLLM_QK_MXFP4 / 2; j++) {
            const int lo = mxfp4_best_index(x[j], d), hi = mxfp4_best_index(x[j + 16], d);
            y[i].qs[j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

void mllm_dequantize_row_mxfp4(const void *src, float *dst, int64_t n) {
    const mllm_block_mxfp4 *x = src;
    for (int64_t i = 0; i < n / MLLM_QK_MXFP4; i++) {
        const float d = mllm_e8m0_to_f32_half(x[i].e);
        for (int j = 0; j < MLLM_QK_MXFP4 / 2; j++) {
            dst[i * 32 + j] = (float)mllm_mxfp4_values[x[i].qs[j] & 0x0f] * d;
            dst[i * 32 + j + 16] = (float)mllm_mxfp4_values[x[i].qs[j] >> 4] * d;
        }
    }
}

void mllm_vec_dot_mxfp4_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_mxfp4 *x = vx;
    const mllm_block_q8_0 *y = vy;
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK_MXFP4; i++) {
        int sumi = 0;
        for (int j = 0; j < 16; j++) {
            sumi += mllm_mxfp4_values[x[i].qs[j] & 0x0f] * y[i].qs[j];
            sumi += mllm_mxfp4_values[x[i].qs[j] >> 4] * y[i].qs[j + 16];
        }
        sum += mllm_e8m0_to_f32_half(x[i].e) * mllm_f16_to_f32(y[i].d) * (float)sumi;
    }
    *s = sum;
}

/* ---- w4a32 ---- */

/* One group of g values: symmetric 4-bit, q = clamp(round(x/d) + 8, 0, 15).
   The scale starts at q4_0's max / -8 (so the largest magnitude is exact)
   and 8 nearby scales are tried; the one with the smallest squared error
   wins, which lowers the error of outlier-free groups by about a fifth. */
static void w4a32_group(const float *x, int g, mllm_f16 *d_out, uint8_t *qs) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < g; j++)
        if (amax < fabsf(x[j])) amax = fabsf(x[j]), max = x[j];
    uint8_t q[64];
    if (amax == 0.0f) {
        *d_out = 0;
        memset(qs, 0x88, (size_t)g / 2);
        return;
    }
    float best_err = INFINITY;
    mllm_f16 best_d = 0;
    for (int k = 0; k <= 8; k++) {
        /* d = max / -(8 - k/4): k = 0 is q4_0's scale; larger k shrinks |d|
           so more values use the finer steps, clipping the extreme at -8 or 7. */
        const mllm_f16 dh = mllm_f32_to_f16(max / -(8.0f - 0.25f * (float)k));
        const float d = mllm_f16_to_f32(dh);
        if (d == 0.0f) continue;
        const float id = 1.0f / d;
        float err = 0.0f;
        for (int j = 0; j < g; j++) {
            int v = (int)lrintf(x[j] * id) + 8;
            v = v < 0 ? 0 : v > 15 ? 15 : v;
            const float diff = d * (float)(v - 8) - x[j];
            err += diff * diff;
        }
        if (err < best_err) best_err = err, best_d = dh;
    }
    const float d = mllm_f16_to_f32(best_d), id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < g; j++) {
        int v = (int)lrintf(x[j] * id) + 8;
        q[j] = (uint8_t)(v < 0 ? 0 : v > 15 ? 15 : v);
    }
    *d_out = best_d;
    for (int j = 0; j < g / 2; j++) qs[j] = (uint8_t)(q[j] | (q[j + g / 2] << 4));
}

static void w4a32_dequant(const uint8_t *qs, float d, int g, float *y) {
    for (int j = 0; j < g / 2; j++) {
        y[j] = d * (float)((qs[j] & 0x0f) - 8);
        y[j + g / 2] = d * (float)((qs[j] >> 4) - 8);
    }
}

void mllm_quantize_row_w4a32_g32(const float *src, void *dst, int64_t n) {
    mllm_block_w4a32_g32 *y = dst;
    for (int64_t i = 0; i < n / 32; i++) w4a32_group(src + i * 32, 32, &y[i].d, y[i].qs);
}
void mllm_quantize_row_w4a32_g64(const float *src, void *dst, int64_t n) {
    mllm_block_w4a32_g64 *y = dst;
    for (int64_t i = 0; i < n / 64; i++) w4a32_group(src + i * 64, 64, &y[i].d, y[i].qs);
}
void mllm_dequantize_row_w4a32_g32(const void *src, float *dst, int64_t n) {
    const mllm_block_w4a32_g32 *x = src;
    for (int64_t i = 0; i < n / 32; i++) w4a32_dequant(x[i].qs, mllm_f16_to_f32(x[i].d), 32, dst + i * 32);
}
void mllm_dequantize_row_w4a32_g64(const void *src, float *dst, int64_t n) {
    const mllm_block_w4a32_g64 *x = src;
    for (int64_t i = 0; i < n / 64; i++) w4a32_dequant(x[i].qs, mllm_f16_to_f32(x[i].d), 64, dst + i * 64);
}

/* f32 dot: per group sum((q - 8) * y) in float, times d. */
static float w4a32_dot_group(const uint8_t *qs, int g, const float *y) {
    float s = 0.0f;
    for (int j = 0; j < g / 2; j++)
        s += (float)((qs[j] & 0x0f) - 8) * y[j] + (float)((qs[j] >> 4) - 8) * y[j + g / 2];
    return s;
}
void mllm_vec_dot_w4a32_g32_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_w4a32_g32 *x = vx;
    const float *y = vy;
    float sum = 0.0f;
    for (int i = 0; i < n / 32; i++) sum += mllm_f16_to_f32(x[i].d) * w4a32_dot_group(x[i].qs, 32, y + i * 32);
    *s = sum;
}
void mllm_vec_dot_w4a32_g64_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_w4a32_g64 *x = vx;
    const float *y = vy;
    float sum = 0.0f;
    for (int i = 0; i < n / 64; i++) sum += mllm_f16_to_f32(x[i].d) * w4a32_dot_group(x[i].qs, 64, y + i * 64);
    *s = sum;
}
