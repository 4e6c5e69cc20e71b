/* The graph's encoder-decoder ops (graph.h: im2col, attention_full, the
   slot cache's store and attention, gelu_fast, the GEMM matmul) against
   plain double references, on odd sizes and a pool of three threads; and
   serial_below giving the same values as the whole pool. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/dtype.h"
#include "graph/graph.h"
#include "testutil.h"

static mllm_pool *g_pool;

static void graph_new(mllm_graph *g) { mllm_graph_init(g, MLLM_MODE_TRACE, g_pool, 4096); }

static void run(mllm_graph *g, mllm_tensor *out) {
    assert_false(g->failed);
    assert_true(mllm_graph_plan(g, &out, 1));
    mllm_graph_execute(g);
    assert_false(g->failed);
}

static float *rnd(size_t n, uint64_t seed) {
    float *x = malloc(n * sizeof(float));
    tu_fill_random(x, n, seed);
    return x;
}

static float f16r(float x) { return mllm_f16_to_f32(mllm_f32_to_f16(x)); }

/* Largest |got - ref| relative to the largest |ref| (at least 1). */
static double max_rel(const float *got, const double *ref, size_t n) {
    double m = 1.0, e = 0.0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(ref[i]));
    for (size_t i = 0; i < n; i++) e = fmax(e, fabs(got[i] - ref[i]));
    return e / m;
}

static void test_im2col(void **state) {
    (void)state;
    static const int cases[][5] = {{5, 11, 3, 2, 1}, {3, 7, 3, 1, 1}, {4, 9, 2, 3, 0}, {1, 5, 5, 1, 2}}; /* C T k s pad */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int C = cases[c][0], Ti = cases[c][1], k = cases[c][2], s = cases[c][3], pad = cases[c][4];
        const int To = (Ti + 2 * pad - k) / s + 1;
        mllm_graph g;
        graph_new(&g);
        mllm_tensor *x = mllm_graph_input_f32(&g, C, Ti, "x");
        mllm_tensor *y = mllm_op_im2col(&g, x, k, s, pad);
        assert_non_null(y);
        assert_int_equal(y->ne[0], C * k);
        assert_int_equal(y->ne[1], To);
        tu_fill_random(x->data, (size_t)C * Ti, 3 + c);
        run(&g, y);
        const float *X = x->data, *Y = y->data;
        for (int t = 0; t < To; t++)
            for (int ch = 0; ch < C; ch++)
                for (int j = 0; j < k; j++) {
                    const int ti = t * s + j - pad;
                    assert_true(Y[(size_t)t * C * k + ch * k + j] == (ti >= 0 && ti < Ti ? X[ti * C + ch] : 0.0f));
                }
        mllm_graph_free(&g);
    }
    mllm_graph g;
    graph_new(&g);
    assert_null(mllm_op_im2col(&g, mllm_graph_input_f32(&g, 3, 2, "x"), 5, 1, 0)); /* kernel past the input */
    assert_true(g.failed);
    mllm_graph_free(&g);
}

/* softmax(q . k / sqrt(hd)) v per head in double; keys [0, n_keys(i)). */
static void ref_attention(const float *q, size_t qs, const float *k, size_t ks, const float *v, size_t vs, int H,
                          int hd, int n_q, const int *n_keys, double *out) {
    double *p = malloc(4096 * sizeof(double));
    for (int i = 0; i < n_q; i++)
        for (int h = 0; h < H; h++) {
            const int nk = n_keys[i];
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < nk; j++) {
                double d = 0;
                for (int e = 0; e < hd; e++) d += (double)q[i * qs + h * hd + e] * k[j * ks + h * hd + e];
                p[j] = d / sqrt((double)hd);
                mx = fmax(mx, p[j]);
            }
            for (int j = 0; j < nk; j++) sum += (p[j] = exp(p[j] - mx));
            for (int e = 0; e < hd; e++) {
                double o = 0;
                for (int j = 0; j < nk; j++) o += p[j] / sum * v[j * vs + h * hd + e];
                out[(size_t)i * H * hd + h * hd + e] = o;
            }
        }
    free(p);
}

static void test_attention_full(void **state) {
    (void)state;
    static const int cases[][4] = {{3, 7, 53, 37}, {2, 16, 200, 211}, {1, 5, 1, 3}}; /* H hd n_q n_k */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int H = cases[c][0], hd = cases[c][1], nq = cases[c][2], nk = cases[c][3], dim = H * hd;
        mllm_graph g;
        graph_new(&g);
        /* q from its own input; k and v side by side in one (the fused QKV's views) */
        mllm_tensor *q = mllm_graph_input_f32(&g, dim, nq, "q"), *kv = mllm_graph_input_f32(&g, 2 * dim + 3, nk, "kv");
        tu_fill_random(q->data, (size_t)dim * nq, 10 + c);
        tu_fill_random(kv->data, (size_t)(2 * dim + 3) * nk, 20 + c);
        for (size_t i = 0; i < (size_t)dim * nq; i++) ((float *)q->data)[i] *= 3.0f; /* peaked softmax */
        mllm_tensor *y = mllm_op_attention_full(&g, q, mllm_op_view_elems(&g, kv, 1, dim),
                                                mllm_op_view_elems(&g, kv, dim + 3, dim), H);
        run(&g, y);
        int *n_keys = malloc((size_t)nq * sizeof(int));
        for (int i = 0; i < nq; i++) n_keys[i] = nk;
        double *ref = malloc((size_t)dim * nq * sizeof(double));
        const float *KV = kv->data;
        ref_attention(q->data, (size_t)dim, KV + 1, (size_t)(2 * dim + 3), KV + dim + 3, (size_t)(2 * dim + 3), H, hd, nq,
                      n_keys, ref);
        const double err = max_rel(y->data, ref, (size_t)dim * nq);
        print_message("attention_full H %d hd %d: %d x %d, max error %.2e\n", H, hd, nq, nk, err);
        assert_true(err < 1e-5);
        free(ref), free(n_keys);
        mllm_graph_free(&g);
    }
}

/* Two sequences in slots 2 and 0 of a three-slot cache: a prompt of P
   tokens each, then one step of S tokens each, causal; and a non-causal
   read of slot 0's first n_keys positions. f16 caches: the reference
   rounds K, V, q and the probabilities as the op does (within f16). */
static void slots_case(bool f16, bool head_major) {
    enum { H = 3, HD = 5, DIM = H * HD, CTX = 29, P = 17, S = 2, NSEQ = 2 };
    const size_t es = f16 ? 2 : 4;
    void *kc = calloc(3 * CTX * DIM, es), *vc = calloc(3 * CTX * DIM, es);
    const mllm_kv_slots kv = {.n_head = H, .head_dim = HD, .n_ctx = CTX, .n_slots = 3, .f16 = f16,
                              .head_major = head_major, .k = kc, .vt = vc};
    const int slot_of[NSEQ] = {2, 0};
    float *K = rnd((size_t)NSEQ * CTX * DIM, 40), *V = rnd((size_t)NSEQ * CTX * DIM, 41); /* per seq, per position */
    float *Q = rnd((size_t)NSEQ * CTX * DIM, 42);
    if (f16)
        for (size_t i = 0; i < (size_t)NSEQ * CTX * DIM; i++) K[i] = f16r(K[i]), V[i] = f16r(V[i]), Q[i] = f16r(Q[i]);
    for (int step = 0; step < 2; step++) {
        const int n = step ? S : P, p0 = step ? P : 0, T = NSEQ * n;
        mllm_graph g;
        graph_new(&g);
        mllm_tensor *k = mllm_graph_input_f32(&g, DIM, T, "k"), *v = mllm_graph_input_f32(&g, DIM, T, "v");
        mllm_tensor *q = mllm_graph_input_f32(&g, DIM, T, "q");
        mllm_tensor *pos = mllm_graph_input_i32(&g, T, "pos"), *slot = mllm_graph_input_i32(&g, T, "slot");
        for (int s = 0; s < NSEQ; s++)
            for (int t = 0; t < n; t++) {
                const int i = s * n + t, src = (s * CTX + p0 + t) * DIM;
                memcpy((float *)k->data + i * DIM, K + src, DIM * sizeof(float));
                memcpy((float *)v->data + i * DIM, V + src, DIM * sizeof(float));
                memcpy((float *)q->data + i * DIM, Q + src, DIM * sizeof(float));
                mllm_tensor_i32(pos)[i] = p0 + t;
                mllm_tensor_i32(slot)[i] = slot_of[s];
            }
        mllm_tensor *st = mllm_op_kv_slots_store(&g, k, v, pos, slot, &kv);
        mllm_tensor *y = mllm_op_attention_slots(&g, q, st, pos, slot, &kv, NSEQ, true, 0);
        run(&g, y);
        double *ref = malloc((size_t)T * DIM * sizeof(double));
        for (int s = 0; s < NSEQ; s++) {
            int nk[P];
            for (int t = 0; t < n; t++) nk[t] = p0 + t + 1;
            ref_attention(Q + (s * CTX + p0) * DIM, DIM, K + s * CTX * DIM, DIM, V + s * CTX * DIM, DIM, H, HD, n, nk,
                          ref + (size_t)s * n * DIM);
        }
        const double err = max_rel(y->data, ref, (size_t)T * DIM);
        print_message("slots f16 %d head_major %d, step %d: max error %.2e\n", f16, head_major, step, err);
        assert_true(err < (f16 ? 2e-3 : 1e-5));
        free(ref);
        mllm_graph_free(&g);
    }
    /* not causal: 4 queries over slot 0's first 11 positions (sequence 1's) */
    mllm_graph g;
    graph_new(&g);
    mllm_tensor *q = mllm_graph_input_f32(&g, DIM, 4, "q");
    memcpy(q->data, Q, 4 * DIM * sizeof(float));
    mllm_tensor *y = mllm_op_attention_slots(&g, q, NULL, NULL, NULL, &kv, 1, false, 11);
    run(&g, y);
    double ref[4 * DIM];
    const int nk[4] = {11, 11, 11, 11};
    ref_attention(Q, DIM, K + CTX * DIM, DIM, V + CTX * DIM, DIM, H, HD, 4, nk, ref);
    assert_true(max_rel(y->data, ref, 4 * DIM) < (f16 ? 2e-3 : 1e-5));
    mllm_graph_free(&g);
    free(K), free(V), free(Q), free(kc), free(vc);
}

static void test_slots(void **state) {
    (void)state;
    slots_case(false, false);
    slots_case(false, true);
    slots_case(true, true);
    slots_case(true, false);
}

/* gelu_fast and the GEMM path of a matmul by f16 weights (g->gemm, many
   rows) against double references. */
static void test_gelu_fast_and_gemm(void **state) {
    (void)state;
    enum { KK = 37, N = 29, M = 23 };
    mllm_graph g;
    graph_new(&g);
    g.gemm = true;
    float *wf = rnd(KK * N, 50);
    mllm_f16 *w16 = malloc(KK * N * sizeof(mllm_f16));
    for (int i = 0; i < KK * N; i++) w16[i] = mllm_f32_to_f16(wf[i]);
    const int64_t wne[2] = {KK, N};
    mllm_tensor *W = mllm_tensor_wrap(&g, MLLM_DTYPE_F16, 2, wne, w16, "w");
    mllm_tensor *x = mllm_graph_input_f32(&g, KK, M, "x");
    tu_fill_random(x->data, KK * M, 51);
    mllm_tensor *mm = mllm_op_matmul(&g, W, x, NULL);
    assert_int_equal(mm->ip[3], 2); /* the GEMM on rounded activations (graph.c) */
    mllm_tensor *y = mllm_op_gelu_fast(&g, mm);
    run(&g, y);
    double ref[M * N], refg[M * N];
    for (int m = 0; m < M; m++)
        for (int r = 0; r < N; r++) {
            double d = 0;
            for (int k = 0; k < KK; k++) d += (double)mllm_f16_to_f32(w16[r * KK + k]) * f16r(((float *)x->data)[m * KK + k]);
            ref[m * N + r] = d;
            refg[m * N + r] = 0.5 * d * (1.0 + erf(d / sqrt(2.0)));
        }
    assert_true(max_rel(mm->data, ref, M * N) < 1e-5);
    assert_true(max_rel(y->data, refg, M * N) < 1e-5);
    free(wf), free(w16);
    mllm_graph_free(&g);
}

/* mllm_graph.serial_below: the same values whether a node runs on the
   pool or on the calling thread alone, with runs of both in one graph
   (the matmuls above the bound, the elementwise ops under it). */
static void test_serial_below(void **state) {
    (void)state;
    enum { KK = 45, N = 61, M = 19 };
    float *w1 = rnd(KK * N, 60), *w2 = rnd(N * KK, 61), *out[3];
    const int64_t bounds[3] = {0, 2000, INT64_MAX};
    for (int b = 0; b < 3; b++) {
        mllm_graph g;
        graph_new(&g);
        g.gemm = true;
        g.serial_below = bounds[b];
        const int64_t s1[2] = {KK, N}, s2[2] = {N, KK};
        mllm_tensor *W1 = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, s1, w1, "w1");
        mllm_tensor *W2 = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, s2, w2, "w2");
        mllm_tensor *x = mllm_graph_input_f32(&g, KK, M, "x");
        tu_fill_random(x->data, KK * M, 62);
        mllm_tensor *h = mllm_op_gelu_fast(&g, mllm_op_matmul(&g, W1, mllm_op_layernorm(&g, x, NULL, NULL, 1e-5f), NULL));
        mllm_tensor *y = mllm_op_add(&g, x, mllm_op_matmul(&g, W2, h, NULL));
        run(&g, y);
        out[b] = malloc(KK * M * sizeof(float));
        memcpy(out[b], y->data, KK * M * sizeof(float));
        mllm_graph_free(&g);
    }
    assert_memory_equal(out[0], out[1], KK * M * sizeof(float));
    assert_memory_equal(out[0], out[2], KK * M * sizeof(float));
    for (int b = 0; b < 3; b++) free(out[b]);
    free(w1), free(w2);
}

int main(void) {
    g_pool = mllm_pool_new(3);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_im2col),
        cmocka_unit_test(test_attention_full),
        cmocka_unit_test(test_slots),
        cmocka_unit_test(test_gelu_fast_and_gemm),
        cmocka_unit_test(test_serial_below),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    mllm_pool_free(g_pool);
    return rc;
}
