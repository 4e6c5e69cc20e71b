/* Private to the CPU backend and the dtype table: the per-ISA kernel entry
   points, named <what>_<dtype>_<isa>. The generic ones are the specification;
   a SIMD one must give the same result up to float summation order. */
#ifndef MLLM_BACKENDS_CPU_KERNELS_INTERNAL_H
#define MLLM_BACKENDS_CPU_KERNELS_INTERNAL_H
#include <stdint.h>
#include "backends/cpu/kernels.h"
#include "core/dtype.h"

/* Row conversions (quant_generic.c). Quantizers are byte-identical to ggml's
   quantize_row_*_ref. */
void mllm_row_f32_to_float(const void *src, float *dst, int64_t n);
void mllm_row_float_to_f32(const float *src, void *dst, int64_t n);
void mllm_row_f16_to_float(const void *src, float *dst, int64_t n);
void mllm_row_float_to_f16(const float *src, void *dst, int64_t n);
void mllm_row_bf16_to_float(const void *src, float *dst, int64_t n);
void mllm_row_float_to_bf16(const float *src, void *dst, int64_t n);
void mllm_quantize_row_q8_0(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_q8_0(const void *src, float *dst, int64_t n);
void mllm_quantize_row_q8_1(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_q8_1(const void *src, float *dst, int64_t n);
void mllm_quantize_row_q4_0(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_q4_0(const void *src, float *dst, int64_t n);
void mllm_quantize_row_q4_1(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_q4_1(const void *src, float *dst, int64_t n);

/* Activation converters: what llama.cpp's CPU backend runs (see
   mllm_cpu_quantize_row in kernels.h). Generic and AVX2 give equal bytes. */
void mllm_quantize_row_q8_0_act_generic(const float *src, void *dst, int64_t n);
void mllm_quantize_row_q8_1_act_generic(const float *src, void *dst, int64_t n);
void mllm_quantize_row_q8_0_act_avx2(const float *src, void *dst, int64_t n);
void mllm_quantize_row_q4_0_avx2(const float *src, void *dst, int64_t n); /* = mllm_quantize_row_q4_0 */
void mllm_quantize_row_q8_1_act_avx2(const float *src, void *dst, int64_t n);
void mllm_row_float_to_f16_avx2(const float *src, void *dst, int64_t n);

/* vec_dot kernels (vec_dot_generic.c, vec_dot_avx2.c). y is in the
   vec_dot_type of x's dtype. */
void mllm_vec_dot_f32_generic(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_f16_generic(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_bf16_generic(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q8_0_generic(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q4_0_generic(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q4_1_generic(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q8_1_generic(int n, float *s, const void *x, const void *y);

void mllm_vec_dot_f32_avx2(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_f16_avx2(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_bf16_avx2(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q8_0_avx2(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q4_0_avx2(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q4_1_avx2(int n, float *s, const void *x, const void *y);

/* Blocked AVX2 mul_mat (mul_mat_avx2.c), same contract as mllm_cpu_mul_mat;
   false if it has no kernel for wt. */
/* A per-thread scratch buffer of at least `bytes` for one user (slot) of
   the x86 matmuls (x86/thread_scratch.c): kept between calls, freed when
   the thread ends; NULL when out of memory. */
enum { MLLM_X86_SCRATCH_WIDEN = 0, MLLM_X86_SCRATCH_ACT = 1, MLLM_X86_SCRATCH_N = 2 };
void *mllm_x86_thread_scratch(int slot, size_t bytes);
/* ops.dot_f32_segments of the x86 tables: tile_f32's row math (mul_mat_avx2.c). */
void mllm_dot_f32_segments_avx2(float *out, size_t out_stride, int n_out, const float *const *segs, size_t d_stride,
                                int seg, int n, int n_valid, const float *p, size_t p_stride, int n_p);
bool mllm_mul_mat_avx2(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X,
                       size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1);
/* n f16 or bf16 values widened to f32 with F16C / shifts (unaligned src). */
void mllm_widen_row_avx2(mllm_dtype t, const void *src, float *dst, int64_t n);
/* Activation rows from which f16 / bf16 weights take the float GEMM
   (mul_mat_avx2.c); fewer than this, more than one: bf16 weights take the
   small-batch tiles. */
#define MLLM_SMALL_BATCH_MAX 16
/* The avx512 path's small-batch bf16 tiles (mul_mat_small_avx512.c),
   same contract as mllm_cpu_mul_mat and the same bits as the AVX2 ones;
   false when it does not take the call (another dtype or M, out of memory). */
bool mllm_mul_mat_small_avx512(mllm_dtype wt, const void *W, size_t ws, int64_t K, const void *X, size_t xs,
                               int64_t M, float *Y, size_t ys, int64_t r0, int64_t r1);
/* The float GEMM's panels: NR weight rows x up to KC values of K, k-major
   (p[k * NR + i]); mllm_cpu_gemm_f32_pack's layout (kernels.h). */
#define MLLM_GEMM_NR 16
#define MLLM_GEMM_KC 1024
void mllm_gemm_f32_packed_avx2(const float *P, int64_t K, int64_t N, const float *A, size_t lda, int64_t M,
                               float *Y, size_t y_stride);
/* mllm_cpu_gemm's AVX2 half: false when out of memory for the panel. */
bool mllm_gemm_avx2(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const float *X, size_t x_stride,
                    int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1);
/* Float-weight GEMM for prefill (gemm_float_avx2.c): Y[m][r] = dot(W row r,
   A row m) for r in [r0, r1), m < M; W of dtype f16 / bf16 / f32, A in f32
   with row stride lda floats; panel: 1024 * 16 floats, 32-byte aligned. */
void mllm_gemm_float_avx2(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const float *A,
                          size_t lda, int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1,
                          float *panel);
/* The tiles of the two above: Y[m][r .. r + nr) (+)= A rows m < M (values
   k0 .. k0 + kc) times one packed panel (kc x 16, k-major). The avx512
   path runs the AVX-512 F one (gemm_float_avx512.c), bit-identical to the
   AVX2 one. */
void mllm_gemm_panel_rows_avx2(const float *panel, int nr, const float *A, size_t lda, int64_t k0, int kc,
                               int64_t M, float *Y, size_t y_stride, int64_t r, bool add);
void mllm_gemm_panel_rows_avx512(const float *panel, int nr, const float *A, size_t lda, int64_t k0, int kc,
                                 int64_t M, float *Y, size_t y_stride, int64_t r, bool add);
/* Two adjacent full panels of a packed block (the second kc * 16 floats
   after the first): Y[m][r .. r + 32) (+)= A rows times them, 12 x 32
   tiles; the same values as two mllm_gemm_panel_rows_avx512 calls. */
void mllm_gemm_panel2_rows_avx512(const float *panel, const float *A, size_t lda, int64_t k0, int kc, int64_t M,
                                  float *Y, size_t y_stride, int64_t r, bool add);
/* mllm_cpu_sum_exp's paths (sum_exp.c, x86/sum_exp_avx2.c); ts_from in [0, n]. */
double mllm_sum_exp_generic(const float *x, int n, float mx, int ts_from, double *ts_sum);
double mllm_sum_exp_avx2(const float *x, int n, float mx, int ts_from, double *ts_sum);
/* The plain loop over vec_dot (mul_mat.c): the reference for the above. */
void mllm_mul_mat_generic(mllm_vec_dot_fn dot, const void *W, size_t w_stride, int64_t K,
                          const void *X, size_t x_stride, int64_t M, float *Y, size_t y_stride,
                          int64_t r0, int64_t r1);

/* The avx512 path's softmax (ops_avx512.c; AVX-512 F/DQ): the ops table's
   softmax, bit-identical to the AVX2 one. */
void mllm_softmax_avx512(float *x, int n, float scale);
void mllm_gelu_erf_avx512(float *y, const float *x, int n);
/* 8-lane expf behind the AVX2 silu/softmax; exposed for its accuracy test. */
void mllm_expf_avx2(const float *x, float *y, int n);

/* The vec_dot for dtype t on the given path (mllm_cpu_isa_name's names; one
   this CPU or build cannot run gives the generic kernel);
   NULL if t has none. Used by mllm_cpu_init and by tests. */
mllm_vec_dot_fn mllm_cpu_vec_dot_for(mllm_dtype t, const char *path);

/* The rotation of pairs [from, half) of one head (the specification the
   SIMD ropes follow, and their tail): pair i is (x[i], x[i + half]) for
   NEOX order, (x[2i], x[2i + 1]) otherwise. */
static inline void mllm_rope_pairs(float *x, int from, int half, const float *cos_t, const float *sin_t, bool neox) {
    for (int i = from; i < half; i++) {
        const int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        const float x0 = x[i0], x1 = x[i1];
        x[i0] = x0 * cos_t[i] - x1 * sin_t[i];
        x[i1] = x0 * sin_t[i] + x1 * cos_t[i];
    }
}

#endif
