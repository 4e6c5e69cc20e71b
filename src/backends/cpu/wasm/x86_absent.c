/* wasm32-wasi builds drop the *_avx2.c kernels (wasm has no AVX), but
   cpu_dispatch.c, mul_mat.c and repack.c still name them: those calls sit
   behind mllm_cpu_path() != "generic", and off x86 core/cpu_features.c
   reports no AVX2, so the path is always "generic" (MLLM_CPU=avx2 falls back
   with a warning). These definitions only satisfy the linker; reaching one
   is a dispatch bug, so it aborts loudly. Temporary: it goes away when the
   per-arch CPU backend (issue #12) stops naming x86 kernels in other builds.
   cmake/wasi/sources.cmake adds this file to wasm builds only. */
#include <stdio.h>
#include <stdlib.h>
#include "backends/cpu/fp4.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/kquants.h"
#include "backends/cpu/quant5.h"
#include "backends/cpu/repack.h"

static _Noreturn void absent(const char *fn) {
    fprintf(stderr, "mllm: internal error: %s called in a build without x86 kernels\n", fn);
    abort();
}

const mllm_cpu_ops *mllm_cpu_ops_avx2(void) { return NULL; /* "no such table": the generic one runs */ }

#define ABSENT_DOT(name) \
    void name(int n, float *s, const void *x, const void *y) { (void)n, (void)s, (void)x, (void)y; absent(#name); }
ABSENT_DOT(mllm_vec_dot_f32_avx2)
ABSENT_DOT(mllm_vec_dot_f16_avx2)
ABSENT_DOT(mllm_vec_dot_bf16_avx2)
ABSENT_DOT(mllm_vec_dot_q8_0_avx2)
ABSENT_DOT(mllm_vec_dot_q4_0_avx2)
ABSENT_DOT(mllm_vec_dot_q4_1_avx2)
ABSENT_DOT(mllm_vec_dot_q5_0_avx2)
ABSENT_DOT(mllm_vec_dot_q5_1_avx2)
ABSENT_DOT(mllm_vec_dot_q4_k_avx2)
ABSENT_DOT(mllm_vec_dot_q5_k_avx2)
ABSENT_DOT(mllm_vec_dot_q6_k_avx2)
ABSENT_DOT(mllm_vec_dot_mxfp4_avx2)
ABSENT_DOT(mllm_vec_dot_w4a32_g32_avx2)
ABSENT_DOT(mllm_vec_dot_w4a32_g64_avx2)

#define ABSENT_ROW(name) \
    void name(const float *src, void *dst, int64_t n) { (void)src, (void)dst, (void)n; absent(#name); }
ABSENT_ROW(mllm_quantize_row_q8_0_act_avx2)
ABSENT_ROW(mllm_quantize_row_q8_1_act_avx2)
ABSENT_ROW(mllm_quantize_row_q8_k32_avx2)
ABSENT_ROW(mllm_row_float_to_f16_avx2)

void mllm_widen_row_avx2(mllm_dtype t, const void *src, float *dst, int64_t n) {
    (void)t, (void)src, (void)dst, (void)n;
    absent("mllm_widen_row_avx2");
}

void mllm_gemm_f32_packed_avx2(const float *P, int64_t K, int64_t N, const float *A, size_t lda, int64_t M, float *Y,
                               size_t y_stride) {
    (void)P, (void)K, (void)N, (void)A, (void)lda, (void)M, (void)Y, (void)y_stride;
    absent("mllm_gemm_f32_packed_avx2");
}

/* The bool kernels may say "not handled": the caller then runs the generic one. */
bool mllm_mul_mat_avx2(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X, size_t x_stride,
                       int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1) {
    (void)wt, (void)W, (void)w_stride, (void)K, (void)X, (void)x_stride, (void)M, (void)Y, (void)y_stride, (void)r0,
        (void)r1;
    return false;
}

bool mllm_mul_mat_packed_avx2(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X,
                              size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1) {
    (void)wt, (void)W, (void)w_stride, (void)K, (void)X, (void)x_stride, (void)M, (void)Y, (void)y_stride, (void)r0,
        (void)r1;
    return false;
}

bool mllm_gemm_avx2(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const float *X, size_t x_stride,
                    int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1) {
    (void)wt, (void)W, (void)w_stride, (void)K, (void)X, (void)x_stride, (void)M, (void)Y, (void)y_stride, (void)r0,
        (void)r1;
    return false;
}
