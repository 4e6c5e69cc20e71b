/* The step's micro-batch: the planned tokens of every running sequence in
   one multi-sequence forward. Tokens whose logits are wanted (a decode
   token, the last token of a prompt) go at the end of the batch, so the
   output projection runs over those rows only (first_out); the others'
   K/V are written all the same, and a sequence's tokens may sit apart in
   the batch (every token's K/V is stored before any attention reads it,
   and attention masks by position within the sequence). A step that holds
   an image token (engine.h) takes input embeddings for all its rows. */
#include <string.h>
#include "core/error.h"
#include "engine/engine_internal.h"

int mllm_engine_blocks_needed(const mllm_engine *e, const mllm_eseq *s, int n) {
    const int bs = e->kp.p.block_size, end = s->kv.n_tokens + n, need = (end + bs - 1) / bs;
    int k = need > s->kv.n_blocks ? need - s->kv.n_blocks : 0;
    for (int i = s->kv.n_tokens / bs; i < s->kv.n_blocks && i < need; i++) {
        const int32_t id = s->kv.blocks[i];
        if (e->kp.ref[id] > 1 || e->kp.indexed[id]) k++;
    }
    return k;
}

/* The graph for T tokens with the last n_out returning logits (embd: from
   input embeddings): a cached one, else the least recently used slot
   traced again. */
static mllm_egraph *graph_for(mllm_engine *e, int T, int n_out, bool embd) {
    mllm_egraph *g = NULL, *lru = &e->graphs[0];
    for (int i = 0; i < MLLM_ENGINE_GRAPH_CACHE; i++) {
        mllm_egraph *c = &e->graphs[i];
        if (c->traced && c->T == T && c->n_out == n_out && c->embd == embd) g = c;
        if (!c->traced || (lru->traced && c->used < lru->used)) lru = c;
    }
    if (!g) {
        e->b_traced = true;
        g = lru;
        if (g->traced) mllm_graph_free(&g->g);
        g->traced = false;
        mllm_graph_init(&g->g, MLLM_MODE_TRACE, e->pool, 256 * 1024);
        g->g.exact = e->p.exact;
        mllm_decoder_inputs *in = &g->in;
        memset(in, 0, sizeof *in);
        in->ids = mllm_graph_input_i32(&g->g, T, "ids");
        in->pos = mllm_graph_input_i32(&g->g, T, "pos");
        in->paged = e->kp.layers;
        in->seq = mllm_graph_input_i32(&g->g, T, "seq");
        in->table = mllm_graph_input_i32_2d(&g->g, e->max_blocks, e->p.max_running, "block_table");
        const int32_t *mr = e->dec->cfg.mrope;
        in->rope_pos = mr[0] || mr[1] || mr[2] ? mllm_graph_input_i32(&g->g, 3 * (int64_t)T, "rope_pos") : NULL;
        in->embd = embd ? mllm_graph_input_f32(&g->g, e->dec->cfg.n_embd, T, "embd") : NULL;
        g->logits = !embd || in->embd ? mllm_decoder_forward(&g->g, e->dec, NULL, in, T - n_out) : NULL;
        if (!g->logits || !mllm_graph_plan(&g->g, &g->logits, 1)) {
            mllm_graph_free(&g->g);
            return NULL;
        }
        g->T = T;
        g->n_out = n_out;
        g->embd = embd;
        g->traced = true;
    }
    g->used = e->st.steps;
    return g;
}

/* Row r of the batch: s's token at position `at`, its rotation positions
   and, for an image token, its row. */
static void put(mllm_engine *e, int r, const mllm_eseq *s, int at) {
    const size_t cap = e->b_cap;
    const int32_t row = s->emb && at < s->res.n_prompt ? s->emb_at[at] : -1;
    e->b_ids[r] = row >= 0 ? s->image_token : s->tokens[at];
    e->b_pos[r] = at;
    e->b_seq[r] = s->slot;
    e->b_emb[r] = row >= 0 ? s->emb + (size_t)row * (size_t)e->dec->cfg.n_embd : NULL;
    for (size_t k = 0; k < 3; k++)
        e->b_rpos[k * cap + (size_t)r] = s->rpos && at < s->res.n_prompt ? s->rpos[k * (size_t)s->res.n_prompt + (size_t)at]
                                                                          : at + s->rope_delta;
}

/* The input embeddings of the batch's T rows into embd: an image token's
   row, else its token's, looked up by the graph's own ops (eagerly: the
   same kernels, the same bits as the text path). */
static mllm_status fill_embd(mllm_engine *e, mllm_tensor *embd, int T) {
    const mllm_decoder *d = e->dec;
    const size_t E = (size_t)d->cfg.n_embd;
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_EAGER, e->pool, E * (size_t)T * sizeof(float) + 4096);
    mllm_tensor *ids = mllm_graph_input_i32(&g, T, "ids");
    if (ids) memcpy(mllm_tensor_i32(ids), e->b_ids, (size_t)T * sizeof(int32_t));
    mllm_tensor *x = ids ? mllm_op_get_rows(&g, d->tok_embd, ids) : NULL;
    if (x && d->cfg.embd_scale != 1.0f) x = mllm_op_scale(&g, x, d->cfg.embd_scale);
    if (x && !g.failed)
        for (int r = 0; r < T; r++)
            memcpy((float *)embd->data + (size_t)r * E, e->b_emb[r] ? e->b_emb[r] : (const float *)x->data + (size_t)r * E,
                   E * sizeof(float));
    const bool ok = x && !g.failed;
    mllm_graph_free(&g);
    return ok ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "engine: out of memory for the input embeddings");
}

/* Rows with logits a sequence of the plan returns: its last token's, or,
   speculating, the pending token's and every proposal's. 0: none (a prompt
   chunk that does not reach the end). */
static int out_rows(const mllm_eseq *s) { return s->n_done + s->n_step == s->n_tokens ? 1 + s->n_prop : 0; }

mllm_status mllm_engine_run_batch(mllm_engine *e, int *n_out, const float **logits) {
    *n_out = 0;
    *logits = NULL;
    e->b_traced = false;
    e->b_rows = 0;
    int T = 0, n_rows = 0, n_o = 0;
    for (mllm_eseq *s = e->running; s; s = s->next) {
        if (s->n_step <= 0) continue;
        T += s->n_step;
        n_rows += out_rows(s);
    }
    if (T == 0) return MLLM_OK;
    /* Reserve the K/V positions (the plan made room: this cannot run out). */
    for (mllm_eseq *s = e->running; s; s = s->next) {
        if (s->n_step <= 0) continue;
        mllm_status st = mllm_kv_seq_grow(&e->kp, &s->kv, s->n_step);
        if (st != MLLM_OK) return st;
    }
    /* Rows: every planned token but the wanted ones, then the wanted ones. */
    int r = 0;
    for (mllm_eseq *s = e->running; s; s = s->next) {
        if (s->n_step <= 0) continue;
        const int k = out_rows(s);
        for (int t = s->n_done; t < s->n_done + s->n_step - k; t++) put(e, r++, s, t);
        if (k) e->b_out[n_o++] = s;
    }
    for (int i = 0; i < n_o; i++) {
        const mllm_eseq *s = e->b_out[i];
        for (int t = s->n_tokens - out_rows(s); t < s->n_tokens; t++) put(e, r++, s, t);
    }
    bool embd = false;
    for (int i = 0; i < T; i++) embd |= e->b_emb[i] != NULL;
    mllm_egraph *g = graph_for(e, T, n_rows > 0 ? n_rows : 1, embd);
    if (!g) return mllm_err(MLLM_ERR_NOMEM, "engine: could not build the graph for %d tokens", T);
    memcpy(mllm_tensor_i32(g->in.ids), e->b_ids, (size_t)T * sizeof(int32_t));
    memcpy(mllm_tensor_i32(g->in.pos), e->b_pos, (size_t)T * sizeof(int32_t));
    memcpy(mllm_tensor_i32(g->in.seq), e->b_seq, (size_t)T * sizeof(int32_t));
    const size_t cap = e->b_cap;
    if (g->in.rope_pos) /* M-RoPE's three rows: the positions, moved on after an image */
        for (size_t k = 0; k < 3; k++) memcpy(mllm_tensor_i32(g->in.rope_pos) + k * (size_t)T, e->b_rpos + k * cap,
                                              (size_t)T * sizeof(int32_t));
    if (g->in.embd) {
        mllm_status st = fill_embd(e, g->in.embd, T);
        if (st != MLLM_OK) return st;
    }
    int32_t *tab = mllm_tensor_i32(g->in.table);
    for (int i = 0; i < e->max_blocks * e->p.max_running; i++) tab[i] = -1;
    for (mllm_eseq *s = e->running; s; s = s->next)
        if (s->kv.n_blocks > 0) /* one admitted this step without a share of the budget has none yet */
            memcpy(tab + (size_t)s->slot * (size_t)e->max_blocks, s->kv.blocks, (size_t)s->kv.n_blocks * sizeof(int32_t));
    mllm_graph_execute(&g->g);
    if (g->g.failed) return mllm_err(MLLM_ERR_NOMEM, "engine: out of memory while computing");
    if (e->file) {
        mllm_status st = mllm_model_file_check_intact(e->file); /* weights read past a shrunk file's end */
        if (st != MLLM_OK) return st;
    }
    for (mllm_eseq *s = e->running; s; s = s->next) {
        if (s->n_step <= 0) continue;
        s->n_done += s->n_step;
        /* Full blocks become findable by any later sequence (a speculating
           one's once its proposals are judged). */
        if (s->n_prop == 0) mllm_kv_prefix_commit(&e->kp, &s->kv, s->tokens, s->salt);
    }
    e->st.tokens_evaluated += (uint64_t)T;
    e->b_rows = n_rows;
    *n_out = n_o;
    *logits = g->logits->data;
    return MLLM_OK;
}
