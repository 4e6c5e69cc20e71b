/* AVX2 activation conversions: same bytes as the *_act_generic / f16 row
   functions (checked by test_kernels_quant), just faster. */
#include <math.h>

#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/kquants.h"
#include "backends/cpu/x86/simd_avx2.h"

/* round half to even, as _MM_ROUND_NEAREST in ggml (an immediate, even at -O0) */
#define ROUND_EVEN (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* One block of 32 floats -> 32 int8 = round_half_even(x * id), and the
   int32 lanes of their sum (for q8_1's s). */
/* The largest magnitude of 32 floats in four vectors. */
static inline float absmax_32(__m256 v0, __m256 v1, __m256 v2, __m256 v3) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1));
    m = _mm256_max_ps(m, _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    return _mm_cvtss_f32(m4);
}

static inline __m256i quantize_block_32(const float *x, float *amax_out, int8_t *qs) {
    __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    const float amax = absmax_32(v0, v1, v2, v3);
    *amax_out = amax;
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    const __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, id), ROUND_EVEN));
    const __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, id), ROUND_EVEN));
    const __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, id), ROUND_EVEN));
    const __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, id), ROUND_EVEN));
    /* packs works per 128-bit lane: undo the interleave with a permute. */
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)qs, p);
    return _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
}

static inline int hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

void mllm_quantize_row_q8_0_act_avx2(const float *src, void *dst, int64_t n) {
    mllm_block_q8_0 *y = dst;
    for (int64_t i = 0; i < n / MLLM_QK8_0; i++) {
        float amax;
        (void)quantize_block_32(src + i * MLLM_QK8_0, &amax, y[i].qs);
        y[i].d = (mllm_f16)_cvtss_sh(amax / 127.0f, 0);
    }
}

void mllm_quantize_row_q8_1_act_avx2(const float *src, void *dst, int64_t n) {
    mllm_block_q8_1 *y = dst;
    for (int64_t i = 0; i < n / MLLM_QK8_1; i++) {
        float amax;
        const int sum = hsum_epi32(quantize_block_32(src + i * MLLM_QK8_1, &amax, y[i].qs));
        const float d = amax / 127.0f;
        y[i].d = (mllm_f16)_cvtss_sh(d, 0);
        y[i].s = (mllm_f16)_cvtss_sh(d * (float)sum, 0);
    }
}

/* The sums of quants 0..15 and 16..31 of a 32-byte run, as q8_K32's bsums. */
static inline void bsums_32(const int8_t *qs, int16_t *out) {
    const __m256i q = _mm256_loadu_si256((const __m256i *)qs);
    const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1));
    __m128i s = _mm_hadd_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
    s = _mm_hadd_epi32(s, s); /* values 0..15, 16..31, repeated */
    out[0] = (int16_t)_mm_cvtsi128_si32(s);
    out[1] = (int16_t)_mm_extract_epi32(s, 1);
}

void mllm_quantize_row_q8_k32_avx2(const float *src, void *dst, int64_t n) {
    mllm_block_q8_k32 *y = dst;
    for (int64_t i = 0; i < n / MLLM_QK_K; i++) {
        for (int j = 0; j < 8; j++) {
            float amax;
            (void)quantize_block_32(src + i * MLLM_QK_K + 32 * j, &amax, y[i].qs + 32 * j);
            y[i].d[j] = amax / 127.0f;
            bsums_32(y[i].qs + 32 * j, y[i].bsums + 2 * j);
        }
    }
}

void mllm_row_float_to_f16_avx2(const float *src, void *dst, int64_t n) {
    mllm_f16 *h = dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i v = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(h + i), v);
    }
    for (; i < n; i++) h[i] = mllm_f32_to_f16(src[i]);
}

/* q4_0 weights (mllm convert --quant q4_0, a draft's --draft-quant): the
   bytes of mllm_quantize_row_q4_0, block by block. The scale is the signed
   value of largest magnitude, the first one in the block if several share
   it, as the reference's strict comparison picks it; a block holding a NaN
   or an infinity goes through the reference. */
void mllm_quantize_row_q4_0_avx2(const float *src, void *dst, int64_t n) {
    mllm_block_q4_0 *y = dst;
    const __m256 half = _mm256_set1_ps(8.5f);
    const __m256i fifteen = _mm256_set1_epi32(15);
    for (int64_t i = 0; i < n / MLLM_QK4_0; i++) {
        const float *x = src + i * MLLM_QK4_0;
        const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
        const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
        const float amax = absmax_32(v0, v1, v2, v3);
        const __m256 nan = _mm256_or_ps(_mm256_cmp_ps(v0, v1, _CMP_UNORD_Q), _mm256_cmp_ps(v2, v3, _CMP_UNORD_Q));
        if (_mm256_movemask_ps(nan) || isinf(amax)) { /* what the reference makes of these is its own */
            mllm_quantize_row_q4_0(x, &y[i], MLLM_QK4_0);
            continue;
        }
        float max = 0.0f;
        if (amax > 0.0f) {
            int j = 0;
            while (fabsf(x[j]) != amax) j++; /* amax is one of them */
            max = x[j];
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = mllm_f32_to_f16(d);
        const __m256 vid = _mm256_set1_ps(id);
        /* x * id + 8.5 truncated, at most 15: two roundings, as the reference */
#define Q4(v) _mm256_min_epi32(_mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(v, vid), half)), fifteen)
        const __m256i c0 = _mm256_or_si256(Q4(v0), _mm256_slli_epi32(Q4(v2), 4)); /* bytes 0..7 */
        const __m256i c1 = _mm256_or_si256(Q4(v1), _mm256_slli_epi32(Q4(v3), 4)); /* bytes 8..15 */
#undef Q4
        const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(c0, c1), 0xD8);
        const __m128i b = _mm_packus_epi16(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
        _mm_storeu_si128((__m128i *)y[i].qs, b);
    }
}
