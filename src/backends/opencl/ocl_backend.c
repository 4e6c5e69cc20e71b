/* The OpenCL backend (ocl_backend.h): the vtable of backends/backend.h on
   top of the launches of ocl.h.

   Tensors of a run live in one device buffer per schedule (the
   scheduler's shadows) or in the weights' buffer (placed at load), at byte
   offsets. The launches take whole buffers, so each node's tensors are
   handed over as sub-buffers of those; an origin the device cannot start a
   sub-buffer at (CL_DEVICE_MEM_BASE_ADDR_ALIGN: a view of one token's
   column) is copied into a temporary buffer on the device instead (and
   back, for an output). The scheduler aligns every tensor it places to
   512 bytes, which covers the drivers we know of (PoCL 128, phone GPUs
   128, NVIDIA 512), so that copy is the exception. */
#include "backends/opencl/ocl_backend.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/opencl/ocl_internal.h"
#include "core/alloc.h"
#include "core/dtype.h"

static struct {
    pthread_mutex_t open_mu; /* the first mllm_backend_opencl() */
    pthread_mutex_t run_mu;  /* one graph_compute at a time: kernel arguments are per kernel object */
    bool tried;
    mllm_status st;          /* of the open */
    char why[512];
    mllm_ocl *c;
    size_t align;            /* sub-buffer origins, bytes */
} g_ocl = {.open_mu = PTHREAD_MUTEX_INITIALIZER, .run_mu = PTHREAD_MUTEX_INITIALIZER};

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

static bool buf_alloc(const mllm_buffer_type *bt, size_t size, mllm_buffer *b) {
    mllm_ocl_buf *ob = NULL;
    b->type = bt;
    b->size = size;
    b->data = NULL;
    if (mllm_ocl_buf_new(g_ocl.c, size, &ob) != MLLM_OK) return false;
    b->data = ob;
    return true;
}

static void buf_free(mllm_buffer *b) {
    mllm_ocl_buf_free(b->data);
    b->data = NULL;
    b->size = 0;
}

static void buf_set(mllm_buffer *b, size_t offs, const void *src, size_t n) {
    mllm_status st = mllm_ocl_buf_set(b->data, offs, src, n);
    if (st) io_failed(st);
}

static void buf_get(const mllm_buffer *b, size_t offs, void *dst, size_t n) {
    mllm_status st = mllm_ocl_buf_get(b->data, offs, dst, n);
    if (st) io_failed(st);
}

static bool buf_is_host(const mllm_buffer_type *bt) {
    (void)bt;
    return false;
}

static const mllm_buffer_type g_buft = {
    .name = "opencl",
    .alloc = buf_alloc,
    .free = buf_free,
    .set = buf_set,
    .get = buf_get,
    .is_host = buf_is_host,
};

/* ---- which nodes ---- */

static bool contiguous(const mllm_tensor *t, size_t elem) {
    return t->nb[0] == elem && t->nb[1] == (size_t)t->ne[0] * elem && t->nb[2] == t->nb[1] * (size_t)t->ne[1] &&
           t->nb[3] == t->nb[2] * (size_t)t->ne[2];
}
static bool f32c(const mllm_tensor *t) { return t && t->dtype == MLLM_DTYPE_F32 && contiguous(t, 4); }
static bool i32v(const mllm_tensor *t, int64_t n) {
    return t && t->dtype == MLLM_DTYPE_I32 && contiguous(t, 4) && mllm_tensor_nelements(t) == n;
}
/* A weight matrix in GGUF row layout: whole blocks per row, rows packed. */
static bool matrix(const mllm_tensor *w) {
    const size_t rb = mllm_dtype_row_size((mllm_dtype)w->dtype, w->ne[0]);
    return rb && w->nb[1] == rb && w->ne[2] == 1 && w->ne[3] == 1;
}

static bool ocl_supports(const mllm_backend *be, const mllm_tensor *t) {
    (void)be;
    if (!f32c(t)) return false;
    const mllm_tensor *a = t->src[0], *b = t->src[1], *c = t->src[2];
    const int64_t n = mllm_tensor_nelements(t);
    switch (t->op) {
    case MLLM_OP_GET_ROWS:
        return a && mllm_ocl_supports_get_rows((mllm_dtype)a->dtype) && matrix(a) && i32v(b, t->ne[1]);
    case MLLM_OP_MATMUL:
        return a && mllm_ocl_supports_matmul((mllm_dtype)a->dtype) && matrix(a) && f32c(b) &&
               (!c || (f32c(c) && mllm_tensor_nelements(c) == a->ne[1]));
    case MLLM_OP_RMSNORM: return f32c(a) && (!b || (f32c(b) && mllm_tensor_nelements(b) == t->ne[0]));
    case MLLM_OP_LAYERNORM:
        return f32c(a) && (!b || (f32c(b) && mllm_tensor_nelements(b) == t->ne[0])) &&
               (!c || (f32c(c) && mllm_tensor_nelements(c) == t->ne[0]));
    case MLLM_OP_ADD:
    case MLLM_OP_SILU_MUL:
    case MLLM_OP_GELU_MUL: return f32c(a) && f32c(b) && mllm_tensor_nelements(a) == n && mllm_tensor_nelements(b) == n;
    case MLLM_OP_SCALE:
    case MLLM_OP_GELU: return f32c(a) && mllm_tensor_nelements(a) == n;
    case MLLM_OP_SOFTCAP: return f32c(a) && mllm_tensor_nelements(a) == n && t->fp[0] > 0;
    case MLLM_OP_ROPE: {
        /* Plain RoPE; M-RoPE (three position rows) stays on the CPU. */
        const mllm_rope_params *rp = t->pp;
        return rp && !rp->mrope[0] && !rp->mrope[1] && !rp->mrope[2] && rp->n_rot > 0 && rp->n_rot % 2 == 0 &&
               rp->n_rot <= t->ne[0] && t->ne[3] == 1 && f32c(a) && mllm_tensor_nelements(a) == n &&
               i32v(b, t->ne[2]);
    }
    default: return false; /* KV store, attention (the KV cache is host memory), paged KV, plugin ops */
    }
}

/* ---- a node's tensors as buffers ---- */

typedef struct {
    mllm_ocl_buf b; /* what the launch gets: a sub-buffer or a temporary copy; b.mem NULL: no tensor */
    const mllm_ocl_buf *parent;
    size_t offs;
    bool temp, write;
} region;

static mllm_status acquire(const mllm_tensor *t, bool write, region *r) {
    memset(r, 0, sizeof *r);
    if (!t) return MLLM_OK;
    if (!t->buffer || t->buffer->type != &g_buft)
        return mllm_err(MLLM_ERR_INVALID_ARG, "opencl: tensor '%s' is not in device memory", t->name);
    const size_t n = mllm_tensor_nbytes(t);
    r->parent = t->buffer->data;
    r->offs = t->buffer_offs;
    r->write = write;
    r->b.c = g_ocl.c;
    r->b.size = n;
    if (r->offs > r->parent->size || n > r->parent->size - r->offs)
        return mllm_err(MLLM_ERR_INVALID_ARG, "opencl: tensor '%s' lies outside its buffer", t->name);
    cl_int e = CL_SUCCESS;
    if (r->offs % g_ocl.align == 0) {
        const cl_buffer_region reg = {r->offs, n};
        r->b.mem = clCreateSubBuffer(r->parent->mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &reg, &e);
        if (e == CL_SUCCESS) return MLLM_OK;
        r->b.mem = NULL;
    }
    r->temp = true;
    r->b.mem = clCreateBuffer(g_ocl.c->ctx, CL_MEM_READ_WRITE, n, NULL, &e);
    if (e != CL_SUCCESS) {
        r->b.mem = NULL;
        return mllm_ocl_fail(e, "clCreateBuffer");
    }
    e = clEnqueueCopyBuffer(g_ocl.c->q, r->parent->mem, r->b.mem, r->offs, 0, n, 0, NULL, NULL);
    return e == CL_SUCCESS ? MLLM_OK : mllm_ocl_fail(e, "clEnqueueCopyBuffer");
}

/* Copies a temporary output back; the release waits for the commands
   already enqueued on it (OpenCL keeps it alive until they finish). */
static mllm_status release(region *r, mllm_status st) {
    if (!r->b.mem) return st;
    if (r->temp && r->write && st == MLLM_OK) {
        cl_int e = clEnqueueCopyBuffer(g_ocl.c->q, r->b.mem, r->parent->mem, 0, r->offs, r->b.size, 0, NULL, NULL);
        if (e != CL_SUCCESS) st = mllm_ocl_fail(e, "clEnqueueCopyBuffer");
    }
    clReleaseMemObject(r->b.mem);
    r->b.mem = NULL;
    return st;
}

/* ---- RoPE: the host's angle tables, once per run and positions ---- */

#define ROPE_CACHE 4
typedef struct {
    const mllm_tensor *pos;
    const mllm_rope_params *rp;
    mllm_ocl_buf *cs, *sn;
} rope_tables;
typedef struct {
    rope_tables e[ROPE_CACHE];
    int n;
} rope_cache;

static void rope_cache_free(rope_cache *rc) {
    for (int i = 0; i < rc->n; i++) mllm_ocl_buf_free(rc->e[i].cs), mllm_ocl_buf_free(rc->e[i].sn);
    rc->n = 0;
}

/* The tables of node t (positions in device memory posb), made with the
   CPU's own arithmetic (mllm_cpu_rope_table) so both round alike. */
static mllm_status rope_tables_for(rope_cache *rc, const mllm_tensor *t, const mllm_ocl_buf *posb, rope_tables **out) {
    const mllm_rope_params *rp = t->pp;
    for (int i = 0; i < rc->n; i++)
        if (rc->e[i].pos == t->src[1] && rc->e[i].rp == rp) return *out = &rc->e[i], MLLM_OK;
    if (rc->n == ROPE_CACHE) rope_cache_free(rc);
    const int64_t T = t->ne[2];
    const size_t half = (size_t)rp->n_rot / 2, tab = (size_t)T * half;
    int32_t *pos = mllm_malloc((size_t)T * sizeof *pos);
    float *cs = mllm_malloc(2 * tab * sizeof *cs);
    mllm_status st = pos && cs ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "opencl rope: out of memory");
    if (!st) st = mllm_ocl_buf_get(posb, 0, pos, (size_t)T * sizeof *pos);
    for (int64_t i = 0; !st && i < T; i++) mllm_cpu_rope_table(rp, pos[i], cs + (size_t)i * half, cs + tab + (size_t)i * half);
    rope_tables *e = &rc->e[rc->n];
    memset(e, 0, sizeof *e);
    if (!st) st = mllm_ocl_buf_new(g_ocl.c, tab * 4, &e->cs);
    if (!st) st = mllm_ocl_buf_new(g_ocl.c, tab * 4, &e->sn);
    if (!st) st = mllm_ocl_buf_set(e->cs, 0, cs, tab * 4);
    if (!st) st = mllm_ocl_buf_set(e->sn, 0, cs + tab, tab * 4);
    mllm_free(pos);
    mllm_free(cs);
    if (st) {
        mllm_ocl_buf_free(e->cs);
        mllm_ocl_buf_free(e->sn);
        return st;
    }
    e->pos = t->src[1];
    e->rp = rp;
    rc->n++;
    *out = e;
    return MLLM_OK;
}

/* ---- one node ---- */

static mllm_status launch_node(const mllm_tensor *t, region *r, rope_cache *rc) {
    mllm_ocl *c = g_ocl.c;
    mllm_ocl_buf *y = &r[0].b;
#define S(i) (r[1 + (i)].b.mem ? &r[1 + (i)].b : NULL)
    const mllm_tensor *a = t->src[0];
    const int64_t n = mllm_tensor_nelements(t);
    switch (t->op) {
    case MLLM_OP_GET_ROWS:
        return mllm_ocl_get_rows(c, (mllm_dtype)a->dtype, S(0), a->ne[0], a->ne[1], S(1), t->ne[1], y);
    case MLLM_OP_MATMUL:
        return mllm_ocl_mul_mat(c, (mllm_dtype)a->dtype, S(0), a->ne[0], a->ne[1], S(1),
                                mllm_tensor_nelements(t->src[1]) / a->ne[0], y, S(2));
    case MLLM_OP_RMSNORM: return mllm_ocl_rmsnorm(c, S(0), S(1), y, t->ne[0], n / t->ne[0], t->fp[0]);
    case MLLM_OP_LAYERNORM: return mllm_ocl_layernorm(c, S(0), S(1), S(2), y, t->ne[0], n / t->ne[0], t->fp[0]);
    case MLLM_OP_ADD: return mllm_ocl_elementwise_op(c, MLLM_OCL_ADD, S(0), S(1), y, n, 0);
    case MLLM_OP_SILU_MUL: return mllm_ocl_elementwise_op(c, MLLM_OCL_SILU_MUL, S(0), S(1), y, n, 0);
    case MLLM_OP_GELU_MUL: return mllm_ocl_elementwise_op(c, MLLM_OCL_GELU_MUL, S(0), S(1), y, n, 0);
    case MLLM_OP_GELU: return mllm_ocl_elementwise_op(c, MLLM_OCL_GELU, S(0), NULL, y, n, 0);
    case MLLM_OP_SCALE: return mllm_ocl_elementwise_op(c, MLLM_OCL_SCALE, S(0), NULL, y, n, t->fp[0]);
    case MLLM_OP_SOFTCAP: return mllm_ocl_elementwise_op(c, MLLM_OCL_SOFTCAP, S(0), NULL, y, n, t->fp[0]);
    case MLLM_OP_ROPE: {
        const mllm_rope_params *rp = t->pp;
        rope_tables *tb = NULL;
        mllm_status st = rope_tables_for(rc, t, S(1), &tb);
        if (st) return st;
        return mllm_ocl_rope(c, S(0), y, tb->cs, tb->sn, t->ne[0], t->ne[1], t->ne[2], rp->n_rot, rp->neox);
    }
    default: return mllm_err(MLLM_ERR_UNSUPPORTED, "opencl: op %d of '%s' has no kernel", (int)t->op, t->name);
    }
#undef S
}

static mllm_status compute_node(const mllm_tensor *t, rope_cache *rc) {
    region r[1 + MLLM_MAX_SRC];
    memset(r, 0, sizeof r);
    mllm_status st = acquire(t, true, &r[0]);
    for (int s = 0; s < MLLM_MAX_SRC && !st; s++) st = acquire(t->src[s], false, &r[1 + s]);
    if (!st) st = launch_node(t, r, rc);
    for (int i = 0; i < 1 + MLLM_MAX_SRC; i++) st = release(&r[i], st);
    return st;
}

static bool ocl_compute(mllm_backend *be, mllm_exec_ctx *x, mllm_tensor **nodes, int n) {
    (void)be;
    (void)x;
    if (t_io_failed) { /* a copy in or out of this thread's last run */
        mllm_err(t_io_failed, "%s", t_io_why);
        t_io_failed = MLLM_OK;
        return false;
    }
    pthread_mutex_lock(&g_ocl.run_mu);
    rope_cache rc = {.n = 0};
    mllm_status st = MLLM_OK;
    for (int i = 0; i < n && !st; i++) st = compute_node(nodes[i], &rc);
    rope_cache_free(&rc);
    pthread_mutex_unlock(&g_ocl.run_mu);
    return st == MLLM_OK;
}

static void ocl_synchronize(mllm_backend *be) {
    (void)be;
    mllm_status st = mllm_ocl_finish(g_ocl.c);
    if (st) io_failed(st);
}

static mllm_backend g_backend = {
    .name = "opencl",
    .buffer_type = &g_buft,
    .supports_op = ocl_supports,
    .graph_compute = ocl_compute,
    .synchronize = ocl_synchronize,
};

mllm_backend *mllm_backend_opencl(void) {
    pthread_mutex_lock(&g_ocl.open_mu);
    if (!g_ocl.tried) {
        g_ocl.tried = true;
        g_ocl.st = mllm_ocl_open(NULL, &g_ocl.c);
        if (g_ocl.st == MLLM_OK) {
            cl_uint bits = 0;
            clGetDeviceInfo(g_ocl.c->dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL);
            g_ocl.align = bits >= 8 ? bits / 8 : 128;
            g_backend.ctx = g_ocl.c;
            if (!mllm_backend_register(&g_backend))
                g_ocl.st = mllm_err(MLLM_ERR_UNSUPPORTED, "opencl: the backend registry is full");
        }
        if (g_ocl.st) snprintf(g_ocl.why, sizeof g_ocl.why, "%s", mllm_last_error());
    }
    const mllm_status st = g_ocl.st;
    pthread_mutex_unlock(&g_ocl.open_mu);
    if (st) {
        mllm_err(st, "%s", g_ocl.why);
        return NULL;
    }
    return &g_backend;
}

const char *mllm_backend_opencl_device(void) { return g_ocl.c ? mllm_ocl_device_name(g_ocl.c) : NULL; }
