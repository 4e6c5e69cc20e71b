/* Whisper's decoder steps over a self-attention KV cache per sequence
   (several sequences: beam search) and the cross-attention K/V the
   encoder graph (whisper_graph.c) stored. */
#include <math.h>
#include <string.h>
#include "audio/mel.h"
#include "backends/cpu/kernels.h"
#include "core/alloc.h"
#include "core/dtype.h"
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
    if (!w->self_k || !w->self_vt) {
        mllm_free_aligned(w->self_k);
        mllm_free_aligned(w->self_vt);
        w->self_k = w->self_vt = NULL;
        return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory for the decoder cache");
    }
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
/* The same for sequence s, wherever its slot is. */
static float *cache_k(mllm_whisper *w, int l, int s) { return slot_k(w, l, w->slot[s]); }
static float *cache_vt(mllm_whisper *w, int l, int s) { return slot_vt(w, l, w->slot[s]); }

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

mllm_status mllm_whisper_decode(mllm_whisper *w, int n_seq, const int32_t *tokens, int n_tok, int pos0,
                                float *logits, bool all_logits) {
    const mllm_whisper_hparams *hp = &w->hp;
    const int d = hp->d_model, ctx = hp->n_text_ctx;
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
    const size_t rd = (size_t)R * (size_t)d;
    const size_t wide = (size_t)R * (size_t)(hp->d_ff > 3 * d ? hp->d_ff : 3 * d);
    float *s = wh_scratch(w, 4 * rd + wide);
    if (!s) return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory for the decoder");
    float *x = s, *h = x + rd, *att = h + rd, *tmp = att + rd, *a = tmp + rd;

    const bool packed = mllm_dtype_get(w->logits.dtype)->packed_rows;
    for (int i = 0; i < R; i++) {
        /* plain rows may be unaligned in the file's mapping: copied first */
        const char *row = (const char *)w->tok_emb + (size_t)tokens[i] * w->logits.row_bytes;
        if (packed) mllm_cpu_get_row((mllm_dtype)w->logits.dtype, w->tok_emb, w->logits.row_bytes, d, tokens[i], x + (size_t)i * d);
        else {
            memcpy(a, row, w->logits.row_bytes);
            mllm_cpu_get_row((mllm_dtype)w->logits.dtype, a, w->logits.row_bytes, d, 0, x + (size_t)i * d);
        }
        const float *pe = w->dec_pos + (size_t)(pos0 + i % n_tok) * (size_t)d;
        for (int c = 0; c < d; c++) x[(size_t)i * d + c] += pe[c];
    }
    for (int l = 0; l < hp->n_dec_layers; l++) {
        const wh_dec_layer *L = &w->dec[l];
        wh_layernorm(w, &L->self_ln, x, R, d, h);
        if ((st = wh_linear_run(w, &L->self_qkv, h, R, a, false, NULL)) != MLLM_OK) return st;
        for (int sq = 0; sq < n_seq; sq++) {
            float *K = cache_k(w, l, sq), *Vt = cache_vt(w, l, sq);
            for (int t = 0; t < n_tok; t++) {
                const float *row = a + (size_t)(sq * n_tok + t) * (size_t)d * 3;
                memcpy(K + (size_t)(pos0 + t) * (size_t)d, row + d, (size_t)d * sizeof(float));
                for (int c = 0; c < d; c++) Vt[(size_t)c * ctx + (size_t)(pos0 + t)] = row[2 * d + c];
            }
            const wh_attn at = {.n_head = hp->n_head, .hd = hp->head_dim, .n_q = n_tok, .n_k = pos0 + n_tok,
                                .q = a + (size_t)sq * n_tok * (size_t)d * 3, .k = K, .vt = Vt,
                                .q_stride = (size_t)d * 3, .k_stride = (size_t)d, .vt_stride = (size_t)ctx,
                                .out = att + (size_t)sq * n_tok * (size_t)d, .out_stride = (size_t)d, .causal = pos0};
            if ((st = wh_attention(w, &at)) != MLLM_OK) return st;
        }
        if ((st = wh_linear_run(w, &L->self_out, att, R, tmp, false, x)) != MLLM_OK) return st;

        wh_layernorm(w, &L->cross_ln, x, R, d, h);
        if ((st = wh_linear_run(w, &L->cross_q, h, R, a, false, NULL)) != MLLM_OK) return st;
        const size_t xd = (size_t)hp->n_audio_ctx * (size_t)d;
        const wh_attn ca = {.n_head = hp->n_head, .hd = hp->head_dim, .n_q = R, .n_k = hp->n_audio_ctx, .q = a,
                            .k = (const char *)w->cross_k + (size_t)l * xd * (w->cross_f16 ? 2 : 4),
                            .vt = (const char *)w->cross_vt + (size_t)l * xd * (w->cross_f16 ? 2 : 4),
                            .q_stride = (size_t)d, .k_stride = (size_t)hp->head_dim,
                            .k_head = (size_t)hp->n_audio_ctx * (size_t)hp->head_dim, .vt_stride = (size_t)hp->n_audio_ctx,
                            .out = att, .out_stride = (size_t)d, .causal = -1, .kv_f16 = w->cross_f16};
        if ((st = wh_attention(w, &ca)) != MLLM_OK) return st;
        if ((st = wh_linear_run(w, &L->cross_out, att, R, tmp, false, x)) != MLLM_OK) return st;

        wh_layernorm(w, &L->ffn_ln, x, R, d, h);
        if ((st = wh_linear_run(w, &L->fc1, h, R, a, true, NULL)) != MLLM_OK) return st;
        if ((st = wh_linear_run(w, &L->fc2, a, R, tmp, false, x)) != MLLM_OK) return st;
    }
    if (mllm_ct2_damaged(w->ct2)) return mllm_err(MLLM_ERR_IO, "whisper: model.bin shrank while in use");
    if (all_logits) {
        wh_layernorm(w, &w->dec_ln, x, R, d, h);
        return wh_linear_run(w, &w->logits, h, R, logits, false, NULL);
    }
    for (int sq = 0; sq < n_seq; sq++)
        memcpy(tmp + (size_t)sq * d, x + (size_t)(sq * n_tok + n_tok - 1) * (size_t)d, (size_t)d * sizeof(float));
    wh_layernorm(w, &w->dec_ln, tmp, n_seq, d, h);
    return wh_linear_run(w, &w->logits, h, n_seq, logits, false, NULL);
}
