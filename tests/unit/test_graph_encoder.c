/* The encoders' graph ops (graph.h) against plain double-precision
   references on odd sizes, with 1 and 3 threads: attention over segments
   (one longer than a block of 64 queries, one of a single token), RoPE
   from per-token angle tables, GELU (tanh form), matmuls allowed the
   packed GEMM (f32 and bf16 weights, with a bias), a row lookup in an
   activation (a permutation, as the vision towers reorder tokens); and
   shapes the builders refuse. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backends/cpu/type_kernels.h"
#include "core/dtype.h"
#include "graph/graph.h"
#include "testutil.h"

enum { HEADS = 3, HD = 10, E = HEADS * HD, T = 101, NSEG = 4 };
static const int32_t k_segs[NSEG + 1] = {0, 1, 14, 31, T}; /* lengths 1, 13, 17, 70 */

static double nmse_d(const float *a, const double *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) num += (a[i] - ref[i]) * (a[i] - ref[i]), den += ref[i] * ref[i];
    return num / den;
}

static void test_attention_segments(void **state) {
    (void)state;
    float *q = malloc(sizeof(float) * E * T), *k = malloc(sizeof(float) * E * T), *v = malloc(sizeof(float) * E * T);
    tu_fill_random(q, E * T, 1), tu_fill_random(k, E * T, 2), tu_fill_random(v, E * T, 3);
    double *want = calloc(E * T, sizeof(double));
    const double scale = 1.0 / sqrt(HD);
    for (int s = 0; s < NSEG; s++)
        for (int h = 0; h < HEADS; h++)
            for (int i = k_segs[s]; i < k_segs[s + 1]; i++) {
                double p[T], mx = -1e300, sum = 0;
                for (int j = k_segs[s]; j < k_segs[s + 1]; j++) {
                    double d = 0;
                    for (int c = 0; c < HD; c++) d += (double)q[i * E + h * HD + c] * k[j * E + h * HD + c];
                    p[j] = d * scale;
                    if (p[j] > mx) mx = p[j];
                }
                for (int j = k_segs[s]; j < k_segs[s + 1]; j++) sum += (p[j] = exp(p[j] - mx));
                for (int j = k_segs[s]; j < k_segs[s + 1]; j++)
                    for (int c = 0; c < HD; c++) want[i * E + h * HD + c] += p[j] / sum * v[j * E + h * HD + c];
            }
    for (int nt = 1; nt <= 3; nt += 2) {
        mllm_pool *pool = nt > 1 ? mllm_pool_new(nt) : NULL;
        mllm_graph g;
        mllm_graph_init(&g, MLLM_MODE_TRACE, pool, 4096);
        int64_t ne[2] = {E, T};
        mllm_tensor *segs = mllm_graph_input_i32(&g, NSEG + 1, "segs");
        mllm_tensor *out = mllm_op_attention_segments(&g, mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, ne, q, "q"),
                                                      mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, ne, k, "k"),
                                                      mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, ne, v, "v"), segs, HEADS,
                                                      (float)scale);
        assert_non_null(out);
        assert_true(mllm_graph_plan(&g, &out, 1));
        memcpy(mllm_tensor_i32(segs), k_segs, sizeof k_segs);
        mllm_graph_execute(&g);
        assert_false(g.failed);
        double e = nmse_d(out->data, want, E * T);
        print_message("attention over segments, %d threads: NMSE %.3g\n", nt, e);
        assert_true(e < 1e-12);
        mllm_graph_free(&g);
        if (pool) mllm_pool_free(pool);
    }
    free(q), free(k), free(v), free(want);
}

static void test_rope_table(void **state) {
    (void)state;
    enum { D = 14, H = 3, TT = 9 };
    float x[D * H * TT], cs[D / 2 * TT], sn[D / 2 * TT];
    double want[D * H * TT];
    tu_fill_random(x, D * H * TT, 4);
    for (int i = 0; i < D / 2 * TT; i++) cs[i] = cosf(0.37f * (float)i), sn[i] = sinf(0.37f * (float)i);
    for (int t = 0; t < TT; t++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < D / 2; i++) {
                const float *r = x + (t * H + h) * D;
                const double c = cs[t * D / 2 + i], s = sn[t * D / 2 + i];
                want[(t * H + h) * D + i] = r[i] * c - r[i + D / 2] * s;
                want[(t * H + h) * D + i + D / 2] = r[i + D / 2] * c + r[i] * s;
            }
    for (int nt = 1; nt <= 3; nt += 2) {
        mllm_pool *pool = nt > 1 ? mllm_pool_new(nt) : NULL;
        mllm_graph g;
        mllm_graph_init(&g, MLLM_MODE_TRACE, pool, 4096);
        int64_t ne[3] = {D, H, TT};
        mllm_tensor *c = mllm_graph_input_f32(&g, D / 2, TT, "cos"), *s = mllm_graph_input_f32(&g, D / 2, TT, "sin");
        mllm_tensor *out = mllm_op_rope_table(&g, mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 3, ne, x, "x"), c, s);
        assert_non_null(out);
        assert_true(mllm_graph_plan(&g, &out, 1));
        memcpy(c->data, cs, sizeof cs), memcpy(s->data, sn, sizeof sn);
        mllm_graph_execute(&g);
        for (int i = 0; i < D * H * TT; i++) assert_true(fabs(((float *)out->data)[i] - want[i]) < 1e-5);
        mllm_graph_free(&g);
        if (pool) mllm_pool_free(pool);
    }
}

/* gelu_tanh(W x + b) with W f32 or bf16 under batch_gemm, then the rows
   of the result permuted by a row lookup. */
static void test_gemm_gelu_permute(void **state) {
    (void)state;
    enum { K = 37, N = 29, M = 23 };
    float w[N * K], x[K * M], b[N];
    uint16_t wb[N * K];
    tu_fill_random(w, N * K, 5), tu_fill_random(x, K * M, 6), tu_fill_random(b, N, 7);
    for (int i = 0; i < N * K; i++) w[i] = mllm_bf16_to_f32(wb[i] = mllm_f32_to_bf16(w[i]));
    int32_t perm[M];
    for (int m = 0; m < M; m++) perm[m] = (m * 7 + 3) % M;
    double want[N * M];
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double y = b[n];
            for (int c = 0; c < K; c++) y += (double)w[n * K + c] * x[perm[m] * K + c];
            want[m * N + n] = 0.5 * y * (1 + tanh(sqrt(2 / M_PI) * (y + 0.044715 * y * y * y)));
        }
    for (int dt = 0; dt < 2; dt++)
        for (int nt = 1; nt <= 3; nt += 2) {
            mllm_pool *pool = nt > 1 ? mllm_pool_new(nt) : NULL;
            mllm_graph g;
            mllm_graph_init(&g, MLLM_MODE_TRACE, pool, 4096);
            g.batch_gemm = true;
            int64_t wn[2] = {K, N}, xn[2] = {K, M}, bn[1] = {N};
            mllm_tensor *W = mllm_tensor_wrap(&g, dt ? MLLM_DTYPE_BF16 : MLLM_DTYPE_F32, 2, wn, dt ? (void *)wb : w, "w");
            mllm_tensor *ids = mllm_graph_input_i32(&g, M, "perm");
            mllm_tensor *X = mllm_op_get_rows(&g, mllm_op_scale(&g, mllm_tensor_wrap(&g, 0, 2, xn, x, "x"), 1.0f), ids);
            mllm_tensor *y = mllm_op_matmul(&g, W, X, mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 1, bn, b, "b"));
            assert_non_null(y);
            assert_int_equal(y->ip[3], 1);
            mllm_tensor *out = mllm_op_gelu_tanh(&g, y);
            assert_non_null(out);
            assert_true(mllm_graph_plan(&g, &out, 1));
            memcpy(mllm_tensor_i32(ids), perm, sizeof perm);
            mllm_graph_execute(&g);
            double e = nmse_d(out->data, want, N * M);
            print_message("%s GEMM + bias, gelu_tanh, permuted rows, %d threads: NMSE %.3g\n", dt ? "bf16" : "f32", nt, e);
            assert_true(e < 1e-12);
            mllm_graph_free(&g);
            if (pool) mllm_pool_free(pool);
        }
}

static void test_bad_shapes(void **state) {
    (void)state;
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_TRACE, NULL, 4096);
    int64_t a[2] = {E, T}, b[2] = {E, T - 1}, c[3] = {HD + 1, HEADS, T};
    static float buf[(HD + 1) * HEADS * T];
    mllm_tensor *q = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, a, buf, "q");
    mllm_tensor *k = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, b, buf, "k");
    mllm_tensor *segs = mllm_graph_input_i32(&g, 3, "segs");
    assert_null(mllm_op_attention_segments(&g, q, k, q, segs, HEADS, 1.0f)); /* k of another length */
    g.failed = false;
    assert_null(mllm_op_attention_segments(&g, q, q, q, segs, 7, 1.0f)); /* 7 does not divide E */
    g.failed = false;
    assert_null(mllm_op_attention_segments(&g, q, q, q, q, HEADS, 1.0f)); /* segs not I32 */
    g.failed = false;
    mllm_tensor *odd = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 3, c, buf, "odd");
    mllm_tensor *cs = mllm_graph_input_f32(&g, (HD + 1) / 2, T, "cos");
    assert_null(mllm_op_rope_table(&g, odd, cs, cs)); /* odd head size */
    assert_true(g.failed);
    mllm_graph_free(&g);
}

int main(void) {
    mllm_cpu_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention_segments),
        cmocka_unit_test(test_rope_table),
        cmocka_unit_test(test_gemm_gelu_permute),
        cmocka_unit_test(test_bad_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
