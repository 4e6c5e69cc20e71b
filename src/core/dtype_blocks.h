/* Block layouts of the quantized formats beyond the classic ones in
   dtype.h (k-quants, q5, mxfp4, our w4a32, the q8_0s activation block), bit
   for bit ggml's where GGUF defines them. Formats only: the code that
   converts and multiplies them is a backend's (backends/cpu). */
#ifndef MLLM_CORE_DTYPE_BLOCKS_H
#define MLLM_CORE_DTYPE_BLOCKS_H
#include <stdint.h>

#include "core/dtype.h"

/* ---- k-quants: super-blocks of 256 values ---- */

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

/* q8_K32: the k-quants' activations. d[j] is the float scale of values
   32j..32j+31 (amax / 127, rounded half to even as q8_0's activations);
   bsums[g] = sum of the 16 quants of group g, for q4_K / q5_K's min term
   (groups 2j, 2j+1) and q6_K's -32 offset (each 16-value sub-block). */
typedef struct {
    float d[MLLM_QK_K / 32];
    int8_t qs[MLLM_QK_K];
    int16_t bsums[MLLM_QK_K / 16];
} mllm_block_q8_k32;

_Static_assert(sizeof(mllm_block_q8_k32) == 320, "q8_K32 block is 320 bytes");
_Static_assert(sizeof(mllm_block_q4_k) == 144, "q4_K block is 144 bytes in GGUF");
_Static_assert(sizeof(mllm_block_q5_k) == 176, "q5_K block is 176 bytes in GGUF");
_Static_assert(sizeof(mllm_block_q6_k) == 210, "q6_K block is 210 bytes in GGUF");
_Static_assert(sizeof(mllm_block_q8_k) == 292, "q8_K block is 292 bytes in GGUF");

/* ---- q5_0 / q5_1 (32 values). Value j (< 16) is the low nibble of qs[j],
   value j + 16 the high nibble; bit j of qh (little-endian u32) is the fifth
   bit of value j. ---- */

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

/* ---- mxfp4 (GGUF type 39, OCP microscaling) ---- */

#define MLLM_QK_MXFP4 32
/* Element j (< 16) is the low nibble of qs[j], element j + 16 the high
   nibble; a nibble indexes mllm_mxfp4_values (e2m1 doubled: sign bit 3). */
typedef struct {
    uint8_t e; /* e8m0: value = 2^(e - 127); we scale by half of it */
    uint8_t qs[MLLM_QK_MXFP4 / 2];
} mllm_block_mxfp4;
_Static_assert(sizeof(mllm_block_mxfp4) == 17, "mxfp4 block is 17 bytes in GGUF");

/* w4a32: value = d * (q - 8), q in [0, 15]; element j (< G/2) in the low
   nibble of qs[j], element j + G/2 in the high nibble. */
#define MLLM_QK_W4A32_G32 32
#define MLLM_QK_W4A32_G64 64
typedef struct { mllm_f16 d; uint8_t qs[MLLM_QK_W4A32_G32 / 2]; } mllm_block_w4a32_g32;
typedef struct { mllm_f16 d; uint8_t qs[MLLM_QK_W4A32_G64 / 2]; } mllm_block_w4a32_g64;
_Static_assert(sizeof(mllm_block_w4a32_g32) == 18, "w4a32 g32 block is 18 bytes");
_Static_assert(sizeof(mllm_block_w4a32_g64) == 34, "w4a32 g64 block is 34 bytes");

/* Rows interleaved per group in the CPU's packed kernel layouts (the
   *_X8 rows of the table; backends/cpu/repack.h describes them). */
#define MLLM_PACK_ROWS 8

/* q8_0s: the q8_0 activation block plus what the q4_0x8 kernel needs per
   block: d as float (the exact value of q8_0's f16 d) and s8 = 8 * sum(qs),
   the offset term of q4_0's (v - 8). */
typedef struct { int32_t s8; float d; int8_t qs[32]; } mllm_block_q8_0s;
_Static_assert(sizeof(mllm_block_q8_0s) == 40, "q8_0s block is 40 bytes");

#endif
