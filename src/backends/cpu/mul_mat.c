/* mllm_cpu_mul_mat: the matmul hot spot. Y[m][r] = dot(W row r, X row m).
   Chooses the blocked SIMD kernel of this CPU path (AVX-512, AVX2 or NEON), else the
   plain loop over the path's vec_dot. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/repack.h"
#if MLLM_HAVE_ARM_KERNELS
#include "backends/cpu/arm/arm_kernels.h"
#endif

/* The obvious loop over the dtype's vec_dot: the reference for the blocked
   SIMD versions, and the path for dtypes without one. */
void mllm_mul_mat_generic(mllm_vec_dot_fn dot, const void *W, size_t w_stride, int64_t K,
                          const void *X, size_t x_stride, int64_t M, float *Y, size_t y_stride,
                          int64_t r0, int64_t r1) {
    for (int64_t m = 0; m < M; m++) {
        const char *x = (const char *)X + (size_t)m * x_stride;
        for (int64_t r = r0; r < r1; r++) {
            dot((int)K, Y + (size_t)m * y_stride + r, (const char *)W + (size_t)r * w_stride, x);
        }
    }
}

/* For dtypes without a tiled kernel: the same dots, but a few weight rows at
   a time against every activation row, so the rows stay in L1/L2 instead of
   streaming the whole matrix once per activation row (prefill). */
#define ROWS_PER_PASS 16

static void mul_mat_row_blocked(mllm_vec_dot_fn dot, const void *W, size_t w_stride, int64_t K,
                                const void *X, size_t x_stride, int64_t M, float *Y,
                                size_t y_stride, int64_t r0, int64_t r1) {
    for (int64_t rb = r0; rb < r1; rb += ROWS_PER_PASS) {
        const int64_t re = rb + ROWS_PER_PASS < r1 ? rb + ROWS_PER_PASS : r1;
        mllm_mul_mat_generic(dot, W, w_stride, K, X, x_stride, M, Y, y_stride, rb, re);
    }
}

void mllm_cpu_mul_mat_exact(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X,
                            size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1,
                            float *row) {
    const mllm_dtype_traits *tr = mllm_dtype_get(wt);
    const mllm_cpu_ops *k = mllm_cpu_ops_get();
    if (!tr || r1 <= r0 || M <= 0) return;
    for (int64_t r = r0; r < r1; r++) {
        mllm_cpu_get_row(wt, W, w_stride, K, r, row);
        for (int64_t m = 0; m < M; m++)
            Y[(size_t)m * y_stride + r] = k->dot_f32(row, (const float *)((const char *)X + (size_t)m * x_stride), (int)K);
    }
}

void mllm_cpu_mul_mat(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X,
                      size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0,
                      int64_t r1) {
    const mllm_dtype_traits *tr = mllm_dtype_get(wt);
    if (!tr || r1 <= r0 || M <= 0) return;
    const mllm_cpu_isa isa = mllm_cpu_isa_get();
    if (tr->packed_rows) {
#if MLLM_HAVE_X86_KERNELS
        if (isa == MLLM_CPU_ISA_AVX512 && mllm_mul_mat_packed_avx512(wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1))
            return;
        if (mllm_cpu_isa_is_x86(isa) && mllm_mul_mat_packed_avx2(wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1))
            return;
#endif
#if MLLM_HAVE_ARM_KERNELS
        if (mllm_cpu_isa_is_arm(isa) && mllm_mul_mat_packed_arm(isa, wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1))
            return;
#endif
        mllm_mul_mat_packed_generic(wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1);
        return;
    }
    const mllm_vec_dot_fn dot = mllm_cpu_type_get(wt)->vec_dot;
    if (!dot) return;
#if MLLM_HAVE_X86_KERNELS
    if (isa == MLLM_CPU_ISA_AVX512 && mllm_mul_mat_small_avx512(wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1))
        return;
    if (mllm_cpu_isa_is_x86(isa) && mllm_mul_mat_avx2(wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1))
        return;
#endif
#if MLLM_HAVE_ARM_KERNELS
    if (mllm_cpu_isa_is_arm(isa) && mllm_mul_mat_arm(isa, wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1))
        return;
#endif
    (void)isa;
    mul_mat_row_blocked(dot, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1);
}

void mllm_cpu_gemm(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const float *X, size_t x_stride,
                   int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1) {
    if (r1 <= r0 || M <= 0) return;
#if MLLM_HAVE_X86_KERNELS
    if (mllm_cpu_isa_is_x86(mllm_cpu_isa_get()) && mllm_gemm_avx2(wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1))
        return;
#endif
    if (wt == MLLM_DTYPE_F32) {
        mllm_cpu_mul_mat(wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1);
        return;
    }
    float *row = malloc((size_t)K * sizeof(float));
    if (row) mllm_cpu_mul_mat_exact(wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1, row);
    free(row);
}

size_t mllm_cpu_gemm_f32_packed_size(int64_t K, int64_t N) {
    return (size_t)((N + MLLM_GEMM_NR - 1) / MLLM_GEMM_NR) * MLLM_GEMM_NR * (size_t)K;
}

/* Panel (k block k0 of kc values, rows r ..) at
   dst + k0 * NR * n_pan + pn * kc * NR: see kernels.h. */
void mllm_cpu_gemm_f32_pack(const float *W, size_t w_stride, int64_t K, int64_t N, float *dst) {
    const int64_t n_pan = (N + MLLM_GEMM_NR - 1) / MLLM_GEMM_NR;
    for (int64_t k0 = 0; k0 < K; k0 += MLLM_GEMM_KC) {
        const int64_t kc = K - k0 < MLLM_GEMM_KC ? K - k0 : MLLM_GEMM_KC;
        for (int64_t pn = 0; pn < n_pan; pn++) {
            float *p = dst + (size_t)k0 * MLLM_GEMM_NR * (size_t)n_pan + (size_t)(pn * kc) * MLLM_GEMM_NR;
            for (int i = 0; i < MLLM_GEMM_NR; i++) {
                const int64_t r = pn * MLLM_GEMM_NR + i;
                const float *w = r < N ? (const float *)((const char *)W + (size_t)r * w_stride) + k0 : NULL;
                for (int64_t k = 0; k < kc; k++) p[k * MLLM_GEMM_NR + i] = w ? w[k] : 0.0f;
            }
        }
    }
}

/* The same panels from W given transposed: every panel row k is 16
   consecutive values of Wt's row k0 + k, one copy, no gather. */
void mllm_cpu_gemm_f32_pack_t(const float *Wt, size_t wt_stride, int64_t K, int64_t N, float *dst) {
    const int64_t n_pan = (N + MLLM_GEMM_NR - 1) / MLLM_GEMM_NR;
    for (int64_t k0 = 0; k0 < K; k0 += MLLM_GEMM_KC) {
        const int64_t kc = K - k0 < MLLM_GEMM_KC ? K - k0 : MLLM_GEMM_KC;
        for (int64_t pn = 0; pn < n_pan; pn++) {
            float *p = dst + (size_t)k0 * MLLM_GEMM_NR * (size_t)n_pan + (size_t)(pn * kc) * MLLM_GEMM_NR;
            const int64_t r = pn * MLLM_GEMM_NR, nr = N - r < MLLM_GEMM_NR ? N - r : MLLM_GEMM_NR;
            for (int64_t k = 0; k < kc; k++) {
                const float *w = (const float *)((const char *)Wt + (size_t)(k0 + k) * wt_stride) + r;
                float *pk = p + k * MLLM_GEMM_NR;
                for (int64_t i = 0; i < MLLM_GEMM_NR; i++) pk[i] = i < nr ? w[i] : 0.0f;
            }
        }
    }
}

void mllm_cpu_gemm_f32_packed(const float *P, int64_t K, int64_t N, const float *X, size_t x_stride, int64_t M,
                              float *Y, size_t y_stride) {
    if (N <= 0 || M <= 0) return;
#if MLLM_HAVE_X86_KERNELS
    if (mllm_cpu_isa_is_x86(mllm_cpu_isa_get())) {
        mllm_gemm_f32_packed_avx2(P, K, N, X, x_stride / sizeof(float), M, Y, y_stride);
        return;
    }
#endif
    const int64_t n_pan = (N + MLLM_GEMM_NR - 1) / MLLM_GEMM_NR;
    for (int64_t m = 0; m < M; m++) {
        const float *x = (const float *)((const char *)X + (size_t)m * x_stride);
        for (int64_t r = 0; r < N; r++) {
            const int64_t pn = r / MLLM_GEMM_NR, i = r % MLLM_GEMM_NR;
            double s = 0.0;
            for (int64_t k0 = 0; k0 < K; k0 += MLLM_GEMM_KC) {
                const int64_t kc = K - k0 < MLLM_GEMM_KC ? K - k0 : MLLM_GEMM_KC;
                const float *p = P + (size_t)k0 * MLLM_GEMM_NR * (size_t)n_pan + (size_t)(pn * kc) * MLLM_GEMM_NR;
                for (int64_t k = 0; k < kc; k++) s += (double)(p[k * MLLM_GEMM_NR + i] * x[k0 + k]);
            }
            Y[(size_t)m * y_stride + r] = (float)s;
        }
    }
}

void mllm_cpu_to_float(mllm_dtype t, const void *src, float *dst, int64_t n) {
#if MLLM_HAVE_X86_KERNELS
    if ((t == MLLM_DTYPE_F16 || t == MLLM_DTYPE_BF16) && mllm_cpu_isa_is_x86(mllm_cpu_isa_get())) {
        mllm_widen_row_avx2(t, src, dst, n);
        return;
    }
#endif
#if MLLM_HAVE_ARM_KERNELS
    if ((t == MLLM_DTYPE_F16 || t == MLLM_DTYPE_BF16) && mllm_cpu_isa_is_arm(mllm_cpu_isa_get())) {
        mllm_widen_row_neon(t, src, dst, n);
        return;
    }
#endif
    if (t == MLLM_DTYPE_F32) memcpy(dst, src, (size_t)n * sizeof(float));
    else mllm_cpu_type_get(t)->to_float(src, dst, n);
}
