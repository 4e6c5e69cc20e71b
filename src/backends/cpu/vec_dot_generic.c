/* Plain-C dot products: the specification every SIMD vec_dot is tested
   against. They follow ggml's generic (non-SIMD) kernels: float products
   summed in double for the float types; exact int32 sums per block times
   d_x*d_y (float accumulation across blocks) for the quantized ones. */
#include "backends/cpu/kernels_internal.h"

void mllm_vec_dot_f32_generic(int n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)(x[i] * y[i]);
    *s = (float)sum;
}

void mllm_vec_dot_f16_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_f16 *x = vx, *y = vy;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)(mllm_f16_to_f32(x[i]) * mllm_f16_to_f32(y[i]));
    *s = (float)sum;
}

void mllm_vec_dot_bf16_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_bf16 *x = vx, *y = vy;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)(mllm_bf16_to_f32(x[i]) * mllm_bf16_to_f32(y[i]));
    *s = (float)sum;
}

void mllm_vec_dot_q8_0_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q8_0 *x = vx, *y = vy;
    const int nb = n / MLLM_QK8_0;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0;
        for (int j = 0; j < MLLM_QK8_0; j++) sumi += x[i].qs[j] * y[i].qs[j];
        sum += (float)sumi * (mllm_f16_to_f32(x[i].d) * mllm_f16_to_f32(y[i].d));
    }
    *s = sum;
}

void mllm_vec_dot_q8_1_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q8_1 *x = vx, *y = vy;
    const int nb = n / MLLM_QK8_1;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0;
        for (int j = 0; j < MLLM_QK8_1; j++) sumi += x[i].qs[j] * y[i].qs[j];
        sum += (float)sumi * (mllm_f16_to_f32(x[i].d) * mllm_f16_to_f32(y[i].d));
    }
    *s = sum;
}

void mllm_vec_dot_q4_0_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q4_0 *x = vx;
    const mllm_block_q8_0 *y = vy;
    const int nb = n / MLLM_QK4_0;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0;
        for (int j = 0; j < MLLM_QK4_0 / 2; j++) {
            sumi += ((x[i].qs[j] & 0x0f) - 8) * y[i].qs[j];
            sumi += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + MLLM_QK4_0 / 2];
        }
        sum += (float)sumi * mllm_f16_to_f32(x[i].d) * mllm_f16_to_f32(y[i].d);
    }
    *s = sum;
}

/* x = m_x + d_x*q, y = d_y*q': sum(x*y) = d_x*d_y*sum(q*q') + m_x*s_y. */
void mllm_vec_dot_q4_1_generic(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q4_1 *x = vx;
    const mllm_block_q8_1 *y = vy;
    const int nb = n / MLLM_QK4_1;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0;
        for (int j = 0; j < MLLM_QK4_1 / 2; j++) {
            sumi += (x[i].qs[j] & 0x0f) * y[i].qs[j];
            sumi += (x[i].qs[j] >> 4) * y[i].qs[j + MLLM_QK4_1 / 2];
        }
        sum += (mllm_f16_to_f32(x[i].d) * mllm_f16_to_f32(y[i].d)) * (float)sumi +
               mllm_f16_to_f32(x[i].m) * mllm_f16_to_f32(y[i].s);
    }
    *s = sum;
}
