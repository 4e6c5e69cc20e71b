/* AVX2 dots of q5_0 / q5_1 weights with q8_0 / q8_1 activations. */
#include <string.h>

#include "backends/cpu/quant5.h"
#include "backends/cpu/x86/simd_avx2.h"

void mllm_vec_dot_q5_0_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q5_0 *x = vx;
    const mllm_block_q8_0 *y = vy;
    const __m256i hi_off = _mm256_set1_epi8((char)0xf0);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / MLLM_QK5; i++) {
        /* q - 16 as int8: the low nibble, with 0xf0 or-ed in where the fifth
           bit is clear (l - 16 == l | 0xf0 for l < 16). */
        const __m256i qx = _mm256_or_si256(unpack_nibbles_32(x[i].qs),
                                           _mm256_andnot_si256(bits_to_bytes(x[i].qh), hi_off));
        const __m256i qy = _mm256_loadu_si256((const __m256i *)y[i].qs);
        const __m256 d = _mm256_set1_ps(f16_to_f32_hw(x[i].d) * f16_to_f32_hw(y[i].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_lanes(qx, qy)), acc);
    }
    *s = mm256_hsum_ps(acc);
}

void mllm_vec_dot_q5_1_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q5_1 *x = vx;
    const mllm_block_q8_1 *y = vy;
    const __m256i fifth = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps();
    float summs = 0.0f;
    for (int i = 0; i < n / MLLM_QK5; i++) {
        const __m256i qx = _mm256_or_si256(unpack_nibbles_32(x[i].qs), _mm256_and_si256(bits_to_bytes(x[i].qh), fifth));
        const __m256i qy = _mm256_loadu_si256((const __m256i *)y[i].qs);
        const __m256 d = _mm256_set1_ps(f16_to_f32_hw(x[i].d) * f16_to_f32_hw(y[i].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_u8_i8_lanes(qx, qy)), acc);
        summs += f16_to_f32_hw(x[i].m) * f16_to_f32_hw(y[i].s);
    }
    *s = mm256_hsum_ps(acc) + summs;
}
