/* Op plugins (include/mllm/mllm.h, backends/plugin.c): the example plugin
   (examples/plugin/softsign_plugin.c) is loaded at run time and its ops run
   in traced and eager graphs next to built-in ones, against the same
   arithmetic done here; the copy built for another ABI is refused with both
   versions named; bad names, counts and paths give clear errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mllm/mllm.h>
#include "backends/cpu.h"
#include "graph/graph.h"
#include "testutil.h"

enum { K = 37, T = 6 };

static void test_abi_mismatch(void **state) {
    (void)state;
    assert_int_equal(mllm_plugin_load(MLLM_EXAMPLE_PLUGIN_BAD_ABI), MLLM_ERR_UNSUPPORTED);
    assert_non_null(strstr(mllm_last_error(), "ABI mismatch"));
    assert_non_null(strstr(mllm_last_error(), "plugin ABI 999"));
    assert_non_null(strstr(mllm_last_error(), "this library has ABI 1"));
    /* a def from an older, shorter header */
    mllm_op_def d = {0};
    d.struct_size = 4;
    assert_int_equal(mllm_op_register(&d), MLLM_ERR_UNSUPPORTED);
}

static void test_bad_loads(void **state) {
    (void)state;
    assert_int_equal(mllm_plugin_load("/nonexistent/plugin.so"), MLLM_ERR_IO);
    assert_non_null(strstr(mllm_last_error(), "/nonexistent/plugin.so"));
    setenv("MLLM_PLUGINS", "/nonexistent/a.so", 1);
    assert_int_equal(mllm_plugins_load_env(), MLLM_ERR_IO);
    unsetenv("MLLM_PLUGINS");
    assert_int_equal(mllm_plugins_load_env(), MLLM_OK);
}

/* softsign(x) + x and its row sums, with the ops of the plugin whose
   names start with ns ("example." or "old."). */
static mllm_tensor *build_ns(mllm_graph *g, const char *ns, const float *x0, mllm_tensor **rows) {
    char soft[64], sum[64];
    snprintf(soft, sizeof soft, "%ssoftsign", ns);
    snprintf(sum, sizeof sum, "%srowsum", ns);
    mllm_tensor *x = mllm_graph_input_f32(g, K, T, "x");
    memcpy(x->data, x0, sizeof(float) * K * T);
    mllm_tensor *s = mllm_op_custom(g, soft, &x, 1);
    mllm_tensor *y = mllm_op_add(g, s, x); /* a built-in op reading the plugin's output */
    *rows = mllm_op_custom(g, sum, &y, 1);
    return y;
}
static mllm_tensor *build(mllm_graph *g, const float *x0, mllm_tensor **rows) { return build_ns(g, "example.", x0, rows); }

static void test_graph_with_plugin_ops(void **state) {
    (void)state;
    assert_int_equal(mllm_plugin_load(MLLM_EXAMPLE_PLUGIN), MLLM_OK);
    /* its ops are there once: a second load registers them again and fails */
    assert_int_equal(mllm_plugin_load(MLLM_EXAMPLE_PLUGIN), MLLM_ERR_INVALID_ARG);
    assert_non_null(strstr(mllm_last_error(), "already registered"));
    float x0[K * T], want_y[K * T], want_r[T];
    tu_fill_random(x0, K * T, 7);
    for (int t = 0; t < T; t++) {
        float s = 0;
        for (int k = 0; k < K; k++) {
            const float v = x0[t * K + k];
            want_y[t * K + k] = v / (1.0f + fabsf(v)) + v;
            s += want_y[t * K + k];
        }
        want_r[t] = s;
    }
    for (int nt = 1; nt <= 3; nt++) {
        mllm_pool *pool = mllm_pool_new(nt);
        mllm_graph tg, eg;
        mllm_graph_init(&tg, MLLM_MODE_TRACE, pool, 4096);
        mllm_graph_init(&eg, MLLM_MODE_EAGER, pool, 4096);
        mllm_tensor *tr, *er;
        mllm_tensor *ty = build(&tg, x0, &tr), *ey = build(&eg, x0, &er);
        assert_non_null(tr);
        assert_non_null(er);
        assert_int_equal(tr->ne[0], 1);
        assert_int_equal(tr->ne[1], T);
        mllm_tensor *outs[2] = {ty, tr};
        assert_true(mllm_graph_plan(&tg, outs, 2));
        mllm_graph_execute(&tg);
        assert_memory_equal(ty->data, want_y, sizeof want_y);
        assert_memory_equal(tr->data, want_r, sizeof want_r);
        assert_memory_equal(ey->data, want_y, sizeof want_y);
        assert_memory_equal(er->data, want_r, sizeof want_r);
        mllm_graph_free(&tg);
        mllm_graph_free(&eg);
        mllm_pool_free(pool);
    }
}

static void test_bad_custom_nodes(void **state) {
    (void)state;
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_TRACE, NULL, 4096);
    mllm_tensor *x = mllm_graph_input_f32(&g, K, T, "x");
    assert_null(mllm_op_custom(&g, "example.nope", &x, 1));
    assert_true(g.failed);
    assert_non_null(strstr(mllm_last_error(), "no op 'example.nope'"));
    mllm_tensor *two[2] = {x, x};
    assert_null(mllm_op_custom(&g, "example.softsign", two, 2));
    assert_non_null(strstr(mllm_last_error(), "takes 1 inputs"));
    mllm_graph_free(&g);
    mllm_op_def d = {sizeof d, MLLM_PLUGIN_ABI_VERSION, "bad name!", 1, NULL, NULL, NULL, NULL, NULL};
    assert_int_equal(mllm_op_register(&d), MLLM_ERR_INVALID_ARG);
}

#ifdef MLLM_HAVE_OPENCL
#include "backends/opencl/ocl_backend.h"
#include "graph/sched.h"

/* The graph of build() on [opencl, cpu]: *on_dev of its nodes ran on the
   device; y and the row sums into the given arrays. false: no device. */
static bool run_on_opencl(const char *ns, const float *x0, float *y, float *rows, int *on_dev) {
    mllm_backend *dev = mllm_backend_opencl();
    if (!dev) return false;
    mllm_pool *pool = mllm_pool_new(2);
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_TRACE, pool, 4096);
    mllm_tensor *tr;
    mllm_tensor *ty = build_ns(&g, ns, x0, &tr);
    assert_non_null(tr);
    mllm_backend *bes[2] = {dev, mllm_backend_cpu()};
    mllm_graph_set_backends(&g, bes, 2);
    mllm_tensor *outs[2] = {ty, tr};
    assert_true(mllm_graph_plan(&g, outs, 2));
    assert_non_null(g.sched);
    mllm_sched_stats st;
    mllm_sched_get_stats(g.sched, &st);
    *on_dev = st.n_nodes[0];
    mllm_graph_execute(&g);
    assert_false(g.failed);
    memcpy(y, ty->data, sizeof(float) * K * T);
    memcpy(rows, tr->data, sizeof(float) * T);
    mllm_graph_free(&g);
    mllm_pool_free(pool);
    return true;
}

/* The plugin's OpenCL kernels run where the scheduler puts its ops on the
   device (all three nodes: the first reads only a graph input, the others
   follow their producer) and give the CPU kernels' values: softsign is one
   division (correctly rounded on PoCL; a GPU may differ by an ulp, hence
   the bound, not equality) and the row sum runs in the CPU's order. */
static void test_plugin_ops_on_opencl(void **state) {
    (void)state;
    float x0[K * T], y[K * T], r[T], want_y[K * T], want_r[T];
    tu_fill_random(x0, K * T, 11);
    for (int t = 0; t < T; t++) {
        float s = 0;
        for (int k = 0; k < K; k++) {
            const float v = x0[t * K + k];
            want_y[t * K + k] = v / (1.0f + fabsf(v)) + v;
            s += want_y[t * K + k];
        }
        want_r[t] = s;
    }
    mllm_plugin_load(MLLM_EXAMPLE_PLUGIN); /* loaded already when the test above ran first */
    int on_dev = -1;
    if (!run_on_opencl("example.", x0, y, r, &on_dev)) {
        printf("SKIPPED: no OpenCL device (%s)\n", mllm_last_error());
        return;
    }
    assert_int_equal(on_dev, 3);
    const double ny = tu_nmse(y, want_y, K * T), nr = tu_nmse(r, want_r, T);
    printf("opencl plugin ops: NMSE %.3g (softsign + x), %.3g (row sums)\n", ny, nr);
    assert_true(ny < 1e-12);
    assert_true(nr < 1e-12);
    /* A plugin built with ABI 1's first mllm_op_def has no OpenCL fields
       (its struct_size ends at user, whatever follows in its memory): its
       ops, and the add that reads them, stay on the CPU, with its values. */
    assert_int_equal(mllm_plugin_load(MLLM_EXAMPLE_PLUGIN_OLD_DEF), MLLM_OK);
    assert_true(run_on_opencl("old.", x0, y, r, &on_dev));
    assert_int_equal(on_dev, 0);
    assert_memory_equal(y, want_y, sizeof want_y);
    assert_memory_equal(r, want_r, sizeof want_r);
}

static int copy_shape(const mllm_op_tensor *in, int n_in, int64_t out_ne[4], void *user) {
    (void)n_in, (void)user;
    memcpy(out_ne, in[0].ne, sizeof in[0].ne);
    return 0;
}
static void copy_kernel(const mllm_op_tensor *out, const mllm_op_tensor *in, int n_in, int ith, int nth, void *user) {
    (void)n_in, (void)user;
    if (ith == 0) memcpy(out->data, in[0].data, sizeof(float) * (size_t)(out->ne[0] * out->ne[1] * out->ne[2] * out->ne[3]));
    (void)nth;
}

/* Only one of the two OpenCL fields is an error naming the missing one; a
   kernel the driver cannot build fails the graph with its build log. */
static void test_bad_opencl_kernels(void **state) {
    (void)state;
    mllm_op_def d = {sizeof d, MLLM_PLUGIN_ABI_VERSION, "half.op", 1, copy_shape, copy_kernel, NULL,
                     "__kernel void f() {}", NULL};
    assert_int_equal(mllm_op_register(&d), MLLM_ERR_INVALID_ARG);
    assert_non_null(strstr(mllm_last_error(), "no opencl_kernel"));
    mllm_backend *dev = mllm_backend_opencl();
    if (!dev) {
        printf("SKIPPED: no OpenCL device (%s)\n", mllm_last_error());
        return;
    }
    d.name = "broken.op";
    d.opencl_source = "this is not OpenCL C";
    d.opencl_kernel = "f";
    assert_int_equal(mllm_op_register(&d), MLLM_OK);
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_TRACE, NULL, 4096);
    mllm_tensor *x = mllm_graph_input_f32(&g, K, T, "x");
    memset(x->data, 0, sizeof(float) * K * T);
    mllm_tensor *y = mllm_op_custom(&g, "broken.op", &x, 1);
    mllm_backend *bes[2] = {dev, mllm_backend_cpu()};
    mllm_graph_set_backends(&g, bes, 2);
    assert_true(mllm_graph_plan(&g, &y, 1));
    mllm_graph_execute(&g);
    assert_true(g.failed);
    assert_non_null(strstr(mllm_last_error(), "kernel 'f' does not build"));
    mllm_graph_free(&g);
}
#endif

int main(void) {
    mllm_cpu_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_abi_mismatch),
        cmocka_unit_test(test_bad_loads),
        cmocka_unit_test(test_graph_with_plugin_ops),
        cmocka_unit_test(test_bad_custom_nodes),
#ifdef MLLM_HAVE_OPENCL
        cmocka_unit_test(test_plugin_ops_on_opencl),
        cmocka_unit_test(test_bad_opencl_kernels),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
