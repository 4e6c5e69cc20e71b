/* The hyper-parameters of a decoder-only transformer, whatever its family
   (Llama 2/3, SmolLM/SmolLM2/SmolLM3, Qwen2/2.5/3, Gemma 3), read by the
   model registry (registry.h) from generic metadata (core/meta.h). The
   per-layer attention spec says, for each layer, whether it attends to all
   earlier positions or a sliding window, and whether and how it rotates. */
#ifndef MLLM_MODELS_HPARAMS_H
#define MLLM_MODELS_HPARAMS_H
#include <stdbool.h>
#include <stdint.h>

struct mllm_arch;

typedef enum {
    MLLM_ROPE_SCALING_NONE = 0,
    MLLM_ROPE_SCALING_LINEAR = 1,
    MLLM_ROPE_SCALING_LLAMA3 = 2,
    MLLM_ROPE_SCALING_YARN = 3,
} mllm_rope_scaling;

typedef enum {
    MLLM_ACT_SILU = 0,      /* SwiGLU: silu(gate) * up (Llama, Qwen, SmolLM) */
    MLLM_ACT_GELU_TANH = 1, /* GeGLU: gelu_tanh(gate) * up (Gemma) */
    MLLM_ACT_GELU_ERF = 2,  /* not gated: down(gelu(up x)), GELU's erf form (BERT) */
} mllm_ffn_act;

/* Per-layer flags (mllm_hparams.layer_flags). */
#define MLLM_LAYER_SLIDING 1u /* attends to the last swa_window positions only */
#define MLLM_LAYER_NO_ROPE 2u /* no rotary embedding (SmolLM3's every 4th layer) */

/* Generous limits: they only exist to keep products inside int64. */
#define MLLM_MAX_LAYERS 4096
#define MLLM_MAX_DIM (1 << 20) /* E, F, D */
#define MLLM_MAX_VOCAB (1 << 24)
#define MLLM_MAX_HEADS 4096

typedef struct {
    char arch[32];        /* the registry row's name: "llama", "qwen2", "gemma3", ... */
    const struct mllm_arch *row;
    int32_t n_vocab;
    int32_t n_embd;       /* E */
    int32_t n_layer;
    int32_t n_head;       /* H */
    int32_t n_head_kv;    /* Hkv (GQA when < H) */
    int32_t head_dim;     /* D; usually E / H */
    int32_t n_ff;         /* F */
    int32_t n_ctx_train;
    int32_t n_rot;        /* rotated dims per head (<= D) */
    float rope_theta;     /* full-attention layers */
    float rope_theta_swa; /* sliding-window layers (Gemma 3: 10000) */
    bool rope_neox;       /* true: rotate pairs (i, i+n_rot/2); false: (2i, 2i+1) */
    mllm_rope_scaling rope_scaling; /* applies to full-attention layers */
    float rope_factor;            /* linear / llama3 / yarn factor */
    float rope_low_freq_factor;   /* llama3 */
    float rope_high_freq_factor;  /* llama3 */
    int32_t rope_orig_ctx;        /* llama3 / yarn original context */
    float yarn_beta_fast, yarn_beta_slow; /* yarn ramp (32, 1 by default) */
    float rms_eps;        /* the norms' epsilon (LayerNorm's in encoders: BERT's layer_norm_eps) */
    float attn_scale;     /* q.k multiplier before softmax; 1/sqrt(D) unless the config says */
    float embd_scale;     /* token embeddings are multiplied by this (Gemma: sqrt(E)); 1 */
    float final_softcap;  /* logits = c * tanh(logits / c) when > 0 (Gemma 2) */
    int32_t swa_window;   /* sliding-window size of MLLM_LAYER_SLIDING layers */
    mllm_ffn_act act;
    bool post_norms;      /* Gemma: RMSNorm after attention and after the FFN, before the residual add */
    bool qkv_bias;        /* Qwen2: biases on q, k, v */
    bool qk_norm;         /* Qwen3, Gemma 3: RMSNorm on each q and k head */
    bool tied_embd;       /* no output.weight: logits use token_embd */
    int32_t n_token_types; /* BERT: rows of token_types.weight (type_vocab_size) */
    uint8_t layer_flags[MLLM_MAX_LAYERS];
    int32_t mrope[3];     /* Qwen2-VL M-RoPE sections (frequency counts), or 0 0 0 */
} mllm_hparams;

/* The attention spec of layer l. */
typedef struct {
    bool sliding;
    int32_t window;       /* 0 = all earlier positions */
    bool rope;
    float rope_theta;
    bool scaled;          /* the model's rope scaling applies */
} mllm_layer_spec;

static inline mllm_layer_spec mllm_hparams_layer(const mllm_hparams *h, int l) {
    mllm_layer_spec s;
    s.sliding = (h->layer_flags[l] & MLLM_LAYER_SLIDING) != 0;
    s.window = s.sliding ? h->swa_window : 0;
    s.rope = (h->layer_flags[l] & MLLM_LAYER_NO_ROPE) == 0;
    s.rope_theta = s.sliding && h->rope_theta_swa > 0 ? h->rope_theta_swa : h->rope_theta;
    s.scaled = !s.sliding;
    return s;
}

#endif
