/* NEON row ops (one table for the neon, neon-dotprod and neon-i8mm paths:
   none of them needs integer dot products). The math is ops_generic.c's
   (and ops_avx2.c's: the same Cephes-style expf, sums of squares and softmax
   denominators in double) in 4-lane order. Tested against the generic ops in
   tests/unit/test_kernels_arm.c. */
#include <math.h>

#include "backends/cpu/arm/arm_kernels.h"
#include "backends/cpu/arm/neon_util.h"
#include "backends/cpu/expf_poly.h"
#include "backends/cpu/kernels_internal.h"

/* expf for 4 lanes: x = n ln2 + r, exp(r) by the degree-6 polynomial of
   ops_avx2.c, 2^n put in the exponent bits; below -87.34 gives 0, above 88
   +inf, NaN stays NaN. */
static inline float32x4_t neon_expf(float32x4_t x) {
    const float32x4_t hi = vdupq_n_f32(MLLM_EXPF_HI), lo = vdupq_n_f32(MLLM_EXPF_LO);
    const float32x4_t xc = vminq_f32(vmaxq_f32(x, lo), hi);
    const float32x4_t n = vrndnq_f32(vmulq_n_f32(xc, MLLM_EXPF_LOG2E));
    float32x4_t r = vfmsq_f32(xc, n, vdupq_n_f32(MLLM_EXPF_LN2_HI));
    r = vfmsq_f32(r, n, vdupq_n_f32(MLLM_EXPF_LN2_LO));
    float32x4_t p = vdupq_n_f32(MLLM_EXPF_P0);
    p = vfmaq_f32(vdupq_n_f32(MLLM_EXPF_P1), p, r);
    p = vfmaq_f32(vdupq_n_f32(MLLM_EXPF_P2), p, r);
    p = vfmaq_f32(vdupq_n_f32(MLLM_EXPF_P3), p, r);
    p = vfmaq_f32(vdupq_n_f32(MLLM_EXPF_P4), p, r);
    p = vfmaq_f32(vdupq_n_f32(MLLM_EXPF_P5), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), vmulq_f32(p, r), r);
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    float32x4_t y = vmulq_f32(p, vreinterpretq_f32_s32(e));
    y = vbslq_f32(vcltq_f32(x, lo), vdupq_n_f32(0.0f), y);
    y = vbslq_f32(vcgtq_f32(x, hi), vdupq_n_f32(INFINITY), y);
    return vbslq_f32(vceqq_f32(x, x), y, x); /* NaN lanes: x */
}

void mllm_expf_neon(const float *x, float *y, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, neon_expf(vld1q_f32(x + i)));
    for (; i < n; i++) y[i] = expf(x[i]);
}

/* Sums a float32x4 into double lanes (the accumulation ggml does in double). */
static inline float64x2_t acc_f64(float64x2_t acc, float32x4_t v) {
    return vaddq_f64(acc, vaddq_f64(vcvt_f64_f32(vget_low_f32(v)), vcvt_high_f64_f32(v)));
}

static void rmsnorm_neon(float *y, const float *x, const float *w, int n, float eps) {
    float64x2_t acc = vdupq_n_f64(0.0);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        acc = acc_f64(acc, vmulq_f32(v, v));
    }
    double sum = vaddvq_f64(acc);
    for (; i < n; i++) sum += (double)(x[i] * x[i]);
    const float scale = 1.0f / sqrtf((float)(sum / n) + eps);
    i = 0;
    if (w) {
        for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vmulq_f32(vmulq_n_f32(vld1q_f32(x + i), scale), vld1q_f32(w + i)));
        for (; i < n; i++) y[i] = (x[i] * scale) * w[i];
    } else {
        for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vmulq_n_f32(vld1q_f32(x + i), scale));
        for (; i < n; i++) y[i] = x[i] * scale;
    }
}

static void silu_mul_neon(float *y, const float *g, const float *u, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t vg = vld1q_f32(g + i);
        const float32x4_t den = vaddq_f32(vdupq_n_f32(1.0f), neon_expf(vnegq_f32(vg)));
        vst1q_f32(y + i, vmulq_f32(vdivq_f32(vg, den), vld1q_f32(u + i)));
    }
    for (; i < n; i++) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* 0.5 x (1 + tanh(z)) = x / (1 + exp(-2z)), as ops_avx2.c. */
static void gelu_mul_neon(float *y, const float *g, const float *u, int n) {
    const float m2c = -2.0f * 0.7978845608028654f;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t x = vld1q_f32(g + i);
        const float32x4_t x3 = vmulq_f32(vmulq_f32(x, x), x);
        const float32x4_t z = vmulq_n_f32(vfmaq_n_f32(x, x3, 0.044715f), m2c);
        const float32x4_t den = vaddq_f32(vdupq_n_f32(1.0f), neon_expf(z));
        vst1q_f32(y + i, vmulq_f32(vdivq_f32(x, den), vld1q_f32(u + i)));
    }
    for (; i < n; i++) {
        const float x = g[i];
        y[i] = x / (1.0f + expf(m2c * (x + 0.044715f * x * x * x))) * u[i];
    }
}

/* erfc straight (Numerical Recipes' erfcc), as ops_avx2.c's gelu_erf. */
static void gelu_erf_neon(float *y, const float *x, int n) {
    static const float c[10] = {0.17087277f, -0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f,
                                -0.18628806f, 0.09678418f, 0.37409196f, 1.00002368f, -1.26551223f};
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        const float32x4_t z = vmulq_n_f32(vabsq_f32(v), 0.70710678118654752f);
        const float32x4_t t = vdivq_f32(vdupq_n_f32(1.0f), vfmaq_n_f32(vdupq_n_f32(1.0f), z, 0.5f));
        float32x4_t p = vdupq_n_f32(c[0]);
        for (int k = 1; k < 10; k++) p = vfmaq_f32(vdupq_n_f32(c[k]), p, t);
        const float32x4_t erfc = vmulq_f32(t, neon_expf(vfmsq_f32(p, z, z)));
        const uint32x4_t neg = vcltq_f32(v, vdupq_n_f32(0.0f));
        const float32x4_t f = vbslq_f32(neg, erfc, vsubq_f32(vdupq_n_f32(2.0f), erfc));
        vst1q_f32(y + i, vmulq_f32(vmulq_n_f32(v, 0.5f), f));
    }
    for (; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

static void softmax_neon(float *x, int n, float scale) {
    float32x4_t vmax = vdupq_n_f32(-INFINITY);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vmulq_n_f32(vld1q_f32(x + i), scale);
        vst1q_f32(x + i, v);
        vmax = vmaxq_f32(vmax, v);
    }
    float max = vmaxvq_f32(vmax);
    for (; i < n; i++) {
        x[i] *= scale;
        if (x[i] > max) max = x[i];
    }
    if (max == -INFINITY) {
        for (i = 0; i < n; i++) x[i] = 0.0f;
        return;
    }
    const float32x4_t vm = vdupq_n_f32(max);
    float64x2_t acc = vdupq_n_f64(0.0);
    for (i = 0; i + 4 <= n; i += 4) {
        const float32x4_t e = neon_expf(vsubq_f32(vld1q_f32(x + i), vm));
        vst1q_f32(x + i, e);
        acc = acc_f64(acc, e);
    }
    double sum = vaddvq_f64(acc);
    for (; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (i = 0; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), inv));
    for (; i < n; i++) x[i] *= inv;
}

static void rope_neon(float *x, int n_rot, const float *cos_t, const float *sin_t, bool neox) {
    const int half = n_rot / 2;
    int i = 0;
    if (neox) {
        for (; i + 4 <= half; i += 4) {
            const float32x4_t x0 = vld1q_f32(x + i), x1 = vld1q_f32(x + i + half);
            const float32x4_t c = vld1q_f32(cos_t + i), s = vld1q_f32(sin_t + i);
            vst1q_f32(x + i, vfmsq_f32(vmulq_f32(x0, c), x1, s));
            vst1q_f32(x + i + half, vfmaq_f32(vmulq_f32(x1, c), x0, s));
        }
    } else {
        for (; i + 4 <= half; i += 4) { /* de-interleave 4 pairs, rotate, interleave back */
            const float32x4x2_t v = vld2q_f32(x + 2 * i);
            const float32x4_t c = vld1q_f32(cos_t + i), s = vld1q_f32(sin_t + i);
            float32x4x2_t o;
            o.val[0] = vfmsq_f32(vmulq_f32(v.val[0], c), v.val[1], s);
            o.val[1] = vfmaq_f32(vmulq_f32(v.val[1], c), v.val[0], s);
            vst2q_f32(x + 2 * i, o);
        }
    }
    mllm_rope_pairs(x, i, half, cos_t, sin_t, neox);
}

static float dot_f32_neon(const float *a, const float *b, int n) {
    float s;
    mllm_vec_dot_f32_neon(n, &s, a, b);
    return s;
}

static void axpy_f32_neon(float *y, float a, const float *x, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), a));
    for (; i < n; i++) y[i] += a * x[i];
}

static void add_f32_neon(float *y, const float *a, const float *b, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
    for (; i < n; i++) y[i] = a[i] + b[i];
}

static const mllm_cpu_ops g_neon = {
    .name = "neon",
    .rmsnorm = rmsnorm_neon,
    .silu_mul = silu_mul_neon,
    .gelu_mul = gelu_mul_neon,
    .gelu_erf = gelu_erf_neon,
    .softmax = softmax_neon,
    .rope = rope_neon,
    .dot_f32 = dot_f32_neon,
    .axpy_f32 = axpy_f32_neon,
    .add_f32 = add_f32_neon,
    .transpose8 = mllm_transpose8_generic,
    .dot_f32_segments = mllm_dot_f32_segments_neon,
};

const mllm_cpu_ops *mllm_cpu_ops_neon(void) { return &g_neon; }
