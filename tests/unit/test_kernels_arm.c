/* The arm64 kernels (src/backends/cpu/arm) against the generic C ones, per
   variant: NEON (every arm64 CPU), NEON+dotprod (SDOT) and NEON+i8mm
   (SMMLA), each run where the CPU has it (under qemu: QEMU_CPU=max has all
   three, cortex-a57 only NEON; scripts/test.sh runs both). Odd sizes
   throughout. Bounds:
     quantized dots (q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K) and the i8mm
       matmuls: equal to the generic result bit for bit (exact int32 block
       sums, the generic float steps in the generic order), so NMSE 0;
     float dots (f32, f16, bf16): NMSE < 1e-10 vs generic (4-lane order);
     ops: rmsnorm, silu_mul, gelu_mul, softmax, rope, dot, axpy: NMSE < 1e-12
       vs generic, add exact; gelu_erf NMSE < 1e-12 on [-10, 10]; the NEON
       expf: max relative error < 5e-7 vs exp() on [-87, 88];
     activation quantizers (q8_0, q8_1, q8_K32, f16): the generic bytes;
     f16 / bf16 row widening: to_float's values exactly.
   On other architectures the test prints SKIPPED. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/kquants.h"
#include "backends/cpu.h"
#include "core/dtype.h"
#include "testutil.h"

#if MLLM_HAVE_ARM_KERNELS
#include "backends/cpu/arm/arm_kernels.h"

typedef struct {
    const char *name;
    mllm_cpu_isa isa;
} variant;

static const variant k_variants[] = {{"neon", MLLM_CPU_ISA_NEON},
                                     {"neon-dotprod", MLLM_CPU_ISA_NEON_DOTPROD},
                                     {"neon-i8mm", MLLM_CPU_ISA_NEON_I8MM}};

/* n values as activations of type vt, the generic (reference) way. */
static void quantize_act_generic(mllm_dtype vt, const float *x, void *y, int64_t n) {
    switch (vt) {
    case MLLM_DTYPE_Q8_0: mllm_quantize_row_q8_0_act_generic(x, y, n); break;
    case MLLM_DTYPE_Q8_1: mllm_quantize_row_q8_1_act_generic(x, y, n); break;
    case MLLM_DTYPE_Q8_K32: mllm_quantize_row_q8_k32_generic(x, y, n); break;
    case MLLM_DTYPE_F16: mllm_row_float_to_f16(x, y, n); break;
    default: mllm_cpu_type_get(vt)->from_float(x, y, n);
    }
}

static void *make_row(mllm_dtype t, int64_t n, uint64_t seed, bool act) {
    float *src = malloc((size_t)n * sizeof(float));
    tu_fill_random(src, (size_t)n, seed);
    if (seed % 3 == 0) src[n / 2] *= 30.0f; /* an outlier in some rows */
    void *q = malloc(mllm_dtype_row_size(t, n) + 64);
    if (act) quantize_act_generic(t, src, q, n);
    else mllm_cpu_type_get(t)->from_float(src, q, n);
    free(src);
    return q;
}

static const mllm_dtype k_int_types[] = {MLLM_DTYPE_Q8_0, MLLM_DTYPE_Q4_0, MLLM_DTYPE_Q4_1, MLLM_DTYPE_Q5_0,
                                         MLLM_DTYPE_Q5_1, MLLM_DTYPE_Q4_K, MLLM_DTYPE_Q5_K, MLLM_DTYPE_Q6_K};
enum { N_INT = sizeof k_int_types / sizeof k_int_types[0] };
static const mllm_dtype k_float_types[] = {MLLM_DTYPE_F32, MLLM_DTYPE_F16, MLLM_DTYPE_BF16};

static void test_vec_dots(void **state) {
    (void)state;
    int ran = 0;
    for (size_t v = 0; v < sizeof k_variants / sizeof k_variants[0]; v++) {
        if (!mllm_cpu_isa_available(k_variants[v].isa)) {
            printf("SKIPPED %s: this CPU does not have it\n", k_variants[v].name);
            continue;
        }
        for (size_t ti = 0; ti < N_INT + 3; ti++) {
            const bool q = ti < N_INT;
            const mllm_dtype t = q ? k_int_types[ti] : k_float_types[ti - N_INT];
            const mllm_dtype vt = mllm_dtype_get(t)->vec_dot_type;
            const int bs = mllm_dtype_get(t)->block_size;
            const int lens_q[] = {1, 3, 7, 17}, lens_f[] = {1, 3, 5, 17, 33, 1001};
            const int nl = q ? 4 : 6;
            const mllm_vec_dot_fn gen = mllm_cpu_vec_dot_for(t, "generic"), simd = mllm_vec_dot_arm(t, k_variants[v].isa);
            assert_non_null(simd);
            assert_true(mllm_cpu_vec_dot_for(t, k_variants[v].name) == simd);
            for (int li = 0; li < nl; li++) {
                const int n = q ? bs * lens_q[li] : lens_f[li];
                enum { TRIALS = 12 };
                float g[TRIALS], s[TRIALS];
                for (int k = 0; k < TRIALS; k++) {
                    void *x = make_row(t, n, 100 + (uint64_t)k, false), *y = make_row(vt, n, 500 + (uint64_t)k, true);
                    gen(n, &g[k], x, y);
                    simd(n, &s[k], x, y);
                    free(x), free(y);
                }
                const double e = tu_nmse(s, g, TRIALS);
                if (q) {
                    if (memcmp(s, g, sizeof g) != 0) printf("%s %s n=%d: not bit-equal, nmse %.3g\n", k_variants[v].name, mllm_dtype_name(t), n, e);
                    assert_memory_equal(s, g, sizeof g);
                } else {
                    if (e >= 1e-10) printf("%s %s n=%d: nmse %.3g (bound 1e-10)\n", k_variants[v].name, mllm_dtype_name(t), n, e);
                    assert_true(e < 1e-10);
                }
            }
        }
        printf("%s: vec_dot of q8_0 q4_0 q4_1 q5_0 q5_1 q4_K q5_K q6_K (bit-equal) f32 f16 bf16 (nmse < 1e-10) ok\n",
               k_variants[v].name);
        ran++;
    }
    assert_true(ran >= 1); /* NEON is baseline */
}

/* The SMMLA matmul vs the plain generic loop: every output bit-equal, odd
   row ranges and odd activation counts, untouched outside [r0, r1). */
static void test_mul_mat_i8mm(void **state) {
    (void)state;
    if (!mllm_cpu_isa_available(MLLM_CPU_ISA_NEON_I8MM)) {
        printf("SKIPPED neon-i8mm matmul: this CPU has no i8mm\n");
        return;
    }
    const mllm_dtype types[] = {MLLM_DTYPE_Q8_0, MLLM_DTYPE_Q4_0, MLLM_DTYPE_Q4_1};
    const int64_t Ks[] = {32, 96, 544}, Ms[] = {2, 3, 5, 8};
    const int64_t ranges[][2] = {{0, 19}, {3, 8}, {1, 2}};
    for (int ti = 0; ti < 3; ti++) {
        const mllm_dtype t = types[ti], vt = mllm_dtype_get(t)->vec_dot_type;
        for (int ki = 0; ki < 3; ki++) {
            for (int mi = 0; mi < 4; mi++) {
                for (int ri = 0; ri < 3; ri++) {
                    const int64_t K = Ks[ki], M = Ms[mi], N = 19, r0 = ranges[ri][0], r1 = ranges[ri][1];
                    const size_t ws = mllm_dtype_row_size(t, K), xs = mllm_dtype_row_size(vt, K) + 2;
                    char *W = malloc((size_t)N * ws), *X = malloc((size_t)M * xs);
                    for (int64_t r = 0; r < N; r++) {
                        void *row = make_row(t, K, 700 + (uint64_t)r, false);
                        memcpy(W + (size_t)r * ws, row, ws), free(row);
                    }
                    for (int64_t m = 0; m < M; m++) {
                        void *row = make_row(vt, K, 900 + (uint64_t)m, true);
                        memcpy(X + (size_t)m * xs, row, mllm_dtype_row_size(vt, K)), free(row);
                    }
                    const size_t ys = (size_t)N + 3, ny = (size_t)M * ys;
                    float *ref = malloc(ny * sizeof(float)), *got = malloc(ny * sizeof(float));
                    for (size_t i = 0; i < ny; i++) ref[i] = got[i] = -777.0f;
                    mllm_mul_mat_generic(mllm_cpu_vec_dot_for(t, "generic"), W, ws, K, X, xs, M, ref, ys, r0, r1);
                    assert_true(mllm_mul_mat_i8mm(t, W, ws, K, X, xs, M, got, ys, r0, r1));
                    if (memcmp(ref, got, ny * sizeof(float)) != 0)
                        printf("i8mm %s K=%lld M=%lld [%lld,%lld): nmse %.3g\n", mllm_dtype_name(t), (long long)K,
                               (long long)M, (long long)r0, (long long)r1, tu_nmse(got, ref, ny));
                    assert_memory_equal(ref, got, ny * sizeof(float));
                    free(W), free(X), free(ref), free(got);
                }
            }
        }
    }
    printf("neon-i8mm: q8_0 / q4_0 / q4_1 matmuls bit-equal to the generic loop\n");
}

static void expect_close(const float *a, const float *b, int n, double tol, const char *what) {
    const double e = tu_nmse(a, b, (size_t)n);
    if (!(e <= tol)) printf("%s: nmse %.3g (bound %.3g)\n", what, e, tol);
    assert_true(e <= tol);
}

static void test_ops(void **state) {
    (void)state;
    const mllm_cpu_ops *g = mllm_cpu_ops_generic(), *v = mllm_cpu_ops_neon();
    assert_string_equal(v->name, "neon");
    const int sizes[] = {1, 3, 7, 33, 257, 1001};
    for (int si = 0; si < 6; si++) {
        const int n = sizes[si];
        float *x = malloc((size_t)n * 4), *w = malloc((size_t)n * 4), *u = malloc((size_t)n * 4);
        float *yg = malloc((size_t)n * 4), *yv = malloc((size_t)n * 4);
        tu_fill_random(x, (size_t)n, 11 + (uint64_t)n), tu_fill_random(w, (size_t)n, 12), tu_fill_random(u, (size_t)n, 13);
        for (int i = 0; i < n; i++) x[i] *= 4.0f;
        g->rmsnorm(yg, x, w, n, 1e-6f), v->rmsnorm(yv, x, w, n, 1e-6f);
        expect_close(yv, yg, n, 1e-12, "neon rmsnorm");
        g->rmsnorm(yg, x, NULL, n, 1e-6f), v->rmsnorm(yv, x, NULL, n, 1e-6f);
        expect_close(yv, yg, n, 1e-12, "neon rmsnorm (no weight)");
        g->silu_mul(yg, x, u, n), v->silu_mul(yv, x, u, n);
        expect_close(yv, yg, n, 1e-12, "neon silu_mul");
        g->gelu_mul(yg, x, u, n), v->gelu_mul(yv, x, u, n);
        expect_close(yv, yg, n, 1e-12, "neon gelu_mul");
        g->gelu_erf(yg, x, n), v->gelu_erf(yv, x, n);
        expect_close(yv, yg, n, 1e-12, "neon gelu_erf");
        memcpy(yg, x, (size_t)n * 4), memcpy(yv, x, (size_t)n * 4);
        if (n > 3) yg[2] = yv[2] = -INFINITY; /* a masked entry */
        g->softmax(yg, n, 0.125f), v->softmax(yv, n, 0.125f);
        expect_close(yv, yg, n, 1e-12, "neon softmax");
        const float dg = g->dot_f32(x, w, n), dv = v->dot_f32(x, w, n);
        expect_close(&dv, &dg, 1, 1e-12, "neon dot_f32");
        memcpy(yg, u, (size_t)n * 4), memcpy(yv, u, (size_t)n * 4);
        g->axpy_f32(yg, 0.37f, x, n), v->axpy_f32(yv, 0.37f, x, n);
        expect_close(yv, yg, n, 1e-12, "neon axpy_f32");
        g->add_f32(yg, x, u, n), v->add_f32(yv, x, u, n);
        expect_close(yv, yg, n, 0.0, "neon add_f32");
        free(x), free(w), free(u), free(yg), free(yv);
    }
    /* rope, both pairings, odd rotation widths */
    const int rots[] = {2, 6, 10, 64, 66};
    for (int ri = 0; ri < 5; ri++) {
        for (int neox = 0; neox < 2; neox++) {
            const int nr = rots[ri], h = nr / 2;
            float xg[80], xv[80], c[40], s[40];
            tu_fill_random(xg, 80, 31 + (uint64_t)nr);
            memcpy(xv, xg, sizeof xg);
            for (int i = 0; i < h; i++) c[i] = cosf(0.3f * (float)i + 0.1f), s[i] = sinf(0.3f * (float)i + 0.1f);
            g->rope(xg, nr, c, s, neox), v->rope(xv, nr, c, s, neox);
            expect_close(xv, xg, 80, 1e-12, "neon rope");
        }
    }
    printf("neon ops: rmsnorm silu_mul gelu_mul gelu_erf softmax dot axpy add rope within bounds\n");
}

static void test_expf_gelu(void **state) {
    (void)state;
    enum { N = 200000 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float)), *yg = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) x[i] = -87.0f + 175.0f * (float)i / (float)(N - 1);
    mllm_expf_neon(x, y, N);
    double worst = 0;
    for (int i = 0; i < N; i++) worst = fmax(worst, fabs(y[i] - exp((double)x[i])) / exp((double)x[i]));
    printf("neon expf: max relative error %.3g on [-87, 88] (bound 5e-7)\n", worst);
    assert_true(worst < 5e-7);
    float e[8] = {-INFINITY, -100.0f, -88.0f, 0.0f, 89.0f, INFINITY, NAN, 1.0f}, o[8];
    mllm_expf_neon(e, o, 8);
    assert_true(o[0] == 0.0f && o[1] == 0.0f && o[2] == 0.0f && o[3] == 1.0f);
    assert_true(isinf(o[4]) && isinf(o[5]) && isnan(o[6]));
    for (int i = 0; i < N; i++) x[i] = -10.0f + 20.0f * (float)i / (float)(N - 1);
    mllm_cpu_ops_generic()->gelu_erf(yg, x, N), mllm_cpu_ops_neon()->gelu_erf(y, x, N);
    const double en = tu_nmse(y, yg, N);
    printf("neon gelu_erf on [-10, 10]: NMSE %.3g (bound 1e-12)\n", en);
    assert_true(en < 1e-12);
    free(x), free(y), free(yg);
}

static void test_quantizers(void **state) {
    (void)state;
    const mllm_dtype types[] = {MLLM_DTYPE_Q8_0, MLLM_DTYPE_Q8_1, MLLM_DTYPE_Q8_K32, MLLM_DTYPE_F16};
    enum { N = 256 * 17 };
    float *v = malloc(N * sizeof(float));
    tu_fill_random(v, N, 3);
    for (int i = 0; i < 64; i++) v[i] = 0.0f;          /* all-zero blocks */
    for (int i = 100; i < N; i += 97) v[i] *= 40.0f;   /* outliers */
    v[200] = 127.0f, v[201] = 2.5f, v[202] = -3.5f;    /* ties (id = 1 in that block) */
    char *a = malloc((size_t)N * 4), *b = malloc((size_t)N * 4);
    for (int ti = 0; ti < 4; ti++) {
        const size_t sz = mllm_dtype_row_size(types[ti], N);
        memset(a, 0x55, sz), memset(b, 0x55, sz);
        quantize_act_generic(types[ti], v, a, N);
        assert_true(mllm_quantize_row_arm(types[ti], v, b, N));
        assert_memory_equal(a, b, sz);
    }
    printf("neon activation quantizers: q8_0 q8_1 q8_K32 f16 give the generic bytes\n");
    /* f16 / bf16 widening: to_float's values exactly, odd length */
    const mllm_dtype wide[] = {MLLM_DTYPE_F16, MLLM_DTYPE_BF16};
    for (int wi = 0; wi < 2; wi++) {
        const int64_t n = 1001;
        mllm_cpu_type_get(wide[wi])->from_float(v, a, n);
        float *fg = malloc((size_t)n * 4), *fn = malloc((size_t)n * 4);
        mllm_cpu_type_get(wide[wi])->to_float(a, fg, n);
        mllm_widen_row_neon(wide[wi], a, fn, n);
        assert_memory_equal(fg, fn, (size_t)n * 4);
        free(fg), free(fn);
    }
    free(v), free(a), free(b);
}

/* The path picked is the best this CPU has (no MLLM_CPU in the tests). */
static void test_dispatch(void **state) {
    (void)state;
    const mllm_cpu_isa best = mllm_cpu_isa_available(MLLM_CPU_ISA_NEON_I8MM)      ? MLLM_CPU_ISA_NEON_I8MM
                              : mllm_cpu_isa_available(MLLM_CPU_ISA_NEON_DOTPROD) ? MLLM_CPU_ISA_NEON_DOTPROD
                                                                                  : MLLM_CPU_ISA_NEON;
    printf("cpu path: %s\n", mllm_cpu_path());
    if (!getenv("MLLM_CPU")) assert_int_equal(mllm_cpu_isa_get(), best);
    assert_true(mllm_cpu_isa_available(MLLM_CPU_ISA_NEON));
    assert_false(mllm_cpu_isa_available(MLLM_CPU_ISA_AVX2));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch),   cmocka_unit_test(test_vec_dots),  cmocka_unit_test(test_mul_mat_i8mm),
        cmocka_unit_test(test_ops),        cmocka_unit_test(test_expf_gelu), cmocka_unit_test(test_quantizers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
    printf("SKIPPED: the arm64 kernels are built for arm64 targets only (this build: other CPU)\n");
    return 0;
}
#endif
