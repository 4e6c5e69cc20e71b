/* The avx512 path's own row ops: softmax and the erf GELU with their exp on 16 lanes. Every
   step is the AVX2 one's (ops_avx2.c) lane for lane: the same Cephes-style
   expf operations (so the same values), the max (exact in any order), and
   the double sum fed 8 values at a time in the AVX2 order (4 double lanes,
   lo + hi halves of each 8), so the output is bit-identical to
   softmax_avx2's, which test_kernels_ops checks. The gain is the exp and
   the scale/normalise passes at twice the width; the sum's dependency
   chain is the AVX2 one. */
#include <immintrin.h>
#include <math.h>

#include "backends/cpu/expf_poly.h"
#include "backends/cpu/kernels_internal.h"

/* The polynomial exp of x for x in [MLLM_EXPF_LO, MLLM_EXPF_HI] (no NaN):
   mm512_expf's values without its clamps and blends, which are the
   identity there. */
static inline __m512 mm512_expf_in_range(__m512 x) {
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(MLLM_EXPF_LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(MLLM_EXPF_LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(MLLM_EXPF_LN2_LO), r);
    __m512 p = _mm512_set1_ps(MLLM_EXPF_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(MLLM_EXPF_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(MLLM_EXPF_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(MLLM_EXPF_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(MLLM_EXPF_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(MLLM_EXPF_P5));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

/* exp on 16 lanes, mm256_expf's operations: the argument clamped into the
   polynomial's range, 0 below it, +inf above, NaN kept. */
static inline __m512 mm512_expf(__m512 x) {
    const __m512 hi = _mm512_set1_ps(MLLM_EXPF_HI), lo = _mm512_set1_ps(MLLM_EXPF_LO);
    __m512 y = mm512_expf_in_range(_mm512_min_ps(_mm512_max_ps(x, lo), hi));
    y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), y, _mm512_setzero_ps());
    y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ), y, _mm512_set1_ps(INFINITY));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), y, x);
}

/* acc += (e[0..4) + e[4..8)) in double: the AVX2 softmax's sum step. */
static inline __m256d add8(__m256d acc, __m256 e) {
    const __m512d d = _mm512_cvtps_pd(e);
    return _mm256_add_pd(acc, _mm256_add_pd(_mm512_castpd512_pd256(d), _mm512_extractf64x4_pd(d, 1)));
}

void mllm_softmax_avx512(float *x, int n, float scale) {
    const __m512 vscale = _mm512_set1_ps(scale);
    __m512 vmax = _mm512_set1_ps(-INFINITY), vmin = _mm512_set1_ps(INFINITY);
    __mmask16 nan = 0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + i), vscale);
        _mm512_storeu_ps(x + i, v);
        vmax = _mm512_max_ps(vmax, v);
        vmin = _mm512_min_ps(vmin, v);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    }
    const int n8 = n & ~7; /* the AVX2 loops cover [0, n8), the scalar tail the rest */
    if (i < n8) {
        const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(0xff, x + i), vscale);
        _mm512_mask_storeu_ps(x + i, 0xff, v);
        vmax = _mm512_mask_max_ps(vmax, 0xff, vmax, v);
        vmin = _mm512_mask_min_ps(vmin, 0xff, vmin, v);
        nan |= _mm512_mask_cmp_ps_mask(0xff, v, v, _CMP_UNORD_Q);
        i += 8;
    }
    float max = _mm512_reduce_max_ps(vmax);
    /* every vector-loop x - max in [MLLM_EXPF_LO, 0] and no NaN: the lean
       exp gives the same values (rounding is monotonic, so the smallest
       x - max is vlo - max) */
    const float vlo = _mm512_reduce_min_ps(vmin);
    for (; i < n; i++) {
        x[i] *= scale;
        if (x[i] > max) max = x[i];
    }
    if (max == -INFINITY) {
        for (i = 0; i < n; i++) x[i] = 0.0f;
        return;
    }
    const __m512 vm = _mm512_set1_ps(max);
    __m256d acc = _mm256_setzero_pd();
    const bool lean = !nan && max < INFINITY && vlo - max >= MLLM_EXPF_LO;
    i = 0;
    if (lean)
        for (; i + 16 <= n; i += 16) {
            const __m512 e = mm512_expf_in_range(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
            _mm512_storeu_ps(x + i, e);
            acc = add8(acc, _mm512_castps512_ps256(e));
            acc = add8(acc, _mm512_extractf32x8_ps(e, 1));
        }
    for (; i + 16 <= n; i += 16) {
        const __m512 e = mm512_expf(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
        _mm512_storeu_ps(x + i, e);
        acc = add8(acc, _mm512_castps512_ps256(e));
        acc = add8(acc, _mm512_extractf32x8_ps(e, 1));
    }
    if (i < n8) {
        const __m512 e = mm512_expf(_mm512_sub_ps(_mm512_maskz_loadu_ps(0xff, x + i), vm));
        _mm512_mask_storeu_ps(x + i, 0xff, e);
        acc = add8(acc, _mm512_castps512_ps256(e));
        i += 8;
    }
    double dl[4];
    _mm256_storeu_pd(dl, acc);
    double sum = (dl[0] + dl[1]) + (dl[2] + dl[3]);
    for (; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    const float inv = (float)(1.0 / sum);
    const __m512 vinv = _mm512_set1_ps(inv);
    for (i = 0; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), vinv));
    for (; i < n; i++) x[i] *= inv;
}

/* gelu_erf_avx2 (ops_avx2.c: erfc(z) = t exp(-z^2 + P(t)), the sign of x
   picking 2 - erfc or erfc) on 16 lanes, the same operations per value:
   16-lane blocks, one 8-lane block and the scalar erff tail where the AVX2
   kernel has its 8-lane loop and its tail, so the output is bit-identical
   (test_kernels_ops). */
static inline __m512 gelu16(__m512 v) {
    const __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f), half = _mm512_set1_ps(0.5f);
    const __m512 z = _mm512_mul_ps(_mm512_abs_ps(v), _mm512_set1_ps(0.70710678118654752f));
    const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(half, z, one));
    __m512 p = _mm512_set1_ps(0.17087277f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.82215223f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.48851587f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.13520398f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.27886807f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.18628806f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.09678418f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.37409196f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.00002368f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.26551223f));
    const __m512 erfc = _mm512_mul_ps(t, mm512_expf(_mm512_fnmadd_ps(z, z, p)));
    const __mmask16 neg = _mm512_movepi32_mask(_mm512_castps_si512(v)); /* the sign bit, as blendv */
    const __m512 f = _mm512_mask_blend_ps(neg, _mm512_sub_ps(two, erfc), erfc);
    return _mm512_mul_ps(_mm512_mul_ps(half, v), f);
}

void mllm_gelu_erf_avx512(float *y, const float *x, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, gelu16(_mm512_loadu_ps(x + i)));
    if (i + 8 <= n) {
        _mm512_mask_storeu_ps(y + i, 0xff, gelu16(_mm512_maskz_loadu_ps(0xff, x + i)));
        i += 8;
    }
    for (; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}
