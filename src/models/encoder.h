/* The contract of an encoder row (MLLM_KIND_ENCODER: BERT and its kin):
   weights bound from a resolved file, and a graph that ends at the hidden
   states of every token. Pooling them into one vector is the caller's
   (api/embed.c). */
#ifndef MLLM_MODELS_ENCODER_H
#define MLLM_MODELS_ENCODER_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include "formats/model_file.h"
#include "graph/graph.h"
#include "models/hparams.h"

typedef struct mllm_encoder_family {
    /* Binds the weights of f (resolved by mllm_family_resolve) into a new
       model (*out); errors name the tensor. */
    mllm_status (*bind)(const mllm_model_file *f, const mllm_hparams *hp, void **out);
    void (*release)(void *enc);
    /* The hidden states (n_embd x T) of the T tokens ids (I32) at positions
       pos (0..T-1) of token type types (I32; NULL when token_types is
       false). kv: one layer with n_ctx >= T and kv_dim = n_embd, reused by
       every layer. Trace mode. NULL when the graph could not be built. */
    mllm_tensor *(*forward)(mllm_graph *g, const void *enc, const mllm_kv_layer *kv, mllm_tensor *ids,
                            mllm_tensor *pos, mllm_tensor *types);
    size_t (*n_params)(const void *enc); /* weights, for the model's description */
    bool token_types;                    /* forward takes a token-type input */
} mllm_encoder_family;

#endif
