/* The backend layer and its scheduler (backends/backend.h, graph/sched.h),
   proven with a second backend that exists only here: "test" keeps its
   tensors in buffers of its own type (host memory filled with NaN bytes when
   allocated, so a tensor the scheduler forgot to copy in shows) and computes
   only f32 matmuls and elementwise ops, with the CPU's kernels. The
   scheduler must then split every graph, copy activations both ways and
   leave norms, RoPE, attention and lookups on the CPU, and the logits must
   equal the CPU-only ones bit for bit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mllm/mllm.h>
#include "api/internal.h"
#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu.h"
#include "graph/graph.h"
#include "graph/sched.h"
#include "synth/synth.h"
#include "testutil.h"

/* ---- the test backend ---- */

static struct {
    int allocs, sets, gets, nodes, foreign;
    int ops[MLLM_OP_COUNT];
} g_seen;

static bool test_alloc(const mllm_buffer_type *bt, size_t size, mllm_buffer *b) {
    if (!mllm_host_buffer_alloc(bt, size, b)) return false;
    memset(b->data, 0xff, size); /* NaN: what was not copied in cannot pass */
    g_seen.allocs++;
    return true;
}
static void test_set(mllm_buffer *b, size_t offs, const void *src, size_t n) {
    g_seen.sets++;
    mllm_host_buffer_set(b, offs, src, n);
}
static void test_get(const mllm_buffer *b, size_t offs, void *dst, size_t n) {
    g_seen.gets++;
    mllm_host_buffer_get(b, offs, dst, n);
}

static const mllm_buffer_type g_test_buft = {
    .name = "test",
    .alloc = test_alloc,
    .free = mllm_host_buffer_free,
    .set = test_set,
    .get = test_get,
    .is_host = mllm_host_buffer_is_host,
};

static bool test_supports(const mllm_backend *be, const mllm_tensor *t) {
    switch (t->op) {
    case MLLM_OP_MATMUL: return t->src[0]->dtype == MLLM_DTYPE_F32 && !t->ip[2];
    case MLLM_OP_ADD:
    case MLLM_OP_SILU_MUL:
    case MLLM_OP_GELU_MUL:
    case MLLM_OP_SCALE: return true;
    default: return false;
    }
}

static bool test_compute(mllm_backend *be, mllm_exec_ctx *x, mllm_tensor **nodes, int n) {
    for (int i = 0; i < n; i++) {
        const mllm_tensor *t = nodes[i];
        g_seen.nodes++;
        g_seen.ops[t->op]++;
        if (!test_supports(be, t) || !t->buffer || t->buffer->type != &g_test_buft) g_seen.foreign++;
        for (int s = 0; s < MLLM_MAX_SRC; s++)
            if (t->src[s] && (!t->src[s]->buffer || t->src[s]->buffer->type != &g_test_buft)) g_seen.foreign++;
    }
    return mllm_cpu_compute_nodes(x, nodes, n);
}

static mllm_backend g_test_backend = {
    .name = "test",
    .buffer_type = &g_test_buft,
    .supports_op = test_supports,
    .graph_compute = test_compute,
};

static void register_test_backend(void) {
    static bool done;
    if (!done) assert_true(mllm_backend_register(&g_test_backend));
    done = true;
}

/* ---- registry and buffers ---- */

static void test_registry(void **state) {
    (void)state;
    register_test_backend();
    assert_ptr_equal(mllm_backend_by_name("cpu"), mllm_backend_cpu());
    assert_ptr_equal(mllm_backend_by_name("test"), &g_test_backend);
    assert_false(mllm_backend_register(&g_test_backend)); /* a name once */
    assert_null(mllm_backend_by_name("opencl-nope"));
    assert_non_null(strstr(mllm_last_error(), "unknown backend 'opencl-nope'"));
    assert_non_null(strstr(mllm_last_error(), "cpu, test"));
}

static void round_trip(const mllm_buffer_type *bt) {
    mllm_buffer b;
    assert_true(bt->alloc(bt, 1000, &b));
    assert_ptr_equal(b.type, bt);
    assert_true(b.size >= 1000);
    assert_true(bt->is_host(bt));
    unsigned char in[300], out[300];
    for (int i = 0; i < 300; i++) in[i] = (unsigned char)(i * 7 + 3);
    bt->set(&b, 0, in, 300);
    bt->set(&b, 700, in, 300);
    memset(out, 0, sizeof out);
    bt->get(&b, 700, out, 300);
    assert_memory_equal(in, out, 300);
    bt->get(&b, 100, out, 50);
    assert_memory_equal(in + 100, out, 50);
    bt->free(&b);
}

static void test_buffer_round_trips(void **state) {
    (void)state;
    round_trip(mllm_cpu_buffer_type());
    round_trip(mllm_cpu_repack_buffer_type());
    round_trip(&g_test_buft);
}

/* ---- a graph split by hand ---- */

enum { K = 64, N = 48, T = 5, LAYERS = 3 };

static mllm_tensor *build(mllm_graph *g, float *w1, float *w2, float *nw, float *input, mllm_tensor **w1_out) {
    int64_t w1s[2] = {K, N}, w2s[2] = {N, K}, ns[1] = {K};
    mllm_tensor *x = mllm_graph_input_f32(g, K, T, "x");
    memcpy(x->data, input, sizeof(float) * K * T);
    mllm_tensor *W1 = *w1_out = mllm_tensor_wrap(g, MLLM_DTYPE_F32, 2, w1s, w1, "w1");
    mllm_tensor *W2 = mllm_tensor_wrap(g, MLLM_DTYPE_F32, 2, w2s, w2, "w2");
    mllm_tensor *NW = mllm_tensor_wrap(g, MLLM_DTYPE_F32, 1, ns, nw, "nw");
    for (int l = 0; l < LAYERS; l++) {
        mllm_tensor *h = mllm_op_rmsnorm(g, x, NW, 1e-5f);   /* cpu */
        mllm_tensor *a = mllm_op_matmul(g, W1, h, NULL);     /* test (w1 placed) */
        mllm_tensor *c = mllm_op_silu_mul(g, a, a);          /* test */
        mllm_tensor *d = mllm_op_matmul(g, W2, c, NULL);     /* cpu: w2 not placed */
        x = mllm_op_add(g, x, d);                            /* cpu: where both inputs were made */
    }
    return mllm_op_view_cols(g, x, T - 2, 2);
}

static void test_split_graph(void **state) {
    (void)state;
    register_test_backend();
    float *w1 = malloc(sizeof(float) * K * N), *w2 = malloc(sizeof(float) * K * N), nw[K], input[K * T];
    tu_fill_random(w1, K * N, 1);
    tu_fill_random(w2, K * N, 2);
    tu_fill_random(nw, K, 3);
    tu_fill_random(input, K * T, 4);
    mllm_pool *pool = mllm_pool_new(2);
    mllm_graph ref, g;
    mllm_graph_init(&ref, MLLM_MODE_TRACE, pool, 4096);
    mllm_graph_init(&g, MLLM_MODE_TRACE, pool, 4096);
    mllm_tensor *w1r, *w1t;
    mllm_tensor *ro = build(&ref, w1, w2, nw, input, &w1r);
    mllm_tensor *go = build(&g, w1, w2, nw, input, &w1t);
    /* Only w1 goes to the test backend at "load" (w2 stays: its matmul on the CPU). */
    mllm_placement *pl = mllm_sched_place_weights(&g_test_backend, &w1t, 1);
    assert_int_equal(mllm_placement_count(pl), 1);
    mllm_backend *bes[2] = {&g_test_backend, mllm_backend_cpu()};
    mllm_graph_set_backends(&g, bes, 2);
    assert_true(mllm_graph_plan(&ref, &ro, 1));
    assert_true(mllm_graph_plan(&g, &go, 1));
    assert_null(ref.sched);    /* the CPU alone: no schedule */
    assert_non_null(g.sched);
    mllm_sched_stats st;
    mllm_sched_get_stats(g.sched, &st);
    assert_int_equal(st.n_nodes[0], 2 * LAYERS); /* matmul w1, silu_mul (follows the matmul) */
    assert_int_equal(st.n_nodes[1], 3 * LAYERS); /* rmsnorm, matmul w2, add */
    assert_int_equal(st.n_runs, 2 * LAYERS + 1); /* cpu, then test and cpu per layer */
    assert_true(st.n_copies > 0);
    memset(&g_seen, 0, sizeof g_seen);
    for (int rep = 0; rep < 2; rep++) {
        mllm_graph_execute(&ref);
        mllm_graph_execute(&g);
        assert_false(g.failed);
        assert_memory_equal(ro->data, go->data, sizeof(float) * K * 2);
    }
    assert_int_equal(g_seen.foreign, 0);
    assert_int_equal(g_seen.ops[MLLM_OP_RMSNORM], 0);
    assert_int_equal(g_seen.ops[MLLM_OP_MATMUL], 2 * LAYERS);
    assert_int_equal(g_seen.nodes, 2 * 2 * LAYERS);
    assert_int_equal(g_seen.sets + g_seen.gets, 2 * st.n_copies);
    mllm_placement_free(pl); /* before the graph that owns the weight's struct */
    assert_null(w1t->mirror);
    mllm_graph_free(&ref);
    mllm_graph_free(&g);
    mllm_pool_free(pool);
    free(w1);
    free(w2);
}

/* ---- a synthetic model through cpu + test ---- */

static void eval_logits(mllm_model *m, float *out, int n_vocab) {
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, NULL, &s), MLLM_OK);
    int32_t ids[40];
    for (int i = 0; i < 40; i++) ids[i] = (int32_t)((i * 37 + 11) % n_vocab);
    assert_int_equal(mllm_session_eval(s, ids, 33), MLLM_OK); /* prefill */
    memcpy(out, mllm_session_logits(s), (size_t)n_vocab * sizeof(float));
    for (int i = 33; i < 40; i++) assert_int_equal(mllm_session_eval(s, ids + i, 1), MLLM_OK); /* decode */
    memcpy(out + n_vocab, mllm_session_logits(s), (size_t)n_vocab * sizeof(float));
    mllm_session_free(s);
}

/* expect_add: adds reach the test backend (llama: the residual add reads
   the output projection's result there; gemma3 norms it on the CPU first). */
static void model_case(const char *arch, const char *dtype, bool expect_test, bool expect_add) {
    register_test_backend();
    char name[64];
    snprintf(name, sizeof name, "backends-%s-%s.gguf", arch, dtype);
    char *path = (char *)tu_tmp(name);
    if (mllm_synth_write(arch, "tiny", dtype, "gguf", path, NULL, NULL)) fail_msg("synth: %s", mllm_last_error());
    unsetenv("MLLM_BACKENDS");
    mllm_model *cpu = NULL, *both = NULL;
    assert_int_equal(mllm_model_load(path, NULL, &cpu), MLLM_OK);
    setenv("MLLM_BACKENDS", "test,cpu", 1);
    assert_int_equal(mllm_model_load(path, NULL, &both), MLLM_OK);
    unsetenv("MLLM_BACKENDS");
    assert_int_equal(cpu->dec.n_backends, 0);
    assert_int_equal(both->dec.n_backends, 2);
    /* every matrix of an f32 model is placed once on the test backend at load */
    assert_int_equal(mllm_placement_count(both->dec.placed[0]) > 0, expect_test);
    const int n_vocab = mllm_model_n_vocab(cpu);
    float *a = malloc(2 * (size_t)n_vocab * sizeof(float)), *b = malloc(2 * (size_t)n_vocab * sizeof(float));
    eval_logits(cpu, a, n_vocab);
    memset(&g_seen, 0, sizeof g_seen);
    eval_logits(both, b, n_vocab);
    assert_memory_equal(a, b, 2 * (size_t)n_vocab * sizeof(float));
    assert_int_equal(g_seen.foreign, 0);
    if (expect_test) {
        assert_true(g_seen.ops[MLLM_OP_MATMUL] > 0);
        assert_int_equal(g_seen.ops[MLLM_OP_ADD] > 0, expect_add);
        assert_true(g_seen.sets > 0 && g_seen.gets > 0);
    } else {
        assert_int_equal(g_seen.ops[MLLM_OP_MATMUL], 0); /* q8_0 matmuls fall back to the CPU */
    }
    /* unsupported ops never reached it */
    assert_int_equal(g_seen.ops[MLLM_OP_RMSNORM] + g_seen.ops[MLLM_OP_ROPE] + g_seen.ops[MLLM_OP_ATTENTION] +
                         g_seen.ops[MLLM_OP_ATTENTION_PAGED] + g_seen.ops[MLLM_OP_GET_ROWS],
                     0);
    free(a);
    free(b);
    mllm_model_free(cpu);
    mllm_model_free(both);
    free(path);
}

static void test_synth_llama_f32(void **state) { (void)state; model_case("llama", "f32", true, true); }
static void test_synth_gemma3_f32(void **state) { (void)state; model_case("gemma3", "f32", true, false); }
static void test_synth_llama_q8_0(void **state) { (void)state; model_case("llama", "q8_0", false, false); }

static void test_unknown_backend_at_load(void **state) {
    (void)state;
    char *path = (char *)tu_tmp("backends-unknown.gguf");
    if (mllm_synth_write("llama", "tiny", "f32", "gguf", path, NULL, NULL)) fail_msg("synth: %s", mllm_last_error());
    setenv("MLLM_BACKENDS", "cuda-nope,cpu", 1);
    mllm_model *m = NULL;
    assert_int_equal(mllm_model_load(path, NULL, &m), MLLM_ERR_INVALID_ARG);
    assert_null(m);
    assert_non_null(strstr(mllm_last_error(), "unknown backend 'cuda-nope'"));
    setenv("MLLM_BACKENDS", "cpu,,test", 1);
    assert_int_equal(mllm_model_load(path, NULL, &m), MLLM_ERR_INVALID_ARG);
    unsetenv("MLLM_BACKENDS");
    free(path);
}

int main(void) {
    mllm_cpu_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_buffer_round_trips),
        cmocka_unit_test(test_split_graph),
        cmocka_unit_test(test_synth_llama_f32),
        cmocka_unit_test(test_synth_gemma3_f32),
        cmocka_unit_test(test_synth_llama_q8_0),
        cmocka_unit_test(test_unknown_backend_at_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
