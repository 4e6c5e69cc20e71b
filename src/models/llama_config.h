/* The hyper-parameters of the Llama-family decoder (Llama 2/3, TinyLlama,
   SmolLM/SmolLM2, Qwen2, Qwen3), filled from GGUF metadata, config.json or a
   llama2.c header. */
#ifndef MLLM_MODELS_LLAMA_CONFIG_H
#define MLLM_MODELS_LLAMA_CONFIG_H
#include <stdbool.h>
#include <stdint.h>

typedef enum {
    MLLM_ROPE_SCALING_NONE = 0,
    MLLM_ROPE_SCALING_LINEAR = 1,
    MLLM_ROPE_SCALING_LLAMA3 = 2,
} mllm_rope_scaling;

typedef struct {
    char arch[32];        /* "llama", "qwen2", "qwen3" */
    int32_t n_vocab;
    int32_t n_embd;       /* E */
    int32_t n_layer;
    int32_t n_head;       /* H */
    int32_t n_head_kv;    /* Hkv (GQA when < H) */
    int32_t head_dim;     /* D; usually E / H, Qwen3 sets it */
    int32_t n_ff;         /* F */
    int32_t n_ctx_train;
    int32_t n_rot;        /* rotated dims per head (<= D) */
    float rope_theta;
    bool rope_neox;       /* true: rotate pairs (i, i+n_rot/2); false: (2i, 2i+1) */
    mllm_rope_scaling rope_scaling;
    float rope_factor;            /* linear / llama3 factor */
    float rope_low_freq_factor;   /* llama3 */
    float rope_high_freq_factor;  /* llama3 */
    int32_t rope_orig_ctx;        /* llama3 original_max_position_embeddings */
    float rms_eps;
    bool qkv_bias;        /* Qwen2 */
    bool qk_norm;         /* Qwen3: RMSNorm on each q and k head */
    bool tied_embd;       /* no output.weight: logits use token_embd */
} mllm_llama_config;

#endif
