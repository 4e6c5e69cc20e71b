/* CPU kernels of q5_0 / q5_1 (blocks of 32 values in core/dtype_blocks.h).
   Value j (< 16) is the low nibble of
   qs[j], value j + 16 the high nibble; bit j of qh (little-endian u32) is the
   fifth bit of value j. */
#ifndef MLLM_BACKENDS_CPU_QUANT5_H
#define MLLM_BACKENDS_CPU_QUANT5_H
#include <stdint.h>

#include "core/dtype.h"
#include "core/dtype_blocks.h"


void mllm_quantize_row_q5_0(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_q5_0(const void *src, float *dst, int64_t n);
void mllm_quantize_row_q5_1(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_q5_1(const void *src, float *dst, int64_t n);
void mllm_vec_dot_q5_0_generic(int n, float *s, const void *x, const void *y); /* y: q8_0 */
void mllm_vec_dot_q5_1_generic(int n, float *s, const void *x, const void *y); /* y: q8_1 */
void mllm_vec_dot_q5_0_avx2(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q5_1_avx2(int n, float *s, const void *x, const void *y);

#endif
