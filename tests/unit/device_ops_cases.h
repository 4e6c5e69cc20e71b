/* The body of test_opencl_ops.c and test_cuda_ops.c: every op of a device
   layer (src/backends/opencl/ocl.h, src/backends/cuda/cuda.h; the two have
   the same calls) on odd sizes against the CPU, and its size, id and
   position checks. The including file names the layer:
     DEV(name)           the layer's function mllm_X_name
     DEV_CTX, DEV_BUF    its context and buffer types
     DEV_EW(OP), DEV_EW_T  its elementwise ops and their enum type
     DEV_GET_ROWS_TYPES  the table types of get_rows (an initializer list)
     DEV_GET_ROWS_K      a row length that is whole blocks of all of them
     DEV_BAD_SPECS       device specs open must refuse (an initializer list)
     DEV_ROPE_REFUSES_IN_PLACE  1 when rope refuses X == Y
   and defines main with DEV_TESTS. Bounds: see the including files. */
#ifndef MLLM_TESTS_DEVICE_OPS_CASES_H
#define MLLM_TESTS_DEVICE_OPS_CASES_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu.h"
#include "graph/graph.h"
#include "device_ref.h"
#include "testutil.h"

#define TOL 1e-10

static DEV_CTX *g_dev;
static const char *g_skip;

static DEV_CTX *dev(void) {
    if (!g_dev && !g_skip) {
        if (DEV(open)(NULL, &g_dev) != MLLM_OK) {
            static char why[512];
            snprintf(why, sizeof why, "%s", mllm_last_error());
            g_skip = why;
        } else {
            printf("device: %s\n", DEV(device_name)(g_dev));
        }
    }
    if (g_skip) printf("SKIPPED: %s\n", g_skip);
    return g_dev;
}

static DEV_BUF *upload(DEV_CTX *c, const void *p, size_t n) {
    DEV_BUF *b = NULL;
    assert_int_equal(DEV(buf_new)(c, n, &b), MLLM_OK);
    if (p) assert_int_equal(DEV(buf_set)(b, 0, p, n), MLLM_OK);
    return b;
}

static float *download(const DEV_BUF *b, size_t n_floats) {
    float *y = malloc(n_floats * sizeof *y);
    assert_int_equal(DEV(buf_get)(b, 0, y, n_floats * sizeof *y), MLLM_OK);
    return y;
}

/* ---- matmul and get_rows ------------------------------------------------ */

static void check_matmul(mllm_dtype t, int64_t K, int64_t N, int64_t T, bool bias) {
    DEV_CTX *c = g_dev;
    const mllm_cpu_type *ct = mllm_cpu_type_get(t);
    const size_t rb = mllm_dtype_row_size(t, K);
    float *wf = rnd((size_t)(K * N), 11 + (uint64_t)t), *img = malloc((size_t)(K * N) * sizeof(float));
    uint8_t *W = malloc(rb * (size_t)N);
    for (int64_t n = 0; n < N; n++) {
        ct->from_float(wf + n * K, W + (size_t)n * rb, K);
        ct->to_float(W + (size_t)n * rb, img + n * K, K);
    }
    float *X = rnd((size_t)(K * T), 29), *B = rnd((size_t)N, 31);
    DEV_BUF *bw = upload(c, W, rb * (size_t)N), *bx = upload(c, X, (size_t)(K * T) * 4),
                 *by = upload(c, NULL, (size_t)(N * T) * 4), *bb = upload(c, B, (size_t)N * 4);
    assert_int_equal(DEV(mul_mat)(c, t, bw, K, N, bx, T, by, bias ? bb : NULL), MLLM_OK);
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
    DEV(buf_free)(bw), DEV(buf_free)(bx), DEV(buf_free)(by), DEV(buf_free)(bb);
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
        assert_true(DEV(supports_matmul)(cases[i].t));
        check_matmul(cases[i].t, cases[i].K[0], 13, 1, false);
        check_matmul(cases[i].t, cases[i].K[0], 13, 5, true);
        check_matmul(cases[i].t, cases[i].K[1], 7, 3, false);
    }
}

static void test_get_rows(void **state) {
    (void)state;
    DEV_CTX *c = dev();
    if (!c) return;
    static const mllm_dtype types[] = DEV_GET_ROWS_TYPES;
    const int64_t K = DEV_GET_ROWS_K, R = 11, T = 4;
    const int32_t ids[4] = {10, 0, 7, 7};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const mllm_dtype t = types[i];
        assert_true(DEV(supports_get_rows)(t));
        const size_t rb = mllm_dtype_row_size(t, K);
        float *wf = rnd((size_t)(K * R), 5);
        uint8_t *W = malloc(rb * (size_t)R);
        for (int64_t r = 0; r < R; r++) mllm_cpu_type_get(t)->from_float(wf + r * K, W + (size_t)r * rb, K);
        DEV_BUF *bw = upload(c, W, rb * (size_t)R), *bi = upload(c, ids, sizeof ids),
                     *by = upload(c, NULL, (size_t)(K * T) * 4);
        assert_int_equal(DEV(get_rows)(c, t, bw, K, R, bi, T, by), MLLM_OK);
        float *got = download(by, (size_t)(K * T)), *ref = malloc((size_t)(K * T) * sizeof(float));
        for (int64_t tt = 0; tt < T; tt++) mllm_cpu_get_row(t, W, rb, K, ids[tt], ref + tt * K);
        const double e = tu_nmse(got, ref, (size_t)(K * T));
        printf("get_rows %-5s: NMSE %.3g\n", mllm_dtype_name(t), e);
        assert_true(e < 1e-14);
        /* an id past the table is refused before the kernel reads it */
        const int32_t bad[4] = {0, 1, (int32_t)R, 2};
        assert_int_equal(DEV(buf_set)(bi, 0, bad, sizeof bad), MLLM_OK);
        assert_int_equal(DEV(get_rows)(c, t, bw, K, R, bi, T, by), MLLM_ERR_INVALID_ARG);
        DEV(buf_free)(bw), DEV(buf_free)(bi), DEV(buf_free)(by);
        free(wf), free(W), free(got), free(ref);
    }
}

/* ---- row ops ------------------------------------------------------------ */

static void test_norms_softmax(void **state) {
    (void)state;
    DEV_CTX *c = dev();
    if (!c) return;
    const mllm_cpu_ops *g = mllm_cpu_ops_generic();
    static const int ns[] = {1, 7, 64, 65, 896, 2049};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        const int n = ns[i], rows = 3;
        float *x = rnd((size_t)(n * rows), 100 + i), *w = rnd((size_t)n, 200 + i), *b = rnd((size_t)n, 300 + i);
        float *ref = malloc((size_t)(n * rows) * sizeof(float));
        DEV_BUF *bx = upload(c, x, (size_t)(n * rows) * 4), *bw = upload(c, w, (size_t)n * 4),
                     *bb = upload(c, b, (size_t)n * 4), *by = upload(c, NULL, (size_t)(n * rows) * 4);
        for (int withw = 0; withw <= 1; withw++) {
            assert_int_equal(DEV(rmsnorm)(c, bx, withw ? bw : NULL, by, n, rows, 1e-6f), MLLM_OK);
            float *got = download(by, (size_t)(n * rows));
            for (int r = 0; r < rows; r++) g->rmsnorm(ref + r * n, x + r * n, withw ? w : NULL, n, 1e-6f);
            const double e = tu_nmse(got, ref, (size_t)(n * rows));
            printf("rmsnorm n %4d%s: NMSE %.3g\n", n, withw ? " w" : "", e);
            assert_true(e < TOL);
            free(got);
            assert_int_equal(DEV(layernorm)(c, bx, withw ? bw : NULL, withw ? bb : NULL, by, n, rows, 1e-5f), MLLM_OK);
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
        assert_int_equal(DEV(buf_set)(bx, 0, x, (size_t)(n * rows) * 4), MLLM_OK);
        assert_int_equal(DEV(softmax)(c, bx, n, rows, 0.125f), MLLM_OK);
        float *got = download(bx, (size_t)(n * rows));
        memcpy(ref, x, (size_t)(n * rows) * sizeof(float));
        for (int r = 0; r < rows; r++) g->softmax(ref + r * n, n, 0.125f);
        const double e = tu_nmse(got, ref, (size_t)(n * rows)); /* rows 0 and 1 keep unmasked entries */
        for (int j = 0; j < n; j++) assert_true(got[2 * n + j] == 0.0f);
        printf("softmax n %4d: NMSE %.3g\n", n, e);
        assert_true(e < TOL);
        DEV(buf_free)(bx), DEV(buf_free)(bw), DEV(buf_free)(bb), DEV(buf_free)(by);
        free(x), free(w), free(b), free(ref), free(got);
    }
}

static void test_rope(void **state) {
    (void)state;
    DEV_CTX *c = dev();
    if (!c) return;
    const int D = 24, H = 3, T = 5;
    for (int neox = 0; neox <= 1; neox++)
        for (int n_rot = 8; n_rot <= D; n_rot += 16) { /* partial (8 of 24) and full rotation */
            const int half = n_rot / 2;
            float *x = rnd((size_t)(D * H * T), 7), *cs, *sn;
            tu_rope_tables(T, n_rot, &cs, &sn);
            DEV_BUF *bx = upload(c, x, (size_t)(D * H * T) * 4), *by = upload(c, NULL, (size_t)(D * H * T) * 4),
                         *bc = upload(c, cs, (size_t)(T * half) * 4), *bs = upload(c, sn, (size_t)(T * half) * 4);
            assert_int_equal(DEV(rope)(c, bx, by, bc, bs, D, H, T, n_rot, neox), MLLM_OK);
            float *got = download(by, (size_t)(D * H * T)), *ref = tu_rope_ref(x, D, H, T, n_rot, cs, sn, neox);
            const double e = tu_nmse(got, ref, (size_t)(D * H * T));
            printf("rope %s n_rot %d of %d: NMSE %.3g\n", neox ? "neox" : "pairs", n_rot, D, e);
            assert_true(e < TOL);
#if DEV_ROPE_REFUSES_IN_PLACE /* two threads read each pair */
            assert_int_equal(DEV(rope)(c, bx, bx, bc, bs, D, H, T, n_rot, neox), MLLM_ERR_INVALID_ARG);
#endif
            /* an odd n_rot, or one past D, is refused */
            assert_int_equal(DEV(rope)(c, bx, by, bc, bs, D, H, T, 7, neox), MLLM_ERR_INVALID_ARG);
            assert_int_equal(DEV(rope)(c, bx, by, bc, bs, D, H, T, D + 2, neox), MLLM_ERR_INVALID_ARG);
            DEV(buf_free)(bx), DEV(buf_free)(by), DEV(buf_free)(bc), DEV(buf_free)(bs);
            free(x), free(cs), free(sn), free(got), free(ref);
        }
}

static void test_elementwise(void **state) {
    (void)state;
    DEV_CTX *c = dev();
    if (!c) return;
    const mllm_cpu_ops *g = mllm_cpu_ops_generic();
    const int n = 1003;
    float *a = rnd((size_t)n, 41), *b = rnd((size_t)n, 43), *ref = malloc((size_t)n * sizeof(float));
    for (int i = 0; i < n; i++) a[i] *= 4.0f; /* reach the tails of silu, tanh, erf */
    DEV_BUF *ba = upload(c, a, (size_t)n * 4), *bb = upload(c, b, (size_t)n * 4), *by = upload(c, NULL, (size_t)n * 4);
    static const char *const names[] = {"add", "silu_mul", "gelu_mul", "gelu", "scale", "softcap", "gelu_tanh"};
    for (int op = DEV_EW(ADD); op <= DEV_EW(GELU_TANH); op++) {
        const float p = op == DEV_EW(SCALE) ? 0.37f : 3.0f;
        assert_int_equal(DEV(elementwise_op)(c, (DEV_EW_T)op, ba, bb, by, n, p), MLLM_OK);
        float *got = download(by, (size_t)n);
        switch (op) {
        case DEV_EW(ADD): g->add_f32(ref, a, b, n); break;
        case DEV_EW(SILU_MUL): g->silu_mul(ref, a, b, n); break;
        case DEV_EW(GELU_MUL): g->gelu_mul(ref, a, b, n); break;
        case DEV_EW(GELU): g->gelu_erf(ref, a, n); break;
        case DEV_EW(SCALE): for (int i = 0; i < n; i++) ref[i] = a[i] * p; break;
        case DEV_EW(SOFTCAP): for (int i = 0; i < n; i++) ref[i] = p * tanhf(a[i] / p); break;
        default: /* gelu_tanh: node_compute.c's loop */
            for (int i = 0; i < n; i++)
                ref[i] = 0.5f * a[i] * (1.0f + tanhf(0.7978845608028654f * (a[i] + 0.044715f * a[i] * a[i] * a[i])));
            break;
        }
        const double e = tu_nmse(got, ref, (size_t)n);
        printf("%-8s n %d: NMSE %.3g\n", names[op], n, e);
        assert_true(e < TOL);
        free(got);
    }
    assert_int_equal(DEV(elementwise_op)(c, DEV_EW(SOFTCAP), ba, NULL, by, n, 0.0f), MLLM_ERR_INVALID_ARG);
    DEV(buf_free)(ba), DEV(buf_free)(bb), DEV(buf_free)(by);
    free(a), free(b), free(ref);
}

/* ---- attention ---------------------------------------------------------- */

static void test_attention(void **state) {
    (void)state;
    DEV_CTX *c = dev();
    if (!c) return;
    const int D = TU_ATT_D, H = TU_ATT_H, Hkv = TU_ATT_HKV, n_keys = TU_ATT_KEYS;
    for (int ci = 0; ci < TU_ATT_CASES; ci++) {
        tu_attention_case a;
        tu_attention_case_make(ci, &a);
        const int T = a.T;
        const size_t q_bytes = (size_t)(D * H * T) * 4, kv_bytes = (size_t)(n_keys * Hkv * D) * 4;
        DEV_BUF *bq = upload(c, a.Q, q_bytes), *bk = upload(c, a.K, kv_bytes), *bv = upload(c, a.V, kv_bytes),
                *bp = upload(c, a.pos, (size_t)T * 4), *bo = upload(c, NULL, q_bytes),
                *bs = upload(c, NULL, DEV(attention_scratch)(H, T, n_keys));
        /* scale 0: the layer's default 1/sqrt(D), the reference's scale */
        assert_int_equal(DEV(attention)(c, bq, bk, bv, bp, bo, bs, D, H, Hkv, T, n_keys, 0.0f, a.window, a.causal),
                         MLLM_OK);
        float *got = download(bo, (size_t)(D * H * T));
        const double e = tu_nmse(got, a.ref, (size_t)(D * H * T));
        printf("attention T %d pos0 %d window %d %s: NMSE %.3g\n", T, a.pos0, a.window, a.causal ? "causal" : "full", e);
        assert_true(e < TOL);
        if (a.causal) { /* a position past the keys is refused */
            a.pos[0] = n_keys;
            assert_int_equal(DEV(buf_set)(bp, 0, a.pos, 4), MLLM_OK);
            assert_int_equal(DEV(attention)(c, bq, bk, bv, bp, bo, bs, D, H, Hkv, T, n_keys, 0.0f, 0, true),
                             MLLM_ERR_INVALID_ARG);
        }
        DEV(buf_free)(bq), DEV(buf_free)(bk), DEV(buf_free)(bv), DEV(buf_free)(bp);
        DEV(buf_free)(bo), DEV(buf_free)(bs);
        tu_attention_case_free(&a);
        free(got);
    }
}

/* ---- the encoders' ops, against the CPU's nodes (graph.h in eager mode) --- */

/* x (rows of ne0, row stride `stride` floats, from p) as a host tensor of a CPU graph. */
static mllm_tensor *host_rows(mllm_graph *g, const float *p, int64_t ne0, int64_t rows, int64_t stride) {
    const int64_t ne[2] = {stride, rows};
    mllm_tensor *t = mllm_tensor_wrap(g, MLLM_DTYPE_F32, 2, ne, p, "x");
    return stride == ne0 ? t : mllm_op_view_elems(g, t, 0, ne0);
}

/* The columns of a 1-D convolution: a copy, so equal to the CPU's bit for bit. */
static void test_im2col(void **state) {
    (void)state;
    DEV_CTX *c = dev();
    if (!c) return;
    mllm_cpu_init();
    const int C = 7, T_in = 13;
    static const int kspad[][3] = {{3, 1, 1}, {3, 2, 1}, {5, 3, 0}, {1, 1, 0}};
    float *x = rnd((size_t)(C * T_in), 61);
    DEV_BUF *bx = upload(c, x, (size_t)(C * T_in) * 4);
    for (size_t i = 0; i < sizeof kspad / sizeof kspad[0]; i++) {
        const int k = kspad[i][0], stride = kspad[i][1], pad = kspad[i][2];
        const int T_out = (T_in + 2 * pad - k) / stride + 1;
        mllm_graph g;
        mllm_graph_init(&g, MLLM_MODE_EAGER, NULL, 1 << 16);
        const mllm_tensor *ref = mllm_op_im2col(&g, host_rows(&g, x, C, T_in, C), k, stride, pad);
        assert_non_null(ref);
        assert_int_equal(ref->ne[1], T_out);
        DEV_BUF *by = upload(c, NULL, (size_t)(C * k * T_out) * 4);
        assert_int_equal(DEV(im2col)(c, bx, by, C, T_in, k, stride, pad), MLLM_OK);
        float *got = download(by, (size_t)(C * k * T_out));
        printf("im2col C %d T_in %d k %d stride %d pad %d: %d rows\n", C, T_in, k, stride, pad, T_out);
        assert_memory_equal(got, ref->data, (size_t)(C * k * T_out) * 4);
        DEV(buf_free)(by);
        free(got);
        mllm_graph_free(&g);
    }
    /* a kernel wider than the padded input, and a stride of 0, are refused */
    DEV_BUF *by = upload(c, NULL, 4096);
    assert_int_equal(DEV(im2col)(c, bx, by, C, T_in, T_in + 3, 1, 1), MLLM_ERR_INVALID_ARG);
    assert_int_equal(DEV(im2col)(c, bx, by, C, T_in, 3, 0, 1), MLLM_ERR_INVALID_ARG);
    DEV(buf_free)(bx), DEV(buf_free)(by);
    free(x);
}

/* RoPE from per-token tables (a ViT's 2-D positions): the backend runs
   ROPE_TABLE through the rope launch, rotate_half over all of D. */
static void test_rope_table(void **state) {
    (void)state;
    DEV_CTX *c = dev();
    if (!c) return;
    mllm_cpu_init();
    const int D = 22, H = 3, T = 9, half = D / 2;
    float *x = rnd((size_t)(D * H * T), 71), *ang = rnd((size_t)(half * T), 73);
    float *cs = malloc((size_t)(half * T) * sizeof(float)), *sn = malloc((size_t)(half * T) * sizeof(float));
    for (int i = 0; i < half * T; i++) cs[i] = cosf(3.0f * ang[i]), sn[i] = sinf(3.0f * ang[i]);
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_EAGER, NULL, 1 << 16);
    const int64_t nx[3] = {D, H, T}, nt[2] = {half, T};
    const mllm_tensor *ref = mllm_op_rope_table(&g, mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 3, nx, x, "x"),
                                                mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, nt, cs, "cs"),
                                                mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, nt, sn, "sn"));
    assert_non_null(ref);
    DEV_BUF *bx = upload(c, x, (size_t)(D * H * T) * 4), *by = upload(c, NULL, (size_t)(D * H * T) * 4),
            *bc = upload(c, cs, (size_t)(half * T) * 4), *bs = upload(c, sn, (size_t)(half * T) * 4);
    assert_int_equal(DEV(rope)(c, bx, by, bc, bs, D, H, T, D, true), MLLM_OK);
    float *got = download(by, (size_t)(D * H * T));
    const double e = tu_nmse(got, ref->data, (size_t)(D * H * T));
    printf("rope_table D %d H %d T %d: NMSE %.3g\n", D, H, T, e);
    assert_true(e < TOL);
    DEV(buf_free)(bx), DEV(buf_free)(by), DEV(buf_free)(bc), DEV(buf_free)(bs);
    mllm_graph_free(&g);
    free(x), free(ang), free(cs), free(sn), free(got);
}

/* An encoder's attention over tensors: full (q, k, v views of one fused
   QKV output, rows 3 x dim apart; then 11 queries of their own over those
   keys) and over segments (one empty), each against the CPU's node. */
static void enc_attention_case(DEV_CTX *c, const float *qkv, const float *q_own, int n_q_own, const int32_t *segs,
                               int n_segs) {
    const int D = 20, H = 3, dim = D * H, T = 37;
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_EAGER, NULL, 1 << 20);
    const int n_q = q_own ? n_q_own : T, qs = q_own ? dim : (segs ? dim : 3 * dim), kvs = segs ? dim : 3 * dim;
    /* segments take contiguous q, k, v: the fused rows repacked */
    float *sep = segs ? malloc((size_t)(3 * dim * T) * sizeof(float)) : NULL;
    for (int t = 0; sep && t < T; t++)
        for (int j = 0; j < 3; j++)
            memcpy(sep + ((size_t)j * T + t) * dim, qkv + ((size_t)t * 3 + j) * dim, (size_t)dim * 4);
    const float *q = q_own ? q_own : sep ? sep : qkv, *k = sep ? sep + T * dim : qkv + dim;
    const float *v = sep ? sep + 2 * T * dim : qkv + 2 * dim;
    mllm_tensor *tq = host_rows(&g, q, dim, n_q, qs), *tk = host_rows(&g, k, dim, T, kvs);
    mllm_tensor *tv = host_rows(&g, v, dim, T, kvs);
    const float scale = segs ? 0.3f : 1.0f / sqrtf((float)D);
    const mllm_tensor *ref;
    if (segs) {
        mllm_tensor *ts = mllm_graph_input_i32(&g, n_segs + 1, "segs");
        memcpy(mllm_tensor_i32(ts), segs, (size_t)(n_segs + 1) * 4);
        ref = mllm_op_attention_segments(&g, tq, tk, tv, ts, H, scale);
    } else {
        ref = mllm_op_attention_full(&g, tq, tk, tv, H);
    }
    assert_non_null(ref);
    DEV_BUF *bq = upload(c, q, mllm_dev_rows_span(n_q, qs, dim)), *bk = upload(c, k, mllm_dev_rows_span(T, kvs, dim)),
            *bv = upload(c, v, mllm_dev_rows_span(T, kvs, dim)), *bo = upload(c, NULL, (size_t)(dim * n_q) * 4),
            *bs = segs ? upload(c, segs, (size_t)(n_segs + 1) * 4) : NULL;
    const mllm_dev_enc_attn at = {.D = D, .H = H, .n_q = n_q, .n_k = T, .q_stride = qs, .k_stride = kvs,
                                  .v_stride = kvs, .n_segs = segs ? n_segs : 0, .scale = scale};
    assert_int_equal(DEV(attention_enc)(c, bq, bk, bv, bs, bo, &at), MLLM_OK);
    float *got = download(bo, (size_t)(dim * n_q));
    const double e = tu_nmse(got, ref->data, (size_t)(dim * n_q));
    printf("encoder attention %s: %d queries over %d keys, D %d H %d: NMSE %.3g\n",
           segs ? "over segments" : q_own ? "full, queries of their own" : "full, fused QKV rows", n_q, T, D, H, e);
    assert_true(e < TOL);
    /* a head past the kernels' bound, and rows closer than a row, are refused */
    mllm_dev_enc_attn bad = at;
    bad.D = MLLM_DEV_ENC_ATTN_MAX_D + 1, bad.H = 1;
    assert_int_equal(DEV(attention_enc)(c, bq, bk, bv, bs, bo, &bad), MLLM_ERR_INVALID_ARG);
    bad = at;
    bad.k_stride = dim - 1;
    assert_int_equal(DEV(attention_enc)(c, bq, bk, bv, bs, bo, &bad), MLLM_ERR_INVALID_ARG);
    DEV(buf_free)(bq), DEV(buf_free)(bk), DEV(buf_free)(bv), DEV(buf_free)(bo);
    if (bs) DEV(buf_free)(bs);
    mllm_graph_free(&g);
    free(sep), free(got);
}

static void test_encoder_attention(void **state) {
    (void)state;
    DEV_CTX *c = dev();
    if (!c) return;
    mllm_cpu_init();
    float *qkv = rnd((size_t)(3 * 60 * 37), 81), *q = rnd((size_t)(60 * 11), 83);
    for (int i = 0; i < 3 * 60 * 37; i++) qkv[i] *= 3.0f; /* peaked softmaxes too */
    static const int32_t segs[] = {0, 7, 7, 20, 37};
    enc_attention_case(c, qkv, NULL, 0, NULL, 0);
    enc_attention_case(c, qkv, q, 11, NULL, 0);
    enc_attention_case(c, qkv, NULL, 0, segs, 4);
    free(qkv), free(q);
}

/* ---- errors ------------------------------------------------------------- */

static void test_errors(void **state) {
    (void)state;
    DEV_CTX *c = dev();
    if (!c) return;
    DEV_CTX *other = NULL;
    static const char *const bad_specs[] = DEV_BAD_SPECS;
    for (size_t i = 0; i < sizeof bad_specs / sizeof bad_specs[0]; i++)
        assert_int_equal(DEV(open)(bad_specs[i], &other), MLLM_ERR_INVALID_ARG);
    assert_null(other);
    DEV_BUF *small = upload(c, NULL, 16), *big = upload(c, NULL, 4096);
    uint8_t tmp[32] = {0};
    assert_int_equal(DEV(buf_set)(small, 8, tmp, 9), MLLM_ERR_INVALID_ARG);
    assert_int_equal(DEV(buf_get)(small, 17, tmp, 0), MLLM_ERR_INVALID_ARG);
    assert_int_equal(DEV(buf_copy)(big, 4090, small, 0, 8), MLLM_ERR_INVALID_ARG);
    assert_int_equal(DEV(buf_copy)(big, 8, small, 0, 16), MLLM_OK);
    /* set / copy / get round trip through the device */
    for (int i = 0; i < 32; i++) tmp[i] = (uint8_t)(3 * i + 1);
    uint8_t back[32] = {0};
    assert_int_equal(DEV(buf_set)(small, 0, tmp, 16), MLLM_OK);
    assert_int_equal(DEV(buf_copy)(big, 100, small, 4, 12), MLLM_OK);
    assert_int_equal(DEV(buf_get)(big, 100, back, 12), MLLM_OK);
    assert_memory_equal(back, tmp + 4, 12);
    assert_int_equal(DEV(finish)(c), MLLM_OK);
    /* zero-byte buffers exist and hold nothing */
    DEV_BUF *empty = upload(c, NULL, 0);
    assert_int_equal(DEV(buf_size)(empty), 0);
    assert_int_equal(DEV(buf_set)(empty, 0, tmp, 1), MLLM_ERR_INVALID_ARG);
    DEV(buf_free)(empty);
    /* a weight buffer smaller than its shape; a type without a kernel; K not whole blocks */
    assert_int_equal(DEV(mul_mat)(c, MLLM_DTYPE_F32, small, 64, 4, big, 1, big, NULL), MLLM_ERR_INVALID_ARG);
    assert_false(DEV(supports_matmul)(MLLM_DTYPE_Q4_1));
    assert_int_equal(DEV(mul_mat)(c, MLLM_DTYPE_Q4_1, big, 32, 4, big, 1, big, NULL), MLLM_ERR_UNSUPPORTED);
    assert_int_equal(DEV(mul_mat)(c, MLLM_DTYPE_Q4_0, big, 48, 4, big, 1, big, NULL), MLLM_ERR_INVALID_ARG);
    assert_int_equal(DEV(mul_mat)(c, MLLM_DTYPE_F32, big, 0, 4, big, 1, big, NULL), MLLM_ERR_INVALID_ARG);
    assert_int_equal(DEV(attention)(c, big, big, big, big, big, big, 8, 6, 4, 1, 4, 0, 0, true), MLLM_ERR_INVALID_ARG);
    DEV(buf_free)(small), DEV(buf_free)(big);
}

#define DEV_TESTS                                                                                         \
    cmocka_unit_test(test_matmul), cmocka_unit_test(test_get_rows), cmocka_unit_test(test_norms_softmax),    \
        cmocka_unit_test(test_rope), cmocka_unit_test(test_elementwise), cmocka_unit_test(test_attention),   \
        cmocka_unit_test(test_im2col), cmocka_unit_test(test_rope_table), cmocka_unit_test(test_encoder_attention), \
        cmocka_unit_test(test_errors)

static int teardown(void **state) {
    (void)state;
    DEV(close)(g_dev);
    g_dev = NULL;
    return 0;
}

#endif
