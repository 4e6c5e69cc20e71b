/* GGUF q5_0 / q5_1 blocks (32 values), bit for bit ggml's. Private to the
   dtype table and the CPU kernels. Value j (< 16) is the low nibble of
   qs[j], value j + 16 the high nibble; bit j of qh (little-endian u32) is the
   fifth bit of value j. */
#ifndef MLLM_BACKENDS_CPU_QUANT5_H
#define MLLM_BACKENDS_CPU_QUANT5_H
#include <stdint.h>

#include "core/dtype.h"

#define MLLM_QK5 32

/* x = d * (q - 16) */
typedef struct {
    mllm_f16 d;
    uint8_t qh[4];
    uint8_t qs[MLLM_QK5 / 2];
} mllm_block_q5_0;
/* x = d * q + m */
typedef struct {
    mllm_f16 d, m;
    uint8_t qh[4];
    uint8_t qs[MLLM_QK5 / 2];
} mllm_block_q5_1;
_Static_assert(sizeof(mllm_block_q5_0) == 22, "q5_0 block is 22 bytes in GGUF");
_Static_assert(sizeof(mllm_block_q5_1) == 24, "q5_1 block is 24 bytes in GGUF");

void mllm_quantize_row_q5_0(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_q5_0(const void *src, float *dst, int64_t n);
void mllm_quantize_row_q5_1(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_q5_1(const void *src, float *dst, int64_t n);
void mllm_vec_dot_q5_0_generic(int n, float *s, const void *x, const void *y); /* y: q8_0 */
void mllm_vec_dot_q5_1_generic(int n, float *s, const void *x, const void *y); /* y: q8_1 */
void mllm_vec_dot_q5_0_avx2(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q5_1_avx2(int n, float *s, const void *x, const void *y);

#endif
