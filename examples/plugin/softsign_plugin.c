/* An example op plugin: "example.softsign", y = x / (1 + |x|) per element,
   and "example.rowsum", the sum of each row (ne[0] values) of its input.
   Build it as a shared object against include/mllm/mllm.h (it links nothing
   of mllm):
       cc -O2 -fPIC -shared -I include examples/plugin/softsign_plugin.c -o softsign.so
   and load it with `mllm run --plugin softsign.so ...`, MLLM_PLUGINS, or
   mllm_plugin_load(). EXAMPLE_PLUGIN_ABI (default MLLM_PLUGIN_ABI_VERSION)
   builds it for another ABI, which the library must refuse (the tests do).
   Both ops also carry an OpenCL C kernel, which `--backend opencl` runs
   where the scheduler puts the node on the device; EXAMPLE_PLUGIN_OLD_DEF
   builds it with the first ABI 1 mllm_op_def (struct_size up to user, no
   OpenCL fields), as a plugin built against an older mllm.h would be;
   EXAMPLE_PLUGIN_NS changes the ops' "example." prefix. */
#include <math.h>
#include <stddef.h>
#include <mllm/mllm.h>

#ifndef EXAMPLE_PLUGIN_ABI
#define EXAMPLE_PLUGIN_ABI MLLM_PLUGIN_ABI_VERSION
#endif
#ifndef EXAMPLE_PLUGIN_NS /* the ops' name prefix (the tests load two builds) */
#define EXAMPLE_PLUGIN_NS "example."
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

/* The same two ops in OpenCL C: one work-item per output element; the
   arguments are the output, the input, then both shapes (mllm.h). The
   sum runs in the CPU kernel's order, so both give the same bits. */
static const char k_opencl[] =
    "__kernel void softsign(__global float *y, __global const float *x, long4 ne_y, long4 ne_x) {\n"
    "    const size_t i = get_global_id(0);\n"
    "    y[i] = x[i] / (1.0f + fabs(x[i]));\n"
    "}\n"
    "__kernel void rowsum(__global float *y, __global const float *x, long4 ne_y, long4 ne_x) {\n"
    "    const size_t r = get_global_id(0);\n"
    "    float s = 0.0f;\n"
    "    for (long i = 0; i < ne_x.s0; i++) s += x[r * ne_x.s0 + i];\n"
    "    y[r] = s;\n"
    "}\n";

__attribute__((visibility("default"))) mllm_status mllm_plugin_init(const mllm_plugin_host *host);

mllm_status mllm_plugin_init(const mllm_plugin_host *host) {
    if (!host || host->struct_size < sizeof *host) return MLLM_ERR_UNSUPPORTED;
#ifdef EXAMPLE_PLUGIN_OLD_DEF
    const uint32_t size = offsetof(mllm_op_def, user) + sizeof(void *);
#else
    const uint32_t size = sizeof(mllm_op_def);
#endif
    const mllm_op_def ops[2] = {
        {size, EXAMPLE_PLUGIN_ABI, EXAMPLE_PLUGIN_NS "softsign", 1, same_shape, softsign, 0, k_opencl, "softsign"},
        {size, EXAMPLE_PLUGIN_ABI, EXAMPLE_PLUGIN_NS "rowsum", 1, one_per_row, rowsum, 0, k_opencl, "rowsum"},
    };
    for (int i = 0; i < 2; i++) {
        mllm_status st = host->register_op(&ops[i]);
        if (st != MLLM_OK) return st;
    }
    return MLLM_OK;
}
