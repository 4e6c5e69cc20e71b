/* AVX2 dots of q4_K / q5_K / q6_K weights with q8_K32 activations, the
   plain (unpacked) layouts. Per block, one int32 vector per 32-value
   sub-block is reduced to lane j = sub-block j's exact sum (kq32_combine's
   a[j]); the float terms are then taken 8 sub-blocks at a time, lane j
   scaled by the activation scale d[j]. Only the float order differs from
   kquant_generic.c. */
#include "backends/cpu/kquants.h"
#include "backends/cpu/simd_avx2.h"

/* acc += d * (a * dy) - dmin * (b * dy), lane j = sub-block j. */
static inline __m256 kq32_lanes(__m256 acc, __m256i a, __m256 b, const float *dy, float d, float dmin) {
    const __m256 vdy = _mm256_loadu_ps(dy);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_mul_ps(_mm256_cvtepi32_ps(a), vdy), acc);
    return _mm256_fnmadd_ps(_mm256_set1_ps(dmin), _mm256_mul_ps(b, vdy), acc);
}

/* b[j] = m_j * (bsums[2j] + bsums[2j + 1]) as floats: exact (< 2^18). */
static inline __m256 kq32_min_lanes(const uint8_t m[8], const int16_t *bsums) {
    const __m128i ys = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)bsums), _mm_loadu_si128((const __m128i *)(bsums + 8)));
    const __m256 mf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)m)));
    return _mm256_mul_ps(mf, _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(ys)));
}

/* q5_K: as q4_K with the fifth bit of each 32-value run taken from qh (bit
   2c for the low-nibble run of chunk c, 2c+1 for the high) and or-ed in as
   16 (a per-byte 0/1 shifted left 4 in 16-bit lanes never crosses a byte)
   before the unsigned x signed multiply. Q5 is a constant at each call. */
static inline __attribute__((always_inline)) void dot_k45(int n, float *s, const void *vx, const void *vy, bool Q5) {
    const size_t bsize = Q5 ? sizeof(mllm_block_q5_k) : sizeof(mllm_block_q4_k);
    const mllm_block_q8_k32 *y = vy;
    const __m256i low4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        const char *xb = (const char *)vx + (size_t)i * bsize;
        /* q4_K and q5_K share d, dmin and scales at the same offsets */
        const mllm_block_q4_k *x4 = (const mllm_block_q4_k *)xb;
        const uint8_t *qs = Q5 ? ((const mllm_block_q5_k *)xb)->qs : x4->qs;
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; j++) kq_scale_min(j, x4->scales, &sc[j], &m[j]);
        const __m256i qh = Q5 ? _mm256_loadu_si256((const __m256i *)((const mllm_block_q5_k *)xb)->qh) : low4;
        __m256i v[8];
        for (int c = 0; c < 4; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
            __m256i lo = _mm256_and_si256(q, low4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            if (Q5) {
                const __m256i hlo = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c)), one);
                const __m256i hhi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c + 1)), one);
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(hlo, 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(hhi, 4));
            }
            const __m256i plo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c)));
            const __m256i phi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c + 32)));
            v[2 * c] = _mm256_madd_epi16(plo, _mm256_set1_epi16(sc[2 * c]));
            v[2 * c + 1] = _mm256_madd_epi16(phi, _mm256_set1_epi16(sc[2 * c + 1]));
        }
        acc = kq32_lanes(acc, mm256_hsum8_epi32(v), kq32_min_lanes(m, y[i].bsums), y[i].d, f16_to_f32_hw(x4->d),
                         f16_to_f32_hw(x4->dmin));
    }
    *s = mm256_hsum_ps(acc);
}

void mllm_vec_dot_q4_k_avx2(int n, float *s, const void *vx, const void *vy) { dot_k45(n, s, vx, vy, false); }
void mllm_vec_dot_q5_k_avx2(int n, float *s, const void *vx, const void *vy) { dot_k45(n, s, vx, vy, true); }

void mllm_vec_dot_q6_k_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q6_k *x = vx;
    const mllm_block_q8_k32 *y = vy;
    const __m256i low4 = _mm256_set1_epi8(0x0f), two = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        __m256i v[8];
        for (int h = 0; h < 2; h++) {
            const __m256i ql0 = _mm256_loadu_si256((const __m256i *)(x[i].ql + 64 * h));
            const __m256i ql1 = _mm256_loadu_si256((const __m256i *)(x[i].ql + 64 * h + 32));
            const __m256i qh = _mm256_loadu_si256((const __m256i *)(x[i].qh + 32 * h));
            for (int k = 0; k < 4; k++) {
                const __m256i l = k == 0 ? _mm256_and_si256(ql0, low4)
                                : k == 1 ? _mm256_and_si256(ql1, low4)
                                : k == 2 ? _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4)
                                         : _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4);
                const __m256i hb = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * k)), two);
                const __m256i q = _mm256_or_si256(l, _mm256_slli_epi16(hb, 4));
                const __m256i p = _mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)(y[i].qs + 128 * h + 32 * k)));
                const int g = 8 * h + 2 * k; /* scales of values 0..15 and 16..31 of this run */
                const __m256i scv = _mm256_set_m128i(_mm_set1_epi16(x[i].scales[g + 1]), _mm_set1_epi16(x[i].scales[g]));
                v[4 * h + k] = _mm256_madd_epi16(p, scv);
            }
        }
        /* sum(sc * (q - 32) * y) = sum(sc * q * y) - 32 * sum(sc_g * bsum_g);
           lane j of the madd holds sub-blocks 2j and 2j + 1 of the offset */
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        const __m256i offs = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        const __m256i a = _mm256_sub_epi32(mm256_hsum8_epi32(v), _mm256_slli_epi32(offs, 5));
        acc = kq32_lanes(acc, a, _mm256_setzero_ps(), y[i].d, f16_to_f32_hw(x[i].d), 0.0f);
    }
    *s = mm256_hsum_ps(acc);
}
