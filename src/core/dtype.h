/* The dtype table: one row per element type. Numbering and block layouts are
   GGUF's (ggml_type), bit for bit, so GGUF tensors are used in place. */
#ifndef MLLM_CORE_DTYPE_H
#define MLLM_CORE_DTYPE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    MLLM_DTYPE_F32 = 0,
    MLLM_DTYPE_F16 = 1,
    MLLM_DTYPE_Q4_0 = 2,
    MLLM_DTYPE_Q4_1 = 3,
    MLLM_DTYPE_Q5_0 = 6,
    MLLM_DTYPE_Q5_1 = 7,
    MLLM_DTYPE_Q8_0 = 8,
    MLLM_DTYPE_Q8_1 = 9,
    MLLM_DTYPE_Q2_K = 10,
    MLLM_DTYPE_Q3_K = 11,
    MLLM_DTYPE_Q4_K = 12,
    MLLM_DTYPE_Q5_K = 13,
    MLLM_DTYPE_Q6_K = 14,
    MLLM_DTYPE_Q8_K = 15,
    MLLM_DTYPE_I8 = 24,
    MLLM_DTYPE_I16 = 25,
    MLLM_DTYPE_I32 = 26,
    MLLM_DTYPE_I64 = 27,
    MLLM_DTYPE_F64 = 28,
    MLLM_DTYPE_BF16 = 30,
    MLLM_DTYPE_MXFP4 = 39, /* OCP MX fp4: 32 e2m1 values + one e8m0 scale (GGUF's) */
    /* Our own types, outside GGUF's numbering (ggml stops below 100), so a
       GGUF file that carries them is never mistaken for a ggml type; other
       GGUF readers reject such a file as having an unknown type.
       w4a32: 4-bit signed weights, value = d * (q - 8), one f16 d per group
       of 32 (200) or 64 (201) values; activations stay f32 and the dot is
       done in f32 (the MLLM / KleidiAI W4A32 pipeline). Block: f16 d, then
       group/2 bytes; element j < group/2 in the low nibble of byte j,
       element j + group/2 in its high nibble. */
    MLLM_DTYPE_W4A32_G32 = 200,
    MLLM_DTYPE_W4A32_G64 = 201,
    /* Kernel layouts (backends/cpu/repack.h), made at load or stored in .mllm
       files, never in GGUF: 8 rows interleaved block by block, so one SIMD
       load feeds 8 output rows. Same bytes per row as the plain type. */
    MLLM_DTYPE_Q4_0_X8 = 202,
    MLLM_DTYPE_Q8_0_X8 = 203,
    MLLM_DTYPE_Q4_K_X8 = 205,
    MLLM_DTYPE_Q6_K_X8 = 206,
    MLLM_DTYPE_Q4_1_X8 = 207,
    MLLM_DTYPE_Q5_K_X8 = 208,
    MLLM_DTYPE_Q5_0_X8 = 209,
    /* Activation side of q4_0x8 (never stored): q8_0 values with d as float
       and 8 * sum(qs) precomputed, which the kernel subtracts per block. */
    MLLM_DTYPE_Q8_0S = 204,
    /* Activation side of the k-quants (never stored): 256 int8 values with
       one float scale per 32 (q8_K has one per 256), so each 32-value
       sub-block of q4_K / q5_K / q6_K meets activations rounded on its own
       scale. */
    MLLM_DTYPE_Q8_K32 = 210,
    MLLM_DTYPE_COUNT = 211 /* table size; not a type */
} mllm_dtype;

typedef uint16_t mllm_f16;  /* IEEE half, raw bits */
typedef uint16_t mllm_bf16; /* bfloat16, raw bits */

#define MLLM_QK4_0 32
#define MLLM_QK4_1 32
#define MLLM_QK8_0 32
#define MLLM_QK8_1 32
#define MLLM_QK_K 256

typedef struct { mllm_f16 d; uint8_t qs[MLLM_QK4_0 / 2]; } mllm_block_q4_0;
typedef struct { mllm_f16 d; mllm_f16 m; uint8_t qs[MLLM_QK4_1 / 2]; } mllm_block_q4_1;
typedef struct { mllm_f16 d; int8_t qs[MLLM_QK8_0]; } mllm_block_q8_0;
/* s = d * sum(qs): lets q4_1 dots add the min term without a second pass. */
typedef struct { mllm_f16 d; mllm_f16 s; int8_t qs[MLLM_QK8_1]; } mllm_block_q8_1;
_Static_assert(sizeof(mllm_block_q4_0) == 18, "q4_0 block is 18 bytes in GGUF");
_Static_assert(sizeof(mllm_block_q4_1) == 20, "q4_1 block is 20 bytes in GGUF");
_Static_assert(sizeof(mllm_block_q8_0) == 34, "q8_0 block is 34 bytes in GGUF");
_Static_assert(sizeof(mllm_block_q8_1) == 36, "q8_1 block is 36 bytes in GGUF");

/* A format's description only: how it is laid out and sized. The code that
   converts or multiplies it belongs to a backend (the CPU's table is
   backends/cpu.h). */
typedef struct {
    const char *name;       /* "q4_0", as GGUF tools print it in lower case */
    int block_size;         /* values per block (1 for plain types) */
    size_t type_size;       /* bytes per block */
    bool quantized;
    bool supported;         /* a weight format the engine computes with */
    mllm_dtype vec_dot_type; /* what activations are converted to for its dots */
    int packed_rows;         /* rows interleaved per group (kernel layouts), else 0 */
} mllm_dtype_traits;

/* NULL for numbers outside the table or unknown rows. */
const mllm_dtype_traits *mllm_dtype_get(int t);
const char *mllm_dtype_name(int t);
/* Bytes of a row of n values; 0 if n is not a multiple of the block size. */
size_t mllm_dtype_row_size(mllm_dtype t, int64_t n);
/* Whether GGUF may carry t: ggml's types and our w4a32 (200, 201), never the
   kernel layouts or activation types (202 and up). The one rule for the
   GGUF reader and writer. */
bool mllm_dtype_in_gguf(int t);
/* Parses "f16", "q8_0", ... ; -1 if unknown. */
int mllm_dtype_from_name(const char *name);

float mllm_f16_to_f32(mllm_f16 h);
mllm_f16 mllm_f32_to_f16(float f);
float mllm_bf16_to_f32(mllm_bf16 h);
mllm_bf16 mllm_f32_to_bf16(float f); /* round to nearest even, like ggml */

#endif
