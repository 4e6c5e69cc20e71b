/* AVX2 + FMA + F16C dot products. Same math as vec_dot_generic.c; only the
   float summation order differs (8-lane accumulators), the per-block integer
   sums are exact. */
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/x86/simd_avx2.h"

void mllm_vec_dot_f32_avx2(int n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc0);
    double sum = mm256_hsum_ps(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; i++) sum += (double)(x[i] * y[i]);
    *s = (float)sum;
}

void mllm_vec_dot_f16_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_f16 *x = vx, *y = vy;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(load_f16x8(x + i), load_f16x8(y + i), acc0);
        acc1 = _mm256_fmadd_ps(load_f16x8(x + i + 8), load_f16x8(y + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(load_f16x8(x + i + 16), load_f16x8(y + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(load_f16x8(x + i + 24), load_f16x8(y + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load_f16x8(x + i), load_f16x8(y + i), acc0);
    double sum = mm256_hsum_ps(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; i++) sum += (double)(f16_to_f32_hw(x[i]) * f16_to_f32_hw(y[i]));
    *s = (float)sum;
}

void mllm_vec_dot_bf16_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_bf16 *x = vx, *y = vy;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(load_bf16x8(x + i), load_bf16x8(y + i), acc0);
        acc1 = _mm256_fmadd_ps(load_bf16x8(x + i + 8), load_bf16x8(y + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(load_bf16x8(x + i + 16), load_bf16x8(y + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(load_bf16x8(x + i + 24), load_bf16x8(y + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load_bf16x8(x + i), load_bf16x8(y + i), acc0);
    double sum = mm256_hsum_ps(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; i++) sum += (double)(mllm_bf16_to_f32(x[i]) * mllm_bf16_to_f32(y[i]));
    *s = (float)sum;
}

void mllm_vec_dot_q8_0_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q8_0 *x = vx, *y = vy;
    const int nb = n / MLLM_QK8_0;
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const __m256 d = _mm256_set1_ps(f16_to_f32_hw(x[i].d) * f16_to_f32_hw(y[i].d));
        const __m256i qx = _mm256_loadu_si256((const __m256i *)x[i].qs);
        const __m256i qy = _mm256_loadu_si256((const __m256i *)y[i].qs);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_lanes(qx, qy)), acc);
    }
    *s = mm256_hsum_ps(acc);
}

void mllm_vec_dot_q4_0_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q4_0 *x = vx;
    const mllm_block_q8_0 *y = vy;
    const int nb = n / MLLM_QK4_0;
    const __m256i eight = _mm256_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const __m256 d = _mm256_set1_ps(f16_to_f32_hw(x[i].d) * f16_to_f32_hw(y[i].d));
        const __m256i qx = _mm256_sub_epi8(unpack_nibbles_32(x[i].qs), eight);
        const __m256i qy = _mm256_loadu_si256((const __m256i *)y[i].qs);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_lanes(qx, qy)), acc);
    }
    *s = mm256_hsum_ps(acc);
}

void mllm_vec_dot_q4_1_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q4_1 *x = vx;
    const mllm_block_q8_1 *y = vy;
    const int nb = n / MLLM_QK4_1;
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    for (int i = 0; i < nb; i++) {
        const __m256 d = _mm256_set1_ps(f16_to_f32_hw(x[i].d) * f16_to_f32_hw(y[i].d));
        summs += f16_to_f32_hw(x[i].m) * f16_to_f32_hw(y[i].s);
        const __m256i qx = unpack_nibbles_32(x[i].qs);
        const __m256i qy = _mm256_loadu_si256((const __m256i *)y[i].qs);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_u8_i8_lanes(qx, qy)), acc);
    }
    *s = mm256_hsum_ps(acc) + summs;
}
