/* mllm_embed: one vector per text. Encoders (the row's encoder hooks) run their graph to the
   last hidden states; decoders run theirs to the final norm (no logits);
   the hidden states are then pooled (mean, first or last token) and
   L2-normalised as the model's sentence-transformers config says. */
#include <math.h>
#include <string.h>
#include "api/internal.h"
#include "models/encoder.h"
#include "core/alloc.h"
#include "core/error.h"

MLLM_API void mllm_embed_default_params(mllm_embed_params *p) {
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->pooling = MLLM_POOLING_DEFAULT;
    p->normalize = -1;
}

MLLM_API int32_t mllm_model_n_embd(const mllm_model *m) { return m ? m->dec.cfg.n_embd : 0; }
MLLM_API int mllm_model_can_generate(const mllm_model *m) { return m && !m->enc && !m->asr; }

static mllm_status get_params(const mllm_embed_params *p, mllm_embed_params *out) {
    mllm_embed_default_params(out);
    if (!p) return MLLM_OK;
    if (p->struct_size != sizeof *p)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_embed: params struct_size %u, expected %zu", p->struct_size,
                        sizeof *p);
    *out = *p;
    if (out->pooling < MLLM_POOLING_DEFAULT || out->pooling > MLLM_POOLING_LAST)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_embed: unknown pooling %d", out->pooling);
    if (out->max_tokens < 0) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_embed: max_tokens %d < 0", out->max_tokens);
    return MLLM_OK;
}

/* The most tokens one text may have. */
static int token_limit(const mllm_model *m, const mllm_embed_params *p) {
    int lim = m->dec.cfg.n_ctx_train;
    if (!m->enc && lim > MLLM_EMBED_MAX_TOKENS) lim = MLLM_EMBED_MAX_TOKENS;
    if (m->enc && m->st.max_seq_length > 0 && m->st.max_seq_length < lim) lim = m->st.max_seq_length;
    if (p->max_tokens > 0 && p->max_tokens < m->dec.cfg.n_ctx_train) lim = p->max_tokens;
    else if (p->max_tokens > 0) lim = m->dec.cfg.n_ctx_train;
    return lim;
}

static mllm_pooling pooling_of(const mllm_model *m, const mllm_embed_params *p) {
    if (p->pooling != MLLM_POOLING_DEFAULT) return (mllm_pooling)p->pooling;
    if (m->enc && m->st.pooling == MLLM_ST_POOL_CLS) return MLLM_POOLING_CLS;
    if (m->enc && m->st.pooling == MLLM_ST_POOL_LAST) return MLLM_POOLING_LAST;
    return MLLM_POOLING_MEAN;
}

/* Normalised unless a sentence-transformers config lists no Normalize module. */
static bool normalize_of(const mllm_model *m, const mllm_embed_params *p) {
    if (p->normalize >= 0) return p->normalize != 0;
    return !m->st.found || m->st.normalize;
}

MLLM_API mllm_status mllm_embed_tokenize(const mllm_model *m, const char *text, size_t len,
                                         const mllm_embed_params *p, int32_t *ids, size_t cap, size_t *n_ids) {
    if (n_ids) *n_ids = 0;
    if (!m || !n_ids || (!text && len) || (!ids && cap))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_embed_tokenize: bad arguments");
    if (m->asr) return mllm_err(MLLM_ERR_UNSUPPORTED, "mllm_embed_tokenize: a speech-to-text model (%s) does not embed", m->row->name);
    mllm_embed_params ep;
    mllm_status st = get_params(p, &ep);
    if (st) return st;
    size_t n = 0;
    st = mllm_tokenizer_encode(m->tok, text ? text : "", len, true, true, NULL, 0, &n);
    if (st && st != MLLM_ERR_BUFFER_TOO_SMALL) return st;
    int32_t *all = mllm_malloc((n ? n : 1) * sizeof *all);
    if (!all) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    st = mllm_tokenizer_encode(m->tok, text ? text : "", len, true, true, all, n, &n);
    const size_t lim = (size_t)token_limit(m, &ep);
    if (!st && n > lim) {
        /* As transformers truncates: the text's tokens are cut, the special
           token the tokenizer puts at the end ([SEP]) stays. */
        int32_t eos = mllm_tokenizer_eos(m->tok);
        if (eos >= 0 && all[n - 1] == eos) all[lim - 1] = eos;
        n = lim;
    }
    if (!st) {
        *n_ids = n;
        if (cap < n) st = mllm_err(MLLM_ERR_BUFFER_TOO_SMALL, "mllm_embed_tokenize: %zu ids need room, %zu given", n, cap);
        else if (n) memcpy(ids, all, n * sizeof *ids);
    }
    mllm_free(all);
    return st;
}

/* out = pooled (and normalised) columns of h (E x T). */
static void pool(const float *h, int64_t E, int64_t T, mllm_pooling how, bool norm, float *out) {
    if (how == MLLM_POOLING_MEAN) {
        for (int64_t e = 0; e < E; e++) {
            double s = 0;
            for (int64_t t = 0; t < T; t++) s += h[t * E + e];
            out[e] = (float)(s / (double)T);
        }
    } else {
        memcpy(out, h + (how == MLLM_POOLING_LAST ? T - 1 : 0) * E, (size_t)E * sizeof *out);
    }
    if (!norm) return;
    double ss = 0;
    for (int64_t e = 0; e < E; e++) ss += (double)out[e] * out[e];
    /* sentence-transformers' F.normalize: x / max(|x|, 1e-12) */
    const double n = sqrt(ss) > 1e-12 ? sqrt(ss) : 1e-12;
    for (int64_t e = 0; e < E; e++) out[e] = (float)(out[e] / n);
}

/* Runs the model over ids and pools into out (n_embd floats). */
static mllm_status forward(mllm_model *m, const int32_t *ids, int T, mllm_pooling how, bool norm, float *out) {
    const mllm_hparams *c = &m->dec.cfg;
    const int n_kv = m->enc ? 1 : c->n_layer; /* the encoder's layers share one (graph order) */
    const int kv_dim = m->enc ? c->n_embd : c->n_head_kv * c->head_dim;
    const size_t per = (size_t)MLLM_KV_CAP(T) * (size_t)kv_dim;
    mllm_kv_layer *kv = mllm_calloc((size_t)n_kv, sizeof *kv);
    float *kv_mem = mllm_calloc((size_t)n_kv * 2 * per, sizeof(float)); /* (n_kv, 2, cap, kv_dim) */
    mllm_pool *tp = m->pool;
    mllm_status st = kv && kv_mem && tp ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "mllm_embed: out of memory");
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_TRACE, tp, 1 << 16);
    g.exact = m->exact;
    for (int l = 0; l < n_kv && !st; l++)
        kv[l] = (mllm_kv_layer){kv_mem + (size_t)l * 2 * per, kv_mem + ((size_t)l * 2 + 1) * per, T, kv_dim};
    mllm_tensor *h = NULL;
    if (!st) {
        mllm_tensor *tid = mllm_graph_input_i32(&g, T, "ids"), *pos = mllm_graph_input_i32(&g, T, "pos");
        mllm_tensor *types = m->enc && m->row->encoder->token_types ? mllm_graph_input_i32(&g, T, "token_types")
                                                                    : NULL; /* all type 0: one text */
        if (tid && pos) {
            memcpy(mllm_tensor_i32(tid), ids, (size_t)T * sizeof *ids);
            for (int t = 0; t < T; t++) mllm_tensor_i32(pos)[t] = t;
        }
        if (m->enc) {
            h = m->row->encoder->forward(&g, m->enc, kv, tid, pos, types);
        } else {
            mllm_decoder_inputs in = {.ids = tid, .pos = pos};
            h = mllm_decoder_hidden(&g, &m->dec, kv, &in);
        }
        if (!h || !mllm_graph_plan(&g, &h, 1)) st = mllm_err(MLLM_ERR_NOMEM, "mllm_embed: out of memory building the graph");
    }
    if (!st) {
        mllm_graph_execute(&g);
        if (g.failed) st = mllm_err(MLLM_ERR_NOMEM, "mllm_embed: out of memory running the graph");
    }
    if (!st) pool(h->data, c->n_embd, T, how, norm, out);
    mllm_graph_free(&g);
    if (kv) mllm_backend_kv_release(kv, n_kv); /* a device's copies of this cache (a decoder on a backend) */
    mllm_free(kv_mem);
    mllm_free(kv);
    return st;
}

MLLM_API mllm_status mllm_embed_ids(mllm_model *m, const int32_t *ids, size_t n, const mllm_embed_params *p,
                                    float *out, size_t cap, size_t *n_out) {
    if (n_out) *n_out = 0;
    if (!m || !n_out || (!ids && n) || (!out && cap))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_embed_ids: bad arguments");
    if (m->asr) return mllm_err(MLLM_ERR_UNSUPPORTED, "mllm_embed_ids: a speech-to-text model (%s) does not embed", m->row->name);
    mllm_embed_params ep;
    mllm_status st = get_params(p, &ep);
    if (st) return st;
    const int lim = token_limit(m, &ep);
    if (n == 0) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_embed_ids: no tokens");
    if (n > (size_t)lim)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_embed_ids: %zu tokens, more than the model's limit of %d", n, lim);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->dec.cfg.n_vocab)
            return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_embed_ids: token id %d out of range [0, %d)", ids[i],
                            m->dec.cfg.n_vocab);
    const size_t E = (size_t)m->dec.cfg.n_embd;
    *n_out = E;
    if (cap < E) return mllm_err(MLLM_ERR_BUFFER_TOO_SMALL, "mllm_embed: %zu floats need room, %zu given", E, cap);
    return forward(m, ids, (int)n, pooling_of(m, &ep), normalize_of(m, &ep), out);
}

MLLM_API mllm_status mllm_embed(mllm_model *m, const char *text, size_t len, const mllm_embed_params *p,
                                float *out, size_t cap, size_t *n_out) {
    if (n_out) *n_out = 0;
    if (!m || !n_out || (!text && len) || (!out && cap))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_embed: bad arguments");
    size_t n = 0;
    mllm_status st = mllm_embed_tokenize(m, text, len, p, NULL, 0, &n);
    if (st && st != MLLM_ERR_BUFFER_TOO_SMALL) return st;
    int32_t *ids = mllm_malloc((n ? n : 1) * sizeof *ids);
    if (!ids) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    st = mllm_embed_tokenize(m, text, len, p, ids, n, &n);
    if (!st) st = mllm_embed_ids(m, ids, n, p, out, cap, n_out);
    mllm_free(ids);
    return st;
}
