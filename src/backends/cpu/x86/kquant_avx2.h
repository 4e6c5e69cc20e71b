/* One k-quant block (plain layout) dotted with one q8_K32 block, AVX2: the
   per-block math of the vec_dots (kquant_avx2.c) and of the plain-layout
   tiles (mul_mat_avx2.c), so both give the same bits. One int32 vector per
   32-value sub-block is reduced to lane j = sub-block j's exact sum
   (kq32_combine's a[j], kquants.h); the float terms are then taken 8
   sub-blocks at a time, lane j scaled by the activation scale d[j]. Only
   *_avx2.c files may include this. */
#ifndef MLLM_BACKENDS_CPU_KQUANT_AVX2_H
#define MLLM_BACKENDS_CPU_KQUANT_AVX2_H
#include <stdbool.h>

#include "backends/cpu/kquants.h"
#include "backends/cpu/x86/simd_avx2.h"

#define KQ_INLINE static inline __attribute__((always_inline))

/* acc += d * (a * dy) - dmin * (b * dy), lane j = sub-block j. */
KQ_INLINE __m256 kq32_lanes(__m256 acc, __m256i a, __m256 b, const float *dy, float d, float dmin) {
    const __m256 vdy = _mm256_loadu_ps(dy);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_mul_ps(_mm256_cvtepi32_ps(a), vdy), acc);
    return _mm256_fnmadd_ps(_mm256_set1_ps(dmin), _mm256_mul_ps(b, vdy), acc);
}

/* What a q4_K / q5_K block's dots need of its scales, decoded once per
   weight block: the 6-bit scales as int16 vectors, the mins as floats. */
typedef struct {
    __m256i sc[8];
    __m256 mf;
    float d, dmin;
} kq45_scales;

KQ_INLINE void kq45_prep(const mllm_block_q4_k *x4, kq45_scales *p) {
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; j++) kq_scale_min(j, x4->scales, &sc[j], &m[j]);
    for (int j = 0; j < 8; j++) p->sc[j] = _mm256_set1_epi16(sc[j]);
    p->mf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)m)));
    p->d = f16_to_f32_hw(x4->d);
    p->dmin = f16_to_f32_hw(x4->dmin);
}

/* acc += one q4_K (Q5: q5_K) block x one q8_K32 block, lanes = sub-blocks;
   p from kq45_prep of the same block. q5_K: the fifth bit of each
   32-value run comes from qh (bit 2c for the low-nibble run of chunk c,
   2c+1 for the high), or-ed in as 16 (a per-byte 0/1 shifted left 4 in
   16-bit lanes never crosses a byte) before the unsigned x signed
   multiply. q4_K and q5_K share d, dmin and scales at the same offsets. Q5
   is a constant at each call. */
KQ_INLINE __m256 kq32_block_k45(__m256 acc, const void *xb, const kq45_scales *p, const mllm_block_q8_k32 *y,
                                bool Q5) {
    const __m256i low4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    const uint8_t *qs = Q5 ? ((const mllm_block_q5_k *)xb)->qs : ((const mllm_block_q4_k *)xb)->qs;
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
        const __m256i plo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(y->qs + 64 * c)));
        const __m256i phi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(y->qs + 64 * c + 32)));
        v[2 * c] = _mm256_madd_epi16(plo, p->sc[2 * c]);
        v[2 * c + 1] = _mm256_madd_epi16(phi, p->sc[2 * c + 1]);
    }
    /* b[j] = m_j * (bsums[2j] + bsums[2j + 1]) as floats: exact (< 2^18) */
    const __m128i ys = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)y->bsums),
                                      _mm_loadu_si128((const __m128i *)(y->bsums + 8)));
    const __m256 b = _mm256_mul_ps(p->mf, _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(ys)));
    return kq32_lanes(acc, mm256_hsum8_epi32(v), b, y->d, p->d, p->dmin);
}

/* acc += one q6_K block x one q8_K32 block, lanes = 32-value sub-blocks. */
KQ_INLINE __m256 kq32_block_q6_k(__m256 acc, const mllm_block_q6_k *x, const mllm_block_q8_k32 *y) {
    const __m256i low4 = _mm256_set1_epi8(0x0f), two = _mm256_set1_epi8(3);
    __m256i v[8];
    for (int h = 0; h < 2; h++) {
        const __m256i ql0 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * h));
        const __m256i ql1 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * h + 32));
        const __m256i qh = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * h));
        for (int k = 0; k < 4; k++) {
            const __m256i l = k == 0 ? _mm256_and_si256(ql0, low4)
                            : k == 1 ? _mm256_and_si256(ql1, low4)
                            : k == 2 ? _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4)
                                     : _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4);
            const __m256i hb = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * k)), two);
            const __m256i q = _mm256_or_si256(l, _mm256_slli_epi16(hb, 4));
            const __m256i p = _mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)(y->qs + 128 * h + 32 * k)));
            const int g = 8 * h + 2 * k; /* scales of values 0..15 and 16..31 of this run */
            const __m256i scv = _mm256_set_m128i(_mm_set1_epi16(x->scales[g + 1]), _mm_set1_epi16(x->scales[g]));
            v[4 * h + k] = _mm256_madd_epi16(p, scv);
        }
    }
    /* sum(sc * (q - 32) * y) = sum(sc * q * y) - 32 * sum(sc_g * bsum_g);
       lane j of the madd holds sub-blocks 2j and 2j + 1 of the offset */
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
    const __m256i offs = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y->bsums));
    const __m256i a = _mm256_sub_epi32(mm256_hsum8_epi32(v), _mm256_slli_epi32(offs, 5));
    return kq32_lanes(acc, a, _mm256_setzero_ps(), y->d, f16_to_f32_hw(x->d), 0.0f);
}

#endif
