/* The arm64 kernels (this folder; built only for arm64 targets) as the
   dispatcher (cpu_dispatch.c, mul_mat.c) sees them: one entry point per
   kind of kernel, taking the path (neon, neon-dotprod, neon-i8mm) so each
   one picks its own best variant. NULL / false: no NEON kernel for that
   dtype, the generic one runs. */
#ifndef MLLM_BACKENDS_CPU_ARM_ARM_KERNELS_H
#define MLLM_BACKENDS_CPU_ARM_ARM_KERNELS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/cpu/kernels.h"

const mllm_cpu_ops *mllm_cpu_ops_neon(void);
mllm_vec_dot_fn mllm_vec_dot_arm(mllm_dtype t, mllm_cpu_isa isa);
/* mllm_cpu_quantize_row for the activation types; false: not handled here. */
bool mllm_quantize_row_arm(mllm_dtype t, const float *x, void *y, int64_t n);
/* n f16 or bf16 values (t) widened to f32, unaligned src: to_float's values. */
void mllm_widen_row_neon(mllm_dtype t, const void *src, float *dst, int64_t n);
/* Blocked matmul, mllm_cpu_mul_mat's contract; false: no kernel for wt. */
bool mllm_mul_mat_arm(mllm_cpu_isa isa, mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X,
                      size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1);


/* The kernels themselves, named <what>_<dtype>_<variant>; exposed for the
   dispatch above and the kernel tests (tests/unit/test_kernels_arm.c). */
void mllm_vec_dot_f32_neon(int n, float *s, const void *x, const void *y);
/* ops.dot_f32_segments of the NEON table: mllm_vec_dot_f32_neon's order. */
void mllm_dot_f32_segments_neon(float *out, size_t out_stride, int n_out, const float *const *segs, size_t d_stride,
                                int seg, int n, int n_valid, const float *p, size_t p_stride, int n_p);
void mllm_vec_dot_f16_neon(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_bf16_neon(int n, float *s, const void *x, const void *y);
#define MLLM_ARM_INT_DOTS(v)                                                \
    void mllm_vec_dot_q8_0_##v(int n, float *s, const void *x, const void *y); \
    void mllm_vec_dot_q4_0_##v(int n, float *s, const void *x, const void *y); \
    void mllm_vec_dot_q4_1_##v(int n, float *s, const void *x, const void *y); \
    void mllm_vec_dot_q5_0_##v(int n, float *s, const void *x, const void *y); \
    void mllm_vec_dot_q5_1_##v(int n, float *s, const void *x, const void *y); \
    void mllm_vec_dot_q4_k_##v(int n, float *s, const void *x, const void *y); \
    void mllm_vec_dot_q5_k_##v(int n, float *s, const void *x, const void *y); \
    void mllm_vec_dot_q6_k_##v(int n, float *s, const void *x, const void *y);
MLLM_ARM_INT_DOTS(neon)
MLLM_ARM_INT_DOTS(dotprod)
/* SMMLA matmul (q8_0, q4_0, q4_1 weights; false for other dtypes). */
bool mllm_mul_mat_i8mm(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X, size_t x_stride,
                       int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1);
/* Tiles for the x8 packed layouts (repack_body.h): q4_0x8, q4_1x8, q5_0x8,
   q8_0x8, q4_Kx8, q5_Kx8, q6_Kx8 (every packed type); NULL for other
   types. The neon set emulates SDOT by element. The i8mm set
   (repack_i8mm.c: SMMLA for 2..4 activation rows, the dotprod tile for 1)
   has q4_0x8, q4_1x8, q5_0x8 and q8_0x8 only; NULL for the others. */
#include "backends/cpu/repack.h"
const mllm_packed_group_fn *mllm_packed_tiles_neon(mllm_dtype t);
const mllm_packed_group_fn *mllm_packed_tiles_dotprod(mllm_dtype t);
const mllm_packed_group_fn *mllm_packed_tiles_i8mm(mllm_dtype t);
/* mllm_cpu_mul_mat for packed weights on a NEON path; false: no tiles for
   wt, or r0 / r1 not multiples of 8 (the generic packed kernel runs). */
bool mllm_mul_mat_packed_arm(mllm_cpu_isa isa, mllm_dtype wt, const void *W, size_t w_stride, int64_t K,
                             const void *X, size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0,
                             int64_t r1);
/* 4-lane expf behind the NEON silu/softmax/gelu; exposed for its accuracy test. */
void mllm_expf_neon(const float *x, float *y, int n);

#endif
