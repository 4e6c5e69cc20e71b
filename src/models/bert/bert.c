/* The BERT family: its registry row (names as Hugging Face's BertModel and
   llama.cpp's GGUF converter give them), weight binding and graph. */
#include "models/bert/bert.h"
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "models/decoder/decoder.h"
#include "models/encoder.h"
#include "models/registry.h"

static const mllm_name_pair k_bert_keys[] = {
    {"layer_norm_eps", "attention.layer_norm_epsilon"},
    {"type_vocab_size", "token_type_count"},
    {"hidden_act", "hidden_act"},
    {"position_embedding_type", "position_embedding_type"},
    {NULL, NULL},
};

/* BertConfig's defaults. */
static const mllm_hf_default k_bert_defaults[] = {
    {"attention.layer_norm_epsilon", 1e-12, false},
    {"token_type_count", 2, true},
    {NULL, 0, false},
};

static const mllm_name_pair k_bert_names[] = {
    {"embeddings.word_embeddings.weight", "token_embd.weight"},
    {"embeddings.position_embeddings.weight", "position_embd.weight"},
    {"embeddings.token_type_embeddings.weight", "token_types.weight"},
    {"embeddings.LayerNorm.weight", "token_embd_norm.weight"},
    {"embeddings.LayerNorm.bias", "token_embd_norm.bias"},
    {NULL, NULL},
};

static const mllm_name_pair k_bert_layer_names[] = {
    {"attention.self.query.weight", "attn_q.weight"},
    {"attention.self.query.bias", "attn_q.bias"},
    {"attention.self.key.weight", "attn_k.weight"},
    {"attention.self.key.bias", "attn_k.bias"},
    {"attention.self.value.weight", "attn_v.weight"},
    {"attention.self.value.bias", "attn_v.bias"},
    {"attention.output.dense.weight", "attn_output.weight"},
    {"attention.output.dense.bias", "attn_output.bias"},
    {"attention.output.LayerNorm.weight", "attn_output_norm.weight"},
    {"attention.output.LayerNorm.bias", "attn_output_norm.bias"},
    {"intermediate.dense.weight", "ffn_up.weight"},
    {"intermediate.dense.bias", "ffn_up.bias"},
    {"output.dense.weight", "ffn_down.weight"},
    {"output.dense.bias", "ffn_down.bias"},
    {"output.LayerNorm.weight", "layer_output_norm.weight"},
    {"output.LayerNorm.bias", "layer_output_norm.bias"},
    {NULL, NULL},
};

static mllm_status bert_read(const mllm_meta *m, const char *path, mllm_hparams *hp) {
    mllm_status st;
    hp->rms_eps = 1e-12f;
    if ((st = mllm_hp_float(m, "bert", "attention.layer_norm_epsilon", path, &hp->rms_eps))) return st;
    hp->n_token_types = 2;
    if ((st = mllm_hp_int(m, "bert", "token_type_count", path, false, &hp->n_token_types))) return st;
    const char *act = mllm_meta_get_str(m, "bert.hidden_act");
    if (act && strcmp(act, "gelu") != 0)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: hidden_act '%.32s' is not supported (gelu)", path, act);
    hp->act = MLLM_ACT_GELU_ERF;
    const char *pe = mllm_meta_get_str(m, "bert.position_embedding_type");
    if (pe && strcmp(pe, "absolute") != 0)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: position_embedding_type '%.32s' is not supported (absolute)",
                        path, pe);
    for (int l = 0; l < hp->n_layer && l < MLLM_MAX_LAYERS; l++) hp->layer_flags[l] |= MLLM_LAYER_NO_ROPE;
    return MLLM_OK;
}

/* Binding checks every shape and dtype; resolving a file does the same
   without keeping the result. */
static mllm_status bert_check(const mllm_model_file *f, mllm_hparams *hp) {
    mllm_bert tmp;
    mllm_status st = mllm_bert_bind(&tmp, f, hp);
    mllm_bert_release(&tmp);
    return st;
}

/* The encoder contract (models/encoder.h) over mllm_bert. */
static mllm_status enc_bind(const mllm_model_file *f, const mllm_hparams *hp, void **out) {
    *out = NULL;
    mllm_bert *m = mllm_calloc(1, sizeof *m);
    if (!m) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    mllm_status st = mllm_bert_bind(m, f, hp);
    if (st) {
        mllm_bert_release(m);
        mllm_free(m);
        return st;
    }
    *out = m;
    return MLLM_OK;
}

static void enc_release(void *m) {
    mllm_bert_release(m);
    mllm_free(m);
}

static mllm_tensor *enc_forward(mllm_graph *g, const void *m, const mllm_kv_layer *kv, mllm_tensor *ids,
                                mllm_tensor *pos, mllm_tensor *types) {
    return mllm_bert_forward(g, m, kv, ids, pos, types);
}

static size_t enc_n_params(const void *m) { return ((const mllm_bert *)m)->n_params; }

static const mllm_encoder_family k_bert_encoder = {
    .bind = enc_bind, .release = enc_release, .forward = enc_forward, .n_params = enc_n_params, .token_types = true};

const mllm_arch mllm_arch_bert = {
    .name = "bert",
    .kind = MLLM_KIND_ENCODER,
    .about = "BERT / MiniLM encoders for embeddings (sentence-transformers folders)",
    .hf_types = "bert",
    .hf_classes = "BertModel",
    .family = "bert",
    .rope_neox = false,
    .hf_keys = k_bert_keys,
    .hf_defaults = k_bert_defaults,
    .hf_layer_names = k_bert_layer_names,
    .read = bert_read,
    .encoder = &k_bert_encoder,
    .hf_layer_prefix = "encoder.layer.",
    .hf_names = k_bert_names,
    .hf_strip_prefix = "bert.",
    .check_tensors = bert_check,
};

mllm_status mllm_bert_bind(mllm_bert *m, const mllm_model_file *f, const mllm_hparams *hp) {
    memset(m, 0, sizeof *m);
    m->cfg = *hp;
    const mllm_hparams *c = &m->cfg;
    mllm_graph_init(&m->wg, MLLM_MODE_TRACE, NULL, 16 * 1024);
    if (c->n_head_kv != c->n_head || c->head_dim * c->n_head != c->n_embd)
        return mllm_err(MLLM_ERR_FORMAT, "%s: BERT needs n_head * head_dim = n_embd and no grouped KV heads", f->path);
    const int64_t E = c->n_embd, F = c->n_ff;
    mllm_status st;
#define BIND(name, nd, a, b, dst) \
    if ((st = mllm_model_bind_tensor(&m->wg, &m->n_params, f, name, nd, a, b, true, dst)) != MLLM_OK) return st
    BIND("token_embd.weight", 2, E, c->n_vocab, &m->tok_embd);
    BIND("position_embd.weight", 2, E, c->n_ctx_train, &m->pos_embd);
    BIND("token_types.weight", 2, E, c->n_token_types, &m->type_embd);
    BIND("token_embd_norm.weight", 1, E, 1, &m->embd_norm_w);
    BIND("token_embd_norm.bias", 1, E, 1, &m->embd_norm_b);
    m->layers = mllm_calloc((size_t)c->n_layer, sizeof *m->layers);
    if (!m->layers) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    char nm[96];
    for (int l = 0; l < c->n_layer; l++) {
        mllm_bert_layer *L = &m->layers[l];
#define LNAME(s) (snprintf(nm, sizeof nm, "blk.%d." s, l), nm)
        BIND(LNAME("attn_q.weight"), 2, E, E, &L->wq);
        BIND(LNAME("attn_q.bias"), 1, E, 1, &L->bq);
        BIND(LNAME("attn_k.weight"), 2, E, E, &L->wk);
        BIND(LNAME("attn_k.bias"), 1, E, 1, &L->bk);
        BIND(LNAME("attn_v.weight"), 2, E, E, &L->wv);
        BIND(LNAME("attn_v.bias"), 1, E, 1, &L->bv);
        BIND(LNAME("attn_output.weight"), 2, E, E, &L->wo);
        BIND(LNAME("attn_output.bias"), 1, E, 1, &L->bo);
        BIND(LNAME("attn_output_norm.weight"), 1, E, 1, &L->attn_norm_w);
        BIND(LNAME("attn_output_norm.bias"), 1, E, 1, &L->attn_norm_b);
        BIND(LNAME("ffn_up.weight"), 2, E, F, &L->w_up);
        BIND(LNAME("ffn_up.bias"), 1, F, 1, &L->b_up);
        BIND(LNAME("ffn_down.weight"), 2, F, E, &L->w_down);
        BIND(LNAME("ffn_down.bias"), 1, E, 1, &L->b_down);
        BIND(LNAME("layer_output_norm.weight"), 1, E, 1, &L->out_norm_w);
        BIND(LNAME("layer_output_norm.bias"), 1, E, 1, &L->out_norm_b);
#undef LNAME
    }
#undef BIND
    return MLLM_OK;
}

void mllm_bert_release(mllm_bert *m) {
    if (!m) return;
    mllm_graph_free(&m->wg);
    mllm_free(m->layers);
    memset(m, 0, sizeof *m);
}

mllm_tensor *mllm_bert_forward(mllm_graph *g, const mllm_bert *m, const mllm_kv_layer *kv, mllm_tensor *ids,
                               mllm_tensor *pos, mllm_tensor *types) {
    const mllm_hparams *c = &m->cfg;
    if (!ids || !pos || !types) return NULL;
    const int64_t T = ids->ne[0], D = c->head_dim, H = c->n_head;
    const float eps = c->rms_eps;
    mllm_tensor *x = mllm_op_add(g, mllm_op_get_rows(g, m->tok_embd, ids), mllm_op_get_rows(g, m->pos_embd, pos));
    x = mllm_op_add(g, x, mllm_op_get_rows(g, m->type_embd, types));
    x = mllm_op_layernorm(g, x, m->embd_norm_w, m->embd_norm_b, eps);
    for (int l = 0; l < c->n_layer && x; l++) {
        const mllm_bert_layer *L = &m->layers[l];
        int64_t qs[3] = {D, H, T};
        mllm_tensor *q = mllm_op_reshape(g, mllm_op_matmul(g, L->wq, x, L->bq), 3, qs);
        mllm_tensor *k = mllm_op_matmul(g, L->wk, x, L->bk);
        mllm_tensor *v = mllm_op_matmul(g, L->wv, x, L->bv);
        mllm_tensor *st = mllm_op_kv_store(g, k, v, pos, kv);
        mllm_tensor *a = mllm_op_attention_noncausal(mllm_op_attention(g, q, st, pos, kv, (int)H, c->attn_scale, 0));
        mllm_tensor *o = mllm_op_matmul(g, L->wo, a, L->bo);
        x = mllm_op_layernorm(g, mllm_op_add(g, x, o), L->attn_norm_w, L->attn_norm_b, eps);
        mllm_tensor *h = mllm_op_gelu(g, mllm_op_matmul(g, L->w_up, x, L->b_up));
        h = mllm_op_matmul(g, L->w_down, h, L->b_down);
        x = mllm_op_layernorm(g, mllm_op_add(g, x, h), L->out_norm_w, L->out_norm_b, eps);
    }
    return g->failed ? NULL : x;
}
