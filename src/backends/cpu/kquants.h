/* GGUF "k-quant" blocks (super-blocks of 256 values), bit for bit ggml's.
   The CPU kernels of these formats (the blocks are in core/dtype_blocks.h). */
#ifndef MLLM_BACKENDS_CPU_KQUANTS_H
#define MLLM_BACKENDS_CPU_KQUANTS_H
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "core/dtype_blocks.h"


/* The 6-bit scale and min of sub-block j (0..7) of a q4_K block. */
static inline void kq_scale_min(int j, const uint8_t *s, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (uint8_t)((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
        *m = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

/* Round half to even through the float adder, as ggml's nearest_int: valid
   for |v| < 2^22 (every caller stays far below). */
static inline int kq_nearest_int(float v) {
    float t = v + 12582912.0f;
    int32_t i;
    memcpy(&i, &t, 4);
    return (i & 0x007fffff) - 0x00400000;
}

/* Quantizers (kquant_quantize.c): byte-identical to ggml's
   quantize_row_q{4,5,6}_K_ref; q8_K's to quantize_row_q8_K_ref. */
void mllm_quantize_row_q4_k(const float *src, void *dst, int64_t n);
void mllm_quantize_row_q5_k(const float *src, void *dst, int64_t n);
void mllm_quantize_row_q6_k(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_q5_k(const void *src, float *dst, int64_t n);
void mllm_vec_dot_q5_k_generic(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q5_k_avx2(int n, float *s, const void *x, const void *y);
void mllm_quantize_row_q8_k(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_q8_k(const void *src, float *dst, int64_t n);
void mllm_dequantize_row_q4_k(const void *src, float *dst, int64_t n);
void mllm_dequantize_row_q6_k(const void *src, float *dst, int64_t n);
void mllm_vec_dot_q8_k_generic(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q4_k_generic(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q6_k_generic(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q4_k_avx2(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q6_k_avx2(int n, float *s, const void *x, const void *y);

#endif
