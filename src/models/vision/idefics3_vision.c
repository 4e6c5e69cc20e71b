/* The Idefics3 / SmolVLM vision forward pass (idefics3_vision.h) as a
   graph (graph/graph.h) on f32 activations: the tiles are one batch of
   tokens, attention is per tile (one segment each), the patch embedding a
   matmul over the unfolded patches, the pixel shuffle a row lookup. The
   processor only makes full square tiles, so every patch is valid and
   SigLIP's bucketed position ids are the identity (checked in
   tools/reference/make_smolvlm_tiny.py): no patch mask is needed. */
#include <math.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "models/vision/idefics3_vision_internal.h"

/* The graph's inputs and what fills them. */
typedef struct {
    const mllm_idefics3_vision *v;
    const mllm_idefics3_pixels *px;
    mllm_tensor *patches; /* (3 patch^2, n): the conv as a matmul, one row per patch, (channel, y, x) as the kernel */
    mllm_tensor *pos;     /* n: each patch's position id (SigLIP's, the identity on full tiles) */
    mllm_tensor *segs;    /* n_tiles + 1: attention stays inside each tile */
    mllm_tensor *shuffle; /* n: the pixel shuffle's row order */
} i3_inputs;

static void fill(void *user) {
    const i3_inputs *in = user;
    const mllm_idefics3_vision_config *c = &in->v->c;
    const int P = c->patch, side = c->image_size / P, s = c->scale, T = c->image_size, bs = side / s;
    const int64_t per = (int64_t)side * side, pd = 3LL * P * P;
    const size_t plane = (size_t)T * T;
    float *patches = in->patches->data;
    int32_t *pos = mllm_tensor_i32(in->pos), *segs = mllm_tensor_i32(in->segs), *sh = mllm_tensor_i32(in->shuffle);
    for (int t = 0; t < in->px->n_tiles; t++) {
        segs[t] = (int32_t)(t * per);
        const float *tile = in->px->pixels + (size_t)t * 3 * plane;
        for (int py = 0; py < side; py++)
            for (int pxx = 0; pxx < side; pxx++) {
                const int64_t r = t * per + (int64_t)py * side + pxx;
                float *o = patches + r * pd;
                pos[r] = (int32_t)(r % per);
                for (int ch = 0; ch < 3; ch++)
                    for (int y = 0; y < P; y++) {
                        memcpy(o, tile + ch * plane + (size_t)(py * P + y) * T + (size_t)pxx * P, (size_t)P * sizeof(float));
                        o += P;
                    }
            }
        /* shuffled row (by, bx) of a tile is the s x s block's patches (i, j) in order */
        int32_t *o = sh + t * per;
        for (int by = 0; by < bs; by++)
            for (int bx = 0; bx < bs; bx++)
                for (int i = 0; i < s; i++)
                    for (int j = 0; j < s; j++) *o++ = (int32_t)(t * per + (int64_t)(by * s + i) * side + bx * s + j);
    }
    segs[in->px->n_tiles] = (int32_t)(per * in->px->n_tiles);
}

/* The tower and the connector on n patches: (out_hidden, n / scale^2). */
static mllm_tensor *forward(mllm_graph *g, const mllm_idefics3_vision *v, const i3_inputs *in, int64_t n) {
    const mllm_idefics3_vision_config *c = &v->c;
    const int64_t H = c->hidden, s2 = (int64_t)c->scale * c->scale;
    mllm_tensor *x = mllm_op_add(g, qv_matmul(g, v->tpatch, in->patches), mllm_op_get_rows(g, v->tpos, in->pos));
    for (int l = 0; l < c->depth && x; l++) {
        const i3_block_t *b = &v->tb[l];
        mllm_tensor *h = mllm_op_layernorm(g, x, b->ln1_w, b->ln1_b, c->eps);
        mllm_tensor *a = mllm_op_attention_segments(g, qv_matmul(g, b->q, h), qv_matmul(g, b->k, h),
                                                    qv_matmul(g, b->v, h), in->segs, c->heads,
                                                    1.0f / sqrtf((float)(H / c->heads)));
        x = mllm_op_add(g, x, qv_matmul(g, b->o, a));
        h = mllm_op_layernorm(g, x, b->ln2_w, b->ln2_b, c->eps);
        x = mllm_op_add(g, x, qv_matmul(g, b->fc2, mllm_op_gelu_tanh(g, qv_matmul(g, b->fc1, h))));
    }
    x = mllm_op_get_rows(g, mllm_op_layernorm(g, x, v->tpost_w, v->tpost_b, c->eps), in->shuffle);
    const int64_t ne[2] = {H * s2, n / s2};
    return qv_matmul(g, v->tproj, mllm_op_reshape(g, x, 2, ne));
}

mllm_status mllm_idefics3_vision_encode(mllm_idefics3_vision *v, const mllm_idefics3_pixels *px, float **emb,
                                        int64_t *n_tokens) {
    if (emb) *emb = NULL;
    if (n_tokens) *n_tokens = 0;
    if (!v || !px || !px->pixels || !emb || !n_tokens)
        return mllm_err(MLLM_ERR_INVALID_ARG, "idefics3 vision: NULL argument");
    const mllm_idefics3_vision_config *c = &v->c;
    if (px->tile != c->image_size || px->n_tiles < 1 || px->n_tiles > MLLM_IDEFICS3_MAX_TILES)
        return mllm_err(MLLM_ERR_INVALID_ARG, "idefics3 vision: %d tiles of %d pixels (the tower takes %d)",
                        px->n_tiles, px->tile, c->image_size);
    const int side = c->image_size / c->patch;
    const int64_t n = (int64_t)side * side * px->n_tiles;
    mllm_graph g;
    qv_graph_init(&v->w, &g, v->pool);
    i3_inputs in = {v, px, mllm_graph_input_f32(&g, 3LL * c->patch * c->patch, n, "patches"),
                    mllm_graph_input_i32(&g, n, "pos"), mllm_graph_input_i32(&g, px->n_tiles + 1, "segs"),
                    mllm_graph_input_i32(&g, n, "shuffle")};
    mllm_tensor *out = in.patches && in.pos && in.segs && in.shuffle ? forward(&g, v, &in, n) : NULL;
    mllm_status st = qv_graph_run(&g, out, fill, &in, emb, "idefics3 vision");
    mllm_graph_free(&g);
    if (!st) *n_tokens = n / ((int64_t)c->scale * c->scale);
    return st;
}
