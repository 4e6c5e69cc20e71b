/* The x8 packed layouts (see repack.h): packing, unpacking, row reads and
   the plain-C matmul that specifies what the SIMD kernels compute. */
#include "backends/cpu/repack.h"

#include <string.h>

#include "backends/cpu/kernels_internal.h"

int mllm_repack_type_for(mllm_dtype t, int64_t K, int64_t N) {
    if (K <= 0 || N <= 0 || K % 32 != 0 || N % MLLM_PACK_ROWS != 0) return -1;
    switch (t) {
    case MLLM_DTYPE_Q4_0: return MLLM_DTYPE_Q4_0_X8;
    case MLLM_DTYPE_Q8_0: return MLLM_DTYPE_Q8_0_X8;
    default: return -1;
    }
}

mllm_dtype mllm_repack_plain_type(mllm_dtype t) {
    switch (t) {
    case MLLM_DTYPE_Q4_0_X8: return MLLM_DTYPE_Q4_0;
    case MLLM_DTYPE_Q8_0_X8: return MLLM_DTYPE_Q8_0;
    default: return t;
    }
}

/* Value i (0..31) of a q4_0 block as its stored nibble 0..15. */
static inline int q4_nibble(const mllm_block_q4_0 *b, int i) {
    return i < 16 ? b->qs[i] & 15 : b->qs[i - 16] >> 4;
}

/* Value i of lane r of a q4_0x8 block (inverse of the packing below). */
static inline int q4x8_nibble(const mllm_block_q4_0x8 *b, int r, int i) {
    const int t = i / 8, w = i % 8;
    const uint8_t byte = b->qs[32 * t + 4 * r + (w & 3)];
    return w < 4 ? byte & 15 : byte >> 4;
}

static void pack_q4_0(const mllm_block_q4_0 *rows[8], mllm_block_q4_0x8 *out) {
    for (int r = 0; r < 8; r++) {
        out->d[r] = rows[r]->d;
        for (int t = 0; t < 4; t++)
            for (int j = 0; j < 4; j++)
                out->qs[32 * t + 4 * r + j] =
                    (uint8_t)(q4_nibble(rows[r], 8 * t + j) | q4_nibble(rows[r], 8 * t + 4 + j) << 4);
    }
}

static void unpack_q4_0(const mllm_block_q4_0x8 *in, mllm_block_q4_0 *rows[8]) {
    for (int r = 0; r < 8; r++) {
        rows[r]->d = in->d[r];
        for (int i = 0; i < 16; i++)
            rows[r]->qs[i] = (uint8_t)(q4x8_nibble(in, r, i) | q4x8_nibble(in, r, i + 16) << 4);
    }
}

static void pack_q8_0(const mllm_block_q8_0 *rows[8], mllm_block_q8_0x8 *out) {
    for (int r = 0; r < 8; r++) {
        out->d[r] = rows[r]->d;
        for (int g = 0; g < 8; g++) memcpy(out->qs + 32 * g + 4 * r, rows[r]->qs + 4 * g, 4);
    }
}

static void unpack_q8_0(const mllm_block_q8_0x8 *in, mllm_block_q8_0 *rows[8]) {
    for (int r = 0; r < 8; r++) {
        rows[r]->d = in->d[r];
        for (int g = 0; g < 8; g++) memcpy(rows[r]->qs + 4 * g, in->qs + 32 * g + 4 * r, 4);
    }
}

/* Walks blocks b of groups [g0, g1): plain row pointers of the group's 8
   rows at block b, and the packed block. */
#define FOR_GROUP_BLOCKS(PLAIN_T, PACKED_T, plain_base, packed_base, BODY)                       \
    do {                                                                                         \
        const int64_t nb = K / 32;                                                               \
        const size_t rs = (size_t)nb * sizeof(PLAIN_T);                                          \
        for (int64_t g = g0; g < g1; g++) {                                                      \
            char *pl = (char *)(plain_base) + (size_t)g * 8 * rs;                                \
            PACKED_T *pk = (PACKED_T *)((char *)(packed_base) + (size_t)g * 8 * rs);             \
            for (int64_t b = 0; b < nb; b++, pk++) {                                             \
                PLAIN_T *rows[8];                                                                \
                for (int r = 0; r < 8; r++) rows[r] = (PLAIN_T *)(pl + (size_t)r * rs) + b;      \
                BODY;                                                                            \
            }                                                                                    \
        }                                                                                        \
    } while (0)

void mllm_repack_groups(mllm_dtype packed, const void *src, void *dst, int64_t K, int64_t g0,
                        int64_t g1) {
    if (packed == MLLM_DTYPE_Q4_0_X8)
        FOR_GROUP_BLOCKS(mllm_block_q4_0, mllm_block_q4_0x8, src, dst,
                         pack_q4_0((const mllm_block_q4_0 **)rows, pk));
    else if (packed == MLLM_DTYPE_Q8_0_X8)
        FOR_GROUP_BLOCKS(mllm_block_q8_0, mllm_block_q8_0x8, src, dst,
                         pack_q8_0((const mllm_block_q8_0 **)rows, pk));
}

void mllm_unpack_groups(mllm_dtype packed, const void *src, void *dst, int64_t K, int64_t g0,
                        int64_t g1) {
    if (packed == MLLM_DTYPE_Q4_0_X8)
        FOR_GROUP_BLOCKS(mllm_block_q4_0, mllm_block_q4_0x8, dst, src, unpack_q4_0(pk, rows));
    else if (packed == MLLM_DTYPE_Q8_0_X8)
        FOR_GROUP_BLOCKS(mllm_block_q8_0, mllm_block_q8_0x8, dst, src, unpack_q8_0(pk, rows));
}

/* First packed block of the group holding `row`. */
static const void *group_of(mllm_dtype packed, const void *data, int64_t K, int64_t row) {
    const size_t rs = mllm_dtype_row_size(packed, K);
    return (const char *)data + (size_t)(row / 8) * 8 * rs;
}

void mllm_packed_get_row(mllm_dtype packed, const void *data, int64_t K, int64_t row, float *dst) {
    const int r = (int)(row % 8);
    const int64_t nb = K / 32;
    if (packed == MLLM_DTYPE_Q4_0_X8) {
        const mllm_block_q4_0x8 *b = group_of(packed, data, K, row);
        for (int64_t i = 0; i < nb; i++, b++) {
            const float d = mllm_f16_to_f32(b->d[r]);
            for (int j = 0; j < 32; j++) dst[32 * i + j] = (float)(q4x8_nibble(b, r, j) - 8) * d;
        }
    } else if (packed == MLLM_DTYPE_Q8_0_X8) {
        const mllm_block_q8_0x8 *b = group_of(packed, data, K, row);
        for (int64_t i = 0; i < nb; i++, b++) {
            const float d = mllm_f16_to_f32(b->d[r]);
            for (int j = 0; j < 32; j++) dst[32 * i + j] = (float)b->qs[32 * (j / 4) + 4 * r + j % 4] * d;
        }
    }
}

/* One output: row `row` of the packed matrix against one activation row.
   Per block the integer dot is exact; the float accumulation runs block by
   block, as in the SIMD kernels (which fuse the multiply-add). */
static float packed_row_dot(mllm_dtype wt, const void *W, int64_t K, int64_t row, const void *x) {
    const int r = (int)(row % 8);
    const int64_t nb = K / 32;
    float acc = 0.0f;
    if (wt == MLLM_DTYPE_Q4_0_X8) {
        const mllm_block_q4_0x8 *b = group_of(wt, W, K, row);
        const mllm_block_q8_0s *y = x;
        for (int64_t i = 0; i < nb; i++, b++, y++) {
            int32_t s = 0;
            for (int j = 0; j < 32; j++) s += q4x8_nibble(b, r, j) * y->qs[j];
            acc += mllm_f16_to_f32(b->d[r]) * y->d * (float)(s - y->s8);
        }
    } else if (wt == MLLM_DTYPE_Q8_0_X8) {
        const mllm_block_q8_0x8 *b = group_of(wt, W, K, row);
        const mllm_block_q8_0 *y = x;
        for (int64_t i = 0; i < nb; i++, b++, y++) {
            int32_t s = 0;
            for (int j = 0; j < 32; j++) s += b->qs[32 * (j / 4) + 4 * r + j % 4] * y->qs[j];
            acc += mllm_f16_to_f32(b->d[r]) * mllm_f16_to_f32(y->d) * (float)s;
        }
    }
    return acc;
}

void mllm_mul_mat_packed_generic(mllm_dtype wt, const void *W, size_t w_stride, int64_t K,
                                 const void *X, size_t x_stride, int64_t M, float *Y,
                                 size_t y_stride, int64_t r0, int64_t r1) {
    (void)w_stride; /* = row_size(wt, K): groups are found from K */
    for (int64_t m = 0; m < M; m++) {
        const char *x = (const char *)X + (size_t)m * x_stride;
        for (int64_t r = r0; r < r1; r++) Y[(size_t)m * y_stride + r] = packed_row_dot(wt, W, K, r, x);
    }
}

/* q8_0s from the q8_0 activation bytes: quantize the row as q8_0 into the
   front of dst, then spread the blocks out from the last one down (a 40-byte
   block never overwrites a 34-byte block that is still to be read). */
static void q8_0_to_q8_0s_in_place(void *dst, int64_t n) {
    const int64_t nb = n / 32;
    for (int64_t b = nb - 1; b >= 0; b--) {
        mllm_block_q8_0 q;
        memcpy(&q, (const char *)dst + (size_t)b * sizeof q, sizeof q);
        mllm_block_q8_0s s;
        int32_t sum = 0;
        for (int j = 0; j < 32; j++) sum += q.qs[j];
        s.s8 = 8 * sum;
        s.d = mllm_f16_to_f32(q.d);
        memcpy(s.qs, q.qs, 32);
        memcpy((char *)dst + (size_t)b * sizeof s, &s, sizeof s);
    }
}

void mllm_quantize_row_q8_0s_generic(const float *src, void *dst, int64_t n) {
    mllm_quantize_row_q8_0_act_generic(src, dst, n);
    q8_0_to_q8_0s_in_place(dst, n);
}

void mllm_quantize_row_q8_0s_avx2(const float *src, void *dst, int64_t n) {
    mllm_quantize_row_q8_0_act_avx2(src, dst, n);
    q8_0_to_q8_0s_in_place(dst, n);
}

void mllm_dequantize_row_q8_0s(const void *src, float *dst, int64_t n) {
    const mllm_block_q8_0s *b = src;
    for (int64_t i = 0; i < n / 32; i++, b++)
        for (int j = 0; j < 32; j++) dst[32 * i + j] = b->d * (float)b->qs[j];
}

void mllm_cpu_get_row(mllm_dtype t, const void *data, size_t row_stride, int64_t K, int64_t row,
                      float *dst) {
    const mllm_dtype_traits *tr = mllm_dtype_get(t);
    if (!tr) return;
    if (tr->packed_rows) mllm_packed_get_row(t, data, K, row, dst);
    else if (t == MLLM_DTYPE_F32) memcpy(dst, (const char *)data + (size_t)row * row_stride, (size_t)K * sizeof(float));
    else tr->to_float((const char *)data + (size_t)row * row_stride, dst, K);
}
