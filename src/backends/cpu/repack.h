/* Kernel-packed weight layouts ("x8"): the blocks of 8 consecutive rows are
   interleaved, block by block, so that one 32-byte load holds 4 values of
   each of the 8 rows. A matrix-vector product then keeps one output row per
   SIMD lane: no horizontal sums, one scale load per 8 rows, and the nibbles
   of q4_0 feed maddubs straight after a mask. Same bytes per row as the plain
   type, so a packed tensor keeps its size and row stride; group g (rows
   8g..8g+7) starts where row 8g started. Only matrices with a multiple of 8
   rows are packed.

   q4_0x8 block (8 rows x 32 values, 144 bytes): d[r] is row r's scale; for
   t in 0..3, r in 0..7, j in 0..3, byte qs[32t + 4r + j] holds row r's value
   8t+j in its low nibble and value 8t+4+j in its high nibble (values 0..15,
   real value = d * (v - 8), as in q4_0).
   q8_0x8 block (8 rows x 32 values, 272 bytes): qs[32g + 4r + j] = row r's
   value 4g+j. */
#ifndef MLLM_BACKENDS_CPU_REPACK_H
#define MLLM_BACKENDS_CPU_REPACK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

#define MLLM_PACK_ROWS 8

typedef struct { mllm_f16 d[8]; uint8_t qs[128]; } mllm_block_q4_0x8;
typedef struct { mllm_f16 d[8]; int8_t qs[256]; } mllm_block_q8_0x8;
/* q8_0s: the q8_0 activation block plus what the q4_0x8 kernel needs per
   block: d as float (the exact value of q8_0's f16 d) and s8 = 8 * sum(qs),
   the offset term of q4_0's (v - 8). */
typedef struct { int32_t s8; float d; int8_t qs[32]; } mllm_block_q8_0s;
_Static_assert(sizeof(mllm_block_q4_0x8) == 8 * 18, "q4_0x8 = 8 q4_0 blocks");
_Static_assert(sizeof(mllm_block_q8_0x8) == 8 * 34, "q8_0x8 = 8 q8_0 blocks");
_Static_assert(sizeof(mllm_block_q8_0s) == 40, "q8_0s block is 40 bytes");

/* The packed type for a (K x N) matrix of dtype t, or -1 when t has none or
   the shape does not allow it (N % 8, K % 32). */
int mllm_repack_type_for(mllm_dtype t, int64_t K, int64_t N);
/* The plain type a packed type came from (t itself when not packed). */
mllm_dtype mllm_repack_plain_type(mllm_dtype t);

/* Packs / unpacks groups [g0, g1) of a matrix with rows of K values. src and
   dst are both laid out with row stride row_size(plain, K); they must not
   overlap. Byte-exact inverses of each other. */
void mllm_repack_groups(mllm_dtype packed, const void *src, void *dst, int64_t K, int64_t g0,
                        int64_t g1);
void mllm_unpack_groups(mllm_dtype packed, const void *src, void *dst, int64_t K, int64_t g0,
                        int64_t g1);

/* Row `row` of a packed matrix as K floats. */
void mllm_packed_get_row(mllm_dtype packed, const void *data, int64_t K, int64_t row, float *dst);

/* mllm_cpu_mul_mat for packed weights (X in the packed type's vec_dot_type).
   The generic one is the reference and takes any [r0, r1); the AVX2 one
   returns false unless r0 and r1 are multiples of 8. */
void mllm_mul_mat_packed_generic(mllm_dtype wt, const void *W, size_t w_stride, int64_t K,
                                 const void *X, size_t x_stride, int64_t M, float *Y,
                                 size_t y_stride, int64_t r0, int64_t r1);
bool mllm_mul_mat_packed_avx2(mllm_dtype wt, const void *W, size_t w_stride, int64_t K,
                              const void *X, size_t x_stride, int64_t M, float *Y,
                              size_t y_stride, int64_t r0, int64_t r1);

/* Activation rows for q4_0x8: the q8_0 activation quantizer's bytes (same
   rounding), regrouped as q8_0s. Generic and AVX2 give equal bytes. */
void mllm_quantize_row_q8_0s_generic(const float *src, void *dst, int64_t n);
void mllm_quantize_row_q8_0s_avx2(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_q8_0s(const void *src, float *dst, int64_t n);

#endif
