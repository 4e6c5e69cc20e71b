/* The float GEMM's tile on AVX-512 (gemm_float_avx2.c packs the panels and
   drives it): a panel's 16 columns are one zmm, so a 12 x 16 output tile
   lives in 12 registers, and per k one panel load and 12 broadcast
   multiply-adds (the broadcast folded into the FMA's memory operand) do
   what the AVX2 6 x 16 tile needs two loads, six broadcasts and twelve
   FMAs for, twice. Every output value is the same chain of FMAs in k order
   as the AVX2 tile's (from zero, then + C when adding), so the result is
   bit-identical to it whatever the tiling, which the kernel test checks. */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/x86/gemm_panel_rows.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define NR MLLM_GEMM_NR
#define MR 12 /* activation rows per tile */
_Static_assert(MR <= MLLM_GEMM_MR_MAX, "gemm_panel_rows.h scratch tile");

/* C[i][0..16) (+)= sum over k < kc of A[i][k] * panel[k][0..16), i < RM. */
ALWAYS_INLINE void kernel(int RM, const float *p, const float *A, size_t lda, int kc, float *C, size_t ldc,
                          bool add) {
    __m512 c[MR];
#pragma GCC unroll 12
    for (int i = 0; i < RM; i++) c[i] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k++) {
        const __m512 w = _mm512_loadu_ps(p + (size_t)k * NR);
#pragma GCC unroll 12
        for (int i = 0; i < RM; i++) c[i] = _mm512_fmadd_ps(_mm512_set1_ps(A[(size_t)i * lda + k]), w, c[i]);
    }
#pragma GCC unroll 12
    for (int i = 0; i < RM; i++) {
        float *ci = C + (size_t)i * ldc;
        if (add) c[i] = _mm512_add_ps(c[i], _mm512_loadu_ps(ci));
        _mm512_storeu_ps(ci, c[i]);
    }
}

#define KERN(RM)                                                                                                \
    static void kern_##RM(const float *p, const float *A, size_t lda, int kc, float *C, size_t ldc, bool add) { \
        kernel(RM, p, A, lda, kc, C, ldc, add);                                                                 \
    }
KERN(1) KERN(2) KERN(3) KERN(4) KERN(5) KERN(6) KERN(7) KERN(8) KERN(9) KERN(10) KERN(11) KERN(12)
static const mllm_gemm_kern_fn k_kern[MR] = {kern_1, kern_2, kern_3, kern_4,  kern_5,  kern_6,
                                   kern_7, kern_8, kern_9, kern_10, kern_11, kern_12};

/* Two panels side by side (32 columns, the second kc * 16 floats after the
   first): per k two panel loads and 12 broadcasts feed 24 multiply-adds,
   0.6 loads per FMA against 1.1 for the tile above, whose 13 loads per 12
   FMAs kept it near 72 % of the FMA peak even in L1 (the encoder's QK^T
   and PV products: 110-125 GFLOP/s of about 171). Each output value is
   still the one chain of FMAs in k order. */
ALWAYS_INLINE void kernel2(int RM, const float *p, const float *A, size_t lda, int kc, float *C, size_t ldc,
                           bool add) {
    __m512 c0[MR], c1[MR];
    const float *p1 = p + (size_t)kc * NR;
#pragma GCC unroll 12
    for (int i = 0; i < RM; i++) c0[i] = c1[i] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k++) {
        const __m512 w0 = _mm512_loadu_ps(p + (size_t)k * NR), w1 = _mm512_loadu_ps(p1 + (size_t)k * NR);
#pragma GCC unroll 12
        for (int i = 0; i < RM; i++) {
            const __m512 a = _mm512_set1_ps(A[(size_t)i * lda + k]);
            c0[i] = _mm512_fmadd_ps(a, w0, c0[i]);
            c1[i] = _mm512_fmadd_ps(a, w1, c1[i]);
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < RM; i++) {
        float *ci = C + (size_t)i * ldc;
        if (add) {
            c0[i] = _mm512_add_ps(c0[i], _mm512_loadu_ps(ci));
            c1[i] = _mm512_add_ps(c1[i], _mm512_loadu_ps(ci + NR));
        }
        _mm512_storeu_ps(ci, c0[i]);
        _mm512_storeu_ps(ci + NR, c1[i]);
    }
}

#define KERN2(RM)                                                                                                \
    static void kern2_##RM(const float *p, const float *A, size_t lda, int kc, float *C, size_t ldc, bool add) { \
        kernel2(RM, p, A, lda, kc, C, ldc, add);                                                                 \
    }
KERN2(1) KERN2(2) KERN2(3) KERN2(4) KERN2(5) KERN2(6) KERN2(7) KERN2(8) KERN2(9) KERN2(10) KERN2(11) KERN2(12)
static const mllm_gemm_kern_fn k_kern2[MR] = {kern2_1, kern2_2, kern2_3, kern2_4,  kern2_5,  kern2_6,
                                              kern2_7, kern2_8, kern2_9, kern2_10, kern2_11, kern2_12};

void mllm_gemm_panel2_rows_avx512(const float *panel, const float *A, size_t lda, int64_t k0, int kc, int64_t M,
                                  float *Y, size_t y_stride, int64_t r, bool add) {
    for (int64_t m = 0; m < M; m += MR) {
        const int rm = (int)(M - m < MR ? M - m : MR);
        k_kern2[rm - 1](panel, A + (size_t)m * lda + k0, lda, kc, Y + (size_t)m * y_stride + r, y_stride, add);
    }
}

void mllm_gemm_panel_rows_avx512(const float *panel, int nr, const float *A, size_t lda, int64_t k0, int kc,
                                 int64_t M, float *Y, size_t y_stride, int64_t r, bool add) {
    mllm_gemm_panel_rows_with(k_kern, MR, panel, nr, A, lda, k0, kc, M, Y, y_stride, r, add);
}
