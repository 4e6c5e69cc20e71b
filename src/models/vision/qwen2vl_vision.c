/* The Qwen2.5-VL vision tower's forward pass (qwen2vl_vision.h) as a graph
   (graph/graph.h) on f32 activations: linear layers as matmuls (weights
   f32 / f16 / bf16 as stored), the 2-D rotary angles as graph inputs,
   attention per window (or over the whole image) as attention over
   segments, the merger's 2 x 2 units as a reshape. Token order inside: the
   window order of transformers (get_vision_window_index), so each window
   is a contiguous run of rows; the merger's output is put back in image
   order at the end (a row lookup). */
#include <math.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "models/vision/qwen2vl_vision_internal.h"

/* The graph's inputs and what fills them. */
typedef struct {
    const mllm_qwen2vl_vision *v;
    const mllm_qwen2vl_pixels *px;
    const int32_t *order; /* nu merged units in window order */
    const int32_t *wsegs; /* n_win + 1 token offsets of the windows */
    int n_win;
    mllm_tensor *patches; /* (patch_dim, n) in window order: unit u's rows are patches 4u .. 4u+3 */
    mllm_tensor *cs, *sn; /* (hd / 2, n): each token's rotation angles */
    mllm_tensor *wseg_in, *fseg_in; /* the windows; the whole image */
    mllm_tensor *unorder; /* nu: the merger's rows back in image order */
} qv_inputs;

static void fill(void *user) {
    const qv_inputs *in = user;
    const mllm_qwen2vl_vision_config *c = &in->v->c;
    const int ms = c->merge, unit = ms * ms, lw = in->px->grid_w / ms;
    const int64_t n = in->px->n_patches, pd = in->px->patch_dim, hd = c->hidden / c->heads, nu = n / unit;
    /* 2-D rotary angles: the patch's row for the first half of the pairs, its column for the second */
    const int q4 = (int)hd / 4;
    float inv[256]; /* head size <= 1024 (qwen2vl_vision_load.c) */
    for (int j = 0; j < q4; j++) inv[j] = 1.0f / powf(c->rope_theta, (float)(2 * j) / (float)(hd / 2));
    float *P = in->patches->data, *cs = in->cs->data, *sn = in->sn->data;
    for (int64_t i = 0; i < nu; i++) {
        const int u = in->order[i], by = u / lw, bx = u % lw;
        mllm_tensor_i32(in->unorder)[u] = (int32_t)i;
        for (int r = 0; r < unit; r++) {
            const int64_t src = (int64_t)u * unit + r, dst = i * unit + r;
            memcpy(P + dst * pd, in->px->patches + src * pd, (size_t)pd * sizeof(float));
            const int hp = by * ms + r / ms, wp = bx * ms + r % ms;
            for (int j = 0; j < q4; j++) {
                float ah = (float)hp * inv[j], aw = (float)wp * inv[j];
                cs[dst * (hd / 2) + j] = cosf(ah), sn[dst * (hd / 2) + j] = sinf(ah);
                cs[dst * (hd / 2) + q4 + j] = cosf(aw), sn[dst * (hd / 2) + q4 + j] = sinf(aw);
            }
        }
    }
    memcpy(mllm_tensor_i32(in->wseg_in), in->wsegs, (size_t)(in->n_win + 1) * sizeof(int32_t));
    mllm_tensor_i32(in->fseg_in)[0] = 0;
    mllm_tensor_i32(in->fseg_in)[1] = (int32_t)n;
}

/* RoPE of a (hidden, n) projection by the token angles. */
static mllm_tensor *rotate(mllm_graph *g, const qv_inputs *in, mllm_tensor *x, int64_t hd, int64_t n) {
    const int64_t ne3[3] = {hd, in->v->c.heads, n}, ne2[2] = {hd * in->v->c.heads, n};
    return mllm_op_reshape(g, mllm_op_rope_table(g, mllm_op_reshape(g, x, 3, ne3), in->cs, in->sn), 2, ne2);
}

/* The tower and the merger on n patches: (out_hidden, n / merge^2) in image order. */
static mllm_tensor *forward(mllm_graph *g, const mllm_qwen2vl_vision *v, const qv_inputs *in, int64_t n) {
    const mllm_qwen2vl_vision_config *c = &v->c;
    const int64_t H = c->hidden, hd = H / c->heads, unit = (int64_t)c->merge * c->merge;
    const float eps = 1e-6f; /* transformers' Qwen2RMSNorm in the tower */
    mllm_tensor *x = qv_matmul(g, v->tpatch, in->patches);
    for (int l = 0; l < c->depth && x; l++) {
        const qv_block_t *b = &v->tb[l];
        mllm_tensor *h = mllm_op_rmsnorm(g, x, b->norm1, eps);
        mllm_tensor *q = rotate(g, in, qv_matmul(g, b->q, h), hd, n), *k = rotate(g, in, qv_matmul(g, b->k, h), hd, n);
        mllm_tensor *a = mllm_op_attention_segments(g, q, k, qv_matmul(g, b->v, h), b->full ? in->fseg_in : in->wseg_in,
                                                    c->heads, 1.0f / sqrtf((float)hd));
        x = mllm_op_add(g, x, qv_matmul(g, b->proj, a));
        h = mllm_op_rmsnorm(g, x, b->norm2, eps);
        x = mllm_op_add(g, x, qv_matmul(g, b->down, mllm_op_silu_mul(g, qv_matmul(g, b->gate, h), qv_matmul(g, b->up, h))));
    }
    /* merger: RMSNorm per token, each unit's 4 consecutive tokens as one row, MLP with exact GELU */
    const int64_t ne[2] = {H * unit, n / unit};
    x = mllm_op_reshape(g, mllm_op_rmsnorm(g, x, v->tmerge_norm, eps), 2, ne);
    x = qv_matmul(g, v->tmlp2, mllm_op_gelu(g, qv_matmul(g, v->tmlp0, x)));
    return mllm_op_get_rows(g, x, in->unorder);
}

/* The merged units in window order (transformers' get_vision_window_index)
   and the windows' token offsets; returns the number of windows. */
static int window_order(const mllm_qwen2vl_vision_config *c, int gh, int gw, int32_t *order, int32_t *wsegs) {
    const int ms = c->merge, unit = ms * ms, lh = gh / ms, lw = gw / ms;
    const int wu = c->window / ms / c->patch; /* window side in merged units */
    const int nwh = (lh + wu - (lh % wu)) / wu, nww = (lw + wu - (lw % wu)) / wu; /* as transformers pads */
    int k = 0, nseg = 0;
    wsegs[0] = 0;
    for (int wy = 0; wy < nwh; wy++)
        for (int wx = 0; wx < nww; wx++) {
            int cnt = 0;
            for (int iy = 0; iy < wu; iy++)
                for (int ix = 0; ix < wu; ix++) {
                    int y = wy * wu + iy, x = wx * wu + ix;
                    if (y < lh && x < lw) order[k++] = y * lw + x, cnt++;
                }
            if (cnt) wsegs[nseg + 1] = wsegs[nseg] + cnt * unit, nseg++; /* empty windows dropped (unique_consecutive) */
        }
    return nseg;
}

mllm_status mllm_qwen2vl_vision_encode(mllm_qwen2vl_vision *v, const mllm_qwen2vl_pixels *px, float **emb,
                                       int64_t *n_tokens) {
    if (emb) *emb = NULL;
    if (n_tokens) *n_tokens = 0;
    if (!v || !px || !px->patches || !emb || !n_tokens)
        return mllm_err(MLLM_ERR_INVALID_ARG, "qwen2vl vision: NULL argument");
    const mllm_qwen2vl_vision_config *c = &v->c;
    const int ms = c->merge, gh = px->grid_h, gw = px->grid_w;
    if (px->grid_t != 1)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "qwen2vl vision: grid_t %d (videos are not encoded yet)", px->grid_t);
    if (gh < ms || gw < ms || gh % ms || gw % ms || gh > MLLM_QWEN2VL_MAX_GRID || gw > MLLM_QWEN2VL_MAX_GRID ||
        px->n_patches != (int64_t)gh * gw || px->patch_dim != v->patch.n_in)
        return mllm_err(MLLM_ERR_INVALID_ARG,
                        "qwen2vl vision: %lld patches of %lld values for a %d x %d grid (the tower takes %lld)",
                        (long long)px->n_patches, (long long)px->patch_dim, gh, gw, (long long)v->patch.n_in);
    const int64_t n = px->n_patches, hd = c->hidden / c->heads, nu = n / ((int64_t)ms * ms);
    const int wu = c->window / ms / c->patch, lh = gh / ms, lw = gw / ms;
    const size_t max_win = (size_t)((lh + wu - (lh % wu)) / wu) * (size_t)((lw + wu - (lw % wu)) / wu);
    int32_t *order = mllm_malloc((size_t)nu * sizeof(int32_t)), *wsegs = mllm_malloc((max_win + 2) * sizeof(int32_t));
    if (!order || !wsegs) {
        mllm_free(order), mllm_free(wsegs);
        return mllm_err(MLLM_ERR_NOMEM, "qwen2vl vision: out of memory for %lld patches", (long long)n);
    }
    qv_inputs in = {.v = v, .px = px, .order = order, .wsegs = wsegs};
    in.n_win = window_order(c, gh, gw, order, wsegs);
    mllm_graph g;
    qv_graph_init(&v->w, &g, v->pool);
    in.patches = mllm_graph_input_f32(&g, px->patch_dim, n, "patches");
    in.cs = mllm_graph_input_f32(&g, hd / 2, n, "rope_cos");
    in.sn = mllm_graph_input_f32(&g, hd / 2, n, "rope_sin");
    in.wseg_in = mllm_graph_input_i32(&g, in.n_win + 1, "windows");
    in.fseg_in = mllm_graph_input_i32(&g, 2, "whole");
    in.unorder = mllm_graph_input_i32(&g, nu, "unorder");
    mllm_tensor *out = g.failed ? NULL : forward(&g, v, &in, n);
    mllm_status st = qv_graph_run(&g, out, fill, &in, emb, "qwen2vl vision");
    mllm_graph_free(&g);
    mllm_free(order), mllm_free(wsegs);
    if (!st) *n_tokens = nu;
    return st;
}
