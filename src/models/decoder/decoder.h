/* The decoder-only transformer every registered family runs (llama.c,
   gemma3.c): binds a model file's weights and builds the forward graph from
   the shared blocks (blocks.h), switched by the hyper-parameters, never by
   the architecture's name. */
#ifndef MLLM_MODELS_DECODER_H
#define MLLM_MODELS_DECODER_H
#include <mllm/mllm.h>
#include "formats/model_file.h"
#include "graph/graph.h"
#include "models/hparams.h"

typedef struct {
    mllm_tensor *attn_norm, *wq, *wk, *wv, *wo;
    mllm_tensor *bq, *bk, *bv;        /* Qwen2 qkv bias, else NULL */
    mllm_tensor *q_norm, *k_norm;     /* Qwen3 / Gemma 3 per-head RMSNorm, else NULL */
    mllm_tensor *post_attn_norm;      /* Gemma: after attention, before the residual add */
    mllm_tensor *ffn_norm, *w_gate, *w_up, *w_down;
    mllm_tensor *post_ffw_norm;       /* Gemma: after the FFN, before the residual add */
    const mllm_rope_params *rope;     /* this layer's rotation, or NULL (no RoPE) */
    int32_t window;                   /* sliding window, or 0 (all earlier positions) */
} mllm_decoder_layer;

typedef struct {
    mllm_hparams cfg;
    mllm_graph wg;                 /* owns the weight tensor structs (not the data) */
    mllm_tensor *tok_embd, *output_norm, *output; /* output = tok_embd when tied */
    mllm_decoder_layer *layers;    /* (n_layer) */
    mllm_rope_params rope;         /* full-attention layers */
    mllm_rope_params rope_swa;     /* sliding-window layers */
    float *freq_factors;           /* (n_rot/2) llama3 / yarn scaling, or NULL */
    size_t n_params;
    mllm_buffer packed_buf;        /* load-time x8 copies of matmul weights (the CPU's repack buffer type), or type NULL */
    int requant;                   /* dtype the matmul weights are requantized to at load, or -1 */
    size_t requant_saved;          /* bytes of weights that requantizing saved */
    /* The backends at load (decoder_backends.c): the backends every graph
       it builds is scheduled over, and the weights placed on each. */
    mllm_backend *backends[MLLM_MAX_BACKENDS];
    int n_backends;
    struct mllm_placement *placed[MLLM_MAX_BACKENDS];
} mllm_decoder;

/* What the loader (src/api) decides for a decoder's weights; the model
   reads no environment itself. */
typedef struct {
    const char *backends;      /* mllm_decoder_use_backends's list (NULL: the CPU alone) */
    const char *backends_from; /* where the list came from, for its errors ("backend", "MLLM_BACKENDS") */
    int n_offload;             /* mllm_decoder_use_backends's n_offload */
    int requant;               /* a dtype, or -1: mllm_decoder_pack */
    int repack;                /* mllm_cpu_repack_params.repack: 1 always, 0 never, -1 where this CPU has kernels */
    int pack_threads;          /* mllm_cpu_repack_params.n_threads (0: one per CPU) */
} mllm_decoder_params;

/* Binds the weights of a file resolved by mllm_family_resolve (hp). Checks
   every tensor's dtype; errors name the tensor. p->backends and
   p->n_offload go to mllm_decoder_use_backends, before the CPU repacks what
   stays with it (mllm_decoder_pack). */
mllm_status mllm_decoder_bind(mllm_decoder *m, const mllm_model_file *f, const mllm_hparams *hp,
                              const mllm_decoder_params *p);
void mllm_decoder_release(mllm_decoder *m);
/* Moves the q4_0 / q4_1 / q5_0 / q8_0 / q4_K / q5_K / q6_K matmul weights
   into the CPU's repacked-weights buffer type (decoder_pack.c,
   mllm_cpu_repack_weights); called by mllm_decoder_bind. repack: 1 always,
   0 never, -1 only where the CPU path has packed kernels for their type
   (AVX2 and NEON: all). Weights placed on another backend (a mirror) are
   left as they are. With m->requant >= 0, a plain matrix whose rows take
   more bytes than that type's (and a multiple of 8 rows of whole blocks) is
   first requantized to it, row by row through f32, whether or not it is
   then packed. n_threads: packing threads (0: one per CPU). */
mllm_status mllm_decoder_pack(mllm_decoder *m, const mllm_model_file *f, int repack, int n_threads);
/* Schedules the model over the backends named in list ("opencl", "cuda,cpu";
   NULL or "" or "cpu": the CPU alone, no schedule) and places the weights
   each can use there (decoder_backends.c): those of the last n_offload
   layers (< 0 or more than n_layer: all, and the embeddings and output
   too). what names the list's source in errors ("MLLM_BACKENDS"). An
   unknown name is an error (MLLM_ERR_INVALID_ARG) that lists the
   registered ones; a known backend without a device MLLM_ERR_UNSUPPORTED. */
mllm_status mllm_decoder_use_backends(mllm_decoder *m, const char *list, int n_offload, const char *what);
void mllm_decoder_drop_backends(mllm_decoder *m);

/* The graph's inputs: T token ids and their T positions, I32 tensors
   (mllm_graph_input_i32) the caller fills before executing. rope_pos
   (NULL: pos): the rotation's positions, 3 rows of T for M-RoPE
   (Qwen2-VL), where they differ from the KV slots. embd (NULL: looked up
   from ids): E x T input embeddings (an image's rows among the tokens').
   With `paged` NULL, K/V live in the contiguous kv layers of the call (one
   sequence, consecutive positions). With `paged` (n_layer layers of a
   src/kv pool), they live in blocks: seq gives each token's sequence (T),
   table the block tables (max_blocks x n_seq), and tokens of several
   sequences may share one call (mllm_op_attention_paged). */
typedef struct {
    mllm_tensor *ids, *pos;
    mllm_tensor *rope_pos, *embd;
    const mllm_kv_paged *paged;
    mllm_tensor *seq, *table;
} mllm_decoder_inputs;

/* Builds (eager: runs) the forward pass of the tokens in `in`, writing K/V
   into kv[layer]; returns the logits of tokens [first_out, T) as
   (n_vocab x (T - first_out)), or NULL when the graph could not be built.
   Generation asks for the last token only. */
mllm_tensor *mllm_decoder_forward(mllm_graph *g, const mllm_decoder *m, const mllm_kv_layer *kv,
                                  const mllm_decoder_inputs *in, int first_out);

/* The final-normed hidden states of every token (n_embd x T), where the
   logits would be computed from: what decoder embeddings pool. */
mllm_tensor *mllm_decoder_hidden(mllm_graph *g, const mllm_decoder *m, const mllm_kv_layer *kv,
                                 const mllm_decoder_inputs *in);

/* Wraps tensor `name` of f as a leaf of wg after checking it: present
   (unless !required: then *out = NULL), shape ne0 x ne1 (n_dims 1 or 2), a
   dtype this build computes, vectors f32. Adds its size to *n_params.
   Errors name the tensor. Shared by the families' bind functions. */
mllm_status mllm_model_bind_tensor(mllm_graph *wg, size_t *n_params, const mllm_model_file *f, const char *name,
                                   int n_dims, int64_t ne0, int64_t ne1, bool required, mllm_tensor **out);

#endif
