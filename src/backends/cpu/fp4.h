/* 4-bit weight types beyond GGUF's classic ones:
     mxfp4  (GGUF type 39, OCP microscaling): 32 e2m1 values sharing one e8m0
            (power of two) scale; dots with q8_0 activations, as ggml does.
     w4a32  (our own ids 200 / 201, see core/dtype.h): 4-bit signed weights
            with an f16 scale per group of 32 / 64, activations kept f32 and
            the dot done in f32 (the MLLM / KleidiAI "W4A32" pipeline: no
            activation quantization error).
   Private to the dtype table and the CPU kernels. */
#ifndef MLLM_BACKENDS_CPU_FP4_H
#define MLLM_BACKENDS_CPU_FP4_H
#include <stdint.h>

#include "core/dtype.h"

#define MLLM_QK_MXFP4 32
/* Element j (< 16) is the low nibble of qs[j], element j + 16 the high
   nibble; a nibble indexes mllm_mxfp4_values (e2m1 doubled: sign bit 3). */
typedef struct {
    uint8_t e; /* e8m0: value = 2^(e - 127); we scale by half of it */
    uint8_t qs[MLLM_QK_MXFP4 / 2];
} mllm_block_mxfp4;
_Static_assert(sizeof(mllm_block_mxfp4) == 17, "mxfp4 block is 17 bytes in GGUF");

/* e2m1 values times 2 (so they are integers), as ggml's kvalues_mxfp4. */
extern const int8_t mllm_mxfp4_values[16];

/* Half of the e8m0 scale: 2^(e - 128), exact (subnormal for e < 2). */
static inline float mllm_e8m0_to_f32_half(uint8_t e) {
    union { uint32_t u; float f; } v;
    v.u = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    return v.f;
}

/* w4a32: value = d * (q - 8), q in [0, 15]; element j (< G/2) in the low
   nibble of qs[j], element j + G/2 in the high nibble. */
#define MLLM_QK_W4A32_G32 32
#define MLLM_QK_W4A32_G64 64
typedef struct { mllm_f16 d; uint8_t qs[MLLM_QK_W4A32_G32 / 2]; } mllm_block_w4a32_g32;
typedef struct { mllm_f16 d; uint8_t qs[MLLM_QK_W4A32_G64 / 2]; } mllm_block_w4a32_g64;
_Static_assert(sizeof(mllm_block_w4a32_g32) == 18, "w4a32 g32 block is 18 bytes");
_Static_assert(sizeof(mllm_block_w4a32_g64) == 34, "w4a32 g64 block is 34 bytes");

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
