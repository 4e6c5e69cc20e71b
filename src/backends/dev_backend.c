/* A device backend (dev_backend.h) over a layer's table of calls: the
   buffer type, which nodes go to the device, how a node's tensors reach
   the launches, and the run of a graph's nodes. The KV cache of the layers
   the device computes lives on the device too (dev_kv.c).

   Tensors of a run live in one device buffer per schedule (the
   scheduler's shadows) or in the weights' buffer (placed at load), at byte
   offsets. The launches take whole buffers, so each node's tensors are
   handed over as views of those (ops->view_new); an origin the device
   cannot start a view at (OpenCL's CL_DEVICE_MEM_BASE_ADDR_ALIGN: a view of
   one token's column) is copied into a temporary buffer on the device
   instead (and back, for an output). The scheduler aligns every tensor it
   places to 512 bytes, which covers the drivers we know of (PoCL 128, phone
   GPUs 128, NVIDIA 512), so that copy is the exception. */
#include "backends/dev_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/plugin.h"
#include "backends/cpu/cpu_backend.h"
#include "core/alloc.h"

/* The buffer type's set and get return nothing: a failure (the device out
   of resources) is kept here, per thread, and fails this thread's next
   graph_compute. */
static _Thread_local mllm_status t_io_failed;
static _Thread_local char t_io_why[256];

static void io_failed(mllm_status st) {
    if (t_io_failed) return;
    t_io_failed = st;
    snprintf(t_io_why, sizeof t_io_why, "%s", mllm_last_error());
}

/* ---- the buffer type: device memory ---- */

static mllm_dev_be *dev_of_type(const mllm_buffer_type *bt) {
    return (mllm_dev_be *)((char *)bt - offsetof(mllm_dev_be, buft));
}

static bool buf_alloc(const mllm_buffer_type *bt, size_t size, mllm_buffer *b) {
    mllm_dev_be *d = dev_of_type(bt);
    mllm_dev_buf *db = NULL;
    b->type = bt;
    b->size = size;
    b->data = NULL;
    if (d->ops->buf_new(d->c, size, &db) != MLLM_OK) return false;
    b->data = db;
    return true;
}

static void buf_free(mllm_buffer *b) {
    dev_of_type(b->type)->ops->buf_free(b->data);
    b->data = NULL;
    b->size = 0;
}

static void buf_set(mllm_buffer *b, size_t offs, const void *src, size_t n) {
    mllm_status st = dev_of_type(b->type)->ops->buf_set(b->data, offs, src, n);
    if (st) io_failed(st);
}

static void buf_get(const mllm_buffer *b, size_t offs, void *dst, size_t n) {
    mllm_status st = dev_of_type(b->type)->ops->buf_get(b->data, offs, dst, n);
    if (st) io_failed(st);
}

static bool buf_is_host(const mllm_buffer_type *bt) {
    (void)bt;
    return false;
}

/* ---- which nodes ---- */

/* A weight matrix in GGUF row layout: whole blocks per row, rows packed. */
static bool matrix(const mllm_tensor *w) {
    const size_t rb = mllm_dtype_row_size((mllm_dtype)w->dtype, w->ne[0]);
    return rb && w->nb[1] == rb && w->ne[2] == 1 && w->ne[3] == 1;
}

/* f32 rows of ne0 values (contiguous within a row, any row stride: a view
   of a fused QKV output), n rows, no further dimensions. */
static bool f32_rows(const mllm_tensor *t, int64_t ne0, int64_t n) {
    return t && t->dtype == MLLM_DTYPE_F32 && t->ne[0] == ne0 && t->ne[1] == n && t->nb[0] == 4 && t->nb[1] % 4 == 0 &&
           t->nb[1] >= (size_t)ne0 * 4 && t->ne[2] == 1 && t->ne[3] == 1;
}

/* An encoder attention (full or over segments) whose heads the kernels take. */
static bool enc_attention_ok(const mllm_tensor *t) {
    const mllm_tensor *q = t->src[0], *k = t->src[1], *v = t->src[2];
    const int64_t dim = t->ne[0], H = t->ip[0];
    if (H < 1 || dim % H || dim / H > MLLM_DEV_ENC_ATTN_MAX_D || !q || !k) return false;
    const bool seg = t->op == MLLM_OP_ATTENTION_SEGMENTS;
    return f32_rows(q, dim, t->ne[1]) && f32_rows(k, dim, k->ne[1]) && f32_rows(v, dim, k->ne[1]) &&
           (!seg || (k->ne[1] == t->ne[1] && t->src[3] && mllm_dev_i32v(t->src[3], t->src[3]->ne[0])));
}

static bool dev_supports(const mllm_backend *be, const mllm_tensor *t) {
    const mllm_dev_ops *ops = ((const mllm_dev_be *)be->ctx)->ops;
    if (!mllm_dev_f32c(t)) return false;
    const mllm_tensor *a = t->src[0], *b = t->src[1], *c = t->src[2];
    const int64_t n = mllm_tensor_nelements(t);
    switch (t->op) {
    case MLLM_OP_GET_ROWS:
        return a && ops->supports_get_rows((mllm_dtype)a->dtype) && matrix(a) && mllm_dev_i32v(b, t->ne[1]);
    case MLLM_OP_MATMUL:
        return a && ops->supports_matmul((mllm_dtype)a->dtype) && matrix(a) && mllm_dev_f32c(b) &&
               (!c || (mllm_dev_f32c(c) && mllm_tensor_nelements(c) == a->ne[1]));
    case MLLM_OP_RMSNORM:
        return mllm_dev_f32c(a) && (!b || (mllm_dev_f32c(b) && mllm_tensor_nelements(b) == t->ne[0]));
    case MLLM_OP_LAYERNORM:
        return mllm_dev_f32c(a) && (!b || (mllm_dev_f32c(b) && mllm_tensor_nelements(b) == t->ne[0])) &&
               (!c || (mllm_dev_f32c(c) && mllm_tensor_nelements(c) == t->ne[0]));
    case MLLM_OP_ADD:
    case MLLM_OP_SILU_MUL:
    case MLLM_OP_GELU_MUL:
        return mllm_dev_f32c(a) && mllm_dev_f32c(b) && mllm_tensor_nelements(a) == n && mllm_tensor_nelements(b) == n;
    case MLLM_OP_SCALE:
    case MLLM_OP_GELU_TANH:
    case MLLM_OP_GELU: return mllm_dev_f32c(a) && mllm_tensor_nelements(a) == n;
    case MLLM_OP_SOFTCAP: return mllm_dev_f32c(a) && mllm_tensor_nelements(a) == n && t->fp[0] > 0;
    case MLLM_OP_ROPE: {
        /* Plain RoPE; M-RoPE (three position rows) stays on the CPU. */
        const mllm_rope_params *rp = t->pp;
        return rp && !rp->mrope[0] && !rp->mrope[1] && !rp->mrope[2] && rp->n_rot > 0 && rp->n_rot % 2 == 0 &&
               rp->n_rot <= t->ne[0] && t->ne[3] == 1 && mllm_dev_f32c(a) && mllm_tensor_nelements(a) == n &&
               mllm_dev_i32v(b, t->ne[2]);
    }
    case MLLM_OP_ROPE_TABLE: { /* the angles given: the plain RoPE launch over them, rotate_half pairs */
        const int64_t tab = t->ne[0] / 2 * t->ne[2];
        return t->ne[0] % 2 == 0 && t->ne[3] == 1 && mllm_dev_f32c(a) && mllm_tensor_nelements(a) == n &&
               mllm_dev_f32c(b) && mllm_dev_f32c(c) && mllm_tensor_nelements(b) == tab && mllm_tensor_nelements(c) == tab;
    }
    case MLLM_OP_ATTENTION_FULL:
    case MLLM_OP_ATTENTION_SEGMENTS: return enc_attention_ok(t);
    case MLLM_OP_IM2COL:
        return mllm_dev_f32c(a) && a->ne[2] == 1 && a->ne[3] == 1 && t->ne[0] == a->ne[0] * t->ip[0];
    case MLLM_OP_KV_STORE:
    case MLLM_OP_ATTENTION: return mllm_dev_kv_supports(t);
    case MLLM_OP_CUSTOM: { /* with a kernel for this device; inputs contiguous f32 (as mllm_op_custom made them) */
        const mllm_custom_op *op = t->pp;
        if (!op || !ops->custom_opencl || !op->def.opencl_source) return false;
        for (int i = 0; i < op->def.n_inputs; i++)
            if (!mllm_dev_f32c(t->src[i])) return false;
        return true;
    }
    default: return false; /* paged KV (its blocks are the engine's host memory) */
    }
}

/* ---- a node's tensors as buffers ---- */

mllm_status mllm_dev_region_get(mllm_dev_be *d, mllm_dev_buf *parent, size_t offs, size_t n, bool write,
                                mllm_dev_region *r) {
    const mllm_dev_ops *ops = d->ops;
    *r = (mllm_dev_region){.parent = parent, .offs = offs, .n = n, .write = write};
    const size_t size = ops->buf_size(parent);
    if (offs > size || n > size - offs)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: %zu bytes at %zu lie outside a buffer of %zu", ops->name, n, offs,
                        size);
    mllm_status st = ops->view_new(parent, offs, n, &r->b);
    if (st || r->b) return st;
    r->temp = true;
    if ((st = ops->buf_new(d->c, n, &r->b))) {
        r->b = NULL;
        return st;
    }
    return ops->buf_copy(r->b, 0, parent, offs, n);
}

/* The bytes from t's first element to the end of its last: its rows may be
   strided (mllm_op_view_elems: q, k, v of a fused output), where
   nb[3] * ne[3] would reach past the end of the tensor viewed. */
static size_t span_bytes(const mllm_tensor *t) {
    for (int i = 0; i < 4; i++)
        if (t->ne[i] < 1) return 0;
    size_t n = mllm_dtype_row_size((mllm_dtype)t->dtype, t->ne[0]);
    for (int i = 1; i < 4; i++) n += (size_t)(t->ne[i] - 1) * t->nb[i];
    return n;
}

mllm_status mllm_dev_region_of(mllm_dev_be *d, const mllm_tensor *t, bool write, mllm_dev_region *r) {
    memset(r, 0, sizeof *r);
    if (!t) return MLLM_OK;
    if (!t->buffer || t->buffer->type != &d->buft)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: tensor '%s' is not in device memory", d->ops->name, t->name);
    return mllm_dev_region_get(d, t->buffer->data, t->buffer_offs, span_bytes(t), write, r);
}

/* Copies a temporary output back; a freed buffer is kept by the device
   until the commands already enqueued on it finish (OpenCL's release,
   cudaFree's wait). */
mllm_status mllm_dev_region_release(mllm_dev_be *d, mllm_dev_region *r, mllm_status st) {
    if (!r->b) return st;
    if (r->temp) {
        if (r->write && st == MLLM_OK) st = d->ops->buf_copy(r->parent, r->offs, r->b, 0, r->n);
        d->ops->buf_free(r->b);
    } else {
        d->ops->view_free(r->b);
    }
    r->b = NULL;
    return st;
}

/* ---- what a run reads back once: positions, and RoPE's angle tables ---- */

void mllm_dev_run_cache_free(mllm_dev_be *d, mllm_dev_run_cache *rc) {
    for (int i = 0; i < rc->n_pos; i++) mllm_free(rc->pos[i].host);
    for (int i = 0; i < rc->n_rope; i++) d->ops->buf_free(rc->rope[i].cs), d->ops->buf_free(rc->rope[i].sn);
    rc->n_pos = rc->n_rope = 0;
}

mllm_status mllm_dev_positions(mllm_dev_be *d, mllm_dev_run_cache *rc, const mllm_tensor *pos, const int32_t **out) {
    for (int i = 0; i < rc->n_pos; i++)
        if (rc->pos[i].t == pos) return *out = rc->pos[i].host, MLLM_OK;
    if (!pos->buffer || pos->buffer->type != &d->buft)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: positions '%s' are not in device memory", d->ops->name, pos->name);
    if (rc->n_pos == MLLM_DEV_RUN_CACHE) {
        for (int i = 0; i < rc->n_pos; i++) mllm_free(rc->pos[i].host);
        rc->n_pos = 0;
    }
    const int64_t n = mllm_tensor_nelements(pos);
    int32_t *h = mllm_malloc((size_t)(n ? n : 1) * sizeof *h);
    if (!h) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", d->ops->name);
    mllm_status st = d->ops->buf_get(pos->buffer->data, pos->buffer_offs, h, (size_t)n * sizeof *h);
    if (st) {
        mllm_free(h);
        return st;
    }
    rc->pos[rc->n_pos++] = (mllm_dev_pos_entry){pos, h};
    *out = h;
    return MLLM_OK;
}

/* The tables of node t, made with the CPU's own arithmetic
   (mllm_cpu_rope_table) so both round alike. */
static mllm_status rope_tables_for(mllm_dev_be *d, mllm_dev_run_cache *rc, const mllm_tensor *t,
                                   mllm_dev_rope_entry **out) {
    const mllm_dev_ops *ops = d->ops;
    const mllm_rope_params *rp = t->pp;
    for (int i = 0; i < rc->n_rope; i++)
        if (rc->rope[i].pos == t->src[1] && rc->rope[i].rp == rp) return *out = &rc->rope[i], MLLM_OK;
    if (rc->n_rope == MLLM_DEV_RUN_CACHE) {
        for (int i = 0; i < rc->n_rope; i++) ops->buf_free(rc->rope[i].cs), ops->buf_free(rc->rope[i].sn);
        rc->n_rope = 0;
    }
    const int32_t *pos = NULL;
    mllm_status st = mllm_dev_positions(d, rc, t->src[1], &pos);
    if (st) return st;
    const int64_t T = t->ne[2];
    const size_t half = (size_t)rp->n_rot / 2, tab = (size_t)T * half;
    float *cs = mllm_malloc(2 * tab * sizeof *cs);
    if (!cs) return mllm_err(MLLM_ERR_NOMEM, "%s rope: out of memory", ops->name);
    for (int64_t i = 0; i < T; i++) mllm_cpu_rope_table(rp, pos[i], cs + (size_t)i * half, cs + tab + (size_t)i * half);
    mllm_dev_rope_entry *e = &rc->rope[rc->n_rope];
    memset(e, 0, sizeof *e);
    if (!st) st = ops->buf_new(d->c, tab * 4, &e->cs);
    if (!st) st = ops->buf_new(d->c, tab * 4, &e->sn);
    if (!st) st = ops->buf_set(e->cs, 0, cs, tab * 4);
    if (!st) st = ops->buf_set(e->sn, 0, cs + tab, tab * 4);
    mllm_free(cs);
    if (st) {
        ops->buf_free(e->cs);
        ops->buf_free(e->sn);
        return st;
    }
    e->pos = t->src[1];
    e->rp = rp;
    rc->n_rope++;
    *out = e;
    return MLLM_OK;
}

/* ---- one node ---- */

static mllm_status launch_node(mllm_dev_be *d, const mllm_tensor *t, mllm_dev_region *r, mllm_dev_run_cache *rc) {
    const mllm_dev_ops *ops = d->ops;
    mllm_dev *c = d->c;
    mllm_dev_buf *y = r[0].b;
#define S(i) (r[1 + (i)].b)
    const mllm_tensor *a = t->src[0];
    const int64_t n = mllm_tensor_nelements(t);
    switch (t->op) {
    case MLLM_OP_GET_ROWS: return ops->get_rows(c, (mllm_dtype)a->dtype, S(0), a->ne[0], a->ne[1], S(1), t->ne[1], y);
    case MLLM_OP_MATMUL:
        return ops->mul_mat(c, (mllm_dtype)a->dtype, S(0), a->ne[0], a->ne[1], S(1),
                            mllm_tensor_nelements(t->src[1]) / a->ne[0], y, S(2));
    case MLLM_OP_RMSNORM: return ops->rmsnorm(c, S(0), S(1), y, t->ne[0], n / t->ne[0], t->fp[0]);
    case MLLM_OP_LAYERNORM: return ops->layernorm(c, S(0), S(1), S(2), y, t->ne[0], n / t->ne[0], t->fp[0]);
    case MLLM_OP_ADD: return ops->elementwise(c, MLLM_DEV_ADD, S(0), S(1), y, n, 0);
    case MLLM_OP_SILU_MUL: return ops->elementwise(c, MLLM_DEV_SILU_MUL, S(0), S(1), y, n, 0);
    case MLLM_OP_GELU_MUL: return ops->elementwise(c, MLLM_DEV_GELU_MUL, S(0), S(1), y, n, 0);
    case MLLM_OP_GELU: return ops->elementwise(c, MLLM_DEV_GELU, S(0), NULL, y, n, 0);
    case MLLM_OP_SCALE: return ops->elementwise(c, MLLM_DEV_SCALE, S(0), NULL, y, n, t->fp[0]);
    case MLLM_OP_SOFTCAP: return ops->elementwise(c, MLLM_DEV_SOFTCAP, S(0), NULL, y, n, t->fp[0]);
    case MLLM_OP_GELU_TANH: return ops->elementwise(c, MLLM_DEV_GELU_TANH, S(0), NULL, y, n, 0);
    case MLLM_OP_ROPE_TABLE: return ops->rope(c, S(0), y, S(1), S(2), t->ne[0], t->ne[1], t->ne[2], (int)t->ne[0], true);
    case MLLM_OP_IM2COL: return ops->im2col(c, S(0), y, a->ne[0], a->ne[1], t->ip[0], t->ip[1], t->ip[2]);
    case MLLM_OP_ATTENTION_FULL:
    case MLLM_OP_ATTENTION_SEGMENTS: {
        const bool seg = t->op == MLLM_OP_ATTENTION_SEGMENTS;
        const int64_t H = t->ip[0], D = t->ne[0] / H;
        const mllm_dev_enc_attn at = {.D = D, .H = H, .n_q = a->ne[1], .n_k = t->src[1]->ne[1],
                                      .q_stride = (int64_t)(a->nb[1] / 4), .k_stride = (int64_t)(t->src[1]->nb[1] / 4),
                                      .v_stride = (int64_t)(t->src[2]->nb[1] / 4),
                                      .n_segs = seg ? t->src[3]->ne[0] - 1 : 0,
                                      .scale = seg ? t->fp[0] : 1.0f / sqrtf((float)D)};
        return ops->attention_enc(c, S(0), S(1), S(2), seg ? S(3) : NULL, y, &at);
    }
    case MLLM_OP_ROPE: {
        const mllm_rope_params *rp = t->pp;
        mllm_dev_rope_entry *tb = NULL;
        mllm_status st = rope_tables_for(d, rc, t, &tb);
        if (st) return st;
        return ops->rope(c, S(0), y, tb->cs, tb->sn, t->ne[0], t->ne[1], t->ne[2], rp->n_rot, rp->neox);
    }
    case MLLM_OP_CUSTOM: {
        const mllm_custom_op *op = t->pp;
        const mllm_dev_buf *in[4];
        int64_t ne_in[4][4];
        for (int i = 0; i < op->def.n_inputs; i++) {
            in[i] = S(i);
            memcpy(ne_in[i], t->src[i]->ne, sizeof ne_in[i]);
        }
        return ops->custom_opencl(c, op, op->def.opencl_source, op->def.opencl_kernel, y, t->ne, in,
                                  (const int64_t(*)[4])ne_in, op->def.n_inputs);
    }
    default: return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: op %d of '%s' has no kernel", ops->name, (int)t->op, t->name);
    }
#undef S
}

static mllm_status compute_node(mllm_dev_be *d, const mllm_tensor *t, mllm_dev_run_cache *rc) {
    if (t->op == MLLM_OP_KV_STORE) return mllm_dev_kv_store(d, rc, t);
    if (t->op == MLLM_OP_ATTENTION) return mllm_dev_attention(d, rc, t);
    mllm_dev_region r[1 + MLLM_MAX_SRC];
    memset(r, 0, sizeof r);
    mllm_status st = mllm_dev_region_of(d, t, true, &r[0]);
    for (int s = 0; s < MLLM_MAX_SRC && !st; s++) st = mllm_dev_region_of(d, t->src[s], false, &r[1 + s]);
    if (!st) st = launch_node(d, t, r, rc);
    for (int i = 0; i < 1 + MLLM_MAX_SRC; i++) st = mllm_dev_region_release(d, &r[i], st);
    return st;
}

/* One graph compute at a time per device: OpenCL's kernel arguments
   belong to the kernel object, and the KV caches and the scratch are the
   backend's. */
static bool dev_compute(mllm_backend *be, mllm_exec_ctx *x, mllm_tensor **nodes, int n) {
    (void)x;
    mllm_dev_be *d = be->ctx;
    if (t_io_failed) { /* a copy in or out of this thread's last run */
        mllm_err(t_io_failed, "%s", t_io_why);
        t_io_failed = MLLM_OK;
        return false;
    }
    pthread_mutex_lock(&d->run_mu);
    mllm_dev_run_cache rc = {.n_pos = 0};
    mllm_status st = MLLM_OK;
    for (int i = 0; i < n && !st; i++) st = compute_node(d, nodes[i], &rc);
    mllm_dev_run_cache_free(d, &rc);
    pthread_mutex_unlock(&d->run_mu);
    return st == MLLM_OK;
}

static void dev_synchronize(mllm_backend *be) {
    mllm_dev_be *d = be->ctx;
    mllm_status st = d->ops->finish(d->c);
    if (st) io_failed(st);
}

/* ---- opening ---- */

#define MAX_DEVICE_BACKENDS 4

static struct {
    pthread_mutex_t mu;
    mllm_dev_be *e[MAX_DEVICE_BACKENDS];
    int n;
} g_devs = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Called under g_devs.mu; the entry lives as long as the process. */
static mllm_dev_be *dev_new(const mllm_dev_ops *ops) {
    if (g_devs.n == MAX_DEVICE_BACKENDS) return NULL;
    mllm_dev_be *d = mllm_calloc(1, sizeof *d);
    if (!d) return NULL;
    d->ops = ops;
    d->attn_scratch_max = mllm_dev_attn_scratch_max();
    pthread_mutex_init(&d->run_mu, NULL);
    d->buft = (mllm_buffer_type){.name = ops->name, .alloc = buf_alloc, .free = buf_free, .set = buf_set,
                                 .get = buf_get, .is_host = buf_is_host};
    d->be = (mllm_backend){.name = ops->name, .buffer_type = &d->buft, .supports_op = dev_supports,
                           .graph_compute = dev_compute, .synchronize = dev_synchronize,
                           .kv_release = mllm_dev_kv_release, .ctx = d};
    d->st = ops->open(&d->c);
    if (d->st == MLLM_OK && !mllm_backend_register(&d->be))
        d->st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: the backend registry is full", ops->name);
    if (d->st) snprintf(d->why, sizeof d->why, "%s", mllm_last_error());
    g_devs.e[g_devs.n++] = d;
    return d;
}

static mllm_dev_be *dev_find(const mllm_dev_ops *ops) {
    for (int i = 0; i < g_devs.n; i++)
        if (g_devs.e[i]->ops == ops) return g_devs.e[i];
    return NULL;
}

mllm_backend *mllm_dev_backend_get(const mllm_dev_ops *ops) {
    pthread_mutex_lock(&g_devs.mu);
    mllm_dev_be *d = dev_find(ops);
    if (!d) d = dev_new(ops);
    pthread_mutex_unlock(&g_devs.mu);
    if (!d) {
        mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", ops->name);
        return NULL;
    }
    if (d->st) {
        mllm_err(d->st, "%s", d->why);
        return NULL;
    }
    return &d->be;
}

const char *mllm_dev_backend_device(const mllm_dev_ops *ops) {
    pthread_mutex_lock(&g_devs.mu);
    const mllm_dev_be *d = dev_find(ops);
    pthread_mutex_unlock(&g_devs.mu);
    return d && d->st == MLLM_OK ? d->ops->device_name(d->c) : NULL;
}
