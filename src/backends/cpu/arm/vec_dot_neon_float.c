/* NEON float dot products (f32, f16, bf16 rows): 4 x 4-lane FMA
   accumulators (values 16j + 4a .. 16j + 4a + 3 into accumulator a, the
   last partial 16 too), then the tail past the last multiple of 4 in
   double as vec_dot_generic.c. Only the summation order differs from the
   generic kernels. */
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
        /* the tail's fours go where the 16-step would put them, so zeros  \
           past a row's end (attention's P x V padding) change no bits */   \
        if (i + 4 <= n) a0 = vfmaq_f32(a0, LOAD(x + i), LOAD(y + i));                                       \
        if (i + 8 <= n) a1 = vfmaq_f32(a1, LOAD(x + i + 4), LOAD(y + i + 4));                               \
        if (i + 12 <= n) a2 = vfmaq_f32(a2, LOAD(x + i + 8), LOAD(y + i + 8));                              \
        i += (n - i) / 4 * 4;                                                                               \
        double sum = (double)vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));                   \
        for (; i < n; i++) sum += (double)(TO_F32(x[i]) * TO_F32(y[i]));                                    \
        *s = (float)sum;                                                                                    \
    }

#define F32_ID(v) (v)
MLLM_NEON_FLOAT_DOT(mllm_vec_dot_f32_neon, float, vld1q_f32, F32_ID)
MLLM_NEON_FLOAT_DOT(mllm_vec_dot_f16_neon, mllm_f16, neon_load_f16x4, mllm_f16_to_f32)
MLLM_NEON_FLOAT_DOT(mllm_vec_dot_bf16_neon, mllm_bf16, neon_load_bf16x4, mllm_bf16_to_f32)

/* Four values of row d's column i of a segmented matrix (kernels.h,
   dot_f32_segments): zeros for a NULL segment and from n_valid on. i is a
   multiple of 4 and seg of 8, so four never straddle two segments. */
static inline float32x4_t seg_load4(const float *const *segs, size_t off, int seg, int i, int n_valid) {
    const float *sg = segs[i / seg];
    if (!sg || i >= n_valid) return vdupq_n_f32(0.0f);
    const float *p = sg + off + (size_t)(i % seg);
    if (i + 4 <= n_valid) return vld1q_f32(p);
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int j = 0; j < n_valid - i; j++) t[j] = p[j];
    return vld1q_f32(t);
}

/* mllm_vec_dot_f32_neon's order (the f32 matmul of the NEON paths: the
   vec_dot loop) on segmented rows: the same FMAs into the same four
   accumulators, so the same bits as the matmul over the gathered rows. n is
   a multiple of 8: no scalar tail. */
void mllm_dot_f32_segments_neon(float *out, size_t out_stride, int n_out, const float *const *segs, size_t d_stride,
                                int seg, int n, int n_valid, const float *p, size_t p_stride, int n_p) {
    for (int m = 0; m < n_p; m++) {
        const float *y = p + (size_t)m * p_stride;
        for (int d = 0; d < n_out; d++) {
            const size_t off = (size_t)d * d_stride;
            float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
            int i = 0;
            for (; i + 16 <= n; i += 16) {
                a0 = vfmaq_f32(a0, seg_load4(segs, off, seg, i, n_valid), vld1q_f32(y + i));
                a1 = vfmaq_f32(a1, seg_load4(segs, off, seg, i + 4, n_valid), vld1q_f32(y + i + 4));
                a2 = vfmaq_f32(a2, seg_load4(segs, off, seg, i + 8, n_valid), vld1q_f32(y + i + 8));
                a3 = vfmaq_f32(a3, seg_load4(segs, off, seg, i + 12, n_valid), vld1q_f32(y + i + 12));
            }
            if (i + 4 <= n) a0 = vfmaq_f32(a0, seg_load4(segs, off, seg, i, n_valid), vld1q_f32(y + i));
            if (i + 8 <= n) a1 = vfmaq_f32(a1, seg_load4(segs, off, seg, i + 4, n_valid), vld1q_f32(y + i + 4));
            if (i + 12 <= n) a2 = vfmaq_f32(a2, seg_load4(segs, off, seg, i + 8, n_valid), vld1q_f32(y + i + 8));
            const double sum = (double)vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
            out[(size_t)m * out_stride + (size_t)d] = (float)sum;
        }
    }
}
