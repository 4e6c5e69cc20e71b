/* GGUF "k-quant" blocks (super-blocks of 256 values), bit for bit ggml's.
   Private to the dtype table and the CPU kernels. */
#ifndef MLLM_BACKENDS_CPU_KQUANTS_H
#define MLLM_BACKENDS_CPU_KQUANTS_H
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"

/* q4_K: 8 sub-blocks of 32; x = d*sc[s]*q - dmin*m[s], q in [0, 15]. The 6-bit
   sc/m of the 8 sub-blocks are packed in scales[12] (see kq_scale_min). Byte
   qs[32*c + l] holds element 64c + l (low nibble) and 64c + 32 + l (high). */
typedef struct {
    mllm_f16 d, dmin;
    uint8_t scales[12];
    uint8_t qs[MLLM_QK_K / 2];
} mllm_block_q4_k;

/* q5_K: like q4_K with a fifth bit: x = d*sc[s]*q - dmin*m[s], q in [0, 31].
   Low 4 bits as q4_K's qs; the fifth bit of element 64c + l is bit 2c of
   qh[l], of element 64c + 32 + l bit 2c+1 of qh[l]. */
typedef struct {
    mllm_f16 d, dmin;
    uint8_t scales[12];
    uint8_t qh[MLLM_QK_K / 8];
    uint8_t qs[MLLM_QK_K / 2];
} mllm_block_q5_k;

/* q6_K: 16 sub-blocks of 16; x = d*scales[e/16]*(q - 32), q in [0, 63]: its
   low 4 bits in ql, its high 2 bits in qh (layout in kquant_generic.c). */
typedef struct {
    uint8_t ql[MLLM_QK_K / 2];
    uint8_t qh[MLLM_QK_K / 4];
    int8_t scales[MLLM_QK_K / 16];
    mllm_f16 d;
} mllm_block_q6_k;

/* q8_K: activations for k-quant dots. d is a float; bsums[g] = sum of the
   16 quants of group g, so the min / offset terms need no second pass. */
typedef struct {
    float d;
    int8_t qs[MLLM_QK_K];
    int16_t bsums[MLLM_QK_K / 16];
} mllm_block_q8_k;

_Static_assert(sizeof(mllm_block_q4_k) == 144, "q4_K block is 144 bytes in GGUF");
_Static_assert(sizeof(mllm_block_q5_k) == 176, "q5_K block is 176 bytes in GGUF");
_Static_assert(sizeof(mllm_block_q6_k) == 210, "q6_K block is 210 bytes in GGUF");
_Static_assert(sizeof(mllm_block_q8_k) == 292, "q8_K block is 292 bytes in GGUF");

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
