/* Row ops, the vectorised expf, the activation quantizers and the MLLM_CPU
   override. Tolerances (normalised MSE):
     generic ops vs a double-precision reference: < 1e-12;
     AVX2 ops vs generic: rmsnorm, add, axpy, dot, rope < 1e-12 (order or FMA
       rounding only); silu_mul, gelu_mul, softmax < 1e-12 (expf approximation, ~2 ulp);
     AVX2 gelu_erf vs generic (libm erff): NMSE < 1e-12 on random rows, and
       on a dense sweep of [-10, 10] max |diff| < 2e-7 * max(1, |x|);
     AVX2 expf vs libm expf: max relative error < 5e-7 on [-87, 88];
     activation quantizers: AVX2 bytes == generic bytes, exactly;
     sum_exp (the log-softmax normaliser): AVX2's double exp vs libm exp,
       one term at a time on [-708, 0], max relative error < 4e-16 (2 ulp);
       whole sums vs the generic loop, relative error < n * 2.3e-16 (the
       bound on either summation order's rounding). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "core/dtype.h"
#include "testutil.h"

static const int k_sizes[] = {1, 7, 8, 31, 64, 100, 4096, 4103};
#define NSIZES ((int)(sizeof k_sizes / sizeof k_sizes[0]))

static float *rnd(int n, uint64_t seed, float scale) {
    float *x = malloc((size_t)n * sizeof(float) + 4);
    tu_fill_random(x, (size_t)n, seed);
    for (int i = 0; i < n; i++) x[i] *= scale;
    return x;
}

static float *copy(const float *x, int n) {
    float *y = malloc((size_t)n * sizeof(float) + 4);
    memcpy(y, x, (size_t)n * sizeof(float));
    return y;
}

static void expect_close(const float *got, const float *ref, int n, double tol, const char *what) {
    const double e = tu_nmse(got, ref, (size_t)n);
    if (e > tol) printf("%s n=%d: nmse %.3g > %.0e\n", what, n, e, tol);
    assert_true(e <= tol);
}

static void test_generic_vs_double(void **state) {
    (void)state;
    const mllm_cpu_ops *g = mllm_cpu_ops_generic();
    for (int si = 0; si < NSIZES; si++) {
        const int n = k_sizes[si];
        float *x = rnd(n, 1 + si, 3.0f), *w = rnd(n, 50 + si, 1.0f), *u = rnd(n, 99 + si, 2.0f);
        float *y = malloc((size_t)n * sizeof(float)), *ref = malloc((size_t)n * sizeof(float));
        /* rmsnorm */
        double ss = 0;
        for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
        const double sc = 1.0 / sqrt(ss / n + 1e-5);
        g->rmsnorm(y, x, w, n, 1e-5f);
        for (int i = 0; i < n; i++) ref[i] = (float)(x[i] * sc * w[i]);
        expect_close(y, ref, n, 1e-12, "rmsnorm");
        g->rmsnorm(y, x, NULL, n, 1e-5f);
        for (int i = 0; i < n; i++) ref[i] = (float)(x[i] * sc);
        expect_close(y, ref, n, 1e-12, "rmsnorm (no weight)");
        /* silu_mul */
        g->silu_mul(y, x, u, n);
        for (int i = 0; i < n; i++) ref[i] = (float)(x[i] / (1.0 + exp(-(double)x[i])) * u[i]);
        expect_close(y, ref, n, 1e-12, "silu_mul");
        /* gelu_mul: tanh GELU, against the double formula */
        g->gelu_mul(y, x, u, n);
        for (int i = 0; i < n; i++) {
            const double xd = x[i];
            ref[i] = (float)(0.5 * xd * (1.0 + tanh(sqrt(2.0 / M_PI) * (xd + 0.044715 * xd * xd * xd))) * u[i]);
        }
        expect_close(y, ref, n, 1e-12, "gelu_mul");
        /* softmax with scale */
        float *s = copy(x, n);
        g->softmax(s, n, 0.7f);
        double mx = -INFINITY, sum = 0;
        for (int i = 0; i < n; i++) mx = fmax(mx, 0.7 * x[i]);
        for (int i = 0; i < n; i++) sum += exp(0.7 * x[i] - mx);
        for (int i = 0; i < n; i++) ref[i] = (float)(exp(0.7 * x[i] - mx) / sum);
        expect_close(s, ref, n, 1e-12, "softmax");
        /* dot, axpy, add */
        double d = 0;
        for (int i = 0; i < n; i++) d += (double)x[i] * w[i];
        const float dg = g->dot_f32(x, w, n), dr = (float)d;
        expect_close(&dg, &dr, 1, 1e-12, "dot_f32");
        float *a = copy(u, n);
        g->axpy_f32(a, 0.3f, x, n);
        for (int i = 0; i < n; i++) ref[i] = (float)(u[i] + 0.3 * x[i]);
        expect_close(a, ref, n, 1e-12, "axpy_f32");
        g->add_f32(y, x, u, n);
        for (int i = 0; i < n; i++) ref[i] = (float)((double)x[i] + u[i]);
        expect_close(y, ref, n, 0.0, "add_f32");
        free(x), free(w), free(u), free(y), free(ref), free(s), free(a);
    }
}

/* Masked softmax: -inf entries give exactly 0; an all-masked row gives 0s. */
static void check_softmax_masked(const mllm_cpu_ops *o) {
    float x[19];
    for (int i = 0; i < 19; i++) x[i] = (i % 3 == 0) ? -INFINITY : (float)i * 0.1f;
    o->softmax(x, 19, 1.0f);
    double sum = 0;
    for (int i = 0; i < 19; i++) {
        if (i % 3 == 0) assert_true(x[i] == 0.0f);
        sum += x[i];
    }
    assert_true(fabs(sum - 1.0) < 1e-6);
    for (int i = 0; i < 19; i++) x[i] = -INFINITY;
    o->softmax(x, 19, 1.0f);
    for (int i = 0; i < 19; i++) assert_true(x[i] == 0.0f);
}

static void test_softmax_masked(void **state) {
    (void)state;
    check_softmax_masked(mllm_cpu_ops_generic());
    if (mllm_cpu_ops_avx2()) check_softmax_masked(mllm_cpu_ops_avx2());
}

/* The avx512 path's softmax against the AVX2 one: bit-identical (memcmp)
   on lengths around its 16- and 8-lane steps, with masked (-inf) entries,
   large and tiny values. */
static void test_softmax_avx512(void **state) {
    (void)state;
    const mllm_cpu_ops *a2 = mllm_cpu_ops_avx2(), *a5 = mllm_cpu_ops_avx512();
    if (!a2 || !a5) {
        printf("SKIPPED avx512 softmax: this CPU has no AVX-512\n");
        return;
    }
    assert_string_equal(a5->name, "avx512");
    /* spread 30 x 0.125 (every x - max above MLLM_EXPF_LO: the lean exp),
       3000 x 0.125 (some below: the clamping one); masked rows, a NaN and
       a +inf take the clamping exp too */
    static const int ns[] = {1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 448, 1500, 1501};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
        for (int mask = 0; mask < 5; mask++) {
            const int n = ns[k];
            float *x = rnd(n, 700 + (uint64_t)n + (uint64_t)mask, mask == 2 ? 3000.0f : 30.0f), *y = copy(x, n);
            if (mask == 1)
                for (int i = 0; i < n; i += 3) x[i] = y[i] = -INFINITY;
            if (mask == 3) x[n / 2] = y[n / 2] = NAN;
            if (mask == 4) x[n - 1] = y[n - 1] = INFINITY;
            a2->softmax(x, n, 0.125f);
            a5->softmax(y, n, 0.125f);
            assert_memory_equal(x, y, (size_t)n * sizeof(float));
            free(x), free(y);
        }
}

static void check_rope(const mllm_cpu_ops *o, int n_rot, bool neox) {
    float *c = malloc((size_t)n_rot / 2 * sizeof(float)), *s = malloc((size_t)n_rot / 2 * sizeof(float));
    for (int i = 0; i < n_rot / 2; i++) {
        const double th = 7.0 * pow(10000.0, -2.0 * i / n_rot);
        c[i] = (float)cos(th), s[i] = (float)sin(th);
    }
    float *x = rnd(n_rot, (uint64_t)n_rot + neox, 1.0f), *y = copy(x, n_rot), *ref = copy(x, n_rot);
    o->rope(y, n_rot, c, s, neox);
    for (int i = 0; i < n_rot / 2; i++) {
        const int i0 = neox ? i : 2 * i, i1 = neox ? i + n_rot / 2 : 2 * i + 1;
        ref[i0] = (float)((double)x[i0] * c[i] - (double)x[i1] * s[i]);
        ref[i1] = (float)((double)x[i0] * s[i] + (double)x[i1] * c[i]);
    }
    expect_close(y, ref, n_rot, 1e-12, neox ? "rope neox" : "rope");
    free(c), free(s), free(x), free(y), free(ref);
}

static void test_rope(void **state) {
    (void)state;
    static const int rots[] = {2, 6, 10, 32, 64, 128};
    for (int i = 0; i < 6; i++) {
        for (int neox = 0; neox < 2; neox++) {
            check_rope(mllm_cpu_ops_generic(), rots[i], neox);
            if (mllm_cpu_ops_avx2()) check_rope(mllm_cpu_ops_avx2(), rots[i], neox);
        }
    }
}

static void test_avx2_vs_generic(void **state) {
    (void)state;
    const mllm_cpu_ops *g = mllm_cpu_ops_generic(), *v = mllm_cpu_ops_avx2();
    if (!v) {
        printf("SKIPPED: this CPU has no AVX2+FMA+F16C\n");
        return;
    }
    for (int si = 0; si < NSIZES; si++) {
        const int n = k_sizes[si];
        float *x = rnd(n, 7 + si, 12.0f), *w = rnd(n, 70 + si, 1.0f), *u = rnd(n, 700 + si, 2.0f);
        float *yg = malloc((size_t)n * sizeof(float)), *yv = malloc((size_t)n * sizeof(float));
        g->rmsnorm(yg, x, w, n, 1e-6f), v->rmsnorm(yv, x, w, n, 1e-6f);
        expect_close(yv, yg, n, 1e-12, "avx2 rmsnorm");
        g->rmsnorm(yg, x, NULL, n, 1e-6f), v->rmsnorm(yv, x, NULL, n, 1e-6f);
        expect_close(yv, yg, n, 1e-12, "avx2 rmsnorm (no weight)");
        g->silu_mul(yg, x, u, n), v->silu_mul(yv, x, u, n);
        expect_close(yv, yg, n, 1e-12, "avx2 silu_mul");
        g->gelu_mul(yg, x, u, n), v->gelu_mul(yv, x, u, n);
        expect_close(yv, yg, n, 1e-12, "avx2 gelu_mul");
        g->gelu_erf(yg, x, n), v->gelu_erf(yv, x, n);
        expect_close(yv, yg, n, 1e-12, "avx2 gelu_erf");
        float *sg = copy(x, n), *sv = copy(x, n);
        g->softmax(sg, n, 0.125f), v->softmax(sv, n, 0.125f);
        expect_close(sv, sg, n, 1e-12, "avx2 softmax");
        const float dg = g->dot_f32(x, w, n), dv = v->dot_f32(x, w, n);
        expect_close(&dv, &dg, 1, 1e-12, "avx2 dot_f32");
        float *ag = copy(u, n), *av = copy(u, n);
        g->axpy_f32(ag, -1.5f, x, n), v->axpy_f32(av, -1.5f, x, n);
        expect_close(av, ag, n, 1e-12, "avx2 axpy_f32");
        g->add_f32(yg, x, u, n), v->add_f32(yv, x, u, n);
        expect_close(yv, yg, n, 0.0, "avx2 add_f32");
        free(x), free(w), free(u), free(yg), free(yv), free(sg), free(sv), free(ag), free(av);
    }
}

static void test_expf_accuracy(void **state) {
    (void)state;
#if !MLLM_HAVE_X86_KERNELS
    printf("SKIPPED: an x86 kernel (this build has none)\n");
#else
    if (!mllm_cpu_has_avx2()) {
        printf("SKIPPED: this CPU has no AVX2+FMA+F16C\n");
        return;
    }
    enum { N = 200000 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) x[i] = -87.0f + 175.0f * (float)i / (float)(N - 1);
    mllm_expf_avx2(x, y, N);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        const double r = exp((double)x[i]);
        worst = fmax(worst, fabs(y[i] - r) / r);
    }
    printf("avx2 expf: max relative error %.3g on [-87, 88]\n", worst);
    assert_true(worst < 5e-7);
    /* Edges: -inf and tiny results give 0, large gives inf, NaN stays NaN. */
    float e[8] = {-INFINITY, -100.0f, -88.0f, 0.0f, 89.0f, INFINITY, NAN, 1.0f}, o[8];
    mllm_expf_avx2(e, o, 8);
    assert_true(o[0] == 0.0f && o[1] == 0.0f && o[2] == 0.0f);
    assert_true(o[3] == 1.0f);
    assert_true(isinf(o[4]) && isinf(o[5]));
    assert_true(isnan(o[6]));
    assert_true(fabsf(o[7] - 2.7182817f) < 1e-6f);
    free(x), free(y);
#endif
}

/* The vector erf GELU against libm's erff on a dense sweep, with the edges. */
static void test_gelu_erf_sweep(void **state) {
    (void)state;
    const mllm_cpu_ops *g = mllm_cpu_ops_generic(), *v = mllm_cpu_ops_avx2();
    if (!v) {
        printf("SKIPPED: this CPU has no AVX2+FMA+F16C\n");
        return;
    }
    enum { N = 100000 };
    float *x = malloc(N * sizeof(float)), *yg = malloc(N * sizeof(float)), *yv = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) x[i] = -10.0f + 20.0f * (float)i / (float)(N - 1);
    g->gelu_erf(yg, x, N), v->gelu_erf(yv, x, N);
    double worst = 0;
    for (int i = 0; i < N; i++) worst = fmax(worst, fabs((double)yv[i] - yg[i]) / fmax(1.0, fabs(x[i])));
    const double e = tu_nmse(yv, yg, N);
    printf("avx2 gelu_erf on [-10, 10]: NMSE %.3g, max |diff| / max(1, |x|) %.3g\n", e, worst);
    assert_true(e < 1e-12);
    assert_true(worst < 2e-7);
    float edge[8] = {-20.0f, -100.0f, 0.0f, -0.0f, 100.0f, INFINITY, NAN, 1.0f}, o[8];
    v->gelu_erf(o, edge, 8);
    assert_true(o[0] == 0.0f && o[1] == 0.0f && o[2] == 0.0f && o[3] == 0.0f);
    assert_true(o[4] == 100.0f && isinf(o[5]) && o[5] > 0 && isnan(o[6]));
    assert_true(fabsf(o[7] - 0.8413447f) < 1e-6f);
    free(x), free(yg), free(yv);
}

/* Activation quantizers: llama.cpp's run-time rounding (half to even) vs the
   GGUF reference quantizer (half away from zero), and AVX2 == generic. */
static void test_activation_quantizers(void **state) {
    (void)state;
    /* amax = 127 makes id = 1 exactly, so 2.5 and -3.5 are true ties. */
    float x[32] = {127.0f, 2.5f, -3.5f, 0.5f, 1.5f};
    mllm_block_q8_0 ref, act;
    mllm_quantize_row_q8_0(x, &ref, 32);
    mllm_quantize_row_q8_0_act_generic(x, &act, 32);
    assert_int_equal(ref.qs[1], 3), assert_int_equal(act.qs[1], 2);
    assert_int_equal(ref.qs[2], -4), assert_int_equal(act.qs[2], -4);
    assert_int_equal(ref.qs[3], 1), assert_int_equal(act.qs[3], 0);
    assert_int_equal(ref.qs[4], 2), assert_int_equal(act.qs[4], 2);
    assert_int_equal(ref.d, act.d);
    assert_int_equal(act.d, 0x3c00); /* d = 1 */
#if MLLM_HAVE_X86_KERNELS
    if (!mllm_cpu_has_avx2()) {
        printf("SKIPPED (AVX2 part): this CPU has no AVX2+FMA+F16C\n");
        return;
    }
    mllm_quantize_row_q8_0_act_avx2(x, &ref, 32);
    assert_memory_equal(&ref, &act, sizeof act);
    enum { N = 32 * 257 };
    float *v = rnd(N, 3, 5.0f);
    for (int i = 0; i < 64; i++) v[i] = 0.0f; /* two all-zero blocks */
    for (int i = 100; i < N; i += 97) v[i] *= 40.0f; /* outliers */
    const size_t sz = mllm_dtype_row_size(MLLM_DTYPE_Q8_1, N);
    char *a = malloc((size_t)N * 2), *b = malloc((size_t)N * 2); /* f16 row is the largest */
    mllm_quantize_row_q8_0_act_generic(v, a, N);
    mllm_quantize_row_q8_0_act_avx2(v, b, N);
    assert_memory_equal(a, b, mllm_dtype_row_size(MLLM_DTYPE_Q8_0, N));
    mllm_quantize_row_q8_1_act_generic(v, a, N);
    mllm_quantize_row_q8_1_act_avx2(v, b, N);
    assert_memory_equal(a, b, sz);
    /* f16 activations: hardware conversion == our exact RNE conversion. */
    mllm_row_float_to_f16(v, a, N);
    mllm_row_float_to_f16_avx2(v, b, N);
    assert_memory_equal(a, b, (size_t)N * 2);
    free(v), free(a), free(b);
#else
    printf("SKIPPED (AVX2 part): an x86 kernel (this build has none)\n");
#endif
}

/* Runs mllm_cpu_path() in a child with MLLM_CPU=want; returns its choice. */
static int child_path(const char *want) {
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        setenv("MLLM_CPU", want, 1);
        const int p = mllm_cpu_isa_parse(mllm_cpu_path());
        _exit(p < 0 ? 99 : p);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void test_dispatch_override(void **state) {
    (void)state;
    /* the best path this CPU and build run: the order of cpu_dispatch.c */
    const mllm_cpu_isa order[] = {MLLM_CPU_ISA_AVX512, MLLM_CPU_ISA_AVX2, MLLM_CPU_ISA_NEON_I8MM,
                                  MLLM_CPU_ISA_NEON_DOTPROD, MLLM_CPU_ISA_NEON};
    int best = MLLM_CPU_ISA_GENERIC;
    for (int i = 4; i >= 0; i--)
        if (mllm_cpu_isa_available(order[i])) best = order[i];
    printf("best path: %s\n", mllm_cpu_isa_name((mllm_cpu_isa)best));
    assert_int_equal(child_path("generic"), MLLM_CPU_ISA_GENERIC);
    /* every named path: itself where it runs, else the best (with a warning) */
    for (int i = 1; i < MLLM_CPU_ISA_COUNT; i++) {
        const mllm_cpu_isa isa = (mllm_cpu_isa)i;
        assert_int_equal(child_path(mllm_cpu_isa_name(isa)), mllm_cpu_isa_available(isa) ? i : best);
    }
    assert_int_equal(child_path("bogus"), best); /* warns */
#if MLLM_HAVE_X86_KERNELS
    assert_false(mllm_cpu_isa_available(MLLM_CPU_ISA_NEON));
#endif
#if MLLM_HAVE_ARM_KERNELS
    assert_true(mllm_cpu_isa_available(MLLM_CPU_ISA_NEON)); /* baseline on arm64 */
    assert_false(mllm_cpu_isa_available(MLLM_CPU_ISA_AVX2));
#endif
    assert_non_null(mllm_cpu_ops_get());
    /* one NEON ops table serves the three arm64 paths */
    assert_string_equal(mllm_cpu_ops_get()->name, mllm_cpu_isa_is_arm(mllm_cpu_isa_get()) ? "neon" : mllm_cpu_path());
}

/* mllm_cpu_sum_exp's AVX2 path against the generic loop (libm exp, index
   order): single terms on a dense sweep (the exp itself), then sums over
   odd lengths with -inf entries and every split point kind. */
static void test_sum_exp(void **state) {
    (void)state;
#if !MLLM_HAVE_X86_KERNELS
    printf("SKIPPED: an x86 kernel (this build has none)\n");
#else
    if (!mllm_cpu_has_avx2()) {
        printf("SKIPPED: this CPU has no AVX2+FMA+F16C\n");
        return;
    }
    double worst = 0;
    for (int i = 0; i <= 200000; i++) {
        const float x = -708.0f * (float)i / 200000.0f;
        const double r = exp((double)x), g = mllm_sum_exp_avx2(&x, 1, 0.0f, 1, NULL);
        worst = fmax(worst, fabs(g - r) / r);
    }
    printf("avx2 double exp: max relative error %.3g on [-708, 0]\n", worst);
    assert_true(worst < 4e-16);
    /* edges: -inf adds 0; far below the max 0 (under DBL_MIN); NaN stays NaN */
    const float e[4] = {-INFINITY, -800.0f, 0.0f, -INFINITY};
    double ts = -1;
    assert_true(mllm_sum_exp_avx2(e, 4, 0.0f, 2, &ts) == 1.0 && ts == 1.0);
    const float nan1[3] = {0.0f, NAN, -1.0f};
    assert_true(isnan(mllm_sum_exp_avx2(nan1, 3, 0.0f, 3, NULL)));
    /* all -inf (mx -inf): the dispatcher gives the generic loop's 0 */
    const float ninf[5] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    assert_true(mllm_cpu_sum_exp(ninf, 5, -INFINITY, 2, &ts) == 0.0 && ts == 0.0);
    static const int ns[] = {1, 7, 8, 9, 1001, 51864};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
        const int n = ns[ni];
        float *x = malloc((size_t)n * sizeof(float));
        tu_fill_random(x, (size_t)n, 100 + ni);
        float mx = -INFINITY;
        for (int i = 0; i < n; i++) {
            x[i] = i % 13 == 5 ? -INFINITY : x[i] * 15.0f - 5.0f; /* logits-like, some suppressed */
            mx = x[i] > mx ? x[i] : mx;
        }
        const int froms[] = {0, n / 3, n - 1, n};
        for (int fi = 0; fi < 4; fi++) {
            double tg = 0, tv = 0;
            const double g = mllm_sum_exp_generic(x, n, mx, froms[fi], &tg);
            const double v = mllm_sum_exp_avx2(x, n, mx, froms[fi], &tv);
            /* positive terms: either order's rounding is within n ulp of the sum */
            const double tol = (double)n * 2.3e-16;
            assert_true(fabs(v - g) <= tol * g);
            assert_true(fabs(tv - tg) <= tol * tg);
        }
        free(x);
    }
#endif
}

/* The avx512 path's erf GELU against the AVX2 one: bit-identical (memcmp)
   on lengths around its 16- and 8-lane steps, with both signs, large |x|
   (exp underflow: x and -0), zeros and a NaN. */
static void test_gelu_erf_avx512(void **state) {
    (void)state;
    const mllm_cpu_ops *a2 = mllm_cpu_ops_avx2(), *a5 = mllm_cpu_ops_avx512();
    if (!a2 || !a5) {
        printf("SKIPPED avx512 gelu_erf: this CPU has no AVX-512\n");
        return;
    }
    static const int ns[] = {1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 96, 1536, 1539};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        const int n = ns[k];
        float *x = rnd(n, 900 + (uint64_t)n, 8.0f), *y2 = malloc((size_t)n * sizeof(float) + 4);
        float *y5 = malloc((size_t)n * sizeof(float) + 4);
        x[0] = n > 2 ? -30.0f : x[0];
        if (n > 3) x[1] = 30.0f, x[2] = 0.0f, x[3] = -0.0f;
        if (n > 9) x[9] = NAN;
        a2->gelu_erf(y2, x, n);
        a5->gelu_erf(y5, x, n);
        assert_memory_equal(y2, y5, (size_t)n * sizeof(float));
        free(x), free(y2), free(y5);
    }
}

/* transpose8 of every table against the definition, byte for byte (it
   moves values: NaN payloads and -0 too), on odd lengths and strides, with
   the cells around each column untouched. */
static void test_transpose8(void **state) {
    (void)state;
    const mllm_cpu_ops *tabs[] = {mllm_cpu_ops_generic(), mllm_cpu_ops_avx2(), mllm_cpu_ops_avx512(), mllm_cpu_ops_get()};
    static float src[8][131], dst[131 * 21], want[131 * 21];
    for (int j = 0; j < 8; j++)
        for (int d = 0; d < 131; d++) src[j][d] = (float)(j * 1000 + d) * (d % 7 == 3 ? -1.0f : 1.0f);
    src[3][5] = -0.0f;
    src[6][70] = NAN;
    const float *rows[8];
    for (int j = 0; j < 8; j++) rows[j] = src[j];
    const int ns[] = {1, 7, 8, 9, 16, 63, 64, 65, 131};
    const size_t strides[] = {8, 13, 21};
    for (size_t t = 0; t < sizeof tabs / sizeof tabs[0]; t++) {
        if (!tabs[t]) continue;
        assert_non_null(tabs[t]->transpose8);
        for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
            for (size_t b = 0; b < sizeof strides / sizeof strides[0]; b++) {
                const int n = ns[a];
                const size_t st = strides[b];
                memset(dst, 0x5a, sizeof dst);
                memset(want, 0x5a, sizeof want);
                for (int d = 0; d < n; d++)
                    for (int j = 0; j < 8; j++) memcpy(&want[(size_t)d * st + (size_t)j], &src[j][d], sizeof(float));
                tabs[t]->transpose8(dst, st, rows, n);
                assert_memory_equal(dst, want, sizeof dst);
            }
    }
}

/* dot_f32_segments against the f32 matmul over the gathered matrix (zeros
   for NULL segments and from n_valid on), byte for byte, on odd row counts,
   1 to 7 vectors, segment lengths from 8 to 256, partial last steps and
   NULL segments. The x86 and NEON tables have it (each mirrors its path's
   f32 matmul); the generic table does not (wasm's f32 matmul is simd128's
   dot under it), and its callers gather. */
static void test_dot_f32_segments(void **state) {
    (void)state;
    assert_null(mllm_cpu_ops_generic()->dot_f32_segments);
    if (!mllm_cpu_ops_get()->dot_f32_segments) {
        printf("SKIPPED: the %s path has no dot_f32_segments\n", mllm_cpu_path());
        return;
    }
    const mllm_cpu_ops *tabs[] = {mllm_cpu_ops_avx2(), mllm_cpu_ops_avx512(), mllm_cpu_ops_get()};
    enum { NMAX = 256, DMAX = 67, SEGMAX = 32, PMAX = 7, PSTRIDE = NMAX + 3, OSTRIDE = DMAX + 2 };
    static float pool[SEGMAX][DMAX * (NMAX + 8)], mat[DMAX * NMAX], p[PMAX * PSTRIDE], want[PMAX * OSTRIDE],
        got[PMAX * OSTRIDE];
    tu_fill_random(&pool[0][0], sizeof pool / sizeof(float), 41);
    tu_fill_random(p, sizeof p / sizeof(float), 42);
    const int Ds[] = {1, 3, 4, 5, 12, 64, 67}, segs_len[] = {8, 16, 24, 32, 256}, ns[] = {8, 16, 40, 256};
    const int nps[] = {1, 2, 3, 4, 7};
    for (size_t t = 0; t < sizeof tabs / sizeof tabs[0]; t++) {
        if (!tabs[t]) continue;
        assert_non_null(tabs[t]->dot_f32_segments);
        for (size_t a = 0; a < sizeof Ds / sizeof Ds[0]; a++)
            for (size_t b = 0; b < sizeof segs_len / sizeof segs_len[0]; b++)
                for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
                    const int D = Ds[a], seg = segs_len[b], n = ns[c], np = nps[(a + b + c) % 5];
                    const size_t dst = (size_t)seg + 5; /* a row stride past the segment */
                    const int nvs[] = {n, n - 1, n - 7, 1, n / 2 + 3};
                    for (size_t e = 0; e < sizeof nvs / sizeof nvs[0]; e++) {
                        const int nv = nvs[e];
                        const float *segs[NMAX / 8];
                        for (int s = 0; s * seg < n; s++) segs[s] = s % 3 == 1 ? NULL : pool[s % SEGMAX];
                        for (int d = 0; d < D; d++)
                            for (int j = 0; j < n; j++) {
                                const float *sg = segs[j / seg];
                                mat[(size_t)d * n + j] = !sg || j >= nv ? 0.0f : sg[(size_t)d * dst + (size_t)(j % seg)];
                            }
                        memset(want, 0x5a, sizeof want);
                        memset(got, 0x5a, sizeof got);
                        mllm_cpu_mul_mat(MLLM_DTYPE_F32, mat, (size_t)n * sizeof(float), n, p, PSTRIDE * sizeof(float), np,
                                         want, OSTRIDE, 0, D);
                        tabs[t]->dot_f32_segments(got, OSTRIDE, D, segs, dst, seg, n, nv, p, PSTRIDE, np);
                        assert_memory_equal(got, want, sizeof got);
                    }
                }
    }
}

/* The f32 matmul of this CPU's path gives the same bits when zeros are
   appended to both operands (from a multiple of 8 values to a longer
   one): the causal attention pads P x V with zeros to a length that
   depends on the batch (its block of query tokens), so a token's output
   stays the same bits whatever came in its batch. */
static void test_f32_matmul_zero_padding(void **state) {
    (void)state;
    enum { NMAX = 272, ROWS = 7 };
    static float w[ROWS * NMAX], x[NMAX], y0[ROWS], y1[ROWS];
    for (int n = 8; n + 8 <= NMAX; n += 8)
        for (int pad = 8; n + pad <= NMAX; pad += 8) {
            tu_fill_random(w, ROWS * NMAX, (uint64_t)n);
            tu_fill_random(x, NMAX, (uint64_t)n + 1);
            for (int r = 0; r < ROWS; r++)
                for (int j = n; j < NMAX; j++) w[r * NMAX + j] = 0.0f;
            for (int j = n; j < NMAX; j++) x[j] = 0.0f;
            mllm_cpu_mul_mat(MLLM_DTYPE_F32, w, NMAX * sizeof(float), n, x, 0, 1, y0, ROWS, 0, ROWS);
            mllm_cpu_mul_mat(MLLM_DTYPE_F32, w, NMAX * sizeof(float), n + pad, x, 0, 1, y1, ROWS, 0, ROWS);
            assert_memory_equal(y0, y1, sizeof y0);
        }
}

int main(void) {
    /* The override test forks before this process picks its own path. */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch_override),
        cmocka_unit_test(test_generic_vs_double),     cmocka_unit_test(test_softmax_masked),
        cmocka_unit_test(test_softmax_avx512),
        cmocka_unit_test(test_rope),                  cmocka_unit_test(test_avx2_vs_generic),
        cmocka_unit_test(test_expf_accuracy),
        cmocka_unit_test(test_gelu_erf_sweep),         cmocka_unit_test(test_activation_quantizers),
        cmocka_unit_test(test_sum_exp),                cmocka_unit_test(test_gelu_erf_avx512),
        cmocka_unit_test(test_transpose8),             cmocka_unit_test(test_dot_f32_segments),
        cmocka_unit_test(test_f32_matmul_zero_padding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
