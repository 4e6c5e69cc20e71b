/* AVX2 + FMA row ops. exp is a vectorised Cephes-style expf (see
   mm256_expf); everything else is the generic math with 8-lane order. */
#include <math.h>

#include "backends/cpu/expf_poly.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/x86/simd_avx2.h"
#include "core/cpu_features.h"

/* expf for 8 lanes: x = n*ln2 + r, |r| <= ln2/2, exp(r) by a degree-6
   polynomial, 2^n put in the exponent bits. Measured against libm expf on
   [-87, 88] (test_kernels_ops): relative error < 3e-7 (~2 ulp). Results
   below FLT_MIN are flushed to 0 (so -inf gives 0), x > 88 gives +inf, NaN
   stays NaN. */
static inline __m256 mm256_expf(__m256 x) {
    const __m256 hi = _mm256_set1_ps(MLLM_EXPF_HI), lo = _mm256_set1_ps(MLLM_EXPF_LO);
    const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(MLLM_EXPF_LOG2E)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    /* r = x - n*ln2 with ln2 split in two so r is exact enough */
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(MLLM_EXPF_LN2_HI), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(MLLM_EXPF_LN2_LO), r);
    __m256 p = _mm256_set1_ps(MLLM_EXPF_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(MLLM_EXPF_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(MLLM_EXPF_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(MLLM_EXPF_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(MLLM_EXPF_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(MLLM_EXPF_P5));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* Exposed for the accuracy test only. */
void mllm_expf_avx2(const float *x, float *y, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, mm256_expf(_mm256_loadu_ps(x + i)));
    for (; i < n; i++) y[i] = expf(x[i]);
}

static void rmsnorm_avx2(float *y, const float *x, const float *w, int n, float eps) {
    /* Squares rounded to float, summed in double (as ggml), 4 double lanes. */
    __m256d acc0 = _mm256_setzero_pd(), acc1 = acc0;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 sq = _mm256_mul_ps(v, v);
        acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
        acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
    }
    double lanes[4];
    _mm256_storeu_pd(lanes, _mm256_add_pd(acc0, acc1));
    double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    for (; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / n);
    const float scale = 1.0f / sqrtf(mean + eps);
    const __m256 vs = _mm256_set1_ps(scale);
    i = 0;
    if (w) {
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), _mm256_loadu_ps(w + i)));
        for (; i < n; i++) y[i] = (x[i] * scale) * w[i];
    } else {
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
        for (; i < n; i++) y[i] = x[i] * scale;
    }
}

static void silu_mul_avx2(float *y, const float *g, const float *u, int n) {
    const __m256 one = _mm256_set1_ps(1.0f), neg = _mm256_set1_ps(-0.0f);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 vg = _mm256_loadu_ps(g + i);
        const __m256 den = _mm256_add_ps(one, mm256_expf(_mm256_xor_ps(vg, neg)));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_div_ps(vg, den), _mm256_loadu_ps(u + i)));
    }
    for (; i < n; i++) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* 0.5 x (1 + tanh(z)) = x / (1 + exp(-2z)), z = sqrt(2/pi) (x + 0.044715 x^3):
   one exp, no tanh. exp overflows to +inf for very negative x: x / inf = -0,
   the limit. */
static void gelu_mul_avx2(float *y, const float *g, const float *u, int n) {
    const __m256 one = _mm256_set1_ps(1.0f), m2c = _mm256_set1_ps(-2.0f * 0.7978845608028654f);
    const __m256 k = _mm256_set1_ps(0.044715f);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
        const __m256 z = _mm256_mul_ps(m2c, _mm256_fmadd_ps(k, x3, x));
        const __m256 den = _mm256_add_ps(one, mm256_expf(z));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_div_ps(x, den), _mm256_loadu_ps(u + i)));
    }
    for (; i < n; i++) {
        const float x = g[i];
        y[i] = x / (1.0f + expf(-2.0f * 0.7978845608028654f * (x + 0.044715f * x * x * x))) * u[i];
    }
}

static void softmax_avx2(float *x, int n, float scale) {
    const __m256 vscale = _mm256_set1_ps(scale);
    __m256 vmax = _mm256_set1_ps(-INFINITY);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vscale);
        _mm256_storeu_ps(x + i, v);
        vmax = _mm256_max_ps(vmax, v);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, vmax);
    float max = -INFINITY;
    for (int k = 0; k < 8; k++) max = lanes[k] > max ? lanes[k] : max;
    for (; i < n; i++) {
        x[i] *= scale;
        if (x[i] > max) max = x[i];
    }
    if (max == -INFINITY) {
        for (i = 0; i < n; i++) x[i] = 0.0f;
        return;
    }
    const __m256 vm = _mm256_set1_ps(max);
    /* summed in double, 4 lanes (no horizontal sum per step) */
    __m256d acc = _mm256_setzero_pd();
    for (i = 0; i + 8 <= n; i += 8) {
        const __m256 e = mm256_expf(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(x + i, e);
        acc = _mm256_add_pd(acc, _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(e)),
                                               _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1))));
    }
    double dl[4];
    _mm256_storeu_pd(dl, acc);
    double sum = (dl[0] + dl[1]) + (dl[2] + dl[3]);
    for (; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    const float inv = (float)(1.0 / sum);
    const __m256 vinv = _mm256_set1_ps(inv);
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
    for (; i < n; i++) x[i] *= inv;
}

static void rope_avx2(float *x, int n_rot, const float *cos_t, const float *sin_t, bool neox) {
    const int half = n_rot / 2;
    int i = 0;
    if (neox) {
        for (; i + 8 <= half; i += 8) {
            const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + half);
            const __m256 c = _mm256_loadu_ps(cos_t + i), s = _mm256_loadu_ps(sin_t + i);
            _mm256_storeu_ps(x + i, _mm256_fmsub_ps(x0, c, _mm256_mul_ps(x1, s)));
            _mm256_storeu_ps(x + i + half, _mm256_fmadd_ps(x0, s, _mm256_mul_ps(x1, c)));
        }
    } else {
        /* 4 pairs per vector: lanes (x0, x1) get (x0*c - x1*s, x1*c + x0*s). */
        const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
        const __m256 alt = _mm256_setr_ps(-1, 1, -1, 1, -1, 1, -1, 1);
        for (; i + 4 <= half; i += 4) {
            const __m256 v = _mm256_loadu_ps(x + 2 * i);
            const __m256 c = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(cos_t + i)), dup);
            const __m256 s = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(sin_t + i)), dup);
            const __m256 swapped = _mm256_permute_ps(v, 0xb1);
            _mm256_storeu_ps(x + 2 * i, _mm256_fmadd_ps(swapped, _mm256_mul_ps(s, alt), _mm256_mul_ps(v, c)));
        }
    }
    mllm_rope_pairs(x, i, half, cos_t, sin_t, neox);
}

static float dot_f32_avx2(const float *a, const float *b, int n) {
    float s;
    mllm_vec_dot_f32_avx2(n, &s, a, b);
    return s;
}

static void axpy_f32_avx2(float *y, float a, const float *x, int n) {
    const __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * x[i];
}

static void add_f32_avx2(float *y, const float *a, const float *b, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    for (; i < n; i++) y[i] = a[i] + b[i];
}

/* gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x (2 - erfc(z)) for x >= 0 and
   0.5 x erfc(z) for x < 0, z = |x| / sqrt 2: erfc straight, so negative x
   loses nothing to 1 - erf cancellation. erfc(z) = t exp(-z^2 + P(t)),
   t = 1 / (1 + z / 2), P of degree 9 (Numerical Recipes' erfcc, after
   Chebyshev): relative error < 1.2e-7 for every z >= 0. Against the generic
   kernel (libm erff) the NMSE is ~1e-14 (test_kernels_ops, bound 1e-12).
   Large |x|: exp underflows to 0, giving x and -0; NaN stays NaN. */
static void gelu_erf_avx2(float *y, const float *x, int n) {
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
    const __m256 rs2 = _mm256_set1_ps(0.70710678118654752f), sign = _mm256_set1_ps(-0.0f);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 z = _mm256_mul_ps(_mm256_andnot_ps(sign, v), rs2);
        const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(half, z, one));
        __m256 p = _mm256_set1_ps(0.17087277f);
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.82215223f));
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.48851587f));
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.13520398f));
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.27886807f));
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.18628806f));
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.09678418f));
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.37409196f));
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.00002368f));
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.26551223f));
        const __m256 erfc = _mm256_mul_ps(t, mm256_expf(_mm256_fnmadd_ps(z, z, p)));
        /* x >= 0: 2 - erfc; x < 0: erfc (the sign bit of x picks) */
        const __m256 f = _mm256_blendv_ps(_mm256_sub_ps(two, erfc), erfc, v);
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(half, v), f));
    }
    for (; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

/* An 8 x 8 block at a time: the unpack / shuffle / lane-permute transpose. */
static void transpose8_avx2(float *dst, size_t stride, const float *const *r, int n) {
    int d = 0;
    for (; d + 8 <= n; d += 8) {
        __m256 t[8], s[8];
        for (int j = 0; j < 8; j += 2) {
            const __m256 a = _mm256_loadu_ps(r[j] + d), b = _mm256_loadu_ps(r[j + 1] + d);
            t[j] = _mm256_unpacklo_ps(a, b);     /* a0 b0 a1 b1 | a4 b4 a5 b5 */
            t[j + 1] = _mm256_unpackhi_ps(a, b); /* a2 b2 a3 b3 | a6 b6 a7 b7 */
        }
        for (int h = 0; h < 8; h += 4) { /* rows h..h+3 */
            s[h] = _mm256_shuffle_ps(t[h], t[h + 2], _MM_SHUFFLE(1, 0, 1, 0));     /* column 0 | 4 */
            s[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], _MM_SHUFFLE(3, 2, 3, 2)); /* 1 | 5 */
            s[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], _MM_SHUFFLE(1, 0, 1, 0)); /* 2 | 6 */
            s[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], _MM_SHUFFLE(3, 2, 3, 2)); /* 3 | 7 */
        }
        for (int c = 0; c < 4; c++) {
            _mm256_storeu_ps(dst + (size_t)(d + c) * stride, _mm256_permute2f128_ps(s[c], s[c + 4], 0x20));
            _mm256_storeu_ps(dst + (size_t)(d + c + 4) * stride, _mm256_permute2f128_ps(s[c], s[c + 4], 0x31));
        }
    }
    for (; d < n; d++)
        for (int j = 0; j < 8; j++) dst[(size_t)d * stride + (size_t)j] = r[j][d];
}

/* The avx512 path runs these same ops but its softmax and erf GELU
   (ops_avx512.c, bit-identical to softmax_avx2 and gelu_erf_avx2). */
#define AVX2_OPS                      \
    .rmsnorm = rmsnorm_avx2, \
    .silu_mul = silu_mul_avx2, \
    .gelu_mul = gelu_mul_avx2, \
    .rope = rope_avx2, \
    .dot_f32 = dot_f32_avx2, \
    .axpy_f32 = axpy_f32_avx2, \
    .add_f32 = add_f32_avx2, \
    .transpose8 = transpose8_avx2, \
    .dot_f32_segments = mllm_dot_f32_segments_avx2
static const mllm_cpu_ops g_avx2 = {.name = "avx2", .softmax = softmax_avx2, .gelu_erf = gelu_erf_avx2, AVX2_OPS};
static const mllm_cpu_ops g_avx512 = {
    .name = "avx512", .softmax = mllm_softmax_avx512, .gelu_erf = mllm_gelu_erf_avx512, AVX2_OPS};

const mllm_cpu_ops *mllm_cpu_ops_avx2(void) { return mllm_cpu_features_avx2_path() ? &g_avx2 : NULL; }
const mllm_cpu_ops *mllm_cpu_ops_avx512(void) { return mllm_cpu_features_avx512_path() ? &g_avx512 : NULL; }
