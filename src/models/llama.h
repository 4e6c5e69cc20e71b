/* The Llama-family decoder (Llama 2/3, TinyLlama, SmolLM/SmolLM2, Qwen2,
   Qwen3): binds a model file's weights and builds the forward graph. */
#ifndef MLLM_MODELS_LLAMA_H
#define MLLM_MODELS_LLAMA_H
#include <mllm/mllm.h>
#include "formats/model_file.h"
#include "graph/graph.h"
#include "models/llama_config.h"

typedef struct {
    mllm_tensor *attn_norm, *wq, *wk, *wv, *wo;
    mllm_tensor *bq, *bk, *bv;        /* Qwen2 qkv bias, else NULL */
    mllm_tensor *q_norm, *k_norm;     /* Qwen3 per-head RMSNorm, else NULL */
    mllm_tensor *ffn_norm, *w_gate, *w_up, *w_down;
} mllm_llama_layer;

typedef struct {
    mllm_llama_config cfg;
    mllm_graph wg;                 /* owns the weight tensor structs (not the data) */
    mllm_tensor *tok_embd, *output_norm, *output; /* output = tok_embd when tied */
    mllm_llama_layer *layers;      /* (n_layer) */
    mllm_rope_params rope;
    float *freq_factors;           /* (n_rot/2) llama3 scaling, or NULL */
    size_t n_params;
    void *packed;                  /* load-time x8 copies of matmul weights, or NULL */
    size_t packed_size;
} mllm_llama;

/* Checks every tensor's presence, shape and dtype; errors name the tensor. */
mllm_status mllm_llama_bind(mllm_llama *m, const mllm_model_file *f);
void mllm_llama_release(mllm_llama *m);
/* Repacks the q4_0 / q4_1 / q8_0 / q4_K / q5_K / q6_K matmul weights into the x8 layouts
   (llama_pack.c); called by mllm_llama_bind. By default only where the CPU
   path has packed kernels (AVX2); MLLM_REPACK=0 never, MLLM_REPACK=1 always. */
mllm_status mllm_llama_pack(mllm_llama *m, const mllm_model_file *f);

/* Builds (eager: runs) the forward pass of n_tokens tokens bound in g->rt,
   writing K/V into kv[layer]; returns the logits of tokens [first_out,
   n_tokens) as (n_vocab x (n_tokens - first_out)), or NULL when the graph
   could not be built. Generation asks for the last token only. */
mllm_tensor *mllm_llama_forward(mllm_graph *g, const mllm_llama *m, const mllm_kv_layer *kv,
                                int n_tokens, int first_out);

#endif
