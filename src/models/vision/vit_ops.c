/* The vision towers' shared pieces (vit_ops.h). */
#include "models/vision/vit_ops.h"
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "formats/hf_config.h"

void qv_weights_init(qv_weights *ws) {
    memset(ws, 0, sizeof *ws);
    mllm_graph_init(&ws->g, MLLM_MODE_TRACE, NULL, 16 * 1024);
}

static void drop_backends(qv_weights *ws) {
    for (int b = 0; b < ws->n_be; b++) mllm_placement_free(ws->placed[b]);
    memset(ws->placed, 0, sizeof ws->placed);
    ws->n_be = 0;
}

void qv_weights_free(qv_weights *ws) {
    drop_backends(ws);
    mllm_graph_free(&ws->g);
    mllm_free(ws->all);
    memset(ws, 0, sizeof *ws);
}

static mllm_tensor *keep(qv_weights *ws, mllm_tensor *t) {
    if (t && ws->n == ws->cap) {
        const int nc = ws->cap ? 2 * ws->cap : 64;
        mllm_tensor **na = mllm_realloc(ws->all, (size_t)nc * sizeof *na);
        if (!na) t = NULL;
        else ws->all = na, ws->cap = nc;
    }
    if (!t) {
        ws->failed = true;
        return NULL;
    }
    return ws->all[ws->n++] = t;
}

mllm_tensor *qv_weight_matrix(qv_weights *ws, const void *w, int dtype, int64_t n_in, int64_t n_out, const char *name) {
    const int64_t ne[2] = {n_in, n_out};
    return keep(ws, mllm_tensor_wrap(&ws->g, dtype, 2, ne, w, name));
}

mllm_tensor *qv_weight_f32(qv_weights *ws, const float *x, int64_t n, int64_t rows, const char *name) {
    const int64_t ne[2] = {n, rows};
    return x ? keep(ws, mllm_tensor_wrap(&ws->g, MLLM_DTYPE_F32, rows > 1 ? 2 : 1, ne, x, name)) : NULL;
}

qv_lin qv_weight_linear_rows(qv_weights *ws, const qv_linear *L, int64_t r0, int64_t n, const char *name) {
    qv_lin o = {qv_weight_matrix(ws, (const char *)L->w + (size_t)r0 * L->row_bytes, L->dtype, L->n_in, n, name),
                L->b ? qv_weight_f32(ws, L->b + r0, n, 1, name) : NULL};
    return o;
}

mllm_status qv_weights_use_backends(qv_weights *ws, mllm_backend *const *be, int n, const char *what) {
    drop_backends(ws);
    if (n < 1 || (n == 1 && be[0] == mllm_backend_cpu())) return MLLM_OK; /* the fast path: no schedule */
    if (n > MLLM_MAX_BACKENDS) return mllm_err(MLLM_ERR_INVALID_ARG, "%s: more than %d backends", what, MLLM_MAX_BACKENDS);
    for (int b = 0; b < n; b++) {
        ws->be[ws->n_be++] = be[b];
        if (!(ws->placed[b] = mllm_sched_place_weights(be[b], ws->all, ws->n))) {
            drop_backends(ws);
            return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory placing the weights on backend %s", what, be[b]->name);
        }
    }
    return MLLM_OK;
}

void qv_graph_init(const qv_weights *ws, mllm_graph *g, mllm_pool *pool) {
    mllm_graph_init(g, MLLM_MODE_TRACE, pool, 64 * 1024);
    g->batch_gemm = true;
    mllm_graph_set_backends(g, ws->be, ws->n_be);
}

static _Thread_local mllm_sched_stats t_last_schedule;

void qv_last_schedule(mllm_sched_stats *out) { *out = t_last_schedule; }

mllm_status qv_graph_run(mllm_graph *g, mllm_tensor *out, void (*fill)(void *user), void *user, float **dst,
                         const char *what) {
    if (!out || !mllm_graph_plan(g, &out, 1)) return mllm_err(MLLM_ERR_NOMEM, "%s: could not build the graph", what);
    fill(user);
    mllm_graph_execute(g);
    memset(&t_last_schedule, 0, sizeof t_last_schedule);
    if (g->sched) mllm_sched_get_stats(g->sched, &t_last_schedule);
    if (g->failed) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory while computing", what);
    const size_t n = mllm_tensor_nbytes(out);
    if (!(*dst = mllm_malloc(n))) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", what);
    memcpy(*dst, out->data, n);
    return MLLM_OK;
}

bool qv_widen(int dtype, const void *src, int64_t ne0, int64_t rows, float *dst) {
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_EAGER, NULL, 4096);
    const int64_t ne[2] = {ne0, rows};
    mllm_tensor *tab = mllm_tensor_wrap(&g, dtype, 2, ne, src, "widen");
    mllm_tensor *ids = mllm_graph_input_i32(&g, rows, "rows");
    for (int64_t r = 0; ids && r < rows; r++) mllm_tensor_i32(ids)[r] = (int32_t)r;
    mllm_tensor *out = tab && ids ? mllm_op_get_rows(&g, tab, ids) : NULL;
    if (out) memcpy(dst, out->data, (size_t)(ne0 * rows) * sizeof(float));
    mllm_graph_free(&g);
    return out != NULL;
}

mllm_status qv_check_dtype(int dtype, const char *path, const char *name) {
    if (dtype == MLLM_DTYPE_F32 || dtype == MLLM_DTYPE_F16 || dtype == MLLM_DTYPE_BF16) return MLLM_OK;
    return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: tensor %s is %s (F32, F16 or BF16 are read)", path, name,
                    mllm_dtype_get(dtype)->name);
}

const mllm_st_tensor *qv_bind_find(qv_binder *b, const char *name, int64_t ne0, int64_t ne1) {
    if (b->st) return NULL;
    char full[256];
    snprintf(full, sizeof full, "%s%s", b->prefix, name);
    const mllm_st_tensor *t = mllm_safetensors_find(b->file, full);
    if (!t) {
        b->st = mllm_err(MLLM_ERR_FORMAT, "%s: tensor %s is missing", b->path, full);
        return NULL;
    }
    int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    /* a conv kernel [out, in, (t,) h, w] is read as out rows of its flat
       values: only its count can be checked */
    if ((t->src_dims <= 2 && t->ne[0] != ne0) || n != ne0 * ne1) {
        b->st = mllm_err(MLLM_ERR_FORMAT, "%s: tensor %s has shape [..., %lld] (%lld values), want %lld x %lld",
                         b->path, full, (long long)t->ne[0], (long long)n, (long long)ne1, (long long)ne0);
        return NULL;
    }
    return (b->st = qv_check_dtype(t->dtype, b->path, full)) ? NULL : t;
}

float *qv_bind_f32(qv_binder *b, const char *name, int64_t n) { return qv_bind_f32_2d(b, name, n, 1); }

float *qv_bind_f32_2d(qv_binder *b, const char *name, int64_t ne0, int64_t ne1) {
    const mllm_st_tensor *t = qv_bind_find(b, name, ne0, ne1);
    if (!t) return NULL;
    float *f = mllm_malloc((size_t)(ne0 * ne1) * sizeof(float));
    if (!f || !qv_widen(t->dtype, t->data, ne0 * ne1, 1, f)) {
        mllm_free(f);
        b->st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", b->path);
        return NULL;
    }
    return f;
}

void qv_bind_linear(qv_binder *b, qv_linear *L, const char *name, int64_t n_in, int64_t n_out, bool bias) {
    char w[200], bn[200];
    snprintf(w, sizeof w, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    const mllm_st_tensor *t = qv_bind_find(b, w, n_in, n_out);
    if (!t) return;
    *L = (qv_linear){.w = t->data, .dtype = t->dtype, .row_bytes = t->size / (size_t)n_out, .n_in = n_in,
                     .n_out = n_out};
    if (bias) L->b = qv_bind_f32(b, bn, n_out);
}

mllm_status qv_folder_config(const char *dir, qv_folder *f, mllm_meta *m) {
    if ((size_t)snprintf(f->cfg, sizeof f->cfg, "%s/config.json", dir) >= sizeof f->cfg ||
        (size_t)snprintf(f->weights, sizeof f->weights, "%s/model.safetensors", dir) >= sizeof f->weights ||
        (size_t)snprintf(f->index, sizeof f->index, "%s/model.safetensors.index.json", dir) >= sizeof f->index)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: path too long", dir);
    return mllm_hf_config_load(f->cfg, m);
}

mllm_status qv_folder_weights(const char *dir, const qv_folder *f, mllm_safetensors **st) {
    FILE *x = fopen(f->index, "rb");
    if (x) {
        fclose(x);
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: sharded checkpoints are not read by the vision tower yet", dir);
    }
    return mllm_safetensors_open(f->weights, st);
}
