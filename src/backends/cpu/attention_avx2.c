/* AVX2 attention row kernels (contracts in mllm_cpu_ops, kernels.h).
   Scores: 4 keys at a time share each load of q and end in one 4-way
   horizontal sum, instead of a call and a full reduction per key. Mix: the
   output stays in registers (up to 64 values per pass) while every value row
   streams past once, instead of loading and storing it per key (axpy).
   Head sizes that are not a multiple of 8 take the plain loops. */
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/simd_avx2.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

static float dot_tail(const float *a, const float *b, int D) {
    float s;
    mllm_vec_dot_f32_avx2(D, &s, a, b);
    return s;
}

void mllm_attn_scores_avx2(float *s, const float *q, const float *k, size_t k_stride, int n, int D) {
    int j = 0;
    if (D % 8 == 0) {
        for (; j + 4 <= n; j += 4) {
            const float *k0 = k + (size_t)j * k_stride, *k1 = k0 + k_stride, *k2 = k1 + k_stride,
                        *k3 = k2 + k_stride;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (int d = 0; d < D; d += 8) {
                const __m256 qv = _mm256_loadu_ps(q + d);
                a0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + d), a0);
                a1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k1 + d), a1);
                a2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k2 + d), a2);
                a3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k3 + d), a3);
            }
            /* [a0, a1, a2, a3] per 128-bit half, then the two halves added */
            const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
            _mm_storeu_ps(s + j, _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
        }
    }
    for (; j < n; j++) s[j] = dot_tail(q, k + (size_t)j * k_stride, D);
}

/* W vectors of 8 output values held in registers over all n rows. */
ALWAYS_INLINE void mix_chunk(int W, float *out, const float *s, const float *v, size_t v_stride, int n) {
    __m256 acc[8];
#pragma GCC unroll 8
    for (int i = 0; i < W; i++) acc[i] = _mm256_setzero_ps();
    for (int j = 0; j < n; j++) {
        const __m256 sj = _mm256_broadcast_ss(s + j);
        const float *vj = v + (size_t)j * v_stride;
#pragma GCC unroll 8
        for (int i = 0; i < W; i++) acc[i] = _mm256_fmadd_ps(sj, _mm256_loadu_ps(vj + 8 * i), acc[i]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < W; i++) _mm256_storeu_ps(out + 8 * i, acc[i]);
}

void mllm_attn_mix_avx2(float *out, const float *s, const float *v, size_t v_stride, int n, int D) {
    if (D % 8 != 0) {
        for (int i = 0; i < D; i++) out[i] = 0.0f;
        for (int j = 0; j < n; j++)
            for (int i = 0; i < D; i++) out[i] += s[j] * v[(size_t)j * v_stride + i];
        return;
    }
    for (int d0 = 0; d0 < D; d0 += 64) {
        const int w = D - d0 < 64 ? (D - d0) / 8 : 8;
        float *o = out + d0;
        const float *vv = v + d0;
        switch (w) {
        case 1: mix_chunk(1, o, s, vv, v_stride, n); break;
        case 2: mix_chunk(2, o, s, vv, v_stride, n); break;
        case 3: mix_chunk(3, o, s, vv, v_stride, n); break;
        case 4: mix_chunk(4, o, s, vv, v_stride, n); break;
        case 5: mix_chunk(5, o, s, vv, v_stride, n); break;
        case 6: mix_chunk(6, o, s, vv, v_stride, n); break;
        case 7: mix_chunk(7, o, s, vv, v_stride, n); break;
        default: mix_chunk(8, o, s, vv, v_stride, n); break;
        }
    }
}
