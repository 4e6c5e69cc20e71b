/* The scheduler (sched.h): backend per node, runs, copies between them,
   and weights placed on a backend at load. */
#include "graph/sched.h"

#include <string.h>

#include "core/alloc.h"
#include "core/dtype.h"

/* Tensors placed in a backend's buffer start at multiples of 512 bytes: a
   device backend hands them to its kernels as sub-buffers, whose origins
   must be aligned to the device's base address alignment (OpenCL: 128
   bytes on PoCL and phone GPUs, 512 on NVIDIA's). */
#define ALIGN(n) (((n) + 511) & ~(size_t)511)

typedef struct { mllm_tensor *src, *dst; } copy;

typedef struct {
    mllm_backend *be;
    int bi;              /* index of be in the schedule's list */
    mllm_tensor **nodes; /* the graph's own (CPU buffer type) or shadows */
    int n;
    copy *in, *out;      /* before the run: graph -> shadow; after: shadow -> graph */
    int n_in, n_out;
} run;

/* Open addressing from a graph tensor to its stand-in inside the run being
   built; entries of earlier runs are stale by their generation. */
typedef struct { const mllm_tensor *key; mllm_tensor *val; int gen; } slot;

struct mllm_sched {
    mllm_backend *backends[MLLM_MAX_BACKENDS];
    int n_backends;
    run *runs;
    int n_runs;
    mllm_tensor **run_nodes; /* storage behind the shadow runs' node lists */
    mllm_tensor *shadows;    /* shadow nodes, copies and views, in backend buffers */
    int n_shadows, cap_shadows;
    copy *copies;
    int n_copies, cap_copies;
    mllm_buffer bufs[MLLM_MAX_BACKENDS];
    size_t buf_top[MLLM_MAX_BACKENDS];
    slot *map;
    size_t map_mask;
    int gen;
    mllm_sched_stats stats;
};

static bool host_type(const mllm_backend *be) { return be->buffer_type == mllm_backend_cpu()->buffer_type; }

static mllm_tensor *root_of(mllm_tensor *t) { return t->view_src ? t->view_src : t; }

static bool is_weight(const mllm_tensor *t) { return t->op == MLLM_OP_NONE && !t->is_input; }

/* Every weight a node reads must be in be's buffer type already. */
static bool weights_on(const mllm_backend *be, const mllm_tensor *t) {
    if (host_type(be)) return true;
    for (int s = 0; s < MLLM_MAX_SRC; s++) {
        const mllm_tensor *w = t->src[s] ? root_of(t->src[s]) : NULL;
        if (w && is_weight(w) && !(w->mirror && w->mirror->buffer->type == be->buffer_type)) return false;
    }
    return true;
}

static bool reads_weights(const mllm_tensor *t) {
    for (int s = 0; s < MLLM_MAX_SRC; s++)
        if (t->src[s] && is_weight(root_of(t->src[s]))) return true;
    return false;
}

/* For a node without weights: the most preferred backend (lowest index)
   among those that made its inputs and can compute it, or -1 when its
   inputs are all leaves (graph inputs) or none of those backends can.
   Nodes are in execution order, so a backward scan finds each producer;
   it is usually a few nodes back. */
static int producer(mllm_sched *s, mllm_tensor **nodes, int i, const int *assign) {
    int best = -1;
    for (int k = 0; k < MLLM_MAX_SRC; k++) {
        const mllm_tensor *src = nodes[i]->src[k] ? root_of(nodes[i]->src[k]) : NULL;
        if (!src || src->op == MLLM_OP_NONE) continue;
        int b = -1;
        for (int j = i - 1; j >= 0 && b < 0; j--)
            if (nodes[j] == src) b = assign[j];
        if (b >= 0 && (best < 0 || b < best) && s->backends[b]->supports_op(s->backends[b], nodes[i])) best = b;
    }
    return best;
}

static bool is_store(const mllm_tensor *t) { return t->op == MLLM_OP_KV_STORE || t->op == MLLM_OP_KV_STORE_PAGED; }
static bool is_attention(const mllm_tensor *t) {
    return t->op == MLLM_OP_ATTENTION || t->op == MLLM_OP_ATTENTION_PAGED;
}

/* A KV layer's cache is held by the backend that stores into it (a
   device keeps its own copy: backends/dev_kv.c), so a KV store goes to a
   backend only if that backend can also compute every attention reading
   the layer after it (src[1] is their store), and those attentions follow
   their store (paired_store). */
static bool readers_supported(const mllm_backend *be, mllm_tensor **nodes, int n, int i) {
    for (int j = i + 1; j < n; j++)
        if (is_attention(nodes[j]) && nodes[j]->src[1] == nodes[i] && !be->supports_op(be, nodes[j])) return false;
    return true;
}

/* The backend of the store an attention node reads (-1: none in the graph). */
static int paired_store(mllm_tensor **nodes, int i, const int *assign) {
    const mllm_tensor *st = nodes[i]->src[1];
    if (!is_attention(nodes[i]) || !st || !is_store(st)) return -1;
    for (int j = i - 1; j >= 0; j--)
        if (nodes[j] == st) return assign[j];
    return -1;
}

static slot *map_find(mllm_sched *s, const mllm_tensor *key) {
    size_t h = ((uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ull;
    for (size_t i = h & s->map_mask;; i = (i + 1) & s->map_mask)
        if (s->map[i].gen != s->gen || s->map[i].key == key) return &s->map[i];
}

static void map_put(mllm_sched *s, const mllm_tensor *key, mllm_tensor *val) {
    slot *e = map_find(s, key);
    *e = (slot){key, val, s->gen};
}

static mllm_tensor *map_get(mllm_sched *s, const mllm_tensor *key) {
    slot *e = map_find(s, key);
    return e->gen == s->gen ? e->val : NULL;
}

/* A stand-in for t in backend bi's buffer, room reserved at its top. */
static mllm_tensor *new_shadow(mllm_sched *s, const mllm_tensor *t, int bi, bool reserve) {
    mllm_tensor *sh = &s->shadows[s->n_shadows++];
    *sh = *t;
    sh->buffer = &s->bufs[bi];
    sh->mirror = NULL;
    if (reserve) {
        sh->buffer_offs = s->buf_top[bi];
        s->buf_top[bi] += ALIGN(mllm_tensor_nbytes(t));
    }
    return sh;
}

static void add_copy(mllm_sched *s, mllm_tensor *src, mllm_tensor *dst) {
    s->copies[s->n_copies++] = (copy){src, dst};
    s->stats.n_copies++;
    s->stats.copy_bytes += mllm_tensor_nbytes(src);
}

/* What a node of the run on bi reads instead of the graph tensor t. */
static mllm_tensor *resolve(mllm_sched *s, mllm_tensor *t, int bi, run *r) {
    if (!t) return NULL;
    mllm_tensor *have = map_get(s, t);
    if (have) return have;
    mllm_tensor *out;
    if (t->op == MLLM_OP_VIEW && map_get(s, root_of(t))) { /* a view of a node of this run */
        mllm_tensor *root = map_get(s, root_of(t));
        out = new_shadow(s, t, bi, false);
        out->view_src = root;
        out->buffer_offs = root->buffer_offs + t->view_offs;
    } else if (is_weight(root_of(t)) && t == root_of(t) && t->mirror &&
               t->mirror->buffer->type == s->backends[bi]->buffer_type) {
        out = t->mirror; /* placed at load: no copy */
    } else { /* made elsewhere (the CPU, an input, an earlier run): copied in before the run */
        out = new_shadow(s, t, bi, true);
        out->op = MLLM_OP_NONE;
        out->view_src = NULL;
        out->view_offs = 0;
        memset(out->src, 0, sizeof out->src);
        if (!r->in) r->in = &s->copies[s->n_copies];
        add_copy(s, t, out);
        r->n_in++;
    }
    map_put(s, t, out);
    return out;
}

/* The shadow run of nodes[a, b) on backend bi. */
static void build_shadow_run(mllm_sched *s, mllm_tensor **nodes, int a, int b, int bi, run *r) {
    s->gen++;
    r->nodes = &s->run_nodes[a];
    r->n = b - a;
    for (int i = a; i < b; i++) {
        mllm_tensor *sh = new_shadow(s, nodes[i], bi, true);
        for (int k = 0; k < MLLM_MAX_SRC; k++) sh->src[k] = resolve(s, nodes[i]->src[k], bi, r);
        map_put(s, nodes[i], sh);
        r->nodes[i - a] = sh;
    }
    /* Read after the run (the planner's last_use) or an output: copied back. */
    for (int i = a; i < b; i++)
        if (nodes[i]->last_use >= b) {
            if (!r->out) r->out = &s->copies[s->n_copies];
            add_copy(s, r->nodes[i - a], nodes[i]);
            r->n_out++;
        }
}

void mllm_sched_free(mllm_sched *s) {
    if (!s) return;
    for (int b = 0; b < s->n_backends; b++)
        if (s->bufs[b].type) s->bufs[b].type->free(&s->bufs[b]);
    mllm_free(s->runs);
    mllm_free(s->run_nodes);
    mllm_free(s->shadows);
    mllm_free(s->copies);
    mllm_free(s->map);
    mllm_free(s);
}

mllm_sched *mllm_sched_new(mllm_tensor **nodes, int n, mllm_backend *const *backends, int n_backends) {
    if (n_backends < 1 || n_backends > MLLM_MAX_BACKENDS) return NULL;
    mllm_sched *s = mllm_calloc(1, sizeof *s);
    if (!s) return NULL;
    for (int b = 0; b < n_backends; b++) s->backends[s->n_backends++] = backends[b];
    /* The CPU is the fallback of every schedule. */
    int cpu = -1;
    for (int b = 0; b < s->n_backends; b++)
        if (s->backends[b] == mllm_backend_cpu()) cpu = b;
    if (cpu < 0 && s->n_backends < MLLM_MAX_BACKENDS) s->backends[cpu = s->n_backends++] = mllm_backend_cpu();
    const size_t bound = (size_t)(n ? n : 1) * (1 + 2 * MLLM_MAX_SRC);
    size_t map_size = 64;
    while (map_size < 2 * bound) map_size *= 2;
    int *assign = mllm_malloc((size_t)(n ? n : 1) * sizeof *assign);
    s->runs = mllm_calloc((size_t)(n ? n : 1), sizeof *s->runs);
    s->run_nodes = mllm_calloc((size_t)(n ? n : 1), sizeof *s->run_nodes);
    s->shadows = mllm_calloc(bound, sizeof *s->shadows);
    s->copies = mllm_calloc(bound, sizeof *s->copies);
    s->map = mllm_calloc(map_size, sizeof *s->map);
    s->map_mask = map_size - 1;
    if (!assign || !s->runs || !s->run_nodes || !s->shadows || !s->copies || !s->map || cpu < 0) {
        mllm_free(assign);
        mllm_sched_free(s);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        assign[i] = cpu;
        /* A node without weights goes where its inputs were made (the most
           preferred of those backends): the layers left on the CPU (-ngl)
           keep their RoPE and adds there instead of sending each
           activation to the device and back. */
        const int store = paired_store(nodes, i, assign);
        const int from = store >= 0 || reads_weights(nodes[i]) ? -1 : producer(s, nodes, i, assign);
        if (store >= 0) {
            assign[i] = store;
        } else if (from >= 0) {
            assign[i] = from;
        } else {
            for (int b = 0; b < s->n_backends; b++) {
                const mllm_backend *be = s->backends[b];
                if (be->supports_op(be, nodes[i]) && weights_on(be, nodes[i])) {
                    assign[i] = b;
                    break;
                }
            }
        }
        if (is_store(nodes[i]) && assign[i] != cpu && !readers_supported(s->backends[assign[i]], nodes, n, i))
            assign[i] = cpu;
        s->stats.n_nodes[assign[i]]++;
    }
    for (int a = 0; a < n;) {
        int b = a + 1;
        while (b < n && assign[b] == assign[a]) b++;
        run *r = &s->runs[s->n_runs++];
        r->bi = assign[a];
        r->be = s->backends[r->bi];
        /* The first matmul of a run converts its own input: the shared
           conversion (graph.c, ip[1]) was made by the previous run. */
        if (nodes[a]->op == MLLM_OP_MATMUL) nodes[a]->ip[1] = 0;
        if (host_type(r->be)) {
            r->nodes = &nodes[a];
            r->n = b - a;
        } else {
            build_shadow_run(s, nodes, a, b, r->bi, r);
        }
        a = b;
    }
    mllm_free(assign);
    s->stats.n_runs = s->n_runs;
    /* One buffer per backend for its shadows, then their addresses. */
    for (int b = 0; b < s->n_backends; b++) {
        if (!s->buf_top[b]) continue;
        const mllm_buffer_type *bt = s->backends[b]->buffer_type;
        if (!bt->alloc(bt, s->buf_top[b], &s->bufs[b])) {
            s->bufs[b].type = NULL;
            mllm_sched_free(s);
            return NULL;
        }
    }
    for (int i = 0; i < s->n_shadows; i++) {
        mllm_tensor *sh = &s->shadows[i];
        sh->data = sh->buffer->type->is_host(sh->buffer->type) ? (char *)sh->buffer->data + sh->buffer_offs : NULL;
    }
    return s;
}

bool mllm_sched_execute(mllm_sched *s, mllm_exec_ctx *x) {
    for (int i = 0; i < s->n_runs; i++) {
        run *r = &s->runs[i];
        for (int c = 0; c < r->n_in; c++) {
            mllm_tensor *d = r->in[c].dst;
            d->buffer->type->set((mllm_buffer *)d->buffer, d->buffer_offs, r->in[c].src->data,
                                 mllm_tensor_nbytes(r->in[c].src));
        }
        if (!r->be->graph_compute(r->be, x, r->nodes, r->n)) return false;
        if (r->n_out && r->be->synchronize) r->be->synchronize(r->be);
        for (int c = 0; c < r->n_out; c++) {
            const mllm_tensor *src = r->out[c].src;
            src->buffer->type->get(src->buffer, src->buffer_offs, r->out[c].dst->data, mllm_tensor_nbytes(src));
        }
    }
    return true;
}

void mllm_sched_get_stats(const mllm_sched *s, mllm_sched_stats *out) { *out = s->stats; }

/* ---- weights placed at load ---- */

struct mllm_placement {
    mllm_buffer buf;
    mllm_tensor **w;      /* the weights given a mirror */
    mllm_tensor *mirrors;
    int n;
};

/* An f32 vector of n (contiguous), as the probes below need. */
static mllm_tensor f32_vector(int64_t n) {
    mllm_tensor v = {.dtype = 0 /* f32 */, .ne = {n, 1, 1, 1}, .is_input = true};
    v.nb[0] = sizeof(float);
    v.nb[1] = v.nb[2] = v.nb[3] = (size_t)n * sizeof(float);
    return v;
}

/* Whether be has a use for w: multiplying by it (a matmul node of one f32
   column), looking rows up in it (embeddings), or, for an f32 vector
   (norm weights, biases), an RMSNorm with it as the weight. */
static bool can_use(mllm_backend *be, mllm_tensor *w) {
    if (w->ne[2] != 1 || w->ne[3] != 1) return false;
    mllm_tensor act = f32_vector(w->ne[0]), out = f32_vector(w->ne[1]);
    out.op = MLLM_OP_MATMUL;
    out.src[0] = w;
    out.src[1] = &act;
    if (w->ne[1] > 1 && be->supports_op(be, &out)) return true;
    mllm_tensor id = f32_vector(1), rows = f32_vector(w->ne[0]);
    id.dtype = MLLM_DTYPE_I32;
    rows.op = MLLM_OP_GET_ROWS;
    rows.src[0] = w;
    rows.src[1] = &id;
    if (w->ne[1] > 1 && be->supports_op(be, &rows)) return true;
    if (w->ne[1] != 1 || w->dtype != 0) return false;
    mllm_tensor norm = f32_vector(w->ne[0]);
    norm.op = MLLM_OP_RMSNORM;
    norm.src[0] = &act;
    norm.src[1] = w;
    norm.fp[0] = 1e-6f;
    return be->supports_op(be, &norm);
}

mllm_placement *mllm_sched_place_weights(mllm_backend *be, mllm_tensor **w, int n) {
    mllm_placement *p = mllm_calloc(1, sizeof *p);
    if (!p) return NULL;
    if (host_type(be) || n <= 0) return p;
    p->w = mllm_calloc((size_t)n, sizeof *p->w);
    p->mirrors = mllm_calloc((size_t)n, sizeof *p->mirrors);
    if (!p->w || !p->mirrors) {
        mllm_placement_free(p);
        return NULL;
    }
    size_t top = 0;
    for (int i = 0; i < n; i++) {
        if (!w[i] || w[i]->mirror || !can_use(be, w[i])) continue;
        /* a weight shared by two roles (tied embeddings) is placed once */
        bool dup = false;
        for (int j = 0; j < p->n && !dup; j++) dup = p->w[j] == w[i];
        if (dup) continue;
        mllm_tensor *m = &p->mirrors[p->n];
        *m = *w[i];
        m->buffer = &p->buf;
        m->buffer_offs = top;
        top += ALIGN(mllm_tensor_nbytes(w[i]));
        p->w[p->n++] = w[i];
    }
    if (!be->buffer_type->alloc(be->buffer_type, top, &p->buf)) {
        p->buf.type = NULL;
        p->n = 0;
        mllm_placement_free(p);
        return NULL;
    }
    const bool host = be->buffer_type->is_host(be->buffer_type);
    for (int i = 0; i < p->n; i++) {
        mllm_tensor *m = &p->mirrors[i];
        p->buf.type->set(&p->buf, m->buffer_offs, p->w[i]->data, mllm_tensor_nbytes(p->w[i]));
        m->data = host ? (char *)p->buf.data + m->buffer_offs : NULL;
        p->w[i]->mirror = m;
    }
    return p;
}

int mllm_placement_count(const mllm_placement *p) { return p ? p->n : 0; }

void mllm_placement_free(mllm_placement *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) p->w[i]->mirror = NULL;
    if (p->buf.type) p->buf.type->free(&p->buf);
    mllm_free(p->w);
    mllm_free(p->mirrors);
    mllm_free(p);
}
