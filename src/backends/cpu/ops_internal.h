/* Private: the generic row ops by name, so SIMD op tables can fall back to
   one of them for an op they do not vectorise. */
#ifndef MLLM_BACKENDS_CPU_OPS_INTERNAL_H
#define MLLM_BACKENDS_CPU_OPS_INTERNAL_H
#include <stdbool.h>

void mllm_rmsnorm_generic(float *y, const float *x, const float *w, int n, float eps);
void mllm_silu_mul_generic(float *y, const float *g, const float *u, int n);
void mllm_softmax_generic(float *x, int n, float scale);
void mllm_rope_generic(float *x, int n_rot, const float *cos_t, const float *sin_t, bool neox);
float mllm_dot_f32_generic(const float *a, const float *b, int n);
void mllm_axpy_f32_generic(float *y, float a, const float *x, int n);
void mllm_add_f32_generic(float *y, const float *a, const float *b, int n);

#endif
