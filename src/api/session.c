/* mllm_session: the KV cache, the traced decode graph and prefill (the
   generation loop over them is generate.c). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "api/internal.h"
#include "api/vision.h"
#include "core/alloc.h"
#include "core/error.h"

/* Prompt tokens per prefill graph: bounds activation memory for long
   prompts (and the tokens of one mllm_session_eval_logits call). */
#define MLLM_PREFILL_CHUNK MLLM_EVAL_LOGITS_MAX

MLLM_API void mllm_session_default_params(mllm_session_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
}

static bool trace_graph(mllm_session *s, mllm_graph *g, int T, int first_out, mllm_decoder_inputs *in,
                        mllm_tensor **logits) {
    mllm_graph_reset(g);
    memset(in, 0, sizeof *in);
    in->ids = mllm_graph_input_i32(g, T, "ids");
    in->pos = mllm_graph_input_i32(g, T, "pos");
    if (s->kvp) { /* one sequence: every token's is 0, one table row */
        in->paged = s->kvp->layers;
        in->seq = mllm_graph_input_i32(g, T, "seq");
        in->table = mllm_graph_input_i32_2d(g, s->kv_max_blocks, 1, "block_table");
    }
    const int32_t *mr = s->m->dec.cfg.mrope;
    in->rope_pos = mr[0] || mr[1] || mr[2] ? mllm_graph_input_i32(g, 3 * (int64_t)T, "rope_pos") : NULL;
    in->embd = NULL;
    *logits = mllm_decoder_forward(g, s->dec, s->kv, in, first_out);
    return *logits && mllm_graph_plan(g, logits, 1);
}

/* The inputs of one call: ids and positions n_past, n_past + 1, ...; a
   paged cache first drops the blocks past n_past (a rollback) and gets
   blocks for the new positions. */
static mllm_status set_inputs(mllm_session *s, const mllm_decoder_inputs *in, const int32_t *ids, int T) {
    if (s->kvp) {
        mllm_kv_seq_truncate(s->kvp, &s->kv_seq, s->n_past);
        mllm_status st = mllm_kv_seq_grow(s->kvp, &s->kv_seq, s->n_past + T - s->kv_seq.n_tokens);
        if (st != MLLM_OK) return st;
        int32_t *tab = mllm_tensor_i32(in->table);
        for (int i = 0; i < s->kv_max_blocks; i++) tab[i] = i < s->kv_seq.n_blocks ? s->kv_seq.blocks[i] : -1;
        memset(mllm_tensor_i32(in->seq), 0, (size_t)T * sizeof(int32_t));
    }
    memcpy(mllm_tensor_i32(in->ids), ids, (size_t)T * sizeof(int32_t));
    int32_t *pos = mllm_tensor_i32(in->pos);
    for (int i = 0; i < T; i++) pos[i] = s->n_past + i;
    if (in->rope_pos) /* text: M-RoPE's three rows are equal */
        for (int r = 0; r < 3; r++)
            for (int i = 0; i < T; i++) mllm_tensor_i32(in->rope_pos)[r * T + i] = s->n_past + i + s->rope_delta;
    return MLLM_OK;
}

MLLM_API size_t mllm_session_kv_token_bytes(const mllm_session *s) {
    if (!s) return 0;
    const mllm_hparams *c = &s->m->dec.cfg;
    if (s->kvp) return (size_t)c->n_layer * mllm_kv_paged_token_bytes(s->kvp->p.dtype, c->n_head_kv, c->head_dim);
    return (size_t)c->n_layer * 2 * (size_t)c->n_head_kv * (size_t)c->head_dim * sizeof(float);
}

/* The paged cache of a new session: a pool of ceil(n_ctx / block) blocks
   and an empty sequence. */
static mllm_status paged_init(mllm_session *s, const mllm_session_params *p) {
    const mllm_hparams *c = &s->m->dec.cfg;
    const int bs = p->kv_block_size > 0 ? p->kv_block_size : 16;
    if (bs > MLLM_KV_MAX_BLOCK_SIZE)
        return mllm_err(MLLM_ERR_INVALID_ARG, "kv_block_size %d out of range [1, %d]", bs, MLLM_KV_MAX_BLOCK_SIZE);
    s->kv_max_blocks = (s->n_ctx + bs - 1) / bs;
    mllm_kv_pool_params pp = {.n_layer = c->n_layer, .n_head_kv = c->n_head_kv, .head_dim = c->head_dim,
                              .dtype = p->kv_type - MLLM_KV_PAGED_F32, .block_size = bs, .n_blocks = s->kv_max_blocks,
                              /* f32: the contiguous cache's summation order, so its very bits; f16 / q8:
                                 the online softmax (split decode) */
                              .ordered = p->kv_type == MLLM_KV_PAGED_F32};
    s->kvp = mllm_calloc(1, sizeof *s->kvp);
    if (!s->kvp) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    mllm_status st = mllm_kv_pool_init(s->kvp, &pp);
    if (st != MLLM_OK) {
        mllm_free(s->kvp);
        s->kvp = NULL;
    }
    return st;
}

MLLM_API mllm_status mllm_session_new(mllm_model *m, const mllm_session_params *p, mllm_session **out) {
    return mllm_session_create(m, p, NULL, out);
}

mllm_status mllm_session_create(mllm_model *m, const mllm_session_params *p, mllm_pool *pool, mllm_session **out) {
    if (!m || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_session_new: NULL argument");
    /* The struct before kv_type was added is accepted too (its defaults). */
    if (p && p->struct_size != sizeof *p && p->struct_size != offsetof(mllm_session_params, kv_type))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_session_new: params struct_size %u, expected %zu",
                        p->struct_size, sizeof *p);
    mllm_session_params full;
    mllm_session_default_params(&full);
    if (p) memcpy(&full, p, p->struct_size);
    full.struct_size = sizeof full;
    p = &full;
    if (p->kv_type < MLLM_KV_CONTIGUOUS || p->kv_type > MLLM_KV_PAGED_Q8 || p->kv_block_size < 0)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_session_new: kv_type %d / kv_block_size %d out of range",
                        p->kv_type, p->kv_block_size);
    *out = NULL;
    if (m->asr)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "this is a speech-to-text model (%s): it cannot generate text; "
                                              "use mllm_transcribe", m->row->name);
    if (m->enc)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s is an embedding model (%s encoder): it cannot generate text; "
                                              "use mllm_embed", m->file->path, m->dec.cfg.arch);
    const mllm_hparams *c = &m->dec.cfg;
    int n_ctx = p && p->n_ctx > 0 ? p->n_ctx : 0;
    if (n_ctx == 0) n_ctx = mllm_model_default_ctx(m);
    if (n_ctx < 1 || n_ctx > (1 << 20))
        return mllm_err(MLLM_ERR_INVALID_ARG, "context size %d out of range [1, 1048576]", n_ctx);
    mllm_session *s = mllm_calloc(1, sizeof *s);
    if (!s) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    s->m = m;
    s->dec = &m->dec;
    s->n_out = c->n_vocab;
    s->n_ctx = n_ctx;
    int nt = p && p->n_threads > 0 ? p->n_threads : m->n_threads;
    int kv_dim = c->n_head_kv * c->head_dim;
    size_t per = (size_t)MLLM_KV_CAP(n_ctx) * (size_t)kv_dim;
    s->own_pool = !pool && nt != m->n_threads;
    s->pool = pool ? pool : s->own_pool ? mllm_pool_new(nt) : m->pool;
    const bool paged = p->kv_type != MLLM_KV_CONTIGUOUS;
    if (paged) {
        mllm_status st = paged_init(s, p);
        if (st != MLLM_OK) {
            mllm_session_free(s);
            return st;
        }
    } else {
        s->kv_mem = mllm_malloc_aligned((size_t)c->n_layer * 2 * per * sizeof(float));
        s->kv = mllm_calloc((size_t)c->n_layer, sizeof *s->kv);
    }
    s->logits = mllm_malloc((size_t)c->n_vocab * sizeof(float));
    s->tokens = mllm_malloc((size_t)n_ctx * sizeof(int32_t));
    if (!s->pool || (!paged && (!s->kv_mem || !s->kv)) || !s->logits || !s->tokens) {
        mllm_session_free(s);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory for a %d-token KV cache", n_ctx);
    }
    for (int l = 0; !paged && l < c->n_layer; l++) {
        s->kv[l] = (mllm_kv_layer){s->kv_mem + (size_t)l * 2 * per, s->kv_mem + ((size_t)l * 2 + 1) * per,
                                   n_ctx, kv_dim};
    }
    mllm_graph_init(&s->decode, MLLM_MODE_TRACE, s->pool, 256 * 1024);
    mllm_graph_init(&s->prefill, MLLM_MODE_TRACE, s->pool, 256 * 1024);
    s->decode.exact = s->prefill.exact = m->exact;
    /* The decode step is traced once here and re-run for every token. */
    if (!trace_graph(s, &s->decode, 1, 0, &s->decode_in, &s->decode_logits)) {
        mllm_session_free(s);
        return mllm_err(MLLM_ERR_NOMEM, "could not build the decode graph");
    }
    *out = s;
    return MLLM_OK;
}

MLLM_API void mllm_session_free(mllm_session *s) {
    if (!s) return;
    mllm_graph_free(&s->decode);
    mllm_graph_free(&s->prefill);
    if (s->spec) s->spec_free(s->spec);
    for (int t = 0; s->rows && t < MLLM_SPEC_MAX_DRAFT + 2; t++)
        if (s->rows[t].traced) mllm_graph_free(&s->rows[t].g);
    mllm_free(s->rows);
    if (s->own_pool) mllm_pool_free(s->pool);
    if (s->kv) mllm_backend_kv_release(s->kv, s->m->dec.cfg.n_layer); /* a device's copies of this cache */
    mllm_free_aligned(s->kv_mem);
    mllm_free(s->kv);
    if (s->kvp) {
        mllm_kv_seq_release(s->kvp, &s->kv_seq);
        mllm_kv_pool_free(s->kvp);
        mllm_free(s->kvp);
    }
    mllm_free(s->logits);
    mllm_free(s->tokens);
    mllm_free(s);
}

MLLM_API void mllm_session_reset(mllm_session *s) {
    if (!s) return;
    s->n_past = 0;
    s->rope_delta = 0;
    s->image_end = 0;
    s->n_imgs = 0;
    memset(&s->timings, 0, sizeof s->timings);
    memset(&s->spec_stats, 0, sizeof s->spec_stats);
}

MLLM_API void mllm_session_cancel(mllm_session *s) {
    if (s) atomic_store(&s->cancel, true);
}

MLLM_API const float *mllm_session_logits(const mllm_session *s) { return s ? s->logits : NULL; }
MLLM_API int mllm_session_n_past(const mllm_session *s) { return s ? s->n_past : 0; }

/* Room in the cache and every id in range: checked before any compute. */
static mllm_status check_tokens(const mllm_session *s, const int32_t *ids, size_t n) {
    int n_vocab = s->m->dec.cfg.n_vocab;
    if ((size_t)s->n_past + n > (size_t)s->n_ctx)
        return mllm_err(MLLM_ERR_CONTEXT_FULL, "context full: %d cached + %zu new tokens > n_ctx %d",
                        s->n_past, n, s->n_ctx);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= n_vocab)
            return mllm_err(MLLM_ERR_INVALID_ARG, "token id %d out of range [0, %d)", ids[i], n_vocab);
    return MLLM_OK;
}

mllm_status mllm_session_eval_internal(mllm_session *s, const int32_t *ids, size_t n) {
    if (n == 0) return MLLM_OK;
    mllm_status st = check_tokens(s, ids, n);
    if (st != MLLM_OK) return st;
    size_t done = 0;
    while (done < n) {
        int T = (int)(n - done > MLLM_PREFILL_CHUNK ? MLLM_PREFILL_CHUNK : n - done);
        mllm_graph *g;
        mllm_tensor *logits;
        if (T == 1) {
            if ((st = set_inputs(s, &s->decode_in, ids + done, 1)) != MLLM_OK) return st;
            g = &s->decode;
            logits = s->decode_logits;
        } else {
            if (s->prefill_T != T) {
                s->prefill_T = 0;
                if (!trace_graph(s, &s->prefill, T, T - 1, &s->prefill_in, &s->prefill_logits))
                    return mllm_err(MLLM_ERR_NOMEM, "could not build the prefill graph for %d tokens", T);
                s->prefill_T = T;
            }
            if ((st = set_inputs(s, &s->prefill_in, ids + done, T)) != MLLM_OK) return st;
            g = &s->prefill;
            logits = s->prefill_logits;
        }
        mllm_graph_execute(g);
        if (g->failed) return mllm_err(MLLM_ERR_NOMEM, "out of memory while computing");
        st = mllm_model_file_check_intact(s->m->file); /* weights read past a shrunk file's end */
        if (st != MLLM_OK) return st;
        memcpy(s->tokens + s->n_past, ids + done, (size_t)T * sizeof(int32_t));
        s->n_past += T;
        done += (size_t)T;
        memcpy(s->logits, logits->data, (size_t)s->n_out * sizeof(float));
    }
    return MLLM_OK;
}

mllm_status mllm_session_cut_vocab(mllm_session *s, int n_out) {
    const mllm_tensor *w = s->m->dec.output;
    const int nv = s->m->dec.cfg.n_vocab;
    n_out = (n_out + 7) / 8 * 8;
    if (n_out >= nv || n_out < 8) return MLLM_OK;
    /* Placed on another backend, or already evaluated: left whole. */
    const bool host = !w->buffer || (w->buffer->type && w->buffer->type->is_host(w->buffer->type));
    if (s->n_past || s->n_out != nv || w->mirror || !host || w->ne[1] != nv || w->ne[2] != 1 || w->ne[3] != 1)
        return MLLM_OK;
    s->dec_cut = s->m->dec;
    s->out_cut = *w;
    s->out_cut.ne[1] = n_out;
    s->out_cut.nb[2] = s->out_cut.nb[3] = s->out_cut.nb[1] * (size_t)n_out;
    s->dec_cut.output = &s->out_cut; /* tok_embd stays the whole table, also when tied */
    s->dec = &s->dec_cut;
    s->n_out = n_out;
    s->prefill_T = 0;
    for (int i = n_out; i < nv; i++) s->logits[i] = -INFINITY;
    if (!trace_graph(s, &s->decode, 1, 0, &s->decode_in, &s->decode_logits))
        return mllm_err(MLLM_ERR_NOMEM, "could not build the decode graph");
    return MLLM_OK;
}

mllm_status mllm_session_eval_logits(mllm_session *s, const int32_t *ids, int n, int first_out, float *out) {
    if (!s || !ids || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_session_eval_logits: NULL argument");
    const mllm_hparams *c = &s->m->dec.cfg;
    if (s->n_out != c->n_vocab) return mllm_err(MLLM_ERR_INVALID_ARG, "eval_logits: a draft session's logits are cut");
    if (n < 1 || n > MLLM_PREFILL_CHUNK || first_out < 0 || first_out >= n)
        return mllm_err(MLLM_ERR_INVALID_ARG, "eval_logits: %d tokens (max %d), first_out %d", n,
                        MLLM_PREFILL_CHUNK, first_out);
    mllm_status st = check_tokens(s, ids, (size_t)n);
    if (st != MLLM_OK) return st;
    /* A graph of its own: traced for this shape, run once, freed. */
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_TRACE, s->pool, 256 * 1024);
    g.exact = s->m->exact;
    mllm_tensor *logits = NULL;
    mllm_decoder_inputs in;
    if (!trace_graph(s, &g, n, first_out, &in, &logits)) st = mllm_err(MLLM_ERR_NOMEM, "could not build the graph");
    if (st == MLLM_OK) st = set_inputs(s, &in, ids, n);
    if (st == MLLM_OK) {
        mllm_graph_execute(&g);
        if (g.failed) st = mllm_err(MLLM_ERR_NOMEM, "out of memory while computing");
        if (st == MLLM_OK) st = mllm_model_file_check_intact(s->m->file);
    }
    if (st == MLLM_OK) {
        memcpy(s->tokens + s->n_past, ids, (size_t)n * sizeof(int32_t));
        s->n_past += n;
        memcpy(out, logits->data, (size_t)(n - first_out) * (size_t)c->n_vocab * sizeof(float));
        memcpy(s->logits, out + (size_t)(n - first_out - 1) * (size_t)c->n_vocab, (size_t)c->n_vocab * sizeof(float));
    }
    mllm_graph_free(&g);
    return st;
}

mllm_status mllm_session_eval_rows(mllm_session *s, const int32_t *ids, int n, const float **rows) {
    const mllm_hparams *c = &s->m->dec.cfg;
    if (s->n_out != c->n_vocab) return mllm_err(MLLM_ERR_INVALID_ARG, "eval_rows: a draft session's logits are cut");
    if (n < 1 || n > MLLM_SPEC_MAX_DRAFT + 1)
        return mllm_err(MLLM_ERR_INVALID_ARG, "eval_rows: %d tokens (max %d)", n, MLLM_SPEC_MAX_DRAFT + 1);
    mllm_status st = check_tokens(s, ids, (size_t)n);
    if (st != MLLM_OK) return st;
    if (!s->rows && !(s->rows = mllm_calloc(MLLM_SPEC_MAX_DRAFT + 2, sizeof *s->rows)))
        return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    mllm_rows_graph *r = &s->rows[n];
    if (!r->traced) {
        mllm_graph_init(&r->g, MLLM_MODE_TRACE, s->pool, 256 * 1024);
        r->g.exact = s->m->exact;
        r->traced = true;
        if (!trace_graph(s, &r->g, n, 0, &r->in, &r->logits)) {
            mllm_graph_free(&r->g);
            r->traced = false;
            return mllm_err(MLLM_ERR_NOMEM, "could not build the graph for %d tokens", n);
        }
    }
    if ((st = set_inputs(s, &r->in, ids, n)) != MLLM_OK) return st;
    mllm_graph_execute(&r->g);
    if (r->g.failed) return mllm_err(MLLM_ERR_NOMEM, "out of memory while computing");
    if ((st = mllm_model_file_check_intact(s->m->file)) != MLLM_OK) return st;
    memcpy(s->tokens + s->n_past, ids, (size_t)n * sizeof(int32_t));
    s->n_past += n;
    *rows = r->logits->data;
    memcpy(s->logits, *rows + (size_t)(n - 1) * (size_t)c->n_vocab, (size_t)c->n_vocab * sizeof(float));
    return MLLM_OK;
}

MLLM_API mllm_status mllm_session_shift(mllm_session *s, size_t n_keep, int32_t pending) {
    if (!s) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_session_shift: NULL session");
    if (pending < -1 || pending >= s->m->dec.cfg.n_vocab)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_session_shift: token id %d out of range", pending);
    size_t n = (size_t)s->n_past;
    size_t keep = n_keep > n / 2 ? n / 2 : n_keep;
    size_t drop = (n - keep) / 2 ? (n - keep) / 2 : (n > keep ? 1 : 0);
    size_t m = n - drop + (pending >= 0);
    int32_t *ids = mllm_malloc((m ? m : 1) * sizeof *ids);
    if (!ids) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    memcpy(ids, s->tokens, keep * sizeof *ids);
    memcpy(ids + keep, s->tokens + keep + drop, (n - keep - drop) * sizeof *ids);
    if (pending >= 0) ids[m - 1] = pending;
    /* Everything after the cut moved to new positions: sync recomputes it. */
    mllm_status st = m ? mllm_session_sync(s, ids, m, NULL) : MLLM_OK;
    mllm_free(ids);
    return st;
}

MLLM_API mllm_status mllm_session_eval(mllm_session *s, const int32_t *ids, size_t n) {
    if (!s || (!ids && n)) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_session_eval: NULL argument");
    return mllm_session_eval_internal(s, ids, n);
}

MLLM_API mllm_status mllm_session_sync(mllm_session *s, const int32_t *ids, size_t n, size_t *n_reused) {
    if (!s || (!ids && n)) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_session_sync: NULL argument");
    if (n > (size_t)s->n_ctx)
        return mllm_err(MLLM_ERR_CONTEXT_FULL, "context full: %zu tokens > n_ctx %d", n, s->n_ctx);
    size_t k = 0;
    while (k < n && k < (size_t)s->n_past && s->tokens[k] == ids[k]) k++;
    /* The last token is always evaluated again so the logits belong to it. */
    if (k == n && n > 0) k = n - 1;
    if (s->n_imgs && k < (size_t)s->image_end) {
        /* Images wholly inside the kept prefix stay; the cut goes to the
           start of the first one it would split. What follows must be text:
           an image cannot be recomputed from its token ids. */
        int keep = 0;
        while (keep < s->n_imgs && (size_t)s->imgs[keep].end <= k) keep++;
        if ((size_t)s->imgs[keep].start < k) k = (size_t)s->imgs[keep].start;
        const int32_t pad = mllm_model_image_pad_token(s->m);
        for (size_t i = k; i < n; i++)
            if (ids[i] == pad)
                return mllm_err(MLLM_ERR_UNSUPPORTED, "tokens from %zu on hold image tokens, and an image cannot "
                                                      "be recomputed from token ids (reset the session, or give "
                                                      "the image again: mllm_chat_prefill)", k);
        s->n_imgs = keep;
        s->rope_delta = keep ? s->imgs[keep - 1].delta_after : 0;
        s->image_end = keep ? s->imgs[keep - 1].end : 0;
    }
    s->n_past = (int)k; /* cache rows past k are simply overwritten */
    if (n_reused) *n_reused = k;
    double t0 = mllm_clock_mono_ms();
    mllm_status st = mllm_session_eval_internal(s, ids + k, n - k);
    s->timings.n_prompt += (int)(n - k);
    s->timings.prompt_ms += mllm_clock_mono_ms() - t0;
    return st;
}

MLLM_API const int32_t *mllm_session_tokens(const mllm_session *s, size_t *n) {
    if (n) *n = s ? (size_t)s->n_past : 0;
    return s ? s->tokens : NULL;
}

MLLM_API int mllm_session_n_ctx(const mllm_session *s) { return s ? s->n_ctx : 0; }

MLLM_API void mllm_session_timings(const mllm_session *s, mllm_timings *out) {
    if (!s || !out || out->struct_size < sizeof(uint32_t)) return;
    mllm_timings t = s->timings;
    t.load_ms = s->m->load_ms;
    size_t n = out->struct_size < sizeof t ? out->struct_size : sizeof t;
    t.struct_size = out->struct_size;
    memcpy(out, &t, n);
}
