/* AVX2 dots of q4_K / q6_K weights with q8_K activations. Per block the
   integer sums are exact (as in kquant_generic.c); only float order differs. */
#include "backends/cpu/kquants.h"
#include "backends/cpu/simd_avx2.h"

void mllm_vec_dot_q4_k_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q4_k *x = vx;
    const mllm_block_q8_k *y = vy;
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        uint8_t sc[8], m[8];
        int summ = 0;
        for (int j = 0; j < 8; j++) {
            kq_scale_min(j, x[i].scales, &sc[j], &m[j]);
            summ += m[j] * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        }
        __m256i sumi = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            const __m256i lo = _mm256_and_si256(q, low4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            const __m256i plo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c)));
            const __m256i phi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c + 32)));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(plo, _mm256_set1_epi16(sc[2 * c])));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(phi, _mm256_set1_epi16(sc[2 * c + 1])));
        }
        const float d = f16_to_f32_hw(x[i].d) * y[i].d;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
        mins += f16_to_f32_hw(x[i].dmin) * y[i].d * (float)summ;
    }
    *s = mm256_hsum_ps(acc) - mins;
}

void mllm_vec_dot_q6_k_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q6_k *x = vx;
    const mllm_block_q8_k *y = vy;
    const __m256i low4 = _mm256_set1_epi8(0x0f), two = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        /* sum(sc * (q - 32) * y) = sum(sc * q * y) - 32 * sum(sc_g * bsum_g) */
        int corr = 0;
        for (int g = 0; g < 16; g++) corr += x[i].scales[g] * y[i].bsums[g];
        __m256i sumi = _mm256_setr_epi32(-32 * corr, 0, 0, 0, 0, 0, 0, 0);
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
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scv));
            }
        }
        const float d = f16_to_f32_hw(x[i].d) * y[i].d;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = mm256_hsum_ps(acc);
}

/* q5_K: as q4_K with the fifth bit of each 32-value run taken from qh (bit
   2c for the low-nibble run of chunk c, 2c+1 for the high) and or-ed in as
   16 (a per-byte 0/1 shifted left 4 in 16-bit lanes never crosses a byte) before the unsigned x signed multiply. */
void mllm_vec_dot_q5_k_avx2(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q5_k *x = vx;
    const mllm_block_q8_k *y = vy;
    const __m256i low4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        uint8_t sc[8], m[8];
        int summ = 0;
        for (int j = 0; j < 8; j++) {
            kq_scale_min(j, x[i].scales, &sc[j], &m[j]);
            summ += m[j] * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        }
        const __m256i qh = _mm256_loadu_si256((const __m256i *)x[i].qh);
        __m256i sumi = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            const __m256i hlo = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c)), one);
            const __m256i hhi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c + 1)), one);
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, low4), _mm256_slli_epi16(hlo, 4));
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), low4),
                                               _mm256_slli_epi16(hhi, 4));
            const __m256i plo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c)));
            const __m256i phi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c + 32)));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(plo, _mm256_set1_epi16(sc[2 * c])));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(phi, _mm256_set1_epi16(sc[2 * c + 1])));
        }
        const float d = f16_to_f32_hw(x[i].d) * y[i].d;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
        mins += f16_to_f32_hw(x[i].dmin) * y[i].d * (float)summ;
    }
    *s = mm256_hsum_ps(acc) - mins;
}
