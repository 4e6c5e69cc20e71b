/* mllm_cpu_sum_exp on AVX2 + FMA: exp in double, 4 lanes: d = n ln2 + r
   (ln2 in two parts, the first with n * ln2_hi exact), exp(r) by its
   Taylor series to r^13 (|r| <= ln2 / 2: truncation below 1e-17, so the
   error is Horner's rounding, about 1 ulp; test_kernels_ops measures it
   against libm's exp), 2^n into the exponent bits. d below -708.39 (the
   result under DBL_MIN: nothing next to the max's exp(0) = 1) and -inf
   give 0, above 709.78 +inf, NaN stays NaN. Two accumulators of 4 lanes, added at the end: the sum's order
   is not the generic loop's, the values differ from it in the last bits. */
#include <immintrin.h>
#include <math.h>

#include "backends/cpu/kernels_internal.h"

#define EXP_LO (-708.39)
#define EXP_HI 709.78

static inline __m256d mm256_exp_pd(__m256d d) {
    const __m256d lo = _mm256_set1_pd(EXP_LO), hi = _mm256_set1_pd(EXP_HI);
    const __m256d dc = _mm256_min_pd(hi, _mm256_max_pd(lo, d)); /* in this order NaN stays NaN */
    const __m256d n = _mm256_round_pd(_mm256_mul_pd(dc, _mm256_set1_pd(1.4426950408889634074)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(6.93147180369123816490e-01), dc);
    r = _mm256_fnmadd_pd(n, _mm256_set1_pd(1.90821492927058770002e-10), r);
    /* 1 + r + r^2/2! + ... + r^13/13!, Horner from the top */
    static const double c[14] = {1.0,
                                 1.0,
                                 0.5,
                                 1.6666666666666666667e-1,
                                 4.1666666666666666667e-2,
                                 8.3333333333333333333e-3,
                                 1.3888888888888888889e-3,
                                 1.9841269841269841270e-4,
                                 2.4801587301587301587e-5,
                                 2.7557319223985890653e-6,
                                 2.7557319223985890653e-7,
                                 2.5052108385441718775e-8,
                                 2.0876756987868098979e-9,
                                 1.6059043836821614599e-10};
    __m256d p = _mm256_set1_pd(c[13]);
    for (int k = 12; k >= 0; k--) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(c[k]));
    const __m128i ni = _mm256_cvtpd_epi32(n);
    const __m256i e = _mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepi32_epi64(ni), _mm256_set1_epi64x(1023)), 52);
    const __m256d y = _mm256_mul_pd(p, _mm256_castsi256_pd(e));
    const __m256d y0 = _mm256_blendv_pd(y, _mm256_setzero_pd(), _mm256_cmp_pd(d, lo, _CMP_LT_OQ)); /* -inf too */
    return _mm256_blendv_pd(y0, _mm256_set1_pd(INFINITY), _mm256_cmp_pd(d, hi, _CMP_GT_OQ));
}

/* sum of exp(x[i] - mx) over [i0, i1), i1 - i0 any */
static double range(const float *x, int i0, int i1, float mx) {
    const __m256 vm = _mm256_set1_ps(mx);
    __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
    int i = i0;
    for (; i + 8 <= i1; i += 8) {
        const __m256 v = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm); /* x - mx in float, as the generic */
        a0 = _mm256_add_pd(a0, mm256_exp_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v))));
        a1 = _mm256_add_pd(a1, mm256_exp_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))));
    }
    double t[4];
    _mm256_storeu_pd(t, _mm256_add_pd(a0, a1));
    double s = (t[0] + t[1]) + (t[2] + t[3]);
    if (i < i1) { /* the last < 8 values, padded with -inf (adding 0) */
        float tail[8];
        for (int k = 0; k < 8; k++) tail[k] = i + k < i1 ? x[i + k] : -INFINITY;
        const __m256 v = _mm256_sub_ps(_mm256_loadu_ps(tail), vm);
        _mm256_storeu_pd(t, _mm256_add_pd(mm256_exp_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v))),
                                          mm256_exp_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)))));
        s += (t[0] + t[1]) + (t[2] + t[3]);
    }
    return s;
}

double mllm_sum_exp_avx2(const float *x, int n, float mx, int ts_from, double *ts_sum) {
    const double head = range(x, 0, ts_from, mx), ts = range(x, ts_from, n, mx);
    if (ts_sum) *ts_sum = ts;
    return head + ts;
}
