/* The CUDA kernels (src/backends/cuda) against the CPU: every op on odd
   sizes, on the first CUDA device ($MLLM_CUDA_DEVICE picks another); the
   twin of test_opencl_ops.c. Tolerances, normalised MSE over all outputs
   of a case:
     matmul (f32, f16, q8_0, q4_0, q4_K, q6_K weights, f32 activations):
       < 1e-10 against a double-precision product of the dequantized
       weights, and < 1e-10 against the CPU's f32 path (mllm_cpu_mul_mat_exact);
     get_rows (the same six types): < 1e-14 against the CPU's dequantization
       (the same products);
     rmsnorm, layernorm, softmax, rope, elementwise: < 1e-10 against the
       generic C kernels (float sums in another order; libm vs the device's
       expf/tanhf/erff);
     attention: < 1e-10 against a double-precision softmax(q k^T) v.
   Without a CUDA build, driver or device every test prints SKIPPED with
   the reason (the CUDA error). The kernels' arithmetic is also checked on
   the host, without a GPU, by test_cuda_math.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/type_kernels.h"
#include "testutil.h"

#ifdef MLLM_HAVE_CUDA
#include "backends/cuda/cuda.h"

#define TOL 1e-10

static mllm_cuda *g_cuda;
static const char *g_skip;

static mllm_cuda *dev(void) {
    if (!g_cuda && !g_skip) {
        if (mllm_cuda_open(NULL, &g_cuda) != MLLM_OK) {
            static char why[512];
            snprintf(why, sizeof why, "%s", mllm_last_error());
            g_skip = why;
        } else {
            printf("device: %s\n", mllm_cuda_device_name(g_cuda));
        }
    }
    if (g_skip) printf("SKIPPED: %s\n", g_skip);
    return g_cuda;
}

static mllm_cuda_buf *upload(mllm_cuda *c, const void *p, size_t n) {
    mllm_cuda_buf *b = NULL;
    assert_int_equal(mllm_cuda_buf_new(c, n, &b), MLLM_OK);
    if (p) assert_int_equal(mllm_cuda_buf_set(b, 0, p, n), MLLM_OK);
    return b;
}

static float *download(const mllm_cuda_buf *b, size_t n_floats) {
    float *y = malloc(n_floats * sizeof *y);
    assert_int_equal(mllm_cuda_buf_get(b, 0, y, n_floats * sizeof *y), MLLM_OK);
    return y;
}

static float *rnd(size_t n, uint64_t seed) {
    float *x = malloc(n * sizeof *x);
    tu_fill_random(x, n, seed);
    return x;
}

/* ---- matmul and get_rows ------------------------------------------------ */

static void check_matmul(mllm_dtype t, int64_t K, int64_t N, int64_t T, bool bias) {
    mllm_cuda *c = g_cuda;
    const mllm_cpu_type *ct = mllm_cpu_type_get(t);
    const size_t rb = mllm_dtype_row_size(t, K);
    float *wf = rnd((size_t)(K * N), 11 + (uint64_t)t), *img = malloc((size_t)(K * N) * sizeof(float));
    uint8_t *W = malloc(rb * (size_t)N);
    for (int64_t n = 0; n < N; n++) {
        ct->from_float(wf + n * K, W + (size_t)n * rb, K);
        ct->to_float(W + (size_t)n * rb, img + n * K, K);
    }
    float *X = rnd((size_t)(K * T), 29), *B = rnd((size_t)N, 31);
    mllm_cuda_buf *bw = upload(c, W, rb * (size_t)N), *bx = upload(c, X, (size_t)(K * T) * 4),
                 *by = upload(c, NULL, (size_t)(N * T) * 4), *bb = upload(c, B, (size_t)N * 4);
    assert_int_equal(mllm_cuda_mul_mat(c, t, bw, K, N, bx, T, by, bias ? bb : NULL), MLLM_OK);
    float *got = download(by, (size_t)(N * T));
    float *ref = malloc((size_t)(N * T) * sizeof(float)), *cpu = malloc((size_t)(N * T) * sizeof(float));
    float *row = malloc((size_t)K * sizeof(float));
    for (int64_t tt = 0; tt < T; tt++)
        for (int64_t n = 0; n < N; n++) {
            double s = bias ? B[n] : 0.0;
            for (int64_t k = 0; k < K; k++) s += (double)img[n * K + k] * X[tt * K + k];
            ref[tt * N + n] = (float)s;
        }
    mllm_cpu_mul_mat_exact(t, W, rb, K, X, (size_t)K * 4, T, cpu, (size_t)N, 0, N, row);
    if (bias)
        for (int64_t i = 0; i < N * T; i++) cpu[i] += B[i % N];
    const double e_ref = tu_nmse(got, ref, (size_t)(N * T)), e_cpu = tu_nmse(got, cpu, (size_t)(N * T));
    printf("matmul %-5s K %5lld N %3lld T %2lld%s: NMSE vs double %.3g, vs CPU f32 %.3g\n", mllm_dtype_name(t),
           (long long)K, (long long)N, (long long)T, bias ? " +bias" : "", e_ref, e_cpu);
    assert_true(e_ref < TOL);
    assert_true(e_cpu < TOL);
    mllm_cuda_buf_free(bw), mllm_cuda_buf_free(bx), mllm_cuda_buf_free(by), mllm_cuda_buf_free(bb);
    free(wf), free(img), free(W), free(X), free(B), free(got), free(ref), free(cpu), free(row);
}

static void test_matmul(void **state) {
    (void)state;
    if (!dev()) return;
    /* odd sizes: a row count that is no multiple of anything, K of 3 or 7
       blocks (fewer blocks than work items) and of many blocks */
    static const struct { mllm_dtype t; int64_t K[2]; } cases[] = {
        {MLLM_DTYPE_F32, {77, 1001}},  {MLLM_DTYPE_F16, {77, 1001}},   {MLLM_DTYPE_Q8_0, {224, 4096}},
        {MLLM_DTYPE_Q4_0, {224, 4096}}, {MLLM_DTYPE_Q4_K, {768, 4096}}, {MLLM_DTYPE_Q6_K, {768, 4096}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_true(mllm_cuda_supports_matmul(cases[i].t));
        check_matmul(cases[i].t, cases[i].K[0], 13, 1, false);
        check_matmul(cases[i].t, cases[i].K[0], 13, 5, true);
        check_matmul(cases[i].t, cases[i].K[1], 7, 3, false);
    }
}

static void test_get_rows(void **state) {
    (void)state;
    mllm_cuda *c = dev();
    if (!c) return;
    static const mllm_dtype types[] = {MLLM_DTYPE_F32,  MLLM_DTYPE_F16,  MLLM_DTYPE_Q8_0,
                                       MLLM_DTYPE_Q4_0, MLLM_DTYPE_Q4_K, MLLM_DTYPE_Q6_K};
    const int64_t K = 768, R = 11, T = 4;
    const int32_t ids[4] = {10, 0, 7, 7};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const mllm_dtype t = types[i];
        assert_true(mllm_cuda_supports_get_rows(t));
        const size_t rb = mllm_dtype_row_size(t, K);
        float *wf = rnd((size_t)(K * R), 5);
        uint8_t *W = malloc(rb * (size_t)R);
        for (int64_t r = 0; r < R; r++) mllm_cpu_type_get(t)->from_float(wf + r * K, W + (size_t)r * rb, K);
        mllm_cuda_buf *bw = upload(c, W, rb * (size_t)R), *bi = upload(c, ids, sizeof ids),
                     *by = upload(c, NULL, (size_t)(K * T) * 4);
        assert_int_equal(mllm_cuda_get_rows(c, t, bw, K, R, bi, T, by), MLLM_OK);
        float *got = download(by, (size_t)(K * T)), *ref = malloc((size_t)(K * T) * sizeof(float));
        for (int64_t tt = 0; tt < T; tt++) mllm_cpu_get_row(t, W, rb, K, ids[tt], ref + tt * K);
        const double e = tu_nmse(got, ref, (size_t)(K * T));
        printf("get_rows %-5s: NMSE %.3g\n", mllm_dtype_name(t), e);
        assert_true(e < 1e-14);
        /* an id past the table is refused before the kernel reads it */
        const int32_t bad[4] = {0, 1, (int32_t)R, 2};
        assert_int_equal(mllm_cuda_buf_set(bi, 0, bad, sizeof bad), MLLM_OK);
        assert_int_equal(mllm_cuda_get_rows(c, t, bw, K, R, bi, T, by), MLLM_ERR_INVALID_ARG);
        mllm_cuda_buf_free(bw), mllm_cuda_buf_free(bi), mllm_cuda_buf_free(by);
        free(wf), free(W), free(got), free(ref);
    }
}

/* ---- row ops ------------------------------------------------------------ */

static void test_norms_softmax(void **state) {
    (void)state;
    mllm_cuda *c = dev();
    if (!c) return;
    const mllm_cpu_ops *g = mllm_cpu_ops_generic();
    static const int ns[] = {1, 7, 64, 65, 896, 2049};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        const int n = ns[i], rows = 3;
        float *x = rnd((size_t)(n * rows), 100 + i), *w = rnd((size_t)n, 200 + i), *b = rnd((size_t)n, 300 + i);
        float *ref = malloc((size_t)(n * rows) * sizeof(float));
        mllm_cuda_buf *bx = upload(c, x, (size_t)(n * rows) * 4), *bw = upload(c, w, (size_t)n * 4),
                     *bb = upload(c, b, (size_t)n * 4), *by = upload(c, NULL, (size_t)(n * rows) * 4);
        for (int withw = 0; withw <= 1; withw++) {
            assert_int_equal(mllm_cuda_rmsnorm(c, bx, withw ? bw : NULL, by, n, rows, 1e-6f), MLLM_OK);
            float *got = download(by, (size_t)(n * rows));
            for (int r = 0; r < rows; r++) g->rmsnorm(ref + r * n, x + r * n, withw ? w : NULL, n, 1e-6f);
            const double e = tu_nmse(got, ref, (size_t)(n * rows));
            printf("rmsnorm n %4d%s: NMSE %.3g\n", n, withw ? " w" : "", e);
            assert_true(e < TOL);
            free(got);
            assert_int_equal(mllm_cuda_layernorm(c, bx, withw ? bw : NULL, withw ? bb : NULL, by, n, rows, 1e-5f), MLLM_OK);
            got = download(by, (size_t)(n * rows));
            for (int r = 0; r < rows; r++) g->layernorm(ref + r * n, x + r * n, withw ? w : NULL, withw ? b : NULL, n, 1e-5f);
            const double e2 = tu_nmse(got, ref, (size_t)(n * rows));
            printf("layernorm n %4d%s: NMSE %.3g\n", n, withw ? " w,b" : "", e2);
            assert_true(e2 < TOL); /* n = 1 too: every value is its mean, 0 before the bias, in both */
            free(got);
        }
        /* softmax with masked entries, and a row masked entirely (zeros) */
        for (int j = 0; j < n; j += 3) x[j] = -INFINITY;
        for (int j = 0; j < n; j++) x[2 * n + j] = -INFINITY;
        assert_int_equal(mllm_cuda_buf_set(bx, 0, x, (size_t)(n * rows) * 4), MLLM_OK);
        assert_int_equal(mllm_cuda_softmax(c, bx, n, rows, 0.125f), MLLM_OK);
        float *got = download(bx, (size_t)(n * rows));
        memcpy(ref, x, (size_t)(n * rows) * sizeof(float));
        for (int r = 0; r < rows; r++) g->softmax(ref + r * n, n, 0.125f);
        const double e = tu_nmse(got, ref, (size_t)(n * rows)); /* rows 0 and 1 keep unmasked entries */
        for (int j = 0; j < n; j++) assert_true(got[2 * n + j] == 0.0f);
        printf("softmax n %4d: NMSE %.3g\n", n, e);
        assert_true(e < TOL);
        mllm_cuda_buf_free(bx), mllm_cuda_buf_free(bw), mllm_cuda_buf_free(bb), mllm_cuda_buf_free(by);
        free(x), free(w), free(b), free(ref), free(got);
    }
}

static void test_rope(void **state) {
    (void)state;
    mllm_cuda *c = dev();
    if (!c) return;
    const mllm_cpu_ops *g = mllm_cpu_ops_generic();
    const int D = 24, H = 3, T = 5;
    for (int neox = 0; neox <= 1; neox++)
        for (int n_rot = 8; n_rot <= D; n_rot += 16) { /* partial (8 of 24) and full rotation */
            const int half = n_rot / 2;
            float *x = rnd((size_t)(D * H * T), 7), *cs = malloc((size_t)(T * half) * 4), *sn = malloc((size_t)(T * half) * 4);
            for (int t = 0; t < T; t++)
                for (int i = 0; i < half; i++) {
                    const float th = (float)(t + 3) * powf(10000.0f, -2.0f * (float)i / (float)n_rot);
                    cs[t * half + i] = cosf(th), sn[t * half + i] = sinf(th);
                }
            mllm_cuda_buf *bx = upload(c, x, (size_t)(D * H * T) * 4), *by = upload(c, NULL, (size_t)(D * H * T) * 4),
                         *bc = upload(c, cs, (size_t)(T * half) * 4), *bs = upload(c, sn, (size_t)(T * half) * 4);
            assert_int_equal(mllm_cuda_rope(c, bx, by, bc, bs, D, H, T, n_rot, neox), MLLM_OK);
            float *got = download(by, (size_t)(D * H * T)), *ref = malloc((size_t)(D * H * T) * sizeof(float));
            memcpy(ref, x, (size_t)(D * H * T) * sizeof(float));
            for (int t = 0; t < T; t++)
                for (int h = 0; h < H; h++) g->rope(ref + (t * H + h) * D, n_rot, cs + t * half, sn + t * half, neox);
            const double e = tu_nmse(got, ref, (size_t)(D * H * T));
            printf("rope %s n_rot %d of %d: NMSE %.3g\n", neox ? "neox" : "pairs", n_rot, D, e);
            assert_true(e < TOL);
            /* an odd n_rot, one past D, or rotating in place (two threads read each pair) is refused */
            assert_int_equal(mllm_cuda_rope(c, bx, bx, bc, bs, D, H, T, n_rot, neox), MLLM_ERR_INVALID_ARG);
            assert_int_equal(mllm_cuda_rope(c, bx, by, bc, bs, D, H, T, 7, neox), MLLM_ERR_INVALID_ARG);
            assert_int_equal(mllm_cuda_rope(c, bx, by, bc, bs, D, H, T, D + 2, neox), MLLM_ERR_INVALID_ARG);
            mllm_cuda_buf_free(bx), mllm_cuda_buf_free(by), mllm_cuda_buf_free(bc), mllm_cuda_buf_free(bs);
            free(x), free(cs), free(sn), free(got), free(ref);
        }
}

static void test_elementwise(void **state) {
    (void)state;
    mllm_cuda *c = dev();
    if (!c) return;
    const mllm_cpu_ops *g = mllm_cpu_ops_generic();
    const int n = 1003;
    float *a = rnd((size_t)n, 41), *b = rnd((size_t)n, 43), *ref = malloc((size_t)n * sizeof(float));
    for (int i = 0; i < n; i++) a[i] *= 4.0f; /* reach the tails of silu, tanh, erf */
    mllm_cuda_buf *ba = upload(c, a, (size_t)n * 4), *bb = upload(c, b, (size_t)n * 4), *by = upload(c, NULL, (size_t)n * 4);
    static const char *const names[] = {"add", "silu_mul", "gelu_mul", "gelu", "scale", "softcap"};
    for (int op = MLLM_CUDA_ADD; op <= MLLM_CUDA_SOFTCAP; op++) {
        const float p = op == MLLM_CUDA_SCALE ? 0.37f : 3.0f;
        assert_int_equal(mllm_cuda_elementwise_op(c, (mllm_cuda_elementwise)op, ba, bb, by, n, p), MLLM_OK);
        float *got = download(by, (size_t)n);
        switch (op) {
        case MLLM_CUDA_ADD: g->add_f32(ref, a, b, n); break;
        case MLLM_CUDA_SILU_MUL: g->silu_mul(ref, a, b, n); break;
        case MLLM_CUDA_GELU_MUL: g->gelu_mul(ref, a, b, n); break;
        case MLLM_CUDA_GELU: g->gelu_erf(ref, a, n); break;
        case MLLM_CUDA_SCALE: for (int i = 0; i < n; i++) ref[i] = a[i] * p; break;
        default: for (int i = 0; i < n; i++) ref[i] = p * tanhf(a[i] / p); break;
        }
        const double e = tu_nmse(got, ref, (size_t)n);
        printf("%-8s n %d: NMSE %.3g\n", names[op], n, e);
        assert_true(e < TOL);
        free(got);
    }
    assert_int_equal(mllm_cuda_elementwise_op(c, MLLM_CUDA_SOFTCAP, ba, NULL, by, n, 0.0f), MLLM_ERR_INVALID_ARG);
    mllm_cuda_buf_free(ba), mllm_cuda_buf_free(bb), mllm_cuda_buf_free(by);
    free(a), free(b), free(ref);
}

/* ---- attention ---------------------------------------------------------- */

static void attn_ref(const float *Q, const float *Kc, const float *Vc, const int32_t *pos, float *O, int D, int H,
                     int Hkv, int T, int n_keys, float scale, int window, bool causal) {
    double *s = malloc((size_t)n_keys * sizeof *s);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            const int kvh = h / (H / Hkv), hi = causal ? pos[t] : n_keys - 1;
            const int lo = causal && window > 0 && pos[t] + 1 > window ? pos[t] + 1 - window : 0;
            double mx = -INFINITY, sum = 0;
            for (int j = lo; j <= hi; j++) {
                double d = 0;
                for (int e = 0; e < D; e++) d += (double)Q[(t * H + h) * D + e] * Kc[(j * Hkv + kvh) * D + e];
                s[j] = d * scale;
                mx = fmax(mx, s[j]);
            }
            for (int j = lo; j <= hi; j++) sum += (s[j] = exp(s[j] - mx));
            for (int e = 0; e < D; e++) {
                double o = 0;
                for (int j = lo; j <= hi; j++) o += s[j] / sum * Vc[(j * Hkv + kvh) * D + e];
                O[(t * H + h) * D + e] = (float)o;
            }
        }
    free(s);
}

static void test_attention(void **state) {
    (void)state;
    mllm_cuda *c = dev();
    if (!c) return;
    const int D = 40, H = 6, Hkv = 2, n_keys = 37;
    static const struct { int T, pos0, window; bool causal; } cases[] = {
        {1, 36, 0, true}, {5, 32, 0, true}, {9, 20, 7, true}, {4, 0, 0, false},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int T = cases[ci].T;
        int32_t pos[16];
        for (int t = 0; t < T; t++) pos[t] = cases[ci].pos0 + t;
        float *Q = rnd((size_t)(D * H * T), 61 + ci), *Kc = rnd((size_t)(n_keys * Hkv * D), 67),
              *Vc = rnd((size_t)(n_keys * Hkv * D), 71);
        float *ref = malloc((size_t)(D * H * T) * sizeof(float));
        const float scale = 1.0f / sqrtf((float)D);
        attn_ref(Q, Kc, Vc, pos, ref, D, H, Hkv, T, n_keys, scale, cases[ci].window, cases[ci].causal);
        mllm_cuda_buf *bq = upload(c, Q, (size_t)(D * H * T) * 4), *bk = upload(c, Kc, (size_t)(n_keys * Hkv * D) * 4),
                     *bv = upload(c, Vc, (size_t)(n_keys * Hkv * D) * 4), *bp = upload(c, pos, (size_t)T * 4),
                     *bo = upload(c, NULL, (size_t)(D * H * T) * 4),
                     *bs = upload(c, NULL, mllm_cuda_attention_scratch(H, T, n_keys));
        assert_int_equal(mllm_cuda_attention(c, bq, bk, bv, bp, bo, bs, D, H, Hkv, T, n_keys, 0.0f, cases[ci].window,
                                            cases[ci].causal),
                         MLLM_OK);
        float *got = download(bo, (size_t)(D * H * T));
        const double e = tu_nmse(got, ref, (size_t)(D * H * T));
        printf("attention T %d pos0 %d window %d %s: NMSE %.3g\n", T, cases[ci].pos0, cases[ci].window,
               cases[ci].causal ? "causal" : "full", e);
        assert_true(e < TOL);
        if (cases[ci].causal) { /* a position past the keys is refused */
            pos[0] = n_keys;
            assert_int_equal(mllm_cuda_buf_set(bp, 0, pos, 4), MLLM_OK);
            assert_int_equal(mllm_cuda_attention(c, bq, bk, bv, bp, bo, bs, D, H, Hkv, T, n_keys, 0.0f, 0, true),
                             MLLM_ERR_INVALID_ARG);
        }
        mllm_cuda_buf_free(bq), mllm_cuda_buf_free(bk), mllm_cuda_buf_free(bv), mllm_cuda_buf_free(bp);
        mllm_cuda_buf_free(bo), mllm_cuda_buf_free(bs);
        free(Q), free(Kc), free(Vc), free(ref), free(got);
    }
}

/* ---- errors ------------------------------------------------------------- */

static void test_errors(void **state) {
    (void)state;
    mllm_cuda *c = dev();
    if (!c) return;
    mllm_cuda *other = NULL;
    assert_int_equal(mllm_cuda_open("x", &other), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_cuda_open("1x", &other), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_cuda_open("999", &other), MLLM_ERR_INVALID_ARG);
    assert_null(other);
    mllm_cuda_buf *small = upload(c, NULL, 16), *big = upload(c, NULL, 4096);
    uint8_t tmp[32] = {0};
    assert_int_equal(mllm_cuda_buf_set(small, 8, tmp, 9), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_cuda_buf_get(small, 17, tmp, 0), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_cuda_buf_copy(big, 4090, small, 0, 8), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_cuda_buf_copy(big, 8, small, 0, 16), MLLM_OK);
    /* set / copy / get round trip through the device */
    for (int i = 0; i < 32; i++) tmp[i] = (uint8_t)(3 * i + 1);
    uint8_t back[32] = {0};
    assert_int_equal(mllm_cuda_buf_set(small, 0, tmp, 16), MLLM_OK);
    assert_int_equal(mllm_cuda_buf_copy(big, 100, small, 4, 12), MLLM_OK);
    assert_int_equal(mllm_cuda_buf_get(big, 100, back, 12), MLLM_OK);
    assert_memory_equal(back, tmp + 4, 12);
    assert_int_equal(mllm_cuda_finish(c), MLLM_OK);
    /* zero-byte buffers exist and hold nothing */
    mllm_cuda_buf *empty = upload(c, NULL, 0);
    assert_int_equal(mllm_cuda_buf_size(empty), 0);
    assert_int_equal(mllm_cuda_buf_set(empty, 0, tmp, 1), MLLM_ERR_INVALID_ARG);
    mllm_cuda_buf_free(empty);
    /* a weight buffer smaller than its shape; a type without a kernel; K not whole blocks */
    assert_int_equal(mllm_cuda_mul_mat(c, MLLM_DTYPE_F32, small, 64, 4, big, 1, big, NULL), MLLM_ERR_INVALID_ARG);
    assert_false(mllm_cuda_supports_matmul(MLLM_DTYPE_Q4_1));
    assert_int_equal(mllm_cuda_mul_mat(c, MLLM_DTYPE_Q4_1, big, 32, 4, big, 1, big, NULL), MLLM_ERR_UNSUPPORTED);
    assert_int_equal(mllm_cuda_mul_mat(c, MLLM_DTYPE_Q4_0, big, 48, 4, big, 1, big, NULL), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_cuda_mul_mat(c, MLLM_DTYPE_F32, big, 0, 4, big, 1, big, NULL), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_cuda_attention(c, big, big, big, big, big, big, 8, 6, 4, 1, 4, 0, 0, true), MLLM_ERR_INVALID_ARG);
    mllm_cuda_buf_free(small), mllm_cuda_buf_free(big);
}

static int teardown(void **state) {
    (void)state;
    mllm_cuda_close(g_cuda);
    g_cuda = NULL;
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul),   cmocka_unit_test(test_get_rows),  cmocka_unit_test(test_norms_softmax),
        cmocka_unit_test(test_rope),     cmocka_unit_test(test_elementwise), cmocka_unit_test(test_attention),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}

#else /* no CUDA in this build */

static void test_skipped(void **state) {
    (void)state;
    printf("SKIPPED: this build has no CUDA (configure found no nvcc / CUDA toolkit, or -DMLLM_CUDA=OFF)\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_skipped)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
