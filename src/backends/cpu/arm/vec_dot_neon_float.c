/* NEON float dot products (f32, f16, bf16 rows): 4 x 4-lane FMA
   accumulators, then the tail in double as vec_dot_generic.c. Only the
   summation order differs from the generic kernels. */
#include "backends/cpu/arm/arm_kernels.h"
#include "backends/cpu/arm/neon_util.h"

/* One kernel per element type: LOAD(p) gives 4 floats from p. */
#define MLLM_NEON_FLOAT_DOT(name, T, LOAD, TO_F32)                                                          \
    void name(int n, float *s, const void *vx, const void *vy) {                                            \
        const T *x = vx, *y = vy;                                                                           \
        float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;                                      \
        int i = 0;                                                                                          \
        for (; i + 16 <= n; i += 16) {                                                                      \
            a0 = vfmaq_f32(a0, LOAD(x + i), LOAD(y + i));                                                   \
            a1 = vfmaq_f32(a1, LOAD(x + i + 4), LOAD(y + i + 4));                                           \
            a2 = vfmaq_f32(a2, LOAD(x + i + 8), LOAD(y + i + 8));                                           \
            a3 = vfmaq_f32(a3, LOAD(x + i + 12), LOAD(y + i + 12));                                         \
        }                                                                                                   \
        for (; i + 4 <= n; i += 4) a0 = vfmaq_f32(a0, LOAD(x + i), LOAD(y + i));                            \
        double sum = (double)vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));                   \
        for (; i < n; i++) sum += (double)(TO_F32(x[i]) * TO_F32(y[i]));                                    \
        *s = (float)sum;                                                                                    \
    }

#define F32_ID(v) (v)
MLLM_NEON_FLOAT_DOT(mllm_vec_dot_f32_neon, float, vld1q_f32, F32_ID)
MLLM_NEON_FLOAT_DOT(mllm_vec_dot_f16_neon, mllm_f16, neon_load_f16x4, mllm_f16_to_f32)
MLLM_NEON_FLOAT_DOT(mllm_vec_dot_bf16_neon, mllm_bf16, neon_load_bf16x4, mllm_bf16_to_f32)
