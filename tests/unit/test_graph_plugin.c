/* Op plugins (include/mllm/mllm.h, backends/plugin.c): the example plugin
   (examples/plugin/softsign_plugin.c) is loaded at run time and its ops run
   in traced and eager graphs next to built-in ones, against the same
   arithmetic done here; the copy built for another ABI is refused with both
   versions named; bad names, counts and paths give clear errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mllm/mllm.h>
#include "backends/cpu/type_kernels.h"
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

static mllm_tensor *build(mllm_graph *g, const float *x0, mllm_tensor **rows) {
    mllm_tensor *x = mllm_graph_input_f32(g, K, T, "x");
    memcpy(x->data, x0, sizeof(float) * K * T);
    mllm_tensor *s = mllm_op_custom(g, "example.softsign", &x, 1);
    mllm_tensor *y = mllm_op_add(g, s, x); /* a built-in op reading the plugin's output */
    *rows = mllm_op_custom(g, "example.rowsum", &y, 1);
    return y;
}

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
    mllm_op_def d = {sizeof d, MLLM_PLUGIN_ABI_VERSION, "bad name!", 1, NULL, NULL, NULL};
    assert_int_equal(mllm_op_register(&d), MLLM_ERR_INVALID_ARG);
}

int main(void) {
    mllm_cpu_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_abi_mismatch),
        cmocka_unit_test(test_bad_loads),
        cmocka_unit_test(test_graph_with_plugin_ops),
        cmocka_unit_test(test_bad_custom_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
