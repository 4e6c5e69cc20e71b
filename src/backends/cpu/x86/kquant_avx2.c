/* AVX2 dots of q4_K / q5_K / q6_K weights with q8_K32 activations, the
   plain (unpacked) layouts: the per-block math of kquant_avx2.h, summed
   over blocks in 8 float lanes. Only the float order differs from
   kquant_generic.c. */
#include "backends/cpu/x86/kquant_avx2.h"

static inline __attribute__((always_inline)) void dot_k45(int n, float *s, const void *vx, const void *vy, bool Q5) {
    const size_t bsize = Q5 ? sizeof(mllm_block_q5_k) : sizeof(mllm_block_q4_k);
    const mllm_block_q8_k32 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        const char *xb = (const char *)vx + (size_t)i * bsize;
        kq45_scales p;
        kq45_prep((const mllm_block_q4_k *)xb, &p);
        acc = kq32_block_k45(acc, xb, &p, &y[i], Q5);
    }
    *s = mm256_hsum_ps(acc);
}

void mllm_vec_dot_q4_k_avx2(int n, float *s, const void *vx, const void *vy) { dot_k45(n, s, vx, vy, false); }
void mllm_vec_dot_q5_k_avx2(int n, float *s, const void *vx, const void *vy) { dot_k45(n, s, vx, vy, true); }

void mllm_vec_dot_q6_k_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q6_k *x = vx;
    const mllm_block_q8_k32 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / MLLM_QK_K; i++) acc = kq32_block_q6_k(acc, &x[i], &y[i]);
    *s = mm256_hsum_ps(acc);
}
