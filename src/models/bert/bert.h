/* BERT-style encoders (BERT, MiniLM, sentence-transformers' all-MiniLM-L6-v2):
   word + position + token-type embeddings, an embedding LayerNorm, then
   post-LN layers (non-causal attention with biases, add, LayerNorm; GELU
   FFN with biases, add, LayerNorm). The graph ends at the hidden states of
   every token; pooling them into one vector is the caller's (api/embed.c). */
#ifndef MLLM_MODELS_BERT_H
#define MLLM_MODELS_BERT_H
#include <mllm/mllm.h>
#include "formats/model_file.h"
#include "graph/graph.h"
#include "models/hparams.h"

typedef struct {
    mllm_tensor *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo;
    mllm_tensor *attn_norm_w, *attn_norm_b;   /* after attention + residual */
    mllm_tensor *w_up, *b_up, *w_down, *b_down;
    mllm_tensor *out_norm_w, *out_norm_b;     /* after the FFN + residual */
} mllm_bert_layer;

typedef struct {
    mllm_hparams cfg;
    mllm_graph wg;                  /* owns the weight tensor structs (not the data) */
    mllm_tensor *tok_embd, *pos_embd, *type_embd, *embd_norm_w, *embd_norm_b;
    mllm_bert_layer *layers;        /* (n_layer) */
    size_t n_params;
} mllm_bert;

/* Binds the weights of a file resolved by mllm_family_resolve; checks each
   tensor's shape and dtype (errors name it). */
mllm_status mllm_bert_bind(mllm_bert *m, const mllm_model_file *f, const mllm_hparams *hp);
void mllm_bert_release(mllm_bert *m);

/* The hidden states (n_embd x T) of the T tokens `ids` (I32) at positions
   `pos` (0..T-1, T <= n_ctx_train) of token type `types` (I32, each below
   n_token_types). kv: one layer with n_ctx >= T and kv_dim = n_embd, which
   every layer reuses (each stores its K/V before reading them). Trace mode
   (the attention is made non-causal on the recorded node). NULL when the
   graph could not be built. */
mllm_tensor *mllm_bert_forward(mllm_graph *g, const mllm_bert *m, const mllm_kv_layer *kv, mllm_tensor *ids,
                               mllm_tensor *pos, mllm_tensor *types);

#endif
