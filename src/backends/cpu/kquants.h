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

/* The float half of a k-quant block's dot with q8_K32, the specification
   every kernel follows (up to float order): a[j] and b[j] are the exact
   int32 sums of 32-value sub-block j, a = sc_j * sum(q * y) (q6_K: over
   its two 16-value sub-blocks, with the -32 offset), b = m_j * sum(y)
   (q4_K / q5_K's min term; 0 for q6_K). Each is scaled by its own
   activation scale dy[j], then by the weight's d / dmin. */
static inline float kq32_combine(const int32_t a[8], const int32_t b[8], const float dy[8], float d, float dmin) {
    float sa = 0.0f, sb = 0.0f;
    for (int j = 0; j < 8; j++) {
        sa += dy[j] * (float)a[j];
        sb += dy[j] * (float)b[j];
    }
    return d * sa - dmin * sb;
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
/* q8_K32 activations (kquant_generic.c; the AVX2 one in quant_avx2.c gives
   the same bytes). */
void mllm_quantize_row_q8_k32_generic(const float *src, void *dst, int64_t n);
void mllm_quantize_row_q8_k32_avx2(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_q8_k32(const void *src, float *dst, int64_t n);
void mllm_dequantize_row_q8_k(const void *src, float *dst, int64_t n);
void mllm_dequantize_row_q4_k(const void *src, float *dst, int64_t n);
void mllm_dequantize_row_q6_k(const void *src, float *dst, int64_t n);
void mllm_vec_dot_q8_k_generic(int n, float *s, const void *x, const void *y);
/* q4_K / q5_K / q6_K rows dotted with q8_K32 activation rows. */
void mllm_vec_dot_q4_k_generic(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q6_k_generic(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q4_k_avx2(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q6_k_avx2(int n, float *s, const void *x, const void *y);

#endif
