/* An example op plugin: "example.softsign", y = x / (1 + |x|) per element,
   and "example.rowsum", the sum of each row (ne[0] values) of its input.
   Build it as a shared object against include/mllm/mllm.h (it links nothing
   of mllm):
       cc -O2 -fPIC -shared -I include examples/plugin/softsign_plugin.c -o softsign.so
   and load it with `mllm run --plugin softsign.so ...`, MLLM_PLUGINS, or
   mllm_plugin_load(). EXAMPLE_PLUGIN_ABI (default MLLM_PLUGIN_ABI_VERSION)
   builds it for another ABI, which the library must refuse (the tests do). */
#include <math.h>
#include <mllm/mllm.h>

#ifndef EXAMPLE_PLUGIN_ABI
#define EXAMPLE_PLUGIN_ABI MLLM_PLUGIN_ABI_VERSION
#endif

static int same_shape(const mllm_op_tensor *in, int n_in, int64_t out_ne[4], void *user) {
    (void)n_in, (void)user;
    for (int d = 0; d < 4; d++) out_ne[d] = in[0].ne[d];
    return 0;
}

static int64_t count(const mllm_op_tensor *t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

/* Each thread takes one contiguous slice of the elements. */
static void softsign(const mllm_op_tensor *out, const mllm_op_tensor *in, int n_in, int ith, int nth, void *user) {
    (void)n_in, (void)user;
    const int64_t n = count(out), per = (n + nth - 1) / nth;
    const int64_t i0 = per * ith < n ? per * ith : n, i1 = i0 + per < n ? i0 + per : n;
    for (int64_t i = i0; i < i1; i++) out->data[i] = in[0].data[i] / (1.0f + fabsf(in[0].data[i]));
}

static int one_per_row(const mllm_op_tensor *in, int n_in, int64_t out_ne[4], void *user) {
    (void)n_in, (void)user;
    out_ne[0] = 1;
    for (int d = 1; d < 4; d++) out_ne[d] = in[0].ne[d];
    return 0;
}

static void rowsum(const mllm_op_tensor *out, const mllm_op_tensor *in, int n_in, int ith, int nth, void *user) {
    (void)n_in, (void)user;
    const int64_t rows = count(out), k = in[0].ne[0];
    for (int64_t r = ith; r < rows; r += nth) {
        float s = 0;
        for (int64_t i = 0; i < k; i++) s += in[0].data[r * k + i];
        out->data[r] = s;
    }
}

__attribute__((visibility("default"))) mllm_status mllm_plugin_init(const mllm_plugin_host *host);

mllm_status mllm_plugin_init(const mllm_plugin_host *host) {
    if (!host || host->struct_size < sizeof *host) return MLLM_ERR_UNSUPPORTED;
    const mllm_op_def ops[2] = {
        {sizeof(mllm_op_def), EXAMPLE_PLUGIN_ABI, "example.softsign", 1, same_shape, softsign, 0},
        {sizeof(mllm_op_def), EXAMPLE_PLUGIN_ABI, "example.rowsum", 1, one_per_row, rowsum, 0},
    };
    for (int i = 0; i < 2; i++) {
        mllm_status st = host->register_op(&ops[i]);
        if (st != MLLM_OK) return st;
    }
    return MLLM_OK;
}
