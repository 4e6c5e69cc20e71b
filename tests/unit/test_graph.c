/* The graph: eager and trace modes give the same numbers, the planner reuses
   memory without clobbering live tensors, ops match naive references. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backends/cpu.h"
#include "core/dtype.h"
#include "graph/graph.h"
#include "testutil.h"

enum { K = 67, N = 45, T = 5, LAYERS = 6 };

typedef struct { float w1[N * K], w2[K * N], w3[N * K], nw[K]; } weights;

/* A chain of blocks shaped like an MLP residual stack; returns the output. */
static mllm_tensor *build(mllm_graph *g, weights *w, float *input) {
    int64_t xs[2] = {K, T}, w1s[2] = {K, N}, w2s[2] = {N, K}, ns[1] = {K};
    mllm_tensor *x = mllm_tensor_wrap(g, MLLM_DTYPE_F32, 2, xs, input, "x");
    mllm_tensor *W1 = mllm_tensor_wrap(g, MLLM_DTYPE_F32, 2, w1s, w->w1, "w1");
    mllm_tensor *W3 = mllm_tensor_wrap(g, MLLM_DTYPE_F32, 2, w1s, w->w3, "w3");
    mllm_tensor *W2 = mllm_tensor_wrap(g, MLLM_DTYPE_F32, 2, w2s, w->w2, "w2");
    mllm_tensor *NW = mllm_tensor_wrap(g, MLLM_DTYPE_F32, 1, ns, w->nw, "nw");
    for (int l = 0; l < LAYERS; l++) {
        mllm_tensor *h = mllm_op_rmsnorm(g, x, NW, 1e-5f);
        mllm_tensor *a = mllm_op_matmul(g, W1, h, NULL);
        mllm_tensor *b = mllm_op_matmul(g, W3, h, NULL);
        mllm_tensor *c = mllm_op_silu_mul(g, a, b);
        mllm_tensor *d = mllm_op_matmul(g, W2, c, NULL);
        x = mllm_op_add(g, x, d);
    }
    return mllm_op_view_cols(g, x, T - 2, 2);
}

/* Naive double-precision version of build(). */
static void reference(const weights *w, const float *input, double *out) {
    double x[T][K];
    for (int t = 0; t < T; t++)
        for (int k = 0; k < K; k++) x[t][k] = input[t * K + k];
    for (int l = 0; l < LAYERS; l++)
        for (int t = 0; t < T; t++) {
            double ss = 0, h[K], c[N];
            for (int k = 0; k < K; k++) ss += x[t][k] * x[t][k];
            double sc = 1.0 / sqrt(ss / K + 1e-5);
            for (int k = 0; k < K; k++) h[k] = x[t][k] * sc * w->nw[k];
            for (int n = 0; n < N; n++) {
                double a = 0, b = 0;
                for (int k = 0; k < K; k++) { a += w->w1[n * K + k] * h[k]; b += w->w3[n * K + k] * h[k]; }
                c[n] = a / (1 + exp(-a)) * b;
            }
            for (int k = 0; k < K; k++) {
                double d = 0;
                for (int n = 0; n < N; n++) d += w->w2[k * N + n] * c[n];
                x[t][k] += d;
            }
        }
    for (int t = T - 2; t < T; t++)
        for (int k = 0; k < K; k++) out[(t - (T - 2)) * K + k] = x[t][k];
}

static void test_eager_equals_trace(void **state) {
    (void)state;
    mllm_cpu_init();
    weights *w = malloc(sizeof *w);
    float input[K * T];
    tu_fill_random(w->w1, N * K, 1);
    tu_fill_random(w->w2, K * N, 2);
    tu_fill_random(w->w3, N * K, 3);
    tu_fill_random(w->nw, K, 4);
    tu_fill_random(input, K * T, 5);
    for (int i = 0; i < N * K; i++) { w->w1[i] *= 0.3f; w->w2[i] *= 0.3f; w->w3[i] *= 0.3f; }
    for (int nt = 1; nt <= 3; nt++) {
        mllm_pool *pool = mllm_pool_new(nt);
        mllm_graph eg, tg;
        mllm_graph_init(&eg, MLLM_MODE_EAGER, pool, 4096);
        mllm_graph_init(&tg, MLLM_MODE_TRACE, pool, 4096);
        mllm_tensor *eo = build(&eg, w, input);
        mllm_tensor *to = build(&tg, w, input);
        assert_non_null(eo);
        assert_non_null(to);
        assert_int_equal(eg.n_nodes, 0);            /* eager records nothing */
        assert_int_equal(tg.n_nodes, LAYERS * 6);   /* trace records every op */
        assert_true(mllm_graph_plan(&tg, &to, 1));
        /* Memory is reused: far less than one buffer per node. */
        size_t all = 0;
        for (int i = 0; i < tg.n_nodes; i++) all += (size_t)mllm_tensor_nelements(tg.nodes[i]) * 4;
        assert_true(tg.buf_size < all / 2);
        for (int rep = 0; rep < 3; rep++) { /* a traced graph runs many times */
            mllm_graph_execute(&tg);
            assert_memory_equal(eo->data, to->data, sizeof(float) * K * 2);
        }
        double ref[K * 2];
        reference(w, input, ref);
        float rf[K * 2];
        for (int i = 0; i < K * 2; i++) rf[i] = (float)ref[i];
        double e = tu_nmse(to->data, rf, K * 2);
        assert_true(e < 1e-10);
        mllm_graph_free(&eg);
        mllm_graph_free(&tg);
        mllm_pool_free(pool);
    }
    free(w);
}

static void test_bad_shapes_fail_cleanly(void **state) {
    (void)state;
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_TRACE, NULL, 4096);
    float a[6] = {0}, b[8] = {0};
    int64_t s23[2] = {2, 3}, s42[2] = {4, 2};
    mllm_tensor *A = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, s23, a, "a");
    mllm_tensor *B = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, s42, b, "b");
    assert_null(mllm_op_matmul(&g, A, B, NULL)); /* K mismatch */
    assert_true(g.failed);
    assert_null(mllm_op_view_cols(&g, A, 2, 2)); /* out of range */
    assert_false(mllm_graph_plan(&g, NULL, 0));
    mllm_graph_free(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eager_equals_trace),
        cmocka_unit_test(test_bad_shapes_fail_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
