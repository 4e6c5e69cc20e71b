/* The q4_Kx8 / q6_Kx8 packed layouts (repack.h): packing one block of 8
   rows, unpacking it byte for byte, and the plain-C row read and dot that
   specify what the AVX2 kernels compute (with q8_K32 activations). */
#include <string.h>

#include "backends/cpu/kquants.h"
#include "backends/cpu/repack.h"

void mllm_pack_q4_k(const void *const rows[8], mllm_block_q4_kx8 *out) {
    for (int r = 0; r < 8; r++) {
        const mllm_block_q4_k *b = rows[r];
        out->d[r] = b->d;
        out->dmin[r] = b->dmin;
        for (int k = 0; k < 12; k++) out->scales[8 * k + r] = b->scales[k];
        for (int c = 0; c < 4; c++)
            for (int t = 0; t < 8; t++) memcpy(out->qs + 256 * c + 32 * t + 4 * r, b->qs + 32 * c + 4 * t, 4);
    }
}

void mllm_unpack_q4_k(const mllm_block_q4_kx8 *in, void *const rows[8]) {
    for (int r = 0; r < 8; r++) {
        mllm_block_q4_k *b = rows[r];
        b->d = in->d[r];
        b->dmin = in->dmin[r];
        for (int k = 0; k < 12; k++) b->scales[k] = in->scales[8 * k + r];
        for (int c = 0; c < 4; c++)
            for (int t = 0; t < 8; t++) memcpy(b->qs + 32 * c + 4 * t, in->qs + 256 * c + 32 * t + 4 * r, 4);
    }
}

void mllm_pack_q5_k(const void *const rows[8], mllm_block_q5_kx8 *out) {
    for (int r = 0; r < 8; r++) {
        const mllm_block_q5_k *b = rows[r];
        out->d[r] = b->d;
        out->dmin[r] = b->dmin;
        for (int k = 0; k < 12; k++) out->scales[8 * k + r] = b->scales[k];
        for (int t = 0; t < 8; t++) memcpy(out->qh + 32 * t + 4 * r, b->qh + 4 * t, 4);
        for (int c = 0; c < 4; c++)
            for (int t = 0; t < 8; t++) memcpy(out->qs + 256 * c + 32 * t + 4 * r, b->qs + 32 * c + 4 * t, 4);
    }
}

void mllm_unpack_q5_k(const mllm_block_q5_kx8 *in, void *const rows[8]) {
    for (int r = 0; r < 8; r++) {
        mllm_block_q5_k *b = rows[r];
        b->d = in->d[r];
        b->dmin = in->dmin[r];
        for (int k = 0; k < 12; k++) b->scales[k] = in->scales[8 * k + r];
        for (int t = 0; t < 8; t++) memcpy(b->qh + 4 * t, in->qh + 32 * t + 4 * r, 4);
        for (int c = 0; c < 4; c++)
            for (int t = 0; t < 8; t++) memcpy(b->qs + 32 * c + 4 * t, in->qs + 256 * c + 32 * t + 4 * r, 4);
    }
}

/* q4_Kx8 and q5_Kx8 share d, dmin and the scale bytes (same offsets) and
   differ only in how a value is stored: one row read and one dot serve
   both, given the value reader. */
typedef int (*k45_value_fn)(const void *b, int r, int e);

/* Row r's value e (0..255): its nibble, plus the fifth bit for q5_K. */
static int q4kx8_q(const void *vb, int r, int e) {
    const mllm_block_q4_kx8 *b = vb;
    const int c = e / 64, l = e % 64, hi = l >= 32, i = l % 32;
    const uint8_t byte = b->qs[256 * c + 32 * (i / 4) + 4 * r + i % 4];
    return hi ? byte >> 4 : byte & 15;
}

static int q5kx8_q(const void *vb, int r, int e) {
    const mllm_block_q5_kx8 *b = vb;
    const int c = e / 64, l = e % 64, hi = l >= 32, i = l % 32;
    const uint8_t byte = b->qs[256 * c + 32 * (i / 4) + 4 * r + i % 4];
    const int bit = (b->qh[32 * (i / 4) + 4 * r + i % 4] >> (2 * c + hi)) & 1;
    return (hi ? byte >> 4 : byte & 15) | bit << 4;
}

/* Row r's 6-bit scale and min of sub-block j, from the packed scale bytes. */
static void k45_scale_min(const mllm_block_q4_kx8 *b, int r, int j, uint8_t *sc, uint8_t *m) {
    uint8_t s[12];
    for (int k = 0; k < 12; k++) s[k] = b->scales[8 * k + r];
    kq_scale_min(j, s, sc, m);
}

static void k45_get(const void *vb, k45_value_fn q, int r, float *dst) {
    const mllm_block_q4_kx8 *b = vb;
    const float d = mllm_f16_to_f32(b->d[r]), dmin = mllm_f16_to_f32(b->dmin[r]);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        k45_scale_min(b, r, j, &sc, &m);
        for (int l = 0; l < 32; l++) dst[32 * j + l] = d * sc * (float)q(vb, r, 32 * j + l) - dmin * m;
    }
}

/* Row r's dot with a q8_K32 block: kq32_combine over its exact sub-block sums. */
static float k45_dot(const void *vb, k45_value_fn q, int r, const void *q8k) {
    const mllm_block_q4_kx8 *b = vb;
    const mllm_block_q8_k32 *y = q8k;
    int32_t a[8], mins[8];
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        k45_scale_min(b, r, j, &sc, &m);
        int32_t dot = 0;
        for (int l = 0; l < 32; l++) dot += q(vb, r, 32 * j + l) * y->qs[32 * j + l];
        a[j] = sc * dot;
        mins[j] = m * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
    }
    return kq32_combine(a, mins, y->d, mllm_f16_to_f32(b->d[r]), mllm_f16_to_f32(b->dmin[r]));
}

void mllm_q4_kx8_get(const mllm_block_q4_kx8 *b, int r, float *dst) { k45_get(b, q4kx8_q, r, dst); }
float mllm_q4_kx8_dot(const mllm_block_q4_kx8 *b, int r, const void *q8k) { return k45_dot(b, q4kx8_q, r, q8k); }
void mllm_q5_kx8_get(const mllm_block_q5_kx8 *b, int r, float *dst) { k45_get(b, q5kx8_q, r, dst); }
float mllm_q5_kx8_dot(const mllm_block_q5_kx8 *b, int r, const void *q8k) { return k45_dot(b, q5kx8_q, r, q8k); }

/* q6_K values 0..63 (q + 32) back into a plain block. */
static void q6_from_values(const uint8_t v[256], mllm_block_q6_k *b) {
    memset(b->ql, 0, sizeof b->ql);
    memset(b->qh, 0, sizeof b->qh);
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
            for (int l = 0; l < 32; l++) {
                const uint8_t x = v[128 * h + 32 * k + l];
                b->ql[64 * h + 32 * (k & 1) + l] |= (uint8_t)((x & 15) << (k < 2 ? 0 : 4));
                b->qh[32 * h + l] |= (uint8_t)((x >> 4) << (2 * k));
            }
}

/* Packing works on 32-bit words of 4 values (little-endian, as GGUF): it
   runs once per weight at load, where a value-at-a-time loop cost ~0.6 s
   for a 0.6B q6_K model. vw[w] = values 4w..4w+3 of the row, as 0..63. */
static void q6_value_words(const mllm_block_q6_k *b, uint32_t vw[64]) {
    const uint32_t m4 = 0x0F0F0F0Fu, m2 = 0x03030303u;
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l += 4) {
            uint32_t a, c, q;
            memcpy(&a, b->ql + 64 * h + l, 4);
            memcpy(&c, b->ql + 64 * h + 32 + l, 4);
            memcpy(&q, b->qh + 32 * h + l, 4);
            vw[(128 * h + l) / 4] = (a & m4) | (q & m2) << 4;
            vw[(128 * h + 32 + l) / 4] = (c & m4) | (q >> 2 & m2) << 4;
            vw[(128 * h + 64 + l) / 4] = (a >> 4 & m4) | (q >> 4 & m2) << 4;
            vw[(128 * h + 96 + l) / 4] = (c >> 4 & m4) | (q >> 6 & m2) << 4;
        }
}

void mllm_pack_q6_k(const void *const rows[8], mllm_block_q6_kx8 *out) {
    const uint32_t m4 = 0x0F0F0F0Fu, m2 = 0x03030303u;
    for (int r = 0; r < 8; r++) {
        const mllm_block_q6_k *b = rows[r];
        uint32_t vw[64];
        q6_value_words(b, vw);
        out->d[r] = b->d;
        for (int p = 0; p < 8; p++)
            for (int e = 0; e < 2; e++) out->scales[16 * p + 2 * r + e] = b->scales[2 * p + e];
        for (int u = 0; u < 8; u++) {
            for (int i = 0; i < 4; i++) { /* values 32u+4i.. low, 32u+16+4i.. high */
                const uint32_t w = (vw[8 * u + i] & m4) | (vw[8 * u + 4 + i] & m4) << 4;
                memcpy(out->ql + 32 * (4 * u + i) + 4 * r, &w, 4);
            }
            for (int h = 0; h < 2; h++) { /* bits 2k..2k+1: high bits of values 32u+16h+4k.. */
                uint32_t w = 0;
                for (int k = 0; k < 4; k++) w |= (vw[8 * u + 4 * h + k] >> 4 & m2) << (2 * k);
                memcpy(out->qh + 32 * (2 * u + h) + 4 * r, &w, 4);
            }
        }
    }
}

/* Row r's value e (0..255) of a q6_Kx8 block, 0..63. */
static int q6kx8_v(const mllm_block_q6_kx8 *b, int r, int e) {
    const int u = e / 32, w = e % 32, h = w / 16, k = (w % 16) / 4, j = w % 4;
    const uint8_t lo = b->ql[32 * (4 * u + k) + 4 * r + j];
    const int low4 = h ? lo >> 4 : lo & 15;
    return low4 | ((b->qh[32 * (2 * u + h) + 4 * r + j] >> (2 * k)) & 3) << 4;
}

void mllm_unpack_q6_k(const mllm_block_q6_kx8 *in, void *const rows[8]) {
    for (int r = 0; r < 8; r++) {
        mllm_block_q6_k *b = rows[r];
        uint8_t v[256];
        for (int e = 0; e < 256; e++) v[e] = (uint8_t)q6kx8_v(in, r, e);
        q6_from_values(v, b);
        b->d = in->d[r];
        for (int p = 0; p < 8; p++)
            for (int e = 0; e < 2; e++) b->scales[2 * p + e] = in->scales[16 * p + 2 * r + e];
    }
}

static int q6kx8_scale(const mllm_block_q6_kx8 *b, int r, int s) {
    return b->scales[16 * (s / 2) + 2 * r + s % 2];
}

void mllm_q6_kx8_get(const mllm_block_q6_kx8 *b, int r, float *dst) {
    const float d = mllm_f16_to_f32(b->d[r]);
    for (int e = 0; e < 256; e++) dst[e] = d * (float)q6kx8_scale(b, r, e / 16) * (float)(q6kx8_v(b, r, e) - 32);
}

float mllm_q6_kx8_dot(const mllm_block_q6_kx8 *b, int r, const void *q8k) {
    const mllm_block_q8_k32 *y = q8k;
    static const int32_t zero[8];
    int32_t a[8] = {0};
    for (int s = 0; s < 16; s++) {
        int32_t dot = 0;
        for (int l = 0; l < 16; l++) dot += (q6kx8_v(b, r, 16 * s + l) - 32) * y->qs[16 * s + l];
        a[s / 2] += q6kx8_scale(b, r, s) * dot;
    }
    return kq32_combine(a, zero, y->d, mllm_f16_to_f32(b->d[r]), 0.0f);
}
