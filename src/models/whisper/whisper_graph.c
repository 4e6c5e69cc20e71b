/* Whisper as graphs (graph/graph.h), run by the scheduler over the
   backends of mllm_whisper_params.backends on the model's pool: the
   weights as leaves, and the encoder over one 30-s window (the conv stem
   as im2col + matmul, pre-LN blocks, the final LayerNorm) with the
   cross-attention K and V of every decoder layer, stored once per window
   in the slot caches the decoder steps read. */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "formats/ctranslate2.h"
#include "graph/sched.h"
#include "models/whisper/whisper_internal.h"

static mllm_tensor *leaf(mllm_whisper *w, int dtype, int64_t ne0, int64_t ne1, const void *data, const char *name) {
    const int64_t ne[2] = {ne0, ne1};
    return data ? mllm_tensor_wrap(&w->wg, dtype, ne1 > 1 ? 2 : 1, ne, data, name) : NULL;
}

/* The leaves of a linear layer; false when its rows are not laid out as
   a tensor of its dtype would be (or out of memory). */
static bool bind_linear(mllm_whisper *w, wh_linear *L, const char *name) {
    L->tw = leaf(w, L->dtype, L->n_in, L->n_out, L->w, name);
    L->tb = leaf(w, MLLM_DTYPE_F32, L->n_out, 1, L->b, name);
    return L->tw && L->tw->nb[1] == L->row_bytes && (!L->b || L->tb);
}

static bool bind_norm(mllm_whisper *w, wh_norm *n, int d, const char *name) {
    n->tg = leaf(w, MLLM_DTYPE_F32, d, 1, n->gamma, name);
    n->tb = leaf(w, MLLM_DTYPE_F32, d, 1, n->beta, name);
    return (!n->gamma || n->tg) && (!n->beta || n->tb);
}

/* Every weight as a leaf. */
static bool bind_all(mllm_whisper *w) {
    const mllm_whisper_hparams *hp = &w->hp;
    const int d = hp->d_model;
    char nm[48];
    bool ok = bind_linear(w, &w->conv1, "enc.conv1") && bind_linear(w, &w->conv2, "enc.conv2") &&
              bind_linear(w, &w->logits, "logits") && bind_norm(w, &w->enc_ln, d, "enc.ln") &&
              bind_norm(w, &w->dec_ln, d, "dec.ln");
    for (int l = 0; ok && l < hp->n_enc_layers; l++) {
        wh_enc_layer *L = &w->enc[l];
#define N(s) (snprintf(nm, sizeof nm, "enc.%d." s, l), nm)
        ok = bind_norm(w, &L->attn_ln, d, N("attn_ln")) && bind_norm(w, &L->ffn_ln, d, N("ffn_ln")) &&
             bind_linear(w, &L->qkv, N("qkv")) && bind_linear(w, &L->out, N("out")) &&
             bind_linear(w, &L->fc1, N("fc1")) && bind_linear(w, &L->fc2, N("fc2"));
    }
    for (int l = 0; ok && l < hp->n_dec_layers; l++) {
        wh_dec_layer *L = &w->dec[l];
        ok = bind_norm(w, &L->self_ln, d, N("self_ln")) && bind_norm(w, &L->cross_ln, d, N("cross_ln")) &&
             bind_norm(w, &L->ffn_ln, d, N("ffn_ln")) && bind_linear(w, &L->self_qkv, N("self_qkv")) &&
             bind_linear(w, &L->self_out, N("self_out")) && bind_linear(w, &L->cross_q, N("cross_q")) &&
             bind_linear(w, &L->cross_kv, N("cross_kv")) && bind_linear(w, &L->cross_out, N("cross_out")) &&
             bind_linear(w, &L->fc1, N("fc1")) && bind_linear(w, &L->fc2, N("fc2"));
#undef N
    }
    w->t_enc_pos = leaf(w, MLLM_DTYPE_F32, d, hp->n_audio_ctx, w->enc_pos, "enc.pos");
    w->t_dec_pos = leaf(w, MLLM_DTYPE_F32, d, hp->n_text_ctx, w->dec_pos, "dec.pos");
    w->t_tok_emb = leaf(w, w->logits.dtype, d, hp->n_vocab, w->tok_emb, "tok_emb");
    return ok && w->t_enc_pos && w->t_dec_pos && w->t_tok_emb;
}

static void add(mllm_tensor **list, int *n, mllm_tensor *t) {
    if (!t) return;
    if (list) list[*n] = t;
    (*n)++;
}
static void add_lin(mllm_tensor **list, int *n, const wh_linear *L) { add(list, n, L->tw), add(list, n, L->tb); }
static void add_norm(mllm_tensor **list, int *n, const wh_norm *x) { add(list, n, x->tg), add(list, n, x->tb); }

/* The bound weights into list (NULL: only counted); their number. */
static int weight_list(const mllm_whisper *w, mllm_tensor **list) {
    int n = 0;
    add_lin(list, &n, &w->conv1), add_lin(list, &n, &w->conv2), add_lin(list, &n, &w->logits);
    add_norm(list, &n, &w->enc_ln), add_norm(list, &n, &w->dec_ln);
    for (int l = 0; l < w->hp.n_enc_layers; l++) {
        const wh_enc_layer *L = &w->enc[l];
        const wh_linear *ls[] = {&L->qkv, &L->out, &L->fc1, &L->fc2};
        for (int i = 0; i < 4; i++) add_lin(list, &n, ls[i]);
        add_norm(list, &n, &L->attn_ln), add_norm(list, &n, &L->ffn_ln);
    }
    for (int l = 0; l < w->hp.n_dec_layers; l++) {
        const wh_dec_layer *L = &w->dec[l];
        const wh_linear *ls[] = {&L->self_qkv, &L->self_out, &L->cross_q, &L->cross_kv, &L->cross_out, &L->fc1, &L->fc2};
        for (int i = 0; i < 7; i++) add_lin(list, &n, ls[i]);
        add_norm(list, &n, &L->self_ln), add_norm(list, &n, &L->cross_ln), add_norm(list, &n, &L->ffn_ln);
    }
    add(list, &n, w->t_enc_pos), add(list, &n, w->t_dec_pos), add(list, &n, w->t_tok_emb);
    return n;
}

/* The backends of a list ("opencl", "cuda,cpu"), each given a copy of the
   weights it can use, once. */
static mllm_status use_backends(mllm_whisper *w, const char *list, mllm_tensor **weights, int n_w) {
    mllm_status st = mllm_backends_parse(list, "whisper: backends", w->backends, &w->n_backends);
    if (st != MLLM_OK) return st;
    for (int b = 0; b < w->n_backends; b++)
        if (!(w->placed[b] = mllm_sched_place_weights(w->backends[b], weights, n_w)))
            return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory placing the weights on %s", w->backends[b]->name);
    return MLLM_OK;
}

mllm_status wh_graph_init(mllm_whisper *w, const mllm_whisper_params *p) {
    const mllm_whisper_hparams *hp = &w->hp;
    mllm_graph_init(&w->wg, MLLM_MODE_TRACE, NULL, 16 * 1024);
    w->cross = mllm_calloc((size_t)hp->n_dec_layers, sizeof *w->cross);
    if (!w->cross) return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory");
    const size_t xd = (size_t)hp->n_audio_ctx * (size_t)hp->d_model, es = w->cross_f16 ? 2 : 4;
    for (int l = 0; l < hp->n_dec_layers; l++)
        w->cross[l] = (mllm_kv_slots){.n_head = hp->n_head, .head_dim = hp->head_dim, .n_ctx = hp->n_audio_ctx,
                                      .n_slots = 1, .f16 = w->cross_f16, .head_major = true,
                                      .k = (char *)w->cross_k + (size_t)l * xd * es,
                                      .vt = (char *)w->cross_vt + (size_t)l * xd * es};
    if (!bind_all(w)) {
        if (w->wg.failed) return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory");
        return mllm_err(MLLM_ERR_FORMAT, "whisper: a weight's rows are not laid out as its type's");
    }
    if (!p || !p->backends || !*p->backends) return MLLM_OK;
    const int n_w = weight_list(w, NULL);
    mllm_tensor **list = mllm_calloc((size_t)n_w, sizeof *list);
    if (!list) return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory");
    weight_list(w, list);
    mllm_status st = use_backends(w, p->backends, list, n_w);
    mllm_free(list);
    return st;
}

void wh_graph_free(mllm_whisper *w) {
    mllm_graph_free(&w->enc_g);
    mllm_graph_free(&w->dec_g);
    mllm_free(w->self);
    for (int b = 0; b < MLLM_MAX_BACKENDS; b++) mllm_placement_free(w->placed[b]);
    mllm_graph_free(&w->wg);
    mllm_free(w->cross);
}

/* The encoder: mel (n_mels, 3000 frames) -> conv1 (k 3, pad 1) + GELU ->
   conv2 (k 3, stride 2, pad 1) + GELU -> + positions -> pre-LN blocks ->
   LayerNorm; then each decoder layer's cross K and V stored. The f16
   matmuls over its 1500-3000 rows run on the packed GEMM (g->gemm). */
static mllm_status build_encoder(mllm_whisper *w) {
    const mllm_whisper_hparams *hp = &w->hp;
    const int64_t d = hp->d_model;
    const float eps = 1e-5f;
    mllm_graph *g = &w->enc_g;
    mllm_graph_init(g, MLLM_MODE_TRACE, w->pool, 64 * 1024);
    g->gemm = true;
    w->enc_mel = mllm_graph_input_f32(g, hp->n_mels, MLLM_WHISPER_N_FRAMES, "mel");
    mllm_tensor *x = mllm_op_matmul(g, w->conv1.tw, mllm_op_im2col(g, w->enc_mel, 3, 1, 1), w->conv1.tb);
    x = mllm_op_gelu_fast(g, mllm_op_matmul(g, w->conv2.tw, mllm_op_im2col(g, mllm_op_gelu_fast(g, x), 3, 2, 1),
                                             w->conv2.tb));
    x = mllm_op_add(g, x, w->t_enc_pos);
    for (int l = 0; l < hp->n_enc_layers && x; l++) {
        const wh_enc_layer *L = &w->enc[l];
        mllm_tensor *h = mllm_op_layernorm(g, x, L->attn_ln.tg, L->attn_ln.tb, eps);
        mllm_tensor *qkv = mllm_op_matmul(g, L->qkv.tw, h, L->qkv.tb);
        mllm_tensor *a = mllm_op_attention_full(g, mllm_op_view_elems(g, qkv, 0, d), mllm_op_view_elems(g, qkv, d, d),
                                                mllm_op_view_elems(g, qkv, 2 * d, d), hp->n_head);
        x = mllm_op_add(g, x, mllm_op_matmul(g, L->out.tw, a, L->out.tb));
        h = mllm_op_layernorm(g, x, L->ffn_ln.tg, L->ffn_ln.tb, eps);
        h = mllm_op_gelu_fast(g, mllm_op_matmul(g, L->fc1.tw, h, L->fc1.tb));
        x = mllm_op_add(g, x, mllm_op_matmul(g, L->fc2.tw, h, L->fc2.tb));
    }
    w->enc_res = mllm_op_layernorm(g, x, w->enc_ln.tg, w->enc_ln.tb, eps);
    for (int l = 0; l < hp->n_dec_layers; l++) {
        mllm_tensor *kv = mllm_op_matmul(g, w->dec[l].cross_kv.tw, w->enc_res, w->dec[l].cross_kv.tb);
        mllm_op_kv_slots_store(g, mllm_op_view_elems(g, kv, 0, d), mllm_op_view_elems(g, kv, d, d), NULL, NULL,
                               &w->cross[l]);
    }
    if (!g->failed && (w->enc_res->ne[1] != hp->n_audio_ctx)) g->failed = true;
    mllm_graph_set_backends(g, w->backends, w->n_backends);
    if (g->failed || !mllm_graph_plan(g, &w->enc_res, 1)) {
        mllm_graph_free(g);
        return mllm_err(MLLM_ERR_NOMEM, "whisper: cannot build the encoder (out of memory, or %d positions)",
                        hp->n_audio_ctx);
    }
    w->enc_built = true;
    return MLLM_OK;
}

mllm_status mllm_whisper_encode(mllm_whisper *w, const float *mel) {
    w->encoded = false;
    mllm_status st = w->enc_built ? MLLM_OK : build_encoder(w);
    if (st != MLLM_OK) return st;
    /* the graph's rows are frames: mel is a row of 3000 frames per channel */
    const int nm = w->hp.n_mels, T = MLLM_WHISPER_N_FRAMES;
    float *in = w->enc_mel->data;
    for (int t0 = 0; t0 < T; t0 += 64)
        for (int c = 0; c < nm; c++)
            for (int t = t0; t < t0 + 64 && t < T; t++) in[(size_t)t * nm + c] = mel[(size_t)c * T + t];
    mllm_graph_execute(&w->enc_g);
    if (w->enc_g.failed) return mllm_err(MLLM_ERR_NOMEM, "whisper: the encoder failed (out of memory on a backend)");
    if (mllm_ct2_damaged(w->ct2)) return mllm_err(MLLM_ERR_IO, "whisper: model.bin shrank while in use");
    w->encoded = true;
    return MLLM_OK;
}

const float *mllm_whisper_encoder_states(const mllm_whisper *w) {
    return w->encoded ? (const float *)w->enc_res->data : NULL;
}
