/* The x8 packed layouts (see repack.h): packing, unpacking, row reads and
   the plain-C matmul that specifies what the SIMD kernels compute. */
#include "backends/cpu/repack.h"

#include <string.h>

#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/kquants.h"
#include "backends/cpu/quant5.h"


/* Value i of lane r of a q4_0x8 block (inverse of the packing below). */
static inline int q4x8_nibble(const mllm_block_q4_0x8 *b, int r, int i) {
    const int t = i / 8, w = i % 8;
    const uint8_t byte = b->qs[32 * t + 4 * r + (w & 3)];
    return w < 4 ? byte & 15 : byte >> 4;
}

/* The 16 packed bytes of one q4_0/q4_1 row, 4 values per 32-bit word
   (little-endian, as GGUF): word w of qs holds values 4w..4w+3 in its low
   nibbles and 16+4w.. in its high ones; packed word t is values 8t..8t+3
   with 8t+4..8t+7 above them. This runs once per weight at load. */
static void pack_q4_nibbles(const uint8_t qs[16], uint8_t *out, int r) {
    uint32_t a[4];
    memcpy(a, qs, 16);
    const uint32_t m = 0x0F0F0F0Fu;
    const uint32_t w[4] = {(a[0] & m) | (a[1] & m) << 4, (a[2] & m) | (a[3] & m) << 4,
                           (a[0] >> 4 & m) | (a[1] >> 4 & m) << 4, (a[2] >> 4 & m) | (a[3] >> 4 & m) << 4};
    for (int t = 0; t < 4; t++) memcpy(out + 32 * t + 4 * r, &w[t], 4);
}

static void pack_q4_0(const void *const rows[8], void *vout) {
    mllm_block_q4_0x8 *out = vout;
    for (int r = 0; r < 8; r++) {
        const mllm_block_q4_0 *b = rows[r];
        out->d[r] = b->d;
        pack_q4_nibbles(b->qs, out->qs, r);
    }
}

static void unpack_q4_0(const void *vin, void *const rows[8]) {
    const mllm_block_q4_0x8 *in = vin;
    for (int r = 0; r < 8; r++) {
        mllm_block_q4_0 *b = rows[r];
        b->d = in->d[r];
        for (int i = 0; i < 16; i++) b->qs[i] = (uint8_t)(q4x8_nibble(in, r, i) | q4x8_nibble(in, r, i + 16) << 4);
    }
}

static void get_q4_0(const void *vb, int r, float *dst) {
    const mllm_block_q4_0x8 *b = vb;
    const float d = mllm_f16_to_f32(b->d[r]);
    for (int j = 0; j < 32; j++) dst[j] = (float)(q4x8_nibble(b, r, j) - 8) * d;
}

/* Per block the integer dot is exact; the float accumulation runs block by
   block, as in the SIMD kernels (which fuse the multiply-add). */
static float dot_q4_0(const void *vb, int r, const void *vy) {
    const mllm_block_q4_0x8 *b = vb;
    const mllm_block_q8_0s *y = vy;
    int32_t s = 0;
    for (int j = 0; j < 32; j++) s += q4x8_nibble(b, r, j) * y->qs[j];
    return mllm_f16_to_f32(b->d[r]) * y->d * (float)(s - y->s8);
}

/* q4_1x8: the nibbles in q4_0x8's order, plus a min per row. */
static int q41x8_nibble(const mllm_block_q4_1x8 *b, int r, int i) {
    const int t = i / 8, w = i % 8;
    const uint8_t byte = b->qs[32 * t + 4 * r + (w & 3)];
    return w < 4 ? byte & 15 : byte >> 4;
}

static void pack_q4_1(const void *const rows[8], void *vout) {
    mllm_block_q4_1x8 *out = vout;
    for (int r = 0; r < 8; r++) {
        const mllm_block_q4_1 *b = rows[r];
        out->d[r] = b->d;
        out->m[r] = b->m;
        pack_q4_nibbles(b->qs, out->qs, r);
    }
}

static void unpack_q4_1(const void *vin, void *const rows[8]) {
    const mllm_block_q4_1x8 *in = vin;
    for (int r = 0; r < 8; r++) {
        mllm_block_q4_1 *b = rows[r];
        b->d = in->d[r];
        b->m = in->m[r];
        for (int i = 0; i < 16; i++) b->qs[i] = (uint8_t)(q41x8_nibble(in, r, i) | q41x8_nibble(in, r, i + 16) << 4);
    }
}

static void get_q4_1(const void *vb, int r, float *dst) {
    const mllm_block_q4_1x8 *b = vb;
    const float d = mllm_f16_to_f32(b->d[r]), m = mllm_f16_to_f32(b->m[r]);
    for (int j = 0; j < 32; j++) dst[j] = (float)q41x8_nibble(b, r, j) * d + m;
}

static float dot_q4_1(const void *vb, int r, const void *vy) {
    const mllm_block_q4_1x8 *b = vb;
    const mllm_block_q8_1 *y = vy;
    int32_t s = 0;
    for (int j = 0; j < 32; j++) s += q41x8_nibble(b, r, j) * y->qs[j];
    return mllm_f16_to_f32(b->d[r]) * mllm_f16_to_f32(y->d) * (float)s + mllm_f16_to_f32(b->m[r]) * mllm_f16_to_f32(y->s);
}

/* q5_0x8: value i of lane r (inverse of pack_q5_0). */
static inline int q5x8_value(const mllm_block_q5_0x8 *b, int r, int i) {
    const int t = i / 8, w = i % 8;
    const uint8_t byte = b->qs[32 * t + 4 * r + (w & 3)];
    const int lo = w < 4 ? byte & 15 : byte >> 4;
    return lo | ((b->qh[4 * r + (w & 3)] >> (2 * t + (w >= 4))) & 1) << 4;
}

static void pack_q5_0(const void *const rows[8], void *vout) {
    mllm_block_q5_0x8 *out = vout;
    for (int r = 0; r < 8; r++) {
        const mllm_block_q5_0 *b = rows[r];
        out->d[r] = b->d;
        pack_q4_nibbles(b->qs, out->qs, r);
        uint32_t h;
        memcpy(&h, b->qh, 4);
        for (int j = 0; j < 4; j++) {
            uint8_t v = 0;
            for (int t = 0; t < 4; t++)
                v |= (uint8_t)(((h >> (8 * t + j)) & 1) << (2 * t) | ((h >> (8 * t + 4 + j)) & 1) << (2 * t + 1));
            out->qh[4 * r + j] = v;
        }
    }
}

static void unpack_q5_0(const void *vin, void *const rows[8]) {
    const mllm_block_q5_0x8 *in = vin;
    for (int r = 0; r < 8; r++) {
        mllm_block_q5_0 *b = rows[r];
        b->d = in->d[r];
        uint32_t h = 0;
        for (int i = 0; i < 32; i++) h |= (uint32_t)(q5x8_value(in, r, i) >> 4) << i;
        memcpy(b->qh, &h, 4);
        for (int i = 0; i < 16; i++)
            b->qs[i] = (uint8_t)((q5x8_value(in, r, i) & 15) | (q5x8_value(in, r, i + 16) & 15) << 4);
    }
}

static void get_q5_0(const void *vb, int r, float *dst) {
    const mllm_block_q5_0x8 *b = vb;
    const float d = mllm_f16_to_f32(b->d[r]);
    for (int j = 0; j < 32; j++) dst[j] = (float)(q5x8_value(b, r, j) - 16) * d;
}

/* sum((v - 16) y) = sum(v y) - 2 * s8, s8 = 8 * sum(y) (q8_0s) */
static float dot_q5_0(const void *vb, int r, const void *vy) {
    const mllm_block_q5_0x8 *b = vb;
    const mllm_block_q8_0s *y = vy;
    int32_t s = 0;
    for (int j = 0; j < 32; j++) s += q5x8_value(b, r, j) * y->qs[j];
    return mllm_f16_to_f32(b->d[r]) * y->d * (float)(s - 2 * y->s8);
}

static void pack_q8_0(const void *const rows[8], void *vout) {
    mllm_block_q8_0x8 *out = vout;
    for (int r = 0; r < 8; r++) {
        const mllm_block_q8_0 *b = rows[r];
        out->d[r] = b->d;
        for (int g = 0; g < 8; g++) memcpy(out->qs + 32 * g + 4 * r, b->qs + 4 * g, 4);
    }
}

static void unpack_q8_0(const void *vin, void *const rows[8]) {
    const mllm_block_q8_0x8 *in = vin;
    for (int r = 0; r < 8; r++) {
        mllm_block_q8_0 *b = rows[r];
        b->d = in->d[r];
        for (int g = 0; g < 8; g++) memcpy(b->qs + 4 * g, in->qs + 32 * g + 4 * r, 4);
    }
}

static void get_q8_0(const void *vb, int r, float *dst) {
    const mllm_block_q8_0x8 *b = vb;
    const float d = mllm_f16_to_f32(b->d[r]);
    for (int j = 0; j < 32; j++) dst[j] = (float)b->qs[32 * (j / 4) + 4 * r + j % 4] * d;
}

static float dot_q8_0(const void *vb, int r, const void *vy) {
    const mllm_block_q8_0x8 *b = vb;
    const mllm_block_q8_0 *y = vy;
    int32_t s = 0;
    for (int j = 0; j < 32; j++) s += b->qs[32 * (j / 4) + 4 * r + j % 4] * y->qs[j];
    return mllm_f16_to_f32(b->d[r]) * mllm_f16_to_f32(y->d) * (float)s;
}

static void pack_q4_k(const void *const rows[8], void *out) { mllm_pack_q4_k(rows, out); }
static void unpack_q4_k(const void *in, void *const rows[8]) { mllm_unpack_q4_k(in, rows); }
static void get_q4_k(const void *b, int r, float *dst) { mllm_q4_kx8_get(b, r, dst); }
static float dot_q4_k(const void *b, int r, const void *y) { return mllm_q4_kx8_dot(b, r, y); }
static void pack_q5_k(const void *const rows[8], void *out) { mllm_pack_q5_k(rows, out); }
static void unpack_q5_k(const void *in, void *const rows[8]) { mllm_unpack_q5_k(in, rows); }
static void get_q5_k(const void *b, int r, float *dst) { mllm_q5_kx8_get(b, r, dst); }
static float dot_q5_k(const void *b, int r, const void *y) { return mllm_q5_kx8_dot(b, r, y); }
static void pack_q6_k(const void *const rows[8], void *out) { mllm_pack_q6_k(rows, out); }
static void unpack_q6_k(const void *in, void *const rows[8]) { mllm_unpack_q6_k(in, rows); }
static void get_q6_k(const void *b, int r, float *dst) { mllm_q6_kx8_get(b, r, dst); }
static float dot_q6_k(const void *b, int r, const void *y) { return mllm_q6_kx8_dot(b, r, y); }

/* One row per packed type: its plain type, values per block, the plain
   block's bytes (the packed block is 8 of them) and the per-block functions. */
typedef struct {
    mllm_dtype packed, plain;
    int qk;
    size_t plain_bytes, y_bytes;
    void (*pack)(const void *const rows[8], void *out);
    void (*unpack)(const void *in, void *const rows[8]);
    void (*get)(const void *blk, int r, float *dst);
    float (*dot)(const void *blk, int r, const void *y);
} pack_desc;

static const pack_desc k_packs[] = {
    {MLLM_DTYPE_Q4_0_X8, MLLM_DTYPE_Q4_0, 32, sizeof(mllm_block_q4_0), sizeof(mllm_block_q8_0s), pack_q4_0, unpack_q4_0, get_q4_0, dot_q4_0},
    {MLLM_DTYPE_Q4_1_X8, MLLM_DTYPE_Q4_1, 32, sizeof(mllm_block_q4_1), sizeof(mllm_block_q8_1), pack_q4_1, unpack_q4_1, get_q4_1, dot_q4_1},
    {MLLM_DTYPE_Q5_0_X8, MLLM_DTYPE_Q5_0, 32, sizeof(mllm_block_q5_0), sizeof(mllm_block_q8_0s), pack_q5_0, unpack_q5_0, get_q5_0, dot_q5_0},
    {MLLM_DTYPE_Q8_0_X8, MLLM_DTYPE_Q8_0, 32, sizeof(mllm_block_q8_0), sizeof(mllm_block_q8_0), pack_q8_0, unpack_q8_0, get_q8_0, dot_q8_0},
    {MLLM_DTYPE_Q4_K_X8, MLLM_DTYPE_Q4_K, 256, sizeof(mllm_block_q4_k), sizeof(mllm_block_q8_k32), pack_q4_k, unpack_q4_k, get_q4_k, dot_q4_k},
    {MLLM_DTYPE_Q5_K_X8, MLLM_DTYPE_Q5_K, 256, sizeof(mllm_block_q5_k), sizeof(mllm_block_q8_k32), pack_q5_k, unpack_q5_k, get_q5_k, dot_q5_k},
    {MLLM_DTYPE_Q6_K_X8, MLLM_DTYPE_Q6_K, 256, sizeof(mllm_block_q6_k), sizeof(mllm_block_q8_k32), pack_q6_k, unpack_q6_k, get_q6_k, dot_q6_k},
};

static const pack_desc *desc_of(mllm_dtype t, bool by_plain) {
    for (size_t i = 0; i < sizeof k_packs / sizeof k_packs[0]; i++)
        if ((by_plain ? k_packs[i].plain : k_packs[i].packed) == t) return &k_packs[i];
    return NULL;
}

int mllm_repack_type_for(mllm_dtype t, int64_t K, int64_t N) {
    const pack_desc *d = desc_of(t, true);
    if (!d || K <= 0 || N <= 0 || K % d->qk != 0 || N % MLLM_PACK_ROWS != 0) return -1;
    return d->packed;
}

mllm_dtype mllm_repack_plain_type(mllm_dtype t) {
    const pack_desc *d = desc_of(t, false);
    return d ? d->plain : t;
}

/* Runs fn over blocks b of groups [g0, g1): the 8 plain row blocks of the
   group at block b, and the packed block. */
static void walk_groups(const pack_desc *d, const void *plain, const void *packed, int64_t K,
                        int64_t g0, int64_t g1, bool to_packed) {
    const int64_t nb = K / d->qk;
    const size_t rs = (size_t)nb * d->plain_bytes, pb = 8 * d->plain_bytes;
    for (int64_t g = g0; g < g1; g++) {
        char *pl = (char *)plain + (size_t)g * 8 * rs;
        char *pk = (char *)packed + (size_t)g * 8 * rs;
        for (int64_t b = 0; b < nb; b++, pk += pb) {
            void *rows[8];
            for (int r = 0; r < 8; r++) rows[r] = pl + (size_t)r * rs + (size_t)b * d->plain_bytes;
            if (to_packed) d->pack((const void *const *)rows, pk);
            else d->unpack(pk, rows);
        }
    }
}

void mllm_repack_groups(mllm_dtype packed, const void *src, void *dst, int64_t K, int64_t g0,
                        int64_t g1) {
    const pack_desc *d = desc_of(packed, false);
    if (d) walk_groups(d, src, dst, K, g0, g1, true);
}

void mllm_unpack_groups(mllm_dtype packed, const void *src, void *dst, int64_t K, int64_t g0,
                        int64_t g1) {
    const pack_desc *d = desc_of(packed, false);
    if (d) walk_groups(d, dst, src, K, g0, g1, false);
}

/* First packed block of the group holding `row`. */
static const char *group_of(const pack_desc *d, const void *data, int64_t K, int64_t row) {
    return (const char *)data + (size_t)(row / 8) * 8 * (size_t)(K / d->qk) * d->plain_bytes;
}

void mllm_packed_get_row(mllm_dtype packed, const void *data, int64_t K, int64_t row, float *dst) {
    const pack_desc *d = desc_of(packed, false);
    if (!d) return;
    const char *b = group_of(d, data, K, row);
    for (int64_t i = 0; i < K / d->qk; i++, b += 8 * d->plain_bytes) d->get(b, (int)(row % 8), dst + i * d->qk);
}

void mllm_mul_mat_packed_generic(mllm_dtype wt, const void *W, size_t w_stride, int64_t K,
                                 const void *X, size_t x_stride, int64_t M, float *Y,
                                 size_t y_stride, int64_t r0, int64_t r1) {
    (void)w_stride; /* = row_size(wt, K): groups are found from K */
    const pack_desc *d = desc_of(wt, false);
    if (!d) return;
    const int64_t nb = K / d->qk;
    for (int64_t m = 0; m < M; m++) {
        const char *x = (const char *)X + (size_t)m * x_stride;
        for (int64_t r = r0; r < r1; r++) {
            const char *b = group_of(d, W, K, r);
            float acc = 0.0f;
            for (int64_t i = 0; i < nb; i++, b += 8 * d->plain_bytes)
                acc += d->dot(b, (int)(r % 8), x + (size_t)i * d->y_bytes);
            Y[(size_t)m * y_stride + r] = acc;
        }
    }
}

/* Groups per chunk: the chunk's weights stay in L2 while every activation
   tile passes over them (prefill). */
#define CHUNK_BYTES (160 * 1024)

bool mllm_mul_mat_packed_tiles(const mllm_packed_group_fn *set, mllm_dtype wt, const void *W, size_t w_stride,
                               int64_t K, const void *X, size_t x_stride, int64_t M, float *Y, size_t y_stride,
                               int64_t r0, int64_t r1) {
    return mllm_mul_mat_packed_tiles_n(set, MLLM_PACKED_TILE_N, wt, W, w_stride, K, X, x_stride, M, Y, y_stride,
                                       r0, r1);
}

bool mllm_mul_mat_packed_tiles_n(const mllm_packed_group_fn *set, int tile_n, mllm_dtype wt, const void *W,
                                 size_t w_stride, int64_t K, const void *X, size_t x_stride, int64_t M, float *Y,
                                 size_t y_stride, int64_t r0, int64_t r1) {
    const int qk = mllm_dtype_get(wt) ? mllm_dtype_get(wt)->block_size : 0;
    if (!set || tile_n < 1 || qk <= 0 || r0 % 8 != 0 || r1 % 8 != 0 || K % qk != 0) return false;
    const size_t group_bytes = 8 * w_stride;
    const int64_t nb = K / qk, g0 = r0 / 8, g1 = r1 / 8;
    int64_t chunk = (int64_t)(CHUNK_BYTES / group_bytes);
    if (chunk < 1 || M <= tile_n) chunk = g1 - g0; /* decode: one pass, nothing to reuse */
    const char *w = W, *x = X;
    for (int64_t gc = g0; gc < g1; gc += chunk) {
        const int64_t ge = gc + chunk < g1 ? gc + chunk : g1;
        for (int64_t m = 0; m < M; m += tile_n) {
            const int rn = (int)(M - m < tile_n ? M - m : tile_n);
            for (int64_t g = gc; g < ge; g++)
                set[rn - 1](w + (size_t)g * group_bytes, nb, x + (size_t)m * x_stride, x_stride,
                            Y + (size_t)m * y_stride + 8 * g, y_stride);
        }
    }
    return true;
}

/* q8_0s from the q8_0 activation bytes: quantize the row as q8_0 into the
   front of dst, then spread the blocks out from the last one down (a 40-byte
   block never overwrites a 34-byte block that is still to be read). */
void mllm_q8_0_to_q8_0s_in_place(void *dst, int64_t n) {
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
    mllm_q8_0_to_q8_0s_in_place(dst, n);
}

#if MLLM_HAVE_X86_KERNELS
void mllm_quantize_row_q8_0s_avx2(const float *src, void *dst, int64_t n) {
    mllm_quantize_row_q8_0_act_avx2(src, dst, n);
    mllm_q8_0_to_q8_0s_in_place(dst, n);
}
#endif

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
    else mllm_cpu_type_get(t)->to_float((const char *)data + (size_t)row * row_stride, dst, K);
}
