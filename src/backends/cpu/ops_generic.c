/* Plain-C row ops: the specification for the SIMD ones. Rounding steps follow
   ggml's CPU ops (rms_norm, swiglu, soft_max, rope) so our activations track
   llama.cpp's: sums of squares and softmax denominators in double, the scale
   applied before the weight. */
#include <math.h>

#include "backends/cpu/kernels_internal.h"

static void mllm_rmsnorm_generic(float *y, const float *x, const float *w, int n, float eps) {
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / n);
    const float scale = 1.0f / sqrtf(mean + eps);
    if (w) {
        for (int i = 0; i < n; i++) y[i] = (x[i] * scale) * w[i];
    } else {
        for (int i = 0; i < n; i++) y[i] = x[i] * scale;
    }
}

static void mllm_silu_mul_generic(float *y, const float *g, const float *u, int n) {
    for (int i = 0; i < n; i++) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* Two passes in float (mean, then the variance of x - mean), as ggml's
   ggml_compute_forward_norm_f32 sums in ggml_float (double). */
static void mllm_layernorm_generic(float *y, const float *x, const float *w, const float *b, int n, float eps) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += x[i];
    const float mean = (float)(sum / n);
    double var = 0;
    for (int i = 0; i < n; i++) {
        const float d = x[i] - mean;
        var += (double)d * d;
    }
    const float scale = 1.0f / sqrtf((float)(var / n) + eps);
    for (int i = 0; i < n; i++) {
        const float v = (x[i] - mean) * scale;
        y[i] = (w ? v * w[i] : v) + (b ? b[i] : 0.0f);
    }
}

/* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
static void mllm_gelu_mul_generic(float *y, const float *g, const float *u, int n) {
    const float c = 0.7978845608028654f;
    for (int i = 0; i < n; i++) {
        const float x = g[i];
        y[i] = 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x))) * u[i];
    }
}

static void mllm_gelu_erf_generic(float *y, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

static void mllm_softmax_generic(float *x, int n, float scale) {
    float max = -INFINITY;
    for (int i = 0; i < n; i++) {
        x[i] *= scale;
        if (x[i] > max) max = x[i];
    }
    if (max == -INFINITY) { /* every entry masked: no distribution, give zeros */
        for (int i = 0; i < n; i++) x[i] = 0.0f;
        return;
    }
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

static void mllm_rope_generic(float *x, int n_rot, const float *cos_t, const float *sin_t, bool neox) {
    mllm_rope_pairs(x, 0, n_rot / 2, cos_t, sin_t, neox);
}

static float mllm_dot_f32_generic(const float *a, const float *b, int n) {
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)(a[i] * b[i]);
    return (float)sum;
}

static void mllm_axpy_f32_generic(float *y, float a, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

static void mllm_add_f32_generic(float *y, const float *a, const float *b, int n) {
    for (int i = 0; i < n; i++) y[i] = a[i] + b[i];
}

void mllm_transpose8_generic(float *dst, size_t stride, const float *const *rows, int n) {
    for (int d = 0; d < n; d++)
        for (int j = 0; j < 8; j++) dst[(size_t)d * stride + (size_t)j] = rows[j][d];
}

static const mllm_cpu_ops g_generic = {
    .name = "generic",
    .rmsnorm = mllm_rmsnorm_generic,
    .silu_mul = mllm_silu_mul_generic,
    .gelu_mul = mllm_gelu_mul_generic,
    .layernorm = mllm_layernorm_generic,
    .gelu_erf = mllm_gelu_erf_generic,
    .softmax = mllm_softmax_generic,
    .rope = mllm_rope_generic,
    .dot_f32 = mllm_dot_f32_generic,
    .axpy_f32 = mllm_axpy_f32_generic,
    .add_f32 = mllm_add_f32_generic,
    .transpose8 = mllm_transpose8_generic,
};

const mllm_cpu_ops *mllm_cpu_ops_generic(void) { return &g_generic; }
