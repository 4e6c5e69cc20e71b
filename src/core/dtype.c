/* The dtype table. Row numbers, block sizes and bytes per block are GGUF's
   (ggml_type), so the GGUF reader can size a tensor of any standard type even
   when we cannot compute with it ("supported" = false). Formats only: the
   conversions and dot products of each row are the CPU backend's
   (backends/cpu/type_kernels.c). */
#include "core/dtype.h"

#include "core/dtype_blocks.h"

#include <ctype.h>
#include <string.h>

/* A plain type: one value per "block". */
#define PLAIN(nm, bytes) { .name = nm, .block_size = 1, .type_size = bytes }
/* A quantized type we can only size, not compute with. */
#define SIZED(nm, blk, bytes) { .name = nm, .block_size = blk, .type_size = bytes, .quantized = true }

static const mllm_dtype_traits g_table[MLLM_DTYPE_COUNT] = {
    [MLLM_DTYPE_F32] = { .name = "f32", .block_size = 1, .type_size = 4, .supported = true,
                         .vec_dot_type = MLLM_DTYPE_F32 },
    [MLLM_DTYPE_F16] = { .name = "f16", .block_size = 1, .type_size = 2, .supported = true,
                         .vec_dot_type = MLLM_DTYPE_F16 },
    [MLLM_DTYPE_BF16] = { .name = "bf16", .block_size = 1, .type_size = 2, .supported = true,
                          .vec_dot_type = MLLM_DTYPE_BF16 },
    [MLLM_DTYPE_Q4_0] = { .name = "q4_0", .block_size = MLLM_QK4_0, .type_size = sizeof(mllm_block_q4_0),
                          .quantized = true, .supported = true,
                          .vec_dot_type = MLLM_DTYPE_Q8_0 },
    [MLLM_DTYPE_Q4_1] = { .name = "q4_1", .block_size = MLLM_QK4_1, .type_size = sizeof(mllm_block_q4_1),
                          .quantized = true, .supported = true,
                          .vec_dot_type = MLLM_DTYPE_Q8_1 },
    [MLLM_DTYPE_Q8_0] = { .name = "q8_0", .block_size = MLLM_QK8_0, .type_size = sizeof(mllm_block_q8_0),
                          .quantized = true, .supported = true,
                          .vec_dot_type = MLLM_DTYPE_Q8_0 },
    /* q8_1 is mostly the activation side of q4_1 dots (s = d * sum(q)). */
    [MLLM_DTYPE_Q8_1] = { .name = "q8_1", .block_size = MLLM_QK8_1, .type_size = sizeof(mllm_block_q8_1),
                          .quantized = true, .supported = true,
                          .vec_dot_type = MLLM_DTYPE_Q8_1 },

    [MLLM_DTYPE_Q5_0] = { .name = "q5_0", .block_size = MLLM_QK5, .type_size = sizeof(mllm_block_q5_0),
                          .quantized = true, .supported = true,
                          .vec_dot_type = MLLM_DTYPE_Q8_0 },
    [MLLM_DTYPE_Q5_1] = { .name = "q5_1", .block_size = MLLM_QK5, .type_size = sizeof(mllm_block_q5_1),
                          .quantized = true, .supported = true,
                          .vec_dot_type = MLLM_DTYPE_Q8_1 },

    /* Sized only. Bytes per block from ggml's block structs. */
    [MLLM_DTYPE_Q2_K] = SIZED("q2_k", 256, 84),  /* scales[16], qs[64], d, dmin */
    [MLLM_DTYPE_Q3_K] = SIZED("q3_k", 256, 110), /* hmask[32], qs[64], scales[12], d */
    /* k-quants: quantizers byte-identical to ggml's quantize_row_*_K_ref. */
    [MLLM_DTYPE_Q4_K] = { .name = "q4_k", .block_size = MLLM_QK_K, .type_size = sizeof(mllm_block_q4_k),
                          .quantized = true, .supported = true, .vec_dot_type = MLLM_DTYPE_Q8_K32 },
    [MLLM_DTYPE_Q5_K] = { .name = "q5_k", .block_size = MLLM_QK_K, .type_size = sizeof(mllm_block_q5_k),
                          .quantized = true, .supported = true, .vec_dot_type = MLLM_DTYPE_Q8_K32 },
    [MLLM_DTYPE_Q6_K] = { .name = "q6_k", .block_size = MLLM_QK_K, .type_size = sizeof(mllm_block_q6_k),
                          .quantized = true, .supported = true, .vec_dot_type = MLLM_DTYPE_Q8_K32 },
    [MLLM_DTYPE_Q8_K] = { .name = "q8_k", .block_size = MLLM_QK_K, .type_size = sizeof(mllm_block_q8_k),
                          .quantized = true, .supported = true, .vec_dot_type = MLLM_DTYPE_Q8_K },
    [16] = SIZED("iq2_xxs", 256, 66),
    [17] = SIZED("iq2_xs", 256, 74),
    [18] = SIZED("iq3_xxs", 256, 98),
    [19] = SIZED("iq1_s", 256, 50),
    [20] = SIZED("iq4_nl", 32, 18),
    [21] = SIZED("iq3_s", 256, 110),
    [22] = SIZED("iq2_s", 256, 82),
    [23] = SIZED("iq4_xs", 256, 136),
    [MLLM_DTYPE_I8] = PLAIN("i8", 1),
    [MLLM_DTYPE_I16] = PLAIN("i16", 2),
    [MLLM_DTYPE_I32] = PLAIN("i32", 4),
    [MLLM_DTYPE_I64] = PLAIN("i64", 8),
    [MLLM_DTYPE_F64] = PLAIN("f64", 8),
    [29] = SIZED("iq1_m", 256, 56),
    /* 31..33 and 36..38 were removed from GGUF (repacked q4_0/iq4_nl): no row. */
    [34] = SIZED("tq1_0", 256, 54),
    [35] = SIZED("tq2_0", 256, 66),
    /* mxfp4 quantizer: ggml's quantize_row_mxfp4_ref; dots with q8_0 as ggml. */
    [MLLM_DTYPE_MXFP4] = { .name = "mxfp4", .block_size = MLLM_QK_MXFP4, .type_size = sizeof(mllm_block_mxfp4),
                           .quantized = true, .supported = true, .vec_dot_type = MLLM_DTYPE_Q8_0 },
    [MLLM_DTYPE_W4A32_G32] = { .name = "w4a32", .block_size = MLLM_QK_W4A32_G32,
                               .type_size = sizeof(mllm_block_w4a32_g32), .quantized = true, .supported = true, .vec_dot_type = MLLM_DTYPE_F32 },
    [MLLM_DTYPE_W4A32_G64] = { .name = "w4a32_g64", .block_size = MLLM_QK_W4A32_G64,
                               .type_size = sizeof(mllm_block_w4a32_g64), .quantized = true, .supported = true, .vec_dot_type = MLLM_DTYPE_F32 },
    /* Kernel layouts: computed by mllm_cpu_mul_mat, read by row with
       mllm_packed_get_row; no row conversion (rows are interleaved). */
    [MLLM_DTYPE_Q4_0_X8] = { .name = "q4_0x8", .block_size = 32, .type_size = sizeof(mllm_block_q4_0),
                             .quantized = true, .supported = true, .vec_dot_type = MLLM_DTYPE_Q8_0S,
                             .packed_rows = MLLM_PACK_ROWS },
    [MLLM_DTYPE_Q8_0_X8] = { .name = "q8_0x8", .block_size = 32, .type_size = sizeof(mllm_block_q8_0),
                             .quantized = true, .supported = true, .vec_dot_type = MLLM_DTYPE_Q8_0,
                             .packed_rows = MLLM_PACK_ROWS },
    [MLLM_DTYPE_Q4_K_X8] = { .name = "q4_kx8", .block_size = MLLM_QK_K, .type_size = sizeof(mllm_block_q4_k),
                             .quantized = true, .supported = true, .vec_dot_type = MLLM_DTYPE_Q8_K32,
                             .packed_rows = MLLM_PACK_ROWS },
    [MLLM_DTYPE_Q6_K_X8] = { .name = "q6_kx8", .block_size = MLLM_QK_K, .type_size = sizeof(mllm_block_q6_k),
                             .quantized = true, .supported = true, .vec_dot_type = MLLM_DTYPE_Q8_K32,
                             .packed_rows = MLLM_PACK_ROWS },
    [MLLM_DTYPE_Q4_1_X8] = { .name = "q4_1x8", .block_size = 32, .type_size = sizeof(mllm_block_q4_1),
                             .quantized = true, .supported = true, .vec_dot_type = MLLM_DTYPE_Q8_1,
                             .packed_rows = MLLM_PACK_ROWS },
    [MLLM_DTYPE_Q5_0_X8] = { .name = "q5_0x8", .block_size = 32, .type_size = sizeof(mllm_block_q5_0),
                             .quantized = true, .supported = true, .vec_dot_type = MLLM_DTYPE_Q8_0S,
                             .packed_rows = MLLM_PACK_ROWS },
    [MLLM_DTYPE_Q5_K_X8] = { .name = "q5_kx8", .block_size = MLLM_QK_K, .type_size = sizeof(mllm_block_q5_k),
                             .quantized = true, .supported = true, .vec_dot_type = MLLM_DTYPE_Q8_K32,
                             .packed_rows = MLLM_PACK_ROWS },
    /* Activation-only: not a weight type (supported = false keeps it out of
       files and of `mllm quantize`). */
    [MLLM_DTYPE_Q8_0S] = { .name = "q8_0s", .block_size = 32, .type_size = sizeof(mllm_block_q8_0s),
                           .quantized = true, .vec_dot_type = MLLM_DTYPE_Q8_0S },
    /* Activation-only, as q8_0s: the k-quants' activations (dtype_blocks.h). */
    [MLLM_DTYPE_Q8_K32] = { .name = "q8_k32", .block_size = MLLM_QK_K, .type_size = sizeof(mllm_block_q8_k32),
                            .quantized = true, .vec_dot_type = MLLM_DTYPE_Q8_K32 },
};

const mllm_dtype_traits *mllm_dtype_get(int t) {
    if (t < 0 || t >= MLLM_DTYPE_COUNT || !g_table[t].name) return NULL;
    return &g_table[t];
}

const char *mllm_dtype_name(int t) {
    if (t < 0 || t >= MLLM_DTYPE_COUNT || !g_table[t].name) return "unknown";
    return g_table[t].name;
}

size_t mllm_dtype_row_size(mllm_dtype t, int64_t n) {
    if ((int)t < 0 || t >= MLLM_DTYPE_COUNT || !g_table[t].name || n < 0) return 0;
    const mllm_dtype_traits *tr = &g_table[t];
    if (n % tr->block_size != 0) return 0;
    const uint64_t blocks = (uint64_t)(n / tr->block_size);
    if (blocks > SIZE_MAX / tr->type_size) return 0; /* sizes from files: never wrap */
    return (size_t)blocks * tr->type_size;
}

bool mllm_dtype_in_gguf(int t) { return mllm_dtype_get(t) != NULL && t < MLLM_DTYPE_Q4_0_X8; }

int mllm_dtype_from_name(const char *name) {
    if (!name) return -1;
    for (int t = 0; t < MLLM_DTYPE_COUNT; t++) {
        const char *a = g_table[t].name, *b = name;
        if (!a) continue;
        /* Case-insensitive: ggml prints "q4_K", we print "q4_k". */
        while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b)) a++, b++;
        if (!*a && !*b) return t;
    }
    return -1;
}

/* ---- scalar f16 / bf16 ---- */

static inline uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float mllm_f16_to_f32(mllm_f16 h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000 | (man << 13)); /* inf / nan */
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24, exact in float */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

/* Round to nearest, ties to even: exactly what F16C's vcvtps2ph (imm 0) does,
   including NaN quieting (payload truncated, quiet bit set). */
mllm_f16 mllm_f32_to_f16(float f) {
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffff;
    if (ax > 0x7f800000) return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
    if (ax >= 0x477ff000) return (uint16_t)(sign | 0x7c00); /* >= 65520 rounds to inf */
    uint32_t e = ax >> 23;
    if (e < 113) {
        /* Result is a half subnormal (or zero): units of 2^-24. */
        if (e < 102) return sign; /* below 2^-25: rounds to zero */
        uint32_t m = (ax & 0x7fffff) | 0x800000;
        uint32_t s = 126 - e; /* 14..24 */
        uint32_t q = m >> s, rem = m & ((1u << s) - 1), half = 1u << (s - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t h = ((e - 112) << 10) | ((ax >> 13) & 0x3ff);
    uint32_t rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* carry may bump the exponent */
    return (uint16_t)(sign | h);
}

float mllm_bf16_to_f32(mllm_bf16 h) { return bits_f32((uint32_t)h << 16); }

mllm_bf16 mllm_f32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 64); /* keep NaN, force quiet */
    return (uint16_t)((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}
