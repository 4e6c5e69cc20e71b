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
   value 4g+j. The k-quant layouts are described with their structs below. */
#ifndef MLLM_BACKENDS_CPU_REPACK_H
#define MLLM_BACKENDS_CPU_REPACK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/cpu.h"
#include "core/dtype.h"
#include "core/dtype_blocks.h"


typedef struct { mllm_f16 d[8]; uint8_t qs[128]; } mllm_block_q4_0x8;
typedef struct { mllm_f16 d[8]; int8_t qs[256]; } mllm_block_q8_0x8;
/* q4_1x8 (8 rows x 32 values, 160 bytes): d[r], m[r] per row, qs as q4_0x8
   (real value = d * v + m). */
typedef struct { mllm_f16 d[8]; mllm_f16 m[8]; uint8_t qs[128]; } mllm_block_q4_1x8;
/* q4_Kx8 (8 rows x 256 values, 1152 bytes = 8 q4_K blocks): d, dmin per
   row; scales[8k + r] = byte k of row r's 12 packed 6-bit scale bytes; for
   c, t in 0..3 x 0..7, qs[256c + 32t + 4r + j] = row r's q4_K byte
   qs[32c + 4t + j] (low nibble: value 64c + 4t + j, high: 64c + 32 + 4t + j).
   q6_Kx8 (8 rows x 256 values, 1680 bytes = 8 q6_K blocks), v = q + 32 in
   0..63: scales[16p + 2r + e] = row r's scale of sub-block 2p + e; for
   u in 0..7, i in 0..3: ql[32(4u + i) + 4r + j] = v(32u + 4i + j) & 15 |
   (v(32u + 16 + 4i + j) & 15) << 4; for h in 0..1: qh[32(2u + h) + 4r + j]
   holds v(32u + 16h + 4k + j) >> 4 in bits 2k..2k+1, k in 0..3. */
typedef struct { mllm_f16 d[8]; mllm_f16 dmin[8]; uint8_t scales[96]; uint8_t qs[1024]; } mllm_block_q4_kx8;
typedef struct { mllm_f16 d[8]; int8_t scales[128]; uint8_t ql[1024]; uint8_t qh[512]; } mllm_block_q6_kx8;
/* q5_Kx8 (1408 bytes = 8 q5_K blocks): q4_Kx8's d, dmin, scales and qs
   (the low 4 bits), with qh between: qh[32t + 4r + j] = row r's q5_K byte
   qh[4t + j] (t in 0..7; bit 2c: fifth bit of value 64c + 4t + j, bit
   2c + 1: of value 64c + 32 + 4t + j). */
typedef struct {
    mllm_f16 d[8];
    mllm_f16 dmin[8];
    uint8_t scales[96];
    uint8_t qh[256];
    uint8_t qs[1024];
} mllm_block_q5_kx8;
/* q5_0x8 (8 rows x 32 values, 176 bytes): d[r]; qs as q4_0x8 (the low 4
   bits); qh[4r + j] holds row r's fifth bits for t in 0..3: bit 2t of value
   8t + j, bit 2t + 1 of value 8t + 4 + j (real value = d * (v - 16)). */
typedef struct { mllm_f16 d[8]; uint8_t qh[32]; uint8_t qs[128]; } mllm_block_q5_0x8;
_Static_assert(sizeof(mllm_block_q5_0x8) == 8 * 22, "q5_0x8 = 8 q5_0 blocks");
_Static_assert(sizeof(mllm_block_q4_kx8) == 8 * 144, "q4_Kx8 = 8 q4_K blocks");
_Static_assert(sizeof(mllm_block_q6_kx8) == 8 * 210, "q6_Kx8 = 8 q6_K blocks");
_Static_assert(sizeof(mllm_block_q5_kx8) == 8 * 176, "q5_Kx8 = 8 q5_K blocks");

_Static_assert(sizeof(mllm_block_q4_0x8) == 8 * 18, "q4_0x8 = 8 q4_0 blocks");
_Static_assert(sizeof(mllm_block_q8_0x8) == 8 * 34, "q8_0x8 = 8 q8_0 blocks");
_Static_assert(sizeof(mllm_block_q4_1x8) == 8 * 20, "q4_1x8 = 8 q4_1 blocks");

/* mllm_repack_type_for, mllm_repack_plain_type, mllm_repack_groups and
   mllm_unpack_groups: backends/cpu.h. */

/* Row `row` of a packed matrix as K floats. */
void mllm_packed_get_row(mllm_dtype packed, const void *data, int64_t K, int64_t row, float *dst);

/* mllm_cpu_mul_mat for packed weights (X in the packed type's vec_dot_type).
   The generic one is the reference and takes any [r0, r1); the AVX2 one
   returns false unless r0 and r1 are multiples of 8 (as do the NEON ones,
   arm/arm_kernels.h). */
/* The k-quant halves of the above (repack_kquant.c): one block of 8 rows. */
void mllm_pack_q4_k(const void *const rows[8], mllm_block_q4_kx8 *out);
void mllm_unpack_q4_k(const mllm_block_q4_kx8 *in, void *const rows[8]);
void mllm_pack_q5_k(const void *const rows[8], mllm_block_q5_kx8 *out);
void mllm_unpack_q5_k(const mllm_block_q5_kx8 *in, void *const rows[8]);
void mllm_q5_kx8_get(const mllm_block_q5_kx8 *b, int r, float *dst);
float mllm_q5_kx8_dot(const mllm_block_q5_kx8 *b, int r, const void *q8k);
void mllm_pack_q6_k(const void *const rows[8], mllm_block_q6_kx8 *out);
void mllm_unpack_q6_k(const mllm_block_q6_kx8 *in, void *const rows[8]);
/* Row r (0..7) of one packed block as 256 floats / its dot with a q8_K32 block. */
void mllm_q4_kx8_get(const mllm_block_q4_kx8 *b, int r, float *dst);
void mllm_q6_kx8_get(const mllm_block_q6_kx8 *b, int r, float *dst);
float mllm_q4_kx8_dot(const mllm_block_q4_kx8 *b, int r, const void *q8k);
float mllm_q6_kx8_dot(const mllm_block_q6_kx8 *b, int r, const void *q8k);

void mllm_mul_mat_packed_generic(mllm_dtype wt, const void *W, size_t w_stride, int64_t K,
                                 const void *X, size_t x_stride, int64_t M, float *Y,
                                 size_t y_stride, int64_t r0, int64_t r1);
bool mllm_mul_mat_packed_avx2(mllm_dtype wt, const void *W, size_t w_stride, int64_t K,
                              const void *X, size_t x_stride, int64_t M, float *Y,
                              size_t y_stride, int64_t r0, int64_t r1);
/* The avx512 path's packed matmul (x86/repack_avx512.c), the one entry of
   its three families: q8_0x8 itself, q4_0x8, q4_1x8, q5_0x8 through
   mllm_mul_mat_packed_avx512_q4 (x86/repack_avx512_q4.c), q4_Kx8, q5_Kx8,
   q6_Kx8 through mllm_mul_mat_packed_kq_avx512 (x86/repack_kquant_avx512.c); on VNNI, bit-identical to the AVX2 one; false
   (nothing done) for other types, r0 or r1 not multiples of 8, or K over
   16384. Needs AVX-512 F/BW/VL/DQ/VNNI. */
bool mllm_mul_mat_packed_avx512(mllm_dtype wt, const void *W, size_t w_stride, int64_t K,
                                const void *X, size_t x_stride, int64_t M, float *Y,
                                size_t y_stride, int64_t r0, int64_t r1);
bool mllm_mul_mat_packed_avx512_q4(mllm_dtype wt, const void *W, size_t w_stride, int64_t K,
                                   const void *X, size_t x_stride, int64_t M, float *Y,
                                   size_t y_stride, int64_t r0, int64_t r1);

/* One SIMD tile: an 8-row group (nb packed blocks from w) x RN activation
   rows (1..MLLM_PACKED_TILE_N), writing Y[m * ys + 0..7]. A tile set is
   indexed by RN - 1. mllm_kquant_x8_tiles_avx2 gives the AVX2 k-quant tiles
   (repack_kquant_avx2.c), NULL for other types. */
#define MLLM_PACKED_TILE_N 4
typedef void (*mllm_packed_group_fn)(const void *w, int64_t nb, const char *X, size_t xs, float *Y,
                                     size_t ys);
const mllm_packed_group_fn *mllm_kquant_x8_tiles_avx2(mllm_dtype t);
/* The avx512 path's k-quant packed matmul (x86/repack_kquant_avx512.c): q4_Kx8,
   q5_Kx8 and q6_Kx8 on VNNI, up to 9 activation rows per sweep of the
   weights, bit-identical to the AVX2 tiles; false (nothing done) for other
   types or r0, r1 not multiples of 8. Needs AVX-512 F/BW/VL/DQ/VNNI. */
bool mllm_mul_mat_packed_kq_avx512(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X,
                                   size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1);

/* mllm_cpu_mul_mat for packed weights through a tile set (the AVX2 and NEON
   drivers): groups in L2-sized chunks, every activation tile over each
   chunk. False (nothing done) when set is NULL or r0, r1 are not multiples
   of 8. */
bool mllm_mul_mat_packed_tiles(const mllm_packed_group_fn *set, mllm_dtype wt, const void *W, size_t w_stride,
                               int64_t K, const void *X, size_t x_stride, int64_t M, float *Y, size_t y_stride,
                               int64_t r0, int64_t r1);
/* The same with tiles of up to tile_n activation rows (set has tile_n
   entries): the AVX2 q4_0x8 / q4_1x8 / q8_0x8 tiles go wider than
   MLLM_PACKED_TILE_N. Every output is one tile's, whatever its width, so
   the widths do not change the results. */
bool mllm_mul_mat_packed_tiles_n(const mllm_packed_group_fn *set, int tile_n, mllm_dtype wt, const void *W,
                                 size_t w_stride, int64_t K, const void *X, size_t x_stride, int64_t M, float *Y,
                                 size_t y_stride, int64_t r0, int64_t r1);

/* Activation rows for q4_0x8: the q8_0 activation quantizer's bytes (same
   rounding), regrouped as q8_0s. Generic and AVX2 give equal bytes. */
void mllm_quantize_row_q8_0s_generic(const float *src, void *dst, int64_t n);
void mllm_quantize_row_q8_0s_avx2(const float *src, void *dst, int64_t n);
void mllm_dequantize_row_q8_0s(const void *src, float *dst, int64_t n);
/* A row of n values quantized as q8_0 at dst turned into q8_0s in place
   (dst must hold the q8_0s row): the SIMD quantizers' second step. */
void mllm_q8_0_to_q8_0s_in_place(void *dst, int64_t n);

#endif
