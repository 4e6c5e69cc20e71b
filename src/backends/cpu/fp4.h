/* 4-bit weight types beyond GGUF's classic ones:
     mxfp4  (GGUF type 39, OCP microscaling): 32 e2m1 values sharing one e8m0
            (power of two) scale; dots with q8_0 activations, as ggml does.
     w4a32  (our own ids 200 / 201, see core/dtype.h): 4-bit signed weights
            with an f16 scale per group of 32 / 64, activations kept f32 and
            the dot done in f32 (the MLLM / KleidiAI "W4A32" pipeline: no
            activation quantization error).
   The CPU kernels of these formats (the blocks are in core/dtype_blocks.h). */
#ifndef MLLM_BACKENDS_CPU_FP4_H
#define MLLM_BACKENDS_CPU_FP4_H
#include <stdint.h>

#include "core/dtype.h"
#include "core/dtype_blocks.h"


/* e2m1 values times 2 (so they are integers), as ggml's kvalues_mxfp4. */
extern const int8_t mllm_mxfp4_values[16];

/* Half of the e8m0 scale: 2^(e - 128), exact (subnormal for e < 2). */
static inline float mllm_e8m0_to_f32_half(uint8_t e) {
    union { uint32_t u; float f; } v;
    v.u = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    return v.f;
}


void mllm_quantize_row_mxfp4(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_mxfp4(const void *src, float *dst, int64_t n);
void mllm_vec_dot_mxfp4_generic(int n, float *s, const void *x, const void *y); /* y: q8_0 */
void mllm_vec_dot_mxfp4_avx2(int n, float *s, const void *x, const void *y);

void mllm_quantize_row_w4a32_g32(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_w4a32_g32(const void *src, float *dst, int64_t n);
void mllm_quantize_row_w4a32_g64(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_w4a32_g64(const void *src, float *dst, int64_t n);
void mllm_vec_dot_w4a32_g32_generic(int n, float *s, const void *x, const void *y); /* y: f32 */
void mllm_vec_dot_w4a32_g64_generic(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_w4a32_g32_avx2(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_w4a32_g64_avx2(int n, float *s, const void *x, const void *y);

#endif
