/* Row conversions between float and each supported dtype. The quantizers
   follow ggml's quantize_row_*_ref step for step (same float operations in
   the same order), so they produce the same bytes as GGUF tools. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "backends/cpu/kernels_internal.h"

#define QMIN(a, b) ((a) < (b) ? (a) : (b))

void mllm_row_f32_to_float(const void *src, float *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}
void mllm_row_float_to_f32(const float *src, void *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

/* Halves are read byte-wise (one load once compiled): rows used in place
   from a file's mapping (Whisper's CTranslate2 tables) may sit at odd
   addresses. */
void mllm_row_f16_to_float(const void *src, float *dst, int64_t n) {
    const unsigned char *p = src;
    for (int64_t i = 0; i < n; i++) {
        mllm_f16 h;
        memcpy(&h, p + (size_t)i * sizeof h, sizeof h);
        dst[i] = mllm_f16_to_f32(h);
    }
}
void mllm_row_float_to_f16(const float *src, void *dst, int64_t n) {
    mllm_f16 *h = dst;
    for (int64_t i = 0; i < n; i++) h[i] = mllm_f32_to_f16(src[i]);
}
void mllm_row_bf16_to_float(const void *src, float *dst, int64_t n) {
    const unsigned char *p = src;
    for (int64_t i = 0; i < n; i++) {
        mllm_bf16 h;
        memcpy(&h, p + (size_t)i * sizeof h, sizeof h);
        dst[i] = mllm_bf16_to_f32(h);
    }
}
void mllm_row_float_to_bf16(const float *src, void *dst, int64_t n) {
    mllm_bf16 *h = dst;
    for (int64_t i = 0; i < n; i++) h[i] = mllm_f32_to_bf16(src[i]);
}

/* q8_0: d = amax / 127, q = round(x / d) (roundf: ties away from zero). */
void mllm_quantize_row_q8_0(const float *src, void *dst, int64_t n) {
    mllm_block_q8_0 *y = dst;
    const int64_t nb = n / MLLM_QK8_0;
    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * MLLM_QK8_0;
        float amax = 0.0f;
        for (int j = 0; j < MLLM_QK8_0; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = mllm_f32_to_f16(d);
        for (int j = 0; j < MLLM_QK8_0; j++) y[i].qs[j] = (int8_t)roundf(x[j] * id);
    }
}

void mllm_dequantize_row_q8_0(const void *src, float *dst, int64_t n) {
    const mllm_block_q8_0 *x = src;
    const int64_t nb = n / MLLM_QK8_0;
    for (int64_t i = 0; i < nb; i++) {
        const float d = mllm_f16_to_f32(x[i].d);
        for (int j = 0; j < MLLM_QK8_0; j++) dst[i * MLLM_QK8_0 + j] = (float)x[i].qs[j] * d;
    }
}

/* q8_1: as q8_0, plus s = d * sum(q) so q4_1 dots get the min term for free. */
void mllm_quantize_row_q8_1(const float *src, void *dst, int64_t n) {
    mllm_block_q8_1 *y = dst;
    const int64_t nb = n / MLLM_QK8_1;
    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * MLLM_QK8_1;
        float amax = 0.0f;
        for (int j = 0; j < MLLM_QK8_1; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = mllm_f32_to_f16(d);
        int sum = 0;
        for (int j = 0; j < MLLM_QK8_1; j++) {
            y[i].qs[j] = (int8_t)roundf(x[j] * id);
            sum += y[i].qs[j];
        }
        y[i].s = mllm_f32_to_f16((float)sum * d);
    }
}

void mllm_dequantize_row_q8_1(const void *src, float *dst, int64_t n) {
    const mllm_block_q8_1 *x = src;
    const int64_t nb = n / MLLM_QK8_1;
    for (int64_t i = 0; i < nb; i++) {
        const float d = mllm_f16_to_f32(x[i].d);
        for (int j = 0; j < MLLM_QK8_1; j++) dst[i * MLLM_QK8_1 + j] = (float)x[i].qs[j] * d;
    }
}

/* q4_0: d = (value of largest magnitude, signed) / -8, so that value maps to
   -8 exactly and the other side gets the 7 remaining steps. Byte j holds
   element j in its low nibble and element j+16 in its high nibble. */
void mllm_quantize_row_q4_0(const float *src, void *dst, int64_t n) {
    mllm_block_q4_0 *y = dst;
    const int64_t nb = n / MLLM_QK4_0;
    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * MLLM_QK4_0;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < MLLM_QK4_0; j++) {
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = mllm_f32_to_f16(d);
        for (int j = 0; j < MLLM_QK4_0 / 2; j++) {
            const float x0 = x[j] * id, x1 = x[j + MLLM_QK4_0 / 2] * id;
            /* Truncation of x + 8.5 is rounding half up of x + 8 (x >= -8). */
            const uint8_t q0 = (uint8_t)QMIN(15, (int8_t)(x0 + 8.5f));
            const uint8_t q1 = (uint8_t)QMIN(15, (int8_t)(x1 + 8.5f));
            y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void mllm_dequantize_row_q4_0(const void *src, float *dst, int64_t n) {
    const mllm_block_q4_0 *x = src;
    const int64_t nb = n / MLLM_QK4_0;
    for (int64_t i = 0; i < nb; i++) {
        const float d = mllm_f16_to_f32(x[i].d);
        float *o = dst + i * MLLM_QK4_0;
        for (int j = 0; j < MLLM_QK4_0 / 2; j++) {
            o[j] = (float)((x[i].qs[j] & 0x0f) - 8) * d;
            o[j + MLLM_QK4_0 / 2] = (float)((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

/* q4_1: x = m + d*q with m = min, d = (max - min) / 15. */
void mllm_quantize_row_q4_1(const float *src, void *dst, int64_t n) {
    mllm_block_q4_1 *y = dst;
    const int64_t nb = n / MLLM_QK4_1;
    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * MLLM_QK4_1;
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < MLLM_QK4_1; j++) {
            if (x[j] < min) min = x[j];
            if (x[j] > max) max = x[j];
        }
        const float d = (max - min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = mllm_f32_to_f16(d);
        y[i].m = mllm_f32_to_f16(min);
        for (int j = 0; j < MLLM_QK4_1 / 2; j++) {
            const float x0 = (x[j] - min) * id, x1 = (x[j + MLLM_QK4_1 / 2] - min) * id;
            const uint8_t q0 = (uint8_t)QMIN(15, (int8_t)(x0 + 0.5f));
            const uint8_t q1 = (uint8_t)QMIN(15, (int8_t)(x1 + 0.5f));
            y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void mllm_dequantize_row_q4_1(const void *src, float *dst, int64_t n) {
    const mllm_block_q4_1 *x = src;
    const int64_t nb = n / MLLM_QK4_1;
    for (int64_t i = 0; i < nb; i++) {
        const float d = mllm_f16_to_f32(x[i].d), m = mllm_f16_to_f32(x[i].m);
        float *o = dst + i * MLLM_QK4_1;
        for (int j = 0; j < MLLM_QK4_1 / 2; j++) {
            o[j] = (float)(x[i].qs[j] & 0x0f) * d + m;
            o[j + MLLM_QK4_1 / 2] = (float)(x[i].qs[j] >> 4) * d + m;
        }
    }
}

/* Activation-side q8_0/q8_1, the way llama.cpp's CPU backend quantizes
   activations at run time (ggml's SIMD quantize_row_q8_0/q8_1 on x86 and
   ARM): id = 127/amax and round half to even. It differs from the reference
   quantizers above only in rare ties; matching it keeps our logits on
   llama.cpp's. */
void mllm_quantize_row_q8_0_act_generic(const float *src, void *dst, int64_t n) {
    mllm_block_q8_0 *y = dst;
    const int64_t nb = n / MLLM_QK8_0;
    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * MLLM_QK8_0;
        float amax = 0.0f;
        for (int j = 0; j < MLLM_QK8_0; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        y[i].d = mllm_f32_to_f16(amax / 127.0f);
        for (int j = 0; j < MLLM_QK8_0; j++) y[i].qs[j] = (int8_t)rintf(x[j] * id);
    }
}

void mllm_quantize_row_q8_1_act_generic(const float *src, void *dst, int64_t n) {
    mllm_block_q8_1 *y = dst;
    const int64_t nb = n / MLLM_QK8_1;
    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * MLLM_QK8_1;
        float amax = 0.0f;
        for (int j = 0; j < MLLM_QK8_1; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        y[i].d = mllm_f32_to_f16(d);
        int sum = 0;
        for (int j = 0; j < MLLM_QK8_1; j++) {
            y[i].qs[j] = (int8_t)rintf(x[j] * id);
            sum += y[i].qs[j];
        }
        y[i].s = mllm_f32_to_f16(d * (float)sum);
    }
}
