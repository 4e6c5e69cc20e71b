/* The CPU backend: host-memory buffers and the nodes computed on the thread
   pool, one barrier after each node (a node's threads split its rows). A
   single-backend graph is one run of all its nodes, so this is the whole
   execution path of a CPU-only model: nothing per node beyond the call. */
#include "backends/cpu/cpu_backend.h"

#include <stdint.h>

#include "core/alloc.h"

/* Both are host memory; they differ in who can read them (the repacked
   layouts only the CPU's packed kernels). */
#define HOST_BUFFER_TYPE(nm) \
    { .name = nm, .alloc = mllm_host_buffer_alloc, .free = mllm_host_buffer_free, .set = mllm_host_buffer_set, \
      .get = mllm_host_buffer_get, .is_host = mllm_host_buffer_is_host }
static const mllm_buffer_type g_cpu_buft = HOST_BUFFER_TYPE("cpu");
static const mllm_buffer_type g_repack_buft = HOST_BUFFER_TYPE("cpu_repack");

const mllm_buffer_type *mllm_cpu_buffer_type(void) { return &g_cpu_buft; }
const mllm_buffer_type *mllm_cpu_repack_buffer_type(void) { return &g_repack_buft; }

bool mllm_cpu_supports_op(const mllm_tensor *t) { return t->op > MLLM_OP_VIEW && t->op < MLLM_OP_COUNT; }

typedef struct { const mllm_exec_ctx *x; mllm_tensor **nodes; int n; } exec_job;

/* A node's work for mllm_exec_ctx.serial_below: multiply-adds of the
   matmuls and attentions (a causal slot attention counted over its whole
   context), values written for the rest. */
static int64_t node_cost(const mllm_tensor *t) {
    switch (t->op) {
    case MLLM_OP_MATMUL: return t->src[0]->ne[0] * t->src[0]->ne[1] * t->src[1]->ne[1];
    case MLLM_OP_ATTENTION_SLOTS: {
        const mllm_kv_slots *kv = t->pp;
        return t->ne[0] * t->ne[1] * (t->ip[1] ? kv->n_ctx : t->ip[2]) * 2;
    }
    case MLLM_OP_ATTENTION:
    case MLLM_OP_ATTENTION_PAGED:
    case MLLM_OP_ATTENTION_FULL: return INT64_MAX;
    default: return mllm_tensor_nelements(t);
    }
}

static void exec_fn(void *arg, int ith, int nth) {
    exec_job *j = arg;
    for (int i = 0; i < j->n; i++) {
        mllm_cpu_compute_node(j->x, j->nodes[i], ith, nth);
        mllm_pool_barrier(j->x->pool);
    }
}

bool mllm_cpu_compute_nodes(mllm_exec_ctx *x, mllm_tensor **nodes, int n) {
    int nth = mllm_pool_size(x->pool);
    size_t need = 0;
    for (int i = 0; i < n; i++) {
        size_t w = mllm_cpu_node_work_size(nodes[i], nth);
        if (w > need) need = w;
    }
    if (need > x->work_size) {
        void *w = mllm_malloc_aligned(need);
        if (!w) return false;
        mllm_free_aligned(x->work);
        x->work = w;
        x->work_size = need;
    }
    for (int i = 0; i < n; i++) nodes[i]->next_chunk = 0;
    if (x->serial_below <= 0 || nth == 1) {
        exec_job j = {x, nodes, n};
        if (x->pool) mllm_pool_run(x->pool, exec_fn, &j);
        else exec_fn(&j, 0, 1);
        return true;
    }
    /* Runs of small nodes on this thread (no pool: their barriers are
       no-ops), runs of large ones on the pool. */
    const mllm_exec_ctx solo = {NULL, x->work, x->work_size, 0};
    for (int i = 0, j; i < n; i = j) {
        const bool small = node_cost(nodes[i]) < x->serial_below;
        for (j = i + 1; j < n && (node_cost(nodes[j]) < x->serial_below) == small;) j++;
        /* A run's first matmul converts its own input: a decode step's rows
           are converted into each thread's own copy (node_compute.c), and
           this run's threads are not the previous run's. */
        if (nodes[i]->op == MLLM_OP_MATMUL) nodes[i]->ip[1] = 0;
        exec_job job = {small ? &solo : x, nodes + i, j - i};
        if (small) exec_fn(&job, 0, 1);
        else mllm_pool_run(x->pool, exec_fn, &job);
    }
    return true;
}

static bool cpu_supports_op(const mllm_backend *be, const mllm_tensor *t) { return mllm_cpu_supports_op(t); }

static bool cpu_graph_compute(mllm_backend *be, mllm_exec_ctx *x, mllm_tensor **nodes, int n) {
    return mllm_cpu_compute_nodes(x, nodes, n);
}

static void cpu_synchronize(mllm_backend *be) {}

static mllm_backend g_cpu = {
    .name = "cpu",
    .buffer_type = &g_cpu_buft,
    .supports_op = cpu_supports_op,
    .graph_compute = cpu_graph_compute,
    .synchronize = cpu_synchronize,
};

mllm_backend *mllm_backend_cpu(void) { return &g_cpu; }
