/* AVX2 dots for mxfp4 (x q8_0) and w4a32 (x f32). mxfp4: the nibbles index
   the e2m1 table with one byte shuffle, then an exact int8 dot per block.
   w4a32: nibbles -> signed int8 -> f32, fused multiply-add with the f32
   activations, one scale multiply per group. */
#include "backends/cpu/fp4.h"
#include "backends/cpu/x86/simd_avx2.h"

void mllm_vec_dot_mxfp4_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_mxfp4 *x = vx;
    const mllm_block_q8_0 *y = vy;
    const __m128i tbl128 = _mm_loadu_si128((const __m128i *)mllm_mxfp4_values);
    const __m256i tbl = _mm256_set_m128i(tbl128, tbl128);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / MLLM_QK_MXFP4; i++) {
        const __m256i qx = _mm256_shuffle_epi8(tbl, unpack_nibbles_32(x[i].qs));
        const __m256i qy = _mm256_loadu_si256((const __m256i *)y[i].qs);
        const __m256 d = _mm256_set1_ps(mllm_e8m0_to_f32_half(x[i].e) * f16_to_f32_hw(y[i].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_lanes(qx, qy)), acc);
    }
    *s = mm256_hsum_ps(acc);
}

/* 16 quant bytes -> 32 floats (q - 8): v[0..1] = elements 0..15 (low
   nibbles), v[2..3] = 16..31 (high nibbles). */
static inline void w4_unpack16(const uint8_t *qs, __m256 v[4]) {
    const __m256i q = _mm256_sub_epi8(unpack_nibbles_32(qs), _mm256_set1_epi8(8));
    const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    v[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
    v[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
    v[2] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
    v[3] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
}

void mllm_vec_dot_w4a32_g32_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_w4a32_g32 *x = vx;
    const float *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / 32; i++, y += 32) {
        __m256 w[4];
        w4_unpack16(x[i].qs, w);
        __m256 g = _mm256_mul_ps(w[0], _mm256_loadu_ps(y));
        g = _mm256_fmadd_ps(w[1], _mm256_loadu_ps(y + 8), g);
        g = _mm256_fmadd_ps(w[2], _mm256_loadu_ps(y + 16), g);
        g = _mm256_fmadd_ps(w[3], _mm256_loadu_ps(y + 24), g);
        acc = _mm256_fmadd_ps(broadcast_f16(&x[i].d), g, acc);
    }
    *s = mm256_hsum_ps(acc);
}

/* Group of 64: bytes j < 32 hold elements j (low) and j + 32 (high). */
void mllm_vec_dot_w4a32_g64_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_w4a32_g64 *x = vx;
    const float *y = vy;
    const __m256i low4 = _mm256_set1_epi8(0x0f), eight = _mm256_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / 64; i++, y += 64) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)x[i].qs);
        const __m256i lo = _mm256_sub_epi8(_mm256_and_si256(q, low4), eight);            /* 0..31 */
        const __m256i hi = _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(q, 4), low4), eight); /* 32..63 */
        __m256 g = _mm256_setzero_ps();
        for (int h = 0; h < 2; h++) {
            const __m256i v = h ? hi : lo;
            const __m128i a = _mm256_castsi256_si128(v), b = _mm256_extracti128_si256(v, 1);
            const float *yy = y + 32 * h;
            g = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(a)), _mm256_loadu_ps(yy), g);
            g = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(a, 8))), _mm256_loadu_ps(yy + 8), g);
            g = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), _mm256_loadu_ps(yy + 16), g);
            g = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b, 8))), _mm256_loadu_ps(yy + 24), g);
        }
        acc = _mm256_fmadd_ps(broadcast_f16(&x[i].d), g, acc);
    }
    *s = mm256_hsum_ps(acc);
}
