/* Whisper's decoder steps as a graph over a self-attention cache slot per
   sequence (several sequences: beam search, which renames slots) and the
   cross-attention K/V the encoder graph (whisper_graph.c) stored. */
#include <string.h>
#include "audio/mel.h"
#include "core/alloc.h"
#include "core/error.h"
#include "formats/ctranslate2.h"
#include "models/whisper/whisper_internal.h"

mllm_status mllm_whisper_mel(mllm_whisper *w, const float *samples, size_t n, float *mel) {
    return mllm_mel_compute_pool(samples, n, w->hp.n_mels, mel, w->pool);
}

static mllm_status ensure_cache(mllm_whisper *w, int n_seq) {
    if (n_seq <= w->n_seq_alloc) return MLLM_OK;
    const mllm_whisper_hparams *hp = &w->hp;
    const size_t per = (size_t)hp->n_dec_layers * (size_t)MLLM_WHISPER_MAX_SEQ * (size_t)hp->n_text_ctx * (size_t)hp->d_model;
    /* Allocated once for the most sequences: a reorder copies between slots. */
    w->self_k = mllm_malloc_aligned(per * sizeof(float));
    w->self_vt = mllm_malloc_aligned(per * sizeof(float));
    w->self = mllm_calloc((size_t)hp->n_dec_layers, sizeof *w->self);
    if (!w->self_k || !w->self_vt || !w->self) {
        mllm_free(w->self);
        w->self = NULL;
        mllm_free_aligned(w->self_k);
        mllm_free_aligned(w->self_vt);
        w->self_k = w->self_vt = NULL;
        return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory for the decoder cache");
    }
    const size_t layer = (size_t)MLLM_WHISPER_MAX_SEQ * (size_t)hp->n_text_ctx * (size_t)hp->d_model;
    for (int l = 0; l < hp->n_dec_layers; l++)
        w->self[l] = (mllm_kv_slots){.n_head = hp->n_head, .head_dim = hp->head_dim, .n_ctx = hp->n_text_ctx,
                                     .n_slots = MLLM_WHISPER_MAX_SEQ, .k = w->self_k + (size_t)l * layer,
                                     .vt = w->self_vt + (size_t)l * layer};
    w->n_seq_alloc = MLLM_WHISPER_MAX_SEQ;
    for (int i = 0; i < MLLM_WHISPER_MAX_SEQ; i++) w->slot[i] = i;
    return MLLM_OK;
}

/* Layer l, cache slot p: keys (n_text_ctx, d) and values transposed (d, n_text_ctx). */
static float *slot_k(mllm_whisper *w, int l, int p) {
    const size_t one = (size_t)w->hp.n_text_ctx * (size_t)w->hp.d_model;
    return w->self_k + ((size_t)l * MLLM_WHISPER_MAX_SEQ + (size_t)p) * one;
}
static float *slot_vt(mllm_whisper *w, int l, int p) {
    const size_t one = (size_t)w->hp.n_text_ctx * (size_t)w->hp.d_model;
    return w->self_vt + ((size_t)l * MLLM_WHISPER_MAX_SEQ + (size_t)p) * one;
}

static void slot_copy(mllm_whisper *w, int dst, int src, int n_pos) {
    const int d = w->hp.d_model, ctx = w->hp.n_text_ctx;
    for (int l = 0; l < w->hp.n_dec_layers; l++) {
        memcpy(slot_k(w, l, dst), slot_k(w, l, src), (size_t)n_pos * (size_t)d * sizeof(float));
        float *vd = slot_vt(w, l, dst), *vs = slot_vt(w, l, src);
        for (int c = 0; c < d; c++) memcpy(vd + (size_t)c * ctx, vs + (size_t)c * ctx, (size_t)n_pos * sizeof(float));
    }
}

void mllm_whisper_kv_copy(mllm_whisper *w, int dst, int src, int n_pos) {
    if (dst == src || !w->self_k || n_pos <= 0) return;
    slot_copy(w, w->slot[dst], w->slot[src], n_pos);
}

mllm_status mllm_whisper_kv_reorder(mllm_whisper *w, const int *parent, int n_seq, int n_pos) {
    if (n_seq < 1 || n_seq > MLLM_WHISPER_MAX_SEQ)
        return mllm_err(MLLM_ERR_INVALID_ARG, "whisper: %d sequences to reorder", n_seq);
    for (int j = 0; j < n_seq; j++)
        if (parent[j] < 0 || parent[j] >= n_seq)
            return mllm_err(MLLM_ERR_INVALID_ARG, "whisper: parent %d of sequence %d", parent[j], j);
    if (!w->self_k || n_pos <= 0) return MLLM_OK;
    int next[MLLM_WHISPER_MAX_SEQ];
    bool taken[MLLM_WHISPER_MAX_SEQ] = {false}, used[MLLM_WHISPER_MAX_SEQ] = {false};
    /* the first child of each parent takes its slot over */
    for (int j = 0; j < n_seq; j++) {
        next[j] = -1;
        if (!taken[parent[j]]) {
            taken[parent[j]] = true;
            next[j] = w->slot[parent[j]];
            used[next[j]] = true;
        }
    }
    /* the others get a copy in a slot nobody keeps (never a parent's) */
    int f = 0;
    for (int j = 0; j < n_seq; j++) {
        if (next[j] >= 0) continue;
        while (used[f]) f++;
        used[f] = true;
        slot_copy(w, f, w->slot[parent[j]], n_pos);
        next[j] = f;
    }
    /* the sequences past n_seq keep the free slots: the map stays a permutation */
    for (int j = 0; j < n_seq; j++) w->slot[j] = next[j];
    f = 0;
    for (int j = n_seq; j < MLLM_WHISPER_MAX_SEQ; j++) {
        while (used[f]) f++;
        used[f] = true;
        w->slot[j] = f;
    }
    return MLLM_OK;
}

/* The decoder for n_seq sequences of n_tok tokens each: embedding +
   positions -> pre-LN blocks (self-attention over the slots, cross-
   attention over the encoder's K/V, FFN) -> LayerNorm -> logits by the
   tied embedding, of every token (all) or each sequence's last. Token ids,
   positions, slots and the last rows are inputs, so the graph serves every
   step of the same shape. */
static mllm_status build_decoder(mllm_whisper *w, int n_seq, int n_tok, bool all) {
    const mllm_whisper_hparams *hp = &w->hp;
    const int64_t d = hp->d_model, R = (int64_t)n_seq * n_tok;
    const float eps = 1e-5f;
    mllm_graph *g = &w->dec_g;
    if (w->dec_built) mllm_graph_reset(g);
    else mllm_graph_init(g, MLLM_MODE_TRACE, w->pool, 64 * 1024);
    w->dec_built = true;
    w->dec_key[0] = -1; /* valid once planned */
    g->gemm = true;     /* prompts of 16 tokens and more: as the encoder */
    /* A step's linears are 0.15-0.6 M multiply-adds each, its logits 20 M
       per sequence, its cross-attention 1.2 M per sequence and layer. With
       every node on the pool, `mllm transcribe --beam 5 -t 2` on jfk.wav
       took 1.18x the wall time of the hand-written forward this replaced
       (the loaded 2-core machine: a barrier per node waits for a worker
       that is not scheduled); with runs of nodes under 4 M on this thread
       alone, 0.98x. */
    g->serial_below = 4 * 1024 * 1024;
    w->d_tok = mllm_graph_input_i32(g, R, "tokens");
    w->d_pos = mllm_graph_input_i32(g, R, "pos");
    w->d_slot = mllm_graph_input_i32(g, R, "slot");
    w->d_last = all || n_tok == 1 ? NULL : mllm_graph_input_i32(g, n_seq, "last");
    mllm_tensor *x = mllm_op_add(g, mllm_op_get_rows(g, w->t_tok_emb, w->d_tok), mllm_op_get_rows(g, w->t_dec_pos, w->d_pos));
    for (int l = 0; l < hp->n_dec_layers && x; l++) {
        const wh_dec_layer *L = &w->dec[l];
        mllm_tensor *h = mllm_op_layernorm(g, x, L->self_ln.tg, L->self_ln.tb, eps);
        mllm_tensor *qkv = mllm_op_matmul(g, L->self_qkv.tw, h, L->self_qkv.tb);
        mllm_tensor *st = mllm_op_kv_slots_store(g, mllm_op_view_elems(g, qkv, d, d), mllm_op_view_elems(g, qkv, 2 * d, d),
                                                 w->d_pos, w->d_slot, &w->self[l]);
        mllm_tensor *a = mllm_op_attention_slots(g, mllm_op_view_elems(g, qkv, 0, d), st, w->d_pos, w->d_slot, &w->self[l],
                                                 n_seq, true, 0);
        x = mllm_op_add(g, x, mllm_op_matmul(g, L->self_out.tw, a, L->self_out.tb));
        h = mllm_op_layernorm(g, x, L->cross_ln.tg, L->cross_ln.tb, eps);
        a = mllm_op_attention_slots(g, mllm_op_matmul(g, L->cross_q.tw, h, L->cross_q.tb), NULL, NULL, NULL,
                                    &w->cross[l], 1, false, hp->n_audio_ctx);
        x = mllm_op_add(g, x, mllm_op_matmul(g, L->cross_out.tw, a, L->cross_out.tb));
        h = mllm_op_layernorm(g, x, L->ffn_ln.tg, L->ffn_ln.tb, eps);
        h = mllm_op_gelu_fast(g, mllm_op_matmul(g, L->fc1.tw, h, L->fc1.tb));
        x = mllm_op_add(g, x, mllm_op_matmul(g, L->fc2.tw, h, L->fc2.tb));
    }
    if (w->d_last) x = mllm_op_get_rows(g, x, w->d_last);
    x = mllm_op_layernorm(g, x, w->dec_ln.tg, w->dec_ln.tb, eps);
    w->d_logits = mllm_op_matmul(g, w->logits.tw, x, w->logits.tb);
    mllm_graph_set_backends(g, w->backends, w->n_backends);
    if (g->failed || !mllm_graph_plan(g, &w->d_logits, 1))
        return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory for the decoder");
    w->dec_key[0] = n_seq, w->dec_key[1] = n_tok, w->dec_key[2] = all;
    return MLLM_OK;
}

mllm_status mllm_whisper_decode(mllm_whisper *w, int n_seq, const int32_t *tokens, int n_tok, int pos0,
                                float *logits, bool all_logits) {
    const mllm_whisper_hparams *hp = &w->hp;
    const int ctx = hp->n_text_ctx;
    if (!w->encoded) return mllm_err(MLLM_ERR_INVALID_ARG, "whisper: decode before encode");
    if (n_seq < 1 || n_seq > MLLM_WHISPER_MAX_SEQ || n_tok < 1 || pos0 < 0 || pos0 + n_tok > ctx)
        return mllm_err(MLLM_ERR_INVALID_ARG, "whisper: %d sequences of %d tokens at %d (at most %d sequences, %d positions)",
                        n_seq, n_tok, pos0, MLLM_WHISPER_MAX_SEQ, ctx);
    const int R = n_seq * n_tok;
    for (int i = 0; i < R; i++)
        if (tokens[i] < 0 || tokens[i] >= hp->n_vocab)
            return mllm_err(MLLM_ERR_INVALID_ARG, "whisper: token %d out of range", tokens[i]);
    mllm_status st = ensure_cache(w, n_seq);
    if (st != MLLM_OK) return st;
    const bool all = all_logits && n_tok > 1;
    if (w->dec_key[0] != n_seq || w->dec_key[1] != n_tok || w->dec_key[2] != all)
        if ((st = build_decoder(w, n_seq, n_tok, all)) != MLLM_OK) return st;
    for (int i = 0; i < R; i++) {
        mllm_tensor_i32(w->d_tok)[i] = tokens[i];
        mllm_tensor_i32(w->d_pos)[i] = pos0 + i % n_tok;
        mllm_tensor_i32(w->d_slot)[i] = w->slot[i / n_tok];
    }
    for (int s = 0; w->d_last && s < n_seq; s++) mllm_tensor_i32(w->d_last)[s] = s * n_tok + n_tok - 1;
    mllm_graph_execute(&w->dec_g);
    if (w->dec_g.failed) return mllm_err(MLLM_ERR_NOMEM, "whisper: the decoder failed (out of memory on a backend)");
    if (mllm_ct2_damaged(w->ct2)) return mllm_err(MLLM_ERR_IO, "whisper: model.bin shrank while in use");
    memcpy(logits, w->d_logits->data, (size_t)mllm_tensor_nelements(w->d_logits) * sizeof(float));
    return MLLM_OK;
}
