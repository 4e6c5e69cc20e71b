/* Graph construction (both modes) and execution over the thread pool. */
#include "graph/graph.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "backends/plugin.h"
#include "core/dtype.h"
#include "core/error.h"
#include "graph/sched.h"

static const char *const k_op_names[MLLM_OP_COUNT] = {
    "leaf", "view", "get_rows", "rmsnorm", "matmul", "rope",
    "kv_store", "attention", "silu_mul", "add", "scale", "gelu_mul", "softcap", "layernorm", "gelu",
    "kv_store_paged", "attention_paged", "custom", "gelu_tanh", "rope_table", "attention_segments", "im2col",
    "attention_full", "kv_slots_store", "attention_slots",
};

const char *mllm_op_name(mllm_op op) {
    return (op >= 0 && op < MLLM_OP_COUNT) ? k_op_names[op] : "?";
}

void mllm_graph_init(mllm_graph *g, mllm_mode mode, mllm_pool *pool, size_t arena_chunk) {
    memset(g, 0, sizeof *g);
    g->mode = mode;
    g->pool = pool;
    mllm_arena_init(&g->arena, arena_chunk);
}

void mllm_graph_free(mllm_graph *g) {
    mllm_sched_free(g->sched);
    mllm_arena_free(&g->arena);
    mllm_free(g->nodes);
    mllm_free(g->views);
    mllm_free_aligned(g->buf);
    mllm_free_aligned(g->work);
    memset(g, 0, sizeof *g);
}

void mllm_graph_reset(mllm_graph *g) {
    mllm_sched_free(g->sched);
    g->sched = NULL;
    mllm_arena_reset(&g->arena);
    g->n_nodes = 0;
    g->n_views = 0;
    g->failed = false;
}

mllm_tensor *mllm_graph_input_i32(mllm_graph *g, int64_t n, const char *name) {
    if (n < 1) { g->failed = true; return NULL; }
    int64_t ne[1] = {n};
    void *data = mllm_arena_alloc(&g->arena, (size_t)n * sizeof(int32_t));
    if (!data) { g->failed = true; return NULL; }
    memset(data, 0, (size_t)n * sizeof(int32_t));
    mllm_tensor *t = mllm_tensor_wrap(g, MLLM_DTYPE_I32, 1, ne, data, name);
    if (t) t->is_input = true;
    return t;
}


mllm_tensor *mllm_graph_input_i32_2d(mllm_graph *g, int64_t ne0, int64_t ne1, const char *name) {
    if (ne0 < 1 || ne1 < 1 || ne0 > INT32_MAX / ne1) { g->failed = true; return NULL; }
    mllm_tensor *t = mllm_graph_input_i32(g, ne0 * ne1, name);
    if (!t) return NULL;
    int64_t ne[2] = {ne0, ne1};
    mllm_tensor_set_shape(t, MLLM_DTYPE_I32, 2, ne);
    return t;
}

mllm_tensor *mllm_graph_input_f32(mllm_graph *g, int64_t ne0, int64_t ne1, const char *name) {
    if (ne0 < 1 || ne1 < 1) { g->failed = true; return NULL; }
    int64_t ne[2] = {ne0, ne1};
    void *data = mllm_arena_alloc(&g->arena, (size_t)(ne0 * ne1) * sizeof(float));
    if (!data) { g->failed = true; return NULL; }
    memset(data, 0, (size_t)(ne0 * ne1) * sizeof(float));
    mllm_tensor *t = mllm_tensor_wrap(g, MLLM_DTYPE_F32, 2, ne, data, name);
    if (t) t->is_input = true;
    return t;
}

static mllm_tensor *tensor_struct(mllm_graph *g, const char *name) {
    mllm_tensor *t = mllm_arena_calloc(&g->arena, sizeof *t);
    if (!t) { g->failed = true; return NULL; }
    if (name) snprintf(t->name, sizeof t->name, "%.*s", (int)sizeof t->name - 1, name); /* cut to fit */
    return t;
}

mllm_tensor *mllm_tensor_wrap(mllm_graph *g, int dtype, int n_dims, const int64_t *ne,
                              const void *data, const char *name) {
    mllm_tensor *t = tensor_struct(g, name);
    if (!t) return NULL;
    mllm_tensor_set_shape(t, dtype, n_dims, ne);
    t->data = (void *)data; /* weights are read-only: no op writes a leaf */
    return t;
}

#define nbytes mllm_tensor_nbytes

mllm_tensor *mllm_tensor_new_f32(mllm_graph *g, int n_dims, const int64_t *ne, const char *name) {
    mllm_tensor *t = tensor_struct(g, name);
    if (!t) return NULL;
    mllm_tensor_set_shape(t, MLLM_DTYPE_F32, n_dims, ne);
    if (g->mode == MLLM_MODE_TRACE) return t; /* placed by mllm_graph_plan */
    t->data = mllm_arena_alloc(&g->arena, nbytes(t));
    if (!t->data) { g->failed = true; return NULL; }
    return t;
}

/* ---- execution ------------------------------------------------------- */

/* The CPU alone (eager mode, and every graph without other backends): one
   run of all nodes, straight to the CPU backend, no schedule in between. */
static void run_nodes(mllm_graph *g, mllm_tensor **nodes, int n) {
    mllm_backend *cpu = mllm_backend_cpu();
    mllm_exec_ctx x = {g->pool, g->work, g->work_size, g->serial_below};
    if (!cpu->graph_compute(cpu, &x, nodes, n)) g->failed = true;
    g->work = x.work;
    g->work_size = x.work_size;
}

void mllm_graph_execute(mllm_graph *g) {
    if (!g->sched) {
        run_nodes(g, g->nodes, g->n_nodes);
        return;
    }
    mllm_exec_ctx x = {g->pool, g->work, g->work_size, g->serial_below};
    if (!mllm_sched_execute(g->sched, &x)) g->failed = true;
    g->work = x.work;
    g->work_size = x.work_size;
}

void mllm_graph_set_backends(mllm_graph *g, mllm_backend *const *backends, int n) {
    g->n_backends = 0;
    for (int i = 0; backends && i < n && i < MLLM_MAX_BACKENDS; i++) g->backends[g->n_backends++] = backends[i];
}

/* Eager: run now. Trace: record. Views are never recorded: they compute nothing. */
static bool push(mllm_graph *g, mllm_tensor ***arr, int *n, int *cap, mllm_tensor *t) {
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 256;
        mllm_tensor **na = mllm_realloc(*arr, (size_t)nc * sizeof *na);
        if (!na) { g->failed = true; return false; }
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = t;
    return true;
}

static mllm_tensor *emit(mllm_graph *g, mllm_tensor *t) {
    if (!t) return NULL;
    if (t->op == MLLM_OP_VIEW) {
        if (g->mode == MLLM_MODE_TRACE && !push(g, &g->views, &g->n_views, &g->cap_views, t))
            return NULL;
        return t;
    }
    if (g->mode == MLLM_MODE_EAGER) {
        run_nodes(g, &t, 1);
        return g->failed ? NULL : t;
    }
    return push(g, &g->nodes, &g->n_nodes, &g->cap_nodes, t) ? t : NULL;
}

void mllm_graph_print(const mllm_graph *g, void (*line)(void *user, const char *text, size_t len), void *user) {
    char buf[512]; /* names are under 48 bytes: the longest line fits */
    for (int i = 0; i < g->n_nodes; i++) {
        const mllm_tensor *t = g->nodes[i];
        int n = snprintf(buf, sizeof buf, "  %4d %-10s %-28s [%lld, %lld, %lld] <-", i, mllm_op_name(t->op), t->name,
                         (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2]);
        for (int s = 0; s < MLLM_MAX_SRC && t->src[s] && n > 0 && (size_t)n < sizeof buf; s++)
            n += snprintf(buf + n, sizeof buf - (size_t)n, " %s", t->src[s]->name);
        if (n > 0 && (size_t)n < sizeof buf - 1) buf[n++] = '\n';
        else n = (int)strlen(buf);
        line(user, buf, (size_t)n);
    }
}

/* ---- op constructors ------------------------------------------------- */

static mllm_tensor *node(mllm_graph *g, mllm_op op, int n_dims, const int64_t *ne,
                         const char *name) {
    mllm_tensor *t = mllm_tensor_new_f32(g, n_dims, ne, name);
    if (t) t->op = op;
    return t;
}

static bool is_i32_vector(const mllm_tensor *t) { return t && t->dtype == MLLM_DTYPE_I32 && t->ne[1] == 1; }

mllm_tensor *mllm_op_get_rows(mllm_graph *g, mllm_tensor *table, mllm_tensor *ids) {
    if (!table || !is_i32_vector(ids)) { g->failed = true; return NULL; }
    int64_t ne[2] = {table->ne[0], ids->ne[0]};
    mllm_tensor *t = node(g, MLLM_OP_GET_ROWS, 2, ne, "inp_embd");
    if (!t) return NULL;
    t->src[0] = table;
    t->src[1] = ids;
    return emit(g, t);
}

mllm_tensor *mllm_op_rmsnorm(mllm_graph *g, mllm_tensor *x, mllm_tensor *w, float eps) {
    if (!x) return NULL;
    mllm_tensor *t = node(g, MLLM_OP_RMSNORM, 4, x->ne, w ? w->name : "norm");
    if (!t) return NULL;
    t->src[0] = x;
    t->src[1] = w;
    t->fp[0] = eps;
    return emit(g, t);
}

mllm_tensor *mllm_op_matmul(mllm_graph *g, mllm_tensor *w, mllm_tensor *x, mllm_tensor *bias) {
    if (!w || !x || w->ne[0] != x->ne[0]) { g->failed = true; return NULL; }
    int64_t ne[2] = {w->ne[1], x->ne[1]};
    mllm_tensor *t = node(g, MLLM_OP_MATMUL, 2, ne, w->name);
    if (!t) return NULL;
    t->src[0] = w;
    t->src[1] = x;
    t->src[2] = bias;
    const mllm_dtype_traits *tr = mllm_dtype_get(w->dtype);
    t->ip[2] = g->exact && tr && tr->vec_dot_type != MLLM_DTYPE_F32;
    /* The packed GEMM (node_compute.c), whose sums depend on the batch: 1 on
       the f32 activations as they are (batch_gemm: the vision towers); 2 on
       activations rounded through the weight's vec_dot type first, as the
       dots would see them, from 16 rows (gemm: Whisper, whose outputs stay
       those of its earlier code). */
    const bool fw = w->dtype == MLLM_DTYPE_F16 || w->dtype == MLLM_DTYPE_BF16;
    t->ip[3] = t->ip[2]                                                   ? 0
               : g->gemm && fw && x->ne[1] >= 16 && w->ne[0] <= 16384     ? 2
               : g->batch_gemm && (fw || w->dtype == MLLM_DTYPE_F32)      ? 1
                                                                          : 0;
    return emit(g, t);
}

mllm_tensor *mllm_op_rope(mllm_graph *g, mllm_tensor *x, mllm_tensor *pos, const mllm_rope_params *rp) {
    if (!x) return NULL;
    const bool mrope = rp->mrope[0] || rp->mrope[1] || rp->mrope[2];
    if (!is_i32_vector(pos) || (pos->ne[0] != x->ne[2] && !(mrope && pos->ne[0] == 3 * x->ne[2]))) {
        g->failed = true;
        return NULL;
    }
    mllm_tensor *t = node(g, MLLM_OP_ROPE, 4, x->ne, "rope");
    if (!t) return NULL;
    t->src[0] = x;
    t->src[1] = pos;
    t->pp = rp;
    return emit(g, t);
}

/* A KV store node (contiguous or paged): k, v, pos (+ seq, table). */
static mllm_tensor *store_node(mllm_graph *g, mllm_op op, mllm_tensor *k, mllm_tensor *v, mllm_tensor *pos,
                               mllm_tensor *seq, mllm_tensor *table, const void *kv, const char *name) {
    int64_t ne[1] = {1};
    mllm_tensor *t = node(g, op, 1, ne, name);
    if (!t) return NULL;
    t->src[0] = k;
    t->src[1] = v;
    t->src[2] = pos;
    t->src[3] = seq;
    t->src[4] = table;
    t->pp = kv;
    return emit(g, t);
}

/* An attention node (contiguous or paged): out (D*H, T). */
static mllm_tensor *attention_node(mllm_graph *g, mllm_op op, mllm_tensor *q, mllm_tensor *dep, mllm_tensor *pos,
                                   mllm_tensor *seq, mllm_tensor *table, const void *kv, int n_head_kv, float scale,
                                   int window, const char *name) {
    int64_t ne[2] = {q->ne[0] * q->ne[1], q->ne[2]};
    mllm_tensor *t = node(g, op, 2, ne, name);
    if (!t) return NULL;
    t->src[0] = q;
    t->src[1] = dep;
    t->src[2] = pos;
    t->src[3] = seq;
    t->src[4] = table;
    t->pp = kv;
    t->ip[0] = n_head_kv;
    t->ip[1] = window > 0 ? window : 0;
    t->fp[0] = scale;
    return emit(g, t);
}

mllm_tensor *mllm_op_kv_store(mllm_graph *g, mllm_tensor *k, mllm_tensor *v, mllm_tensor *pos,
                              const mllm_kv_layer *kv) {
    if (!k || !v) return NULL;
    if (!is_i32_vector(pos) || pos->ne[0] * kv->kv_dim != mllm_tensor_nelements(k)) { g->failed = true; return NULL; }
    return store_node(g, MLLM_OP_KV_STORE, k, v, pos, NULL, NULL, kv, "kv_store");
}

mllm_tensor *mllm_op_attention(mllm_graph *g, mllm_tensor *q, mllm_tensor *dep, mllm_tensor *pos,
                               const mllm_kv_layer *kv, int n_head_kv, float scale, int window) {
    if (!q || !dep) return NULL;
    if (!is_i32_vector(pos) || pos->ne[0] != q->ne[2]) { g->failed = true; return NULL; }
    return attention_node(g, MLLM_OP_ATTENTION, q, dep, pos, NULL, NULL, kv, n_head_kv, scale, window, "attn");
}

/* The paged ops' position, sequence and table inputs fit together. */
static bool paged_inputs_ok(const mllm_tensor *pos, const mllm_tensor *seq, const mllm_tensor *table,
                            const mllm_kv_paged *kv, int64_t T) {
    return kv && is_i32_vector(pos) && is_i32_vector(seq) && pos->ne[0] == T && seq->ne[0] == T && table &&
           table->dtype == MLLM_DTYPE_I32 && table->ne[2] == 1 && table->ne[3] == 1;
}

mllm_tensor *mllm_op_kv_store_paged(mllm_graph *g, mllm_tensor *k, mllm_tensor *v, mllm_tensor *pos, mllm_tensor *seq,
                                    mllm_tensor *table, const mllm_kv_paged *kv) {
    if (!k || !v) return NULL;
    const int64_t kv_dim = kv ? (int64_t)kv->n_head_kv * kv->head_dim : 0;
    const int64_t T = kv_dim ? mllm_tensor_nelements(k) / kv_dim : 0;
    if (!paged_inputs_ok(pos, seq, table, kv, T) || T * kv_dim != mllm_tensor_nelements(k) ||
        mllm_tensor_nelements(v) != mllm_tensor_nelements(k)) {
        g->failed = true;
        return NULL;
    }
    return store_node(g, MLLM_OP_KV_STORE_PAGED, k, v, pos, seq, table, kv, "kv_store_paged");
}

mllm_tensor *mllm_op_attention_paged(mllm_graph *g, mllm_tensor *q, mllm_tensor *dep, mllm_tensor *pos,
                                     mllm_tensor *seq, mllm_tensor *table, const mllm_kv_paged *kv, int n_head_kv,
                                     float scale, int window) {
    if (!q || !dep) return NULL;
    if (!paged_inputs_ok(pos, seq, table, kv, q->ne[2]) || n_head_kv != kv->n_head_kv || q->ne[0] != kv->head_dim ||
        q->ne[1] % n_head_kv != 0) {
        g->failed = true;
        return NULL;
    }
    return attention_node(g, MLLM_OP_ATTENTION_PAGED, q, dep, pos, seq, table, kv, n_head_kv, scale, window,
                          "attn_paged");
}

static mllm_tensor *binary(mllm_graph *g, mllm_op op, mllm_tensor *a, mllm_tensor *b, const char *name) {
    if (!a || !b || mllm_tensor_nelements(a) != mllm_tensor_nelements(b)) { g->failed = true; return NULL; }
    mllm_tensor *t = node(g, op, 4, a->ne, name);
    if (!t) return NULL;
    t->src[0] = a;
    t->src[1] = b;
    return emit(g, t);
}

mllm_tensor *mllm_op_silu_mul(mllm_graph *g, mllm_tensor *a, mllm_tensor *b) {
    return binary(g, MLLM_OP_SILU_MUL, a, b, "silu_mul");
}
mllm_tensor *mllm_op_add(mllm_graph *g, mllm_tensor *a, mllm_tensor *b) {
    return binary(g, MLLM_OP_ADD, a, b, "add");
}
mllm_tensor *mllm_op_gelu_mul(mllm_graph *g, mllm_tensor *a, mllm_tensor *b) {
    return binary(g, MLLM_OP_GELU_MUL, a, b, "gelu_mul");
}

static mllm_tensor *unary(mllm_graph *g, mllm_op op, mllm_tensor *x, float p, int ip0, const char *name) {
    if (!x || x->dtype != MLLM_DTYPE_F32) { g->failed = true; return NULL; }
    mllm_tensor *t = node(g, op, 4, x->ne, name);
    if (!t) return NULL;
    t->src[0] = x;
    t->fp[0] = p;
    t->ip[0] = ip0;
    return emit(g, t);
}

mllm_tensor *mllm_op_layernorm(mllm_graph *g, mllm_tensor *x, mllm_tensor *w, mllm_tensor *b, float eps) {
    if (!x || x->dtype != MLLM_DTYPE_F32 || (w && w->ne[0] != x->ne[0]) || (b && b->ne[0] != x->ne[0])) {
        g->failed = true;
        return NULL;
    }
    mllm_tensor *t = node(g, MLLM_OP_LAYERNORM, 4, x->ne, w ? w->name : "layernorm");
    if (!t) return NULL;
    t->src[0] = x;
    t->src[1] = w;
    t->src[2] = b;
    t->fp[0] = eps;
    return emit(g, t);
}

mllm_tensor *mllm_op_attention_noncausal(mllm_tensor *a) {
    if (a && a->op == MLLM_OP_ATTENTION) a->ip[3] = 1;
    return a;
}

mllm_tensor *mllm_op_scale(mllm_graph *g, mllm_tensor *x, float s) { return unary(g, MLLM_OP_SCALE, x, s, 0, "scale"); }
/* ip[0]: the CPU path's vector erf */
mllm_tensor *mllm_op_gelu(mllm_graph *g, mllm_tensor *x) { return unary(g, MLLM_OP_GELU, x, 0.0f, 0, "gelu"); }
mllm_tensor *mllm_op_gelu_fast(mllm_graph *g, mllm_tensor *x) { return unary(g, MLLM_OP_GELU, x, 0.0f, 1, "gelu"); }
mllm_tensor *mllm_op_gelu_tanh(mllm_graph *g, mllm_tensor *x) {
    return unary(g, MLLM_OP_GELU_TANH, x, 0.0f, 0, "gelu_tanh");
}
mllm_tensor *mllm_op_softcap(mllm_graph *g, mllm_tensor *x, float cap) {
    return unary(g, MLLM_OP_SOFTCAP, x, cap, 0, "softcap");
}

static bool contiguous_f32(const mllm_tensor *t) {
    return t && t->dtype == MLLM_DTYPE_F32 && t->nb[0] == sizeof(float) && t->nb[1] == (size_t)t->ne[0] * sizeof(float) &&
           t->nb[2] == t->nb[1] * (size_t)t->ne[1] && t->nb[3] == t->nb[2] * (size_t)t->ne[2];
}

mllm_tensor *mllm_op_rope_table(mllm_graph *g, mllm_tensor *x, mllm_tensor *cs, mllm_tensor *sn) {
    if (!x || !cs || !sn) return NULL;
    const int64_t D = x->ne[0], T = x->ne[2];
    if (!contiguous_f32(x) || D % 2 || x->ne[3] != 1 || !contiguous_f32(cs) || !contiguous_f32(sn) ||
        cs->ne[0] != D / 2 || cs->ne[1] != T || mllm_tensor_nelements(cs) != D / 2 * T ||
        mllm_tensor_nelements(sn) != D / 2 * T || sn->ne[0] != D / 2) {
        g->failed = true;
        return NULL;
    }
    mllm_tensor *t = node(g, MLLM_OP_ROPE_TABLE, 4, x->ne, "rope_table");
    if (!t) return NULL;
    t->src[0] = x;
    t->src[1] = cs;
    t->src[2] = sn;
    return emit(g, t);
}

mllm_tensor *mllm_op_attention_segments(mllm_graph *g, mllm_tensor *q, mllm_tensor *k, mllm_tensor *v,
                                        mllm_tensor *segs, int n_head, float scale) {
    if (!q || !k || !v || !segs) return NULL;
    const mllm_tensor *qkv[3] = {q, k, v};
    bool ok = n_head > 0 && q->ne[0] % n_head == 0 && is_i32_vector(segs) && segs->ne[0] >= 2;
    for (int i = 0; i < 3 && ok; i++)
        ok = contiguous_f32(qkv[i]) && qkv[i]->ne[0] == q->ne[0] && qkv[i]->ne[1] == q->ne[1] &&
             qkv[i]->ne[2] == 1 && qkv[i]->ne[3] == 1;
    if (!ok) { g->failed = true; return NULL; }
    mllm_tensor *t = node(g, MLLM_OP_ATTENTION_SEGMENTS, 2, q->ne, "attn_segments");
    if (!t) return NULL;
    t->src[0] = q;
    t->src[1] = k;
    t->src[2] = v;
    t->src[3] = segs;
    t->ip[0] = n_head;
    t->fp[0] = scale;
    return emit(g, t);
}

mllm_tensor *mllm_op_custom(mllm_graph *g, const char *name, mllm_tensor *const *in, int n_in) {
    const mllm_custom_op *op = mllm_custom_op_find(name);
    if (!op || n_in != op->def.n_inputs) {
        if (op) mllm_err(MLLM_ERR_INVALID_ARG, "op '%s' takes %d inputs, not %d", name, op->def.n_inputs, n_in);
        g->failed = true;
        return NULL;
    }
    mllm_op_tensor v[4];
    for (int i = 0; i < n_in; i++) {
        if (!contiguous_f32(in[i])) {
            mllm_err(MLLM_ERR_INVALID_ARG, "op '%s': input %d is not a contiguous f32 tensor", name, i);
            g->failed = true;
            return NULL;
        }
        memcpy(v[i].ne, in[i]->ne, sizeof v[i].ne);
        v[i].data = NULL;
    }
    int64_t ne[4] = {1, 1, 1, 1};
    if (op->def.shape(v, n_in, ne, op->def.user) != 0 || ne[0] < 1 || ne[1] < 1 || ne[2] < 1 || ne[3] < 1) {
        mllm_err(MLLM_ERR_INVALID_ARG, "op '%s': its shape rule rejects these inputs", name);
        g->failed = true;
        return NULL;
    }
    mllm_tensor *t = node(g, MLLM_OP_CUSTOM, 4, ne, op->name);
    if (!t) return NULL;
    for (int i = 0; i < n_in; i++) t->src[i] = in[i];
    t->pp = op;
    return emit(g, t);
}

mllm_tensor *mllm_op_reshape(mllm_graph *g, mllm_tensor *x, int n_dims, const int64_t *ne) {
    if (!x) return NULL;
    int64_t n = 1;
    for (int i = 0; i < n_dims; i++) n *= ne[i];
    if (n != mllm_tensor_nelements(x) || x->dtype != MLLM_DTYPE_F32) { g->failed = true; return NULL; }
    mllm_tensor *t = tensor_struct(g, x->name);
    if (!t) return NULL;
    mllm_tensor_set_shape(t, x->dtype, n_dims, ne);
    t->op = MLLM_OP_VIEW;
    t->src[0] = x;
    t->view_src = x->view_src ? x->view_src : x;
    t->view_offs = x->view_offs;
    t->data = x->data;
    return emit(g, t);
}

mllm_tensor *mllm_op_view_cols(mllm_graph *g, mllm_tensor *x, int64_t c0, int64_t n) {
    if (!x || c0 < 0 || c0 + n > x->ne[1]) { g->failed = true; return NULL; }
    mllm_tensor *t = tensor_struct(g, x->name);
    if (!t) return NULL;
    int64_t ne[2] = {x->ne[0], n};
    mllm_tensor_set_shape(t, x->dtype, 2, ne);
    t->op = MLLM_OP_VIEW;
    t->src[0] = x;
    t->view_src = x->view_src ? x->view_src : x;
    t->view_offs = x->view_offs + (size_t)c0 * x->nb[1];
    t->data = x->data ? (char *)x->data + (size_t)c0 * x->nb[1] : NULL;
    return emit(g, t);
}

mllm_tensor *mllm_op_view_elems(mllm_graph *g, mllm_tensor *x, int64_t e0, int64_t n) {
    if (!x || x->dtype != MLLM_DTYPE_F32 || e0 < 0 || n < 1 || e0 + n > x->ne[0] || x->ne[2] != 1 || x->ne[3] != 1) {
        g->failed = true;
        return NULL;
    }
    mllm_tensor *t = tensor_struct(g, x->name);
    if (!t) return NULL;
    int64_t ne[2] = {n, x->ne[1]};
    mllm_tensor_set_shape(t, x->dtype, 2, ne);
    t->nb[1] = x->nb[1];
    t->nb[2] = t->nb[3] = x->nb[1] * (size_t)x->ne[1];
    t->op = MLLM_OP_VIEW;
    t->src[0] = x;
    t->view_src = x->view_src ? x->view_src : x;
    t->view_offs = x->view_offs + (size_t)e0 * sizeof(float);
    t->data = x->data ? (char *)x->data + (size_t)e0 * sizeof(float) : NULL;
    return emit(g, t);
}

/* ---- encoder-decoder ops --------------------------------------------- */

/* f32 rows of ne0 values, contiguous within a row (any row stride). */
static bool f32_rows(const mllm_tensor *t, int64_t ne0) {
    return t && t->dtype == MLLM_DTYPE_F32 && t->ne[0] == ne0 && t->nb[0] == sizeof(float) && t->ne[2] == 1 &&
           t->ne[3] == 1;
}

mllm_tensor *mllm_op_im2col(mllm_graph *g, mllm_tensor *x, int k, int stride, int pad) {
    if (!x) return NULL;
    const int64_t t_out = k > 0 && stride > 0 && pad >= 0 ? (x->ne[1] + 2 * pad - k) / stride + 1 : 0;
    if (!contiguous_f32(x) || x->ne[2] != 1 || x->ne[3] != 1 || t_out < 1) { g->failed = true; return NULL; }
    int64_t ne[2] = {x->ne[0] * k, t_out};
    mllm_tensor *t = node(g, MLLM_OP_IM2COL, 2, ne, "im2col");
    if (!t) return NULL;
    t->src[0] = x;
    t->ip[0] = k;
    t->ip[1] = stride;
    t->ip[2] = pad;
    return emit(g, t);
}

mllm_tensor *mllm_op_attention_full(mllm_graph *g, mllm_tensor *q, mllm_tensor *k, mllm_tensor *v, int n_head) {
    if (!q || !k || !v) return NULL;
    const int64_t dim = q->ne[0];
    if (n_head < 1 || dim % n_head != 0 || !f32_rows(q, dim) || !f32_rows(k, dim) || !f32_rows(v, dim) ||
        k->ne[1] != v->ne[1]) {
        g->failed = true;
        return NULL;
    }
    int64_t ne[2] = {dim, q->ne[1]};
    mllm_tensor *t = node(g, MLLM_OP_ATTENTION_FULL, 2, ne, "attn_full");
    if (!t) return NULL;
    t->src[0] = q;
    t->src[1] = k;
    t->src[2] = v;
    t->ip[0] = n_head;
    return emit(g, t);
}

/* An optional I32 vector of n values. */
static bool opt_i32(const mllm_tensor *t, int64_t n) { return !t || (is_i32_vector(t) && t->ne[0] == n); }

mllm_tensor *mllm_op_kv_slots_store(mllm_graph *g, mllm_tensor *k, mllm_tensor *v, mllm_tensor *pos,
                                    mllm_tensor *slot, const mllm_kv_slots *kv) {
    if (!k || !v) return NULL;
    const int64_t dim = kv ? (int64_t)kv->n_head * kv->head_dim : 0, T = k->ne[1];
    if (!kv || !f32_rows(k, dim) || !f32_rows(v, dim) || v->ne[1] != T || !opt_i32(pos, T) || !opt_i32(slot, T) ||
        (!pos && T > kv->n_ctx)) {
        g->failed = true;
        return NULL;
    }
    int64_t ne[1] = {1};
    mllm_tensor *t = node(g, MLLM_OP_KV_SLOTS_STORE, 1, ne, "kv_slots_store");
    if (!t) return NULL;
    t->src[0] = k;
    t->src[1] = v;
    t->src[2] = pos;
    t->src[3] = slot;
    t->pp = kv;
    return emit(g, t);
}

mllm_tensor *mllm_op_attention_slots(mllm_graph *g, mllm_tensor *q, mllm_tensor *dep, mllm_tensor *pos,
                                     mllm_tensor *slot, const mllm_kv_slots *kv, int n_runs, bool causal,
                                     int n_keys) {
    if (!q) return NULL;
    const int64_t dim = kv ? (int64_t)kv->n_head * kv->head_dim : 0, T = q->ne[1];
    if (!kv || !f32_rows(q, dim) || n_runs < 1 || T % n_runs != 0 || !opt_i32(pos, T) || !opt_i32(slot, T) ||
        (causal && !pos) || (!causal && (n_keys < 1 || n_keys > kv->n_ctx))) {
        g->failed = true;
        return NULL;
    }
    int64_t ne[2] = {dim, T};
    mllm_tensor *t = node(g, MLLM_OP_ATTENTION_SLOTS, 2, ne, "attn_slots");
    if (!t) return NULL;
    t->src[0] = q;
    t->src[1] = dep;
    t->src[2] = pos;
    t->src[3] = slot;
    t->pp = kv;
    t->ip[0] = n_runs;
    t->ip[1] = causal;
    t->ip[2] = causal ? 0 : n_keys;
    return emit(g, t);
}

/* ---- memory planning ------------------------------------------------- */

typedef struct { size_t off, size; } span;

/* First-fit over a sorted free list; grows the top when nothing fits. */
typedef struct { span *free; int n, cap; size_t top; } planner;

static bool plan_alloc(planner *p, size_t size, size_t *off) {
    for (int i = 0; i < p->n; i++) {
        if (p->free[i].size >= size) {
            *off = p->free[i].off;
            p->free[i].off += size;
            p->free[i].size -= size;
            if (p->free[i].size == 0) {
                memmove(&p->free[i], &p->free[i + 1], (size_t)(p->n - i - 1) * sizeof(span));
                p->n--;
            }
            return true;
        }
    }
    *off = p->top;
    p->top += size;
    return true;
}

static bool plan_release(planner *p, size_t off, size_t size) {
    if (p->n == p->cap) {
        int nc = p->cap ? p->cap * 2 : 64;
        span *nf = mllm_realloc(p->free, (size_t)nc * sizeof(span));
        if (!nf) return false;
        p->free = nf;
        p->cap = nc;
    }
    int i = 0;
    while (i < p->n && p->free[i].off < off) i++;
    memmove(&p->free[i + 1], &p->free[i], (size_t)(p->n - i) * sizeof(span));
    p->free[i] = (span){off, size};
    p->n++;
    /* Merge with the neighbours so large tensors find room again. */
    if (i + 1 < p->n && p->free[i].off + p->free[i].size == p->free[i + 1].off) {
        p->free[i].size += p->free[i + 1].size;
        memmove(&p->free[i + 1], &p->free[i + 2], (size_t)(p->n - i - 2) * sizeof(span));
        p->n--;
    }
    if (i > 0 && p->free[i - 1].off + p->free[i - 1].size == p->free[i].off) {
        p->free[i - 1].size += p->free[i].size;
        memmove(&p->free[i], &p->free[i + 1], (size_t)(p->n - i - 1) * sizeof(span));
        p->n--;
    }
    return true;
}

static mllm_tensor *root_of(mllm_tensor *t) { return t->view_src ? t->view_src : t; }

/* Matmuls in a row that read the same input with the same activation type
   (q, k, v; gate, up) convert it once: the first one leaves it in the work
   buffer, which nothing else touches in between. Only a matmul's ip[1] is
   this flag: other ops keep theirs (the attention's is its sliding window). */
static void share_converted_inputs(mllm_graph *g) {
    for (int i = 0; i < g->n_nodes; i++) {
        mllm_tensor *t = g->nodes[i], *p = i > 0 ? g->nodes[i - 1] : NULL;
        if (t->op != MLLM_OP_MATMUL) continue;
        t->ip[1] = 0;
        if (!p || p->op != MLLM_OP_MATMUL || p->src[1] != t->src[1] || t->ip[2] || p->ip[2] || t->ip[3] || p->ip[3])
            continue;
        const mllm_dtype_traits *a = mllm_dtype_get(p->src[0]->dtype), *b = mllm_dtype_get(t->src[0]->dtype);
        if (a->vec_dot_type == b->vec_dot_type && a->vec_dot_type != MLLM_DTYPE_F32 &&
            p->src[0]->ne[0] == t->src[0]->ne[0])
            t->ip[1] = 1;
    }
}

bool mllm_graph_plan(mllm_graph *g, mllm_tensor **outputs, int n_outputs) {
    if (g->failed) return false;
    share_converted_inputs(g);
    int n = g->n_nodes;
    for (int i = 0; i < n; i++) g->nodes[i]->last_use = i;
    for (int i = 0; i < n; i++)
        for (int s = 0; s < MLLM_MAX_SRC; s++) {
            mllm_tensor *src = g->nodes[i]->src[s];
            if (src && src->op != MLLM_OP_NONE) root_of(src)->last_use = i;
        }
    for (int o = 0; o < n_outputs; o++)
        if (outputs[o]) root_of(outputs[o])->last_use = n; /* never released */
    /* Offsets are stored in view_offs of roots while planning, as the buffer
       does not exist yet. */
    planner p = {0};
    size_t *offs = mllm_malloc((size_t)(n ? n : 1) * sizeof(size_t));
    if (!offs) return false;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        size_t sz = (nbytes(g->nodes[i]) + 63) & ~(size_t)63;
        ok = plan_alloc(&p, sz, &offs[i]);
        /* Release what node i was the last reader of (and i itself if nobody reads it). */
        for (int j = 0; j <= i && ok; j++)
            if (g->nodes[j]->last_use == i)
                ok = plan_release(&p, offs[j], (nbytes(g->nodes[j]) + 63) & ~(size_t)63);
    }
    if (ok && p.top > g->buf_size) {
        mllm_free_aligned(g->buf);
        g->buf = mllm_malloc_aligned(p.top);
        g->buf_size = g->buf ? p.top : 0;
        ok = g->buf != NULL;
    }
    if (ok) {
        for (int i = 0; i < n; i++) g->nodes[i]->data = (char *)g->buf + offs[i];
        for (int i = 0; i < g->n_views; i++) {
            mllm_tensor *v = g->views[i];
            v->data = (char *)root_of(v)->data + v->view_offs;
        }
    }
    mllm_free(p.free);
    mllm_free(offs);
    /* Other backends than the CPU: split the nodes into runs per backend
       (graph/sched.c). The CPU alone keeps g->sched NULL: the fast path. */
    mllm_sched_free(g->sched);
    g->sched = NULL;
    if (ok && (g->n_backends > 1 || (g->n_backends == 1 && g->backends[0] != mllm_backend_cpu())))
        ok = (g->sched = mllm_sched_new(g->nodes, g->n_nodes, g->backends, g->n_backends)) != NULL;
    return ok;
}
