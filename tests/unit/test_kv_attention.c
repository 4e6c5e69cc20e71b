/* Attention through block tables (paged KV, online softmax over blocks)
   against the contiguous attention of the session's cache, on random
   q / k / v: odd head sizes, GQA, block sizes that do not divide anything,
   contexts past a 256-position split chunk, a sliding window.
   Bounds (measured here: f32 NMSE <= 6e-14, max |diff| <= 2.7e-7; f16
   NMSE <= 8e-8; q8 NMSE <= 2.6e-5):
   - f32 K/V: max |paged - contiguous| <= 2e-6 (values in [-1, 1]) and
     NMSE <= 1e-12: the two sum in different orders (blockwise rescaled
     exponentials vs one softmax), so they are not bit-identical;
   - f16: NMSE <= 1e-6; q8 (int8 per token and head): NMSE <= 1e-4.
   The ordered variant (mllm_kv_paged.ordered: the contiguous cache's
   summation order on gathered K/V) with f32 K/V equals the contiguous
   attention bit for bit; with f16 / q8 it has the bounds above.
   And exactly (bit for bit): decode split over threads equals one thread;
   a token's output is the same alone or in a batch, and with tokens of
   another sequence in its batch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backends/cpu/kv_paged.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/threadpool.h"
#include "graph/graph.h"
#include "kv/kv_pool.h"
#include "testutil.h"

typedef struct {
    int D, H, Hkv, T, bs, window;
} shape;

/* Contiguous reference: all T tokens in one call at positions 0..T-1. */
static void run_contiguous(const shape *s, const float *q, const float *k, const float *v, float *out) {
    const int kv_dim = s->Hkv * s->D;
    const size_t cap = (size_t)MLLM_KV_CAP(s->T);
    mllm_kv_layer kv = {mllm_calloc(cap * (size_t)kv_dim, sizeof(float)), mllm_calloc(cap * (size_t)kv_dim, sizeof(float)),
                        s->T, kv_dim};
    mllm_pool *pool = mllm_pool_new(2);
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_TRACE, pool, 1 << 16);
    int64_t qs[3] = {s->D, s->H, s->T}, ks[3] = {s->D, s->Hkv, s->T};
    mllm_tensor *tq = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 3, qs, q, "q");
    mllm_tensor *tk = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 3, ks, k, "k");
    mllm_tensor *tv = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 3, ks, v, "v");
    mllm_tensor *pos = mllm_graph_input_i32(&g, s->T, "pos");
    mllm_tensor *st = mllm_op_kv_store(&g, tk, tv, pos, &kv);
    mllm_tensor *a = mllm_op_attention(&g, tq, st, pos, &kv, s->Hkv, 1.0f / sqrtf((float)s->D), s->window);
    assert_non_null(a);
    assert_true(mllm_graph_plan(&g, &a, 1));
    for (int i = 0; i < s->T; i++) mllm_tensor_i32(pos)[i] = i;
    mllm_graph_execute(&g);
    memcpy(out, a->data, (size_t)s->T * (size_t)s->H * (size_t)s->D * sizeof(float));
    mllm_graph_free(&g);
    mllm_pool_free(pool);
    mllm_free(kv.k);
    mllm_free(kv.v);
}

/* Paged: tokens [t0, t0 + n) of sequence row `row` of the tables, whose
   positions are t0.. ; q/k/v are all T tokens (only the rows of the call
   are read). Several calls may share one batch: nb entries. */
typedef struct {
    int t0, n, row;
    const float *q, *k, *v;
} piece;

static void run_paged(const shape *s, mllm_kv_pool *kp, const int32_t *tables, int n_rows, int max_blocks,
                      const piece *pc, int n_pc, int n_threads, float *out) {
    int T = 0;
    for (int i = 0; i < n_pc; i++) T += pc[i].n;
    const int kv_dim = s->Hkv * s->D, qd = s->H * s->D;
    float *q = malloc((size_t)T * (size_t)qd * sizeof(float)), *k = malloc((size_t)T * (size_t)kv_dim * sizeof(float));
    float *v = malloc((size_t)T * (size_t)kv_dim * sizeof(float));
    mllm_pool *pool = mllm_pool_new(n_threads);
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_TRACE, pool, 1 << 16);
    int64_t qs[3] = {s->D, s->H, T}, ks[3] = {s->D, s->Hkv, T};
    mllm_tensor *tq = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 3, qs, q, "q");
    mllm_tensor *tk = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 3, ks, k, "k");
    mllm_tensor *tv = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 3, ks, v, "v");
    mllm_tensor *pos = mllm_graph_input_i32(&g, T, "pos"), *seq = mllm_graph_input_i32(&g, T, "seq");
    mllm_tensor *tab = mllm_graph_input_i32_2d(&g, max_blocks, n_rows, "table");
    const mllm_kv_paged *kv = &kp->layers[0];
    mllm_tensor *st = mllm_op_kv_store_paged(&g, tk, tv, pos, seq, tab, kv);
    mllm_tensor *a = mllm_op_attention_paged(&g, tq, st, pos, seq, tab, kv, s->Hkv, 1.0f / sqrtf((float)s->D), s->window);
    assert_non_null(a);
    assert_true(mllm_graph_plan(&g, &a, 1));
    int r = 0;
    for (int i = 0; i < n_pc; i++)
        for (int j = 0; j < pc[i].n; j++, r++) {
            const int t = pc[i].t0 + j;
            memcpy(q + (size_t)r * qd, pc[i].q + (size_t)t * qd, (size_t)qd * sizeof(float));
            memcpy(k + (size_t)r * kv_dim, pc[i].k + (size_t)t * kv_dim, (size_t)kv_dim * sizeof(float));
            memcpy(v + (size_t)r * kv_dim, pc[i].v + (size_t)t * kv_dim, (size_t)kv_dim * sizeof(float));
            mllm_tensor_i32(pos)[r] = t;
            mllm_tensor_i32(seq)[r] = pc[i].row;
        }
    memcpy(mllm_tensor_i32(tab), tables, (size_t)max_blocks * (size_t)n_rows * sizeof(int32_t));
    mllm_graph_execute(&g);
    memcpy(out, a->data, (size_t)T * (size_t)qd * sizeof(float));
    mllm_graph_free(&g);
    mllm_pool_free(pool);
    free(q);
    free(k);
    free(v);
}

static double max_abs(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

static void check_shape(const shape *s) {
    const int kv_dim = s->Hkv * s->D, qd = s->H * s->D;
    const size_t nq = (size_t)s->T * qd, nk = (size_t)s->T * kv_dim;
    float *q = malloc(nq * sizeof(float)), *k = malloc(nk * sizeof(float)), *v = malloc(nk * sizeof(float));
    tu_fill_random(q, nq, 1 + (uint64_t)s->D);
    tu_fill_random(k, nk, 2 + (uint64_t)s->T);
    tu_fill_random(v, nk, 3 + (uint64_t)s->H);
    for (size_t i = 0; i < nq; i++) q[i] *= 3.0f; /* peaked enough that the max matters */
    float *ref = malloc(nq * sizeof(float)), *got = malloc(nq * sizeof(float)), *alt = malloc(nq * sizeof(float));
    run_contiguous(s, q, k, v, ref);
    const int max_blocks = (s->T + s->bs - 1) / s->bs;
    for (int it = 0; it < 6; it++) {
        const int dt = it % 3, ordered = it / 3;
        mllm_kv_pool kp;
        mllm_kv_pool_params pp = {.n_layer = 1, .n_head_kv = s->Hkv, .head_dim = s->D, .dtype = dt, .block_size = s->bs,
                                  .n_blocks = 2 * max_blocks + 2, .ordered = ordered};
        assert_int_equal(mllm_kv_pool_init(&kp, &pp), MLLM_OK);
        /* two sequences, their blocks interleaved in the pool (a table is not contiguous) */
        mllm_kv_seq a, b;
        mllm_kv_seq_init(&a);
        mllm_kv_seq_init(&b);
        for (int i = 0; i < max_blocks; i++) {
            assert_int_equal(mllm_kv_seq_grow(&kp, &b, i == 0 ? 1 : s->bs), MLLM_OK);
            assert_int_equal(mllm_kv_seq_grow(&kp, &a, s->bs), MLLM_OK);
        }
        int32_t *tables = calloc(2 * (size_t)max_blocks, sizeof(int32_t));
        memcpy(tables, a.blocks, (size_t)max_blocks * sizeof(int32_t));
        memcpy(tables + max_blocks, b.blocks, (size_t)max_blocks * sizeof(int32_t));
        /* whole prompt of sequence 0 in one call */
        piece all = {0, s->T, 0, q, k, v};
        run_paged(s, &kp, tables, 2, max_blocks, &all, 1, 2, got);
        const double e = tu_nmse(got, ref, nq), m = max_abs(got, ref, nq);
        const double bound = dt == MLLM_KV_DTYPE_F32 ? 1e-12 : dt == MLLM_KV_DTYPE_F16 ? 1e-6 : 1e-4;
        print_message("D %d H %d/%d T %d bs %d window %d %s%s: NMSE %.3g, max |diff| %.3g\n", s->D, s->H, s->Hkv, s->T,
                      s->bs, s->window, mllm_kv_dtype_name(dt), ordered ? " ordered" : "", e, m);
        assert_true(e <= bound);
        if (ordered && dt == MLLM_KV_DTYPE_F32) assert_memory_equal(got, ref, nq * sizeof(float));
        if (dt == MLLM_KV_DTYPE_F32) assert_true(m <= 2e-6);
        /* The last token again alone (decode), on 1 thread and split over 4:
           the same bits as in the batch. */
        piece last = {s->T - 1, 1, 0, q, k, v};
        run_paged(s, &kp, tables, 2, max_blocks, &last, 1, 1, alt);
        assert_memory_equal(alt, got + (size_t)(s->T - 1) * qd, (size_t)qd * sizeof(float));
        run_paged(s, &kp, tables, 2, max_blocks, &last, 1, 4, alt);
        assert_memory_equal(alt, got + (size_t)(s->T - 1) * qd, (size_t)qd * sizeof(float));
        /* Sequence 1 (other q/k/v) prefilled in pieces that share their batch
           with sequence 0's tokens: sequence 0's rows are unchanged, bit for bit,
           and sequence 1 equals the contiguous reference of its own data. */
        float *q2 = malloc(nq * sizeof(float)), *k2 = malloc(nk * sizeof(float)), *v2 = malloc(nk * sizeof(float));
        tu_fill_random(q2, nq, 7);
        tu_fill_random(k2, nk, 8);
        tu_fill_random(v2, nk, 9);
        float *mixed = malloc(2 * nq * sizeof(float)), *ref2 = malloc(nq * sizeof(float));
        const int cut = s->T / 2;
        piece p1[2] = {{0, cut, 1, q2, k2, v2}, {0, s->T, 0, q, k, v}};
        run_paged(s, &kp, tables, 2, max_blocks, p1, 2, 2, mixed);
        assert_memory_equal(mixed + (size_t)cut * qd, got, nq * sizeof(float));
        piece p2[2] = {{s->T - 1, 1, 0, q, k, v}, {cut, s->T - cut, 1, q2, k2, v2}};
        run_paged(s, &kp, tables, 2, max_blocks, p2, 2, 3, mixed);
        assert_memory_equal(mixed, got + (size_t)(s->T - 1) * qd, (size_t)qd * sizeof(float));
        run_contiguous(s, q2, k2, v2, ref2);
        if (dt == MLLM_KV_DTYPE_F32)
            assert_true(max_abs(mixed + qd, ref2 + (size_t)cut * qd, (size_t)(s->T - cut) * qd) <= (ordered ? 0 : 2e-6));
        free(q2);
        free(k2);
        free(v2);
        free(mixed);
        free(ref2);
        free(tables);
        mllm_kv_seq_release(&kp, &a);
        mllm_kv_seq_release(&kp, &b);
        mllm_kv_pool_free(&kp);
    }
    free(q);
    free(k);
    free(v);
    free(ref);
    free(got);
    free(alt);
}

static void test_shapes(void **state) {
    (void)state;
    static const shape shapes[] = {
        {64, 8, 2, 37, 16, 0},   /* GQA 4, SmolLM2-like head */
        {12, 3, 1, 300, 7, 0},   /* odd head size, past the 256 split and the V block */
        {32, 4, 4, 5, 1, 0},     /* no GQA, one position per block */
        {20, 6, 3, 270, 16, 50}, /* sliding window */
        {64, 2, 1, 530, 32, 0},  /* three split chunks */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) check_shape(&shapes[i]);
}

/* The partials of a split merge to the one-chunk result (within rounding). */
static void test_merge(void **state) {
    (void)state;
    const int D = 16, n = 100;
    mllm_kv_pool kp;
    mllm_kv_pool_params pp = {.n_layer = 1, .n_head_kv = 1, .head_dim = D, .dtype = MLLM_KV_DTYPE_F32, .block_size = 8,
                              .n_blocks = 13};
    assert_int_equal(mllm_kv_pool_init(&kp, &pp), MLLM_OK);
    mllm_kv_seq s;
    mllm_kv_seq_init(&s);
    assert_int_equal(mllm_kv_seq_grow(&kp, &s, n), MLLM_OK);
    float k[16], v[16], q[16];
    for (int p = 0; p < n; p++) {
        tu_fill_random(k, D, 100 + (uint64_t)p);
        tu_fill_random(v, D, 500 + (uint64_t)p);
        mllm_kv_paged_write(&kp.layers[0], mllm_kv_seq_block(&s, p, 8), p % 8, k, v);
    }
    tu_fill_random(q, D, 3);
    const size_t ps = MLLM_KV_PART_FLOATS(D);
    float scratch[16 + 8], one[18], parts[4 * 18], whole[16], split[16];
    mllm_kv_paged_attn_part(&kp.layers[0], s.blocks, 0, n, q, 1, 0, 0.5f, scratch, one);
    mllm_kv_paged_merge(one, 1, ps, D, whole);
    static const int cuts[5] = {0, 13, 40, 41, 100}; /* uneven, one of a single position */
    for (int c = 0; c < 4; c++)
        mllm_kv_paged_attn_part(&kp.layers[0], s.blocks, cuts[c], cuts[c + 1], q, 1, 0, 0.5f, scratch, parts + c * ps);
    mllm_kv_paged_merge(parts, 4, ps, D, split);
    assert_true(max_abs(split, whole, D) <= 1e-6);
    /* an empty partial changes nothing */
    mllm_kv_paged_attn_part(&kp.layers[0], s.blocks, 5, 5, q, 1, 0, 0.5f, scratch, parts + ps);
    mllm_kv_paged_merge(parts, 2, ps, D, split);
    float first[16];
    mllm_kv_paged_merge(parts, 1, ps, D, first);
    assert_memory_equal(split, first, sizeof split);
    mllm_kv_seq_release(&kp, &s);
    mllm_kv_pool_free(&kp);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_shapes), cmocka_unit_test(test_merge)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
