/* The row loop both float GEMM tiles (gemm_float_avx2.c: 6 x 16,
   gemm_float_avx512.c: 12 x 16) are driven by: Y[m][r .. r + nr) (+)= A
   rows m < M (values k0 .. k0 + kc) times one packed panel, mr rows at a
   time through kern[rows - 1]; a last panel narrower than MLLM_GEMM_NR
   goes through a scratch tile so only its nr columns are written. Plain C:
   each ISA file includes it and passes its own kernels. */
#ifndef MLLM_GEMM_PANEL_ROWS_H
#define MLLM_GEMM_PANEL_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/cpu/kernels_internal.h"

#define MLLM_GEMM_MR_MAX 12 /* the largest tile height of any ISA */

typedef void (*mllm_gemm_kern_fn)(const float *p, const float *A, size_t lda, int kc, float *C, size_t ldc, bool add);

static inline void mllm_gemm_panel_rows_with(const mllm_gemm_kern_fn *kern, int mr, const float *panel, int nr,
                                             const float *A, size_t lda, int64_t k0, int kc, int64_t M, float *Y,
                                             size_t y_stride, int64_t r, bool add) {
    for (int64_t m = 0; m < M; m += mr) {
        const int rm = (int)(M - m < mr ? M - m : mr);
        const float *a = A + (size_t)m * lda + k0;
        if (nr == MLLM_GEMM_NR) {
            kern[rm - 1](panel, a, lda, kc, Y + (size_t)m * y_stride + r, y_stride, add);
        } else { /* last panel of the range: only nr columns are ours */
            float tmp[MLLM_GEMM_MR_MAX * MLLM_GEMM_NR];
            for (int i = 0; i < rm; i++)
                for (int j = 0; j < nr; j++)
                    tmp[i * MLLM_GEMM_NR + j] = add ? Y[(size_t)(m + i) * y_stride + r + j] : 0.0f;
            kern[rm - 1](panel, a, lda, kc, tmp, MLLM_GEMM_NR, true);
            for (int i = 0; i < rm; i++)
                for (int j = 0; j < nr; j++) Y[(size_t)(m + i) * y_stride + r + j] = tmp[i * MLLM_GEMM_NR + j];
        }
    }
}

#endif
