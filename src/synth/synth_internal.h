/* Pieces of the synthetic-model writer: presets, the weight generator and
   the tokenizer builder. */
#ifndef MLLM_SYNTH_INTERNAL_H
#define MLLM_SYNTH_INTERNAL_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *arch;     /* "qwen3" | "qwen2" | "llama" | "smollm3" | "gemma3" */
    const char *preset;
    const char *name;     /* general.name */
    int32_t E, L, H, Hkv, D, F, V, ctx;
    float theta, eps;
    bool qk_norm, tied;
    bool llama3_rope;     /* factor/low/high/orig below */
    float rope_factor, rope_low, rope_high;
    int32_t rope_orig_ctx;
    bool qkv_bias;        /* Qwen2: attn_q/k/v biases */
    /* SmolLM3: every no_rope_interval-th layer has no RoPE (0: all rotate). */
    int32_t no_rope_interval;
    /* Gemma 3: GeGLU, post-attention / post-FFN norms, embeddings scaled by
       sqrt(E), norm weights stored as w (HF) / 1 + w (GGUF); sliding-window
       layers (window swa_window, RoPE base theta_swa) with every
       swa_pattern-th layer global; attention scale 1/sqrt(query_pre_attn_scalar). */
    bool gemma;
    int32_t swa_window, swa_pattern;
    float theta_swa, query_pre_attn_scalar;
} synth_preset;

/* NULL if the (arch, preset) pair is unknown. */
const synth_preset *synth_find_preset(const char *arch, const char *preset);
/* Qwen2 and Qwen3 share the tokenizer style (no BOS, NFC, ChatML). */
bool synth_is_qwen(const synth_preset *p);

/* ---- weights (synth_weights.c) ---------------------------------------- */

/* MATRIX: N(0,1)*0.02 in the file's dtype; BIAS: N(0,1)*0.02, always f32
   (as llama.cpp keeps 1-D tensors; norms too); NORM: 1 + 0.1*N(0,1), f32;
   CONST: given values, f32; NORM_W: a Gemma norm weight w = 0.1*N(0,1), f32,
   stored as w in HF folders and as 1.0f + w (added in f32, as llama.cpp's
   converter and transformers' (1 + w) both do) in GGUF (plus_one). */
typedef enum { SYNTH_MATRIX, SYNTH_NORM, SYNTH_CONST, SYNTH_BIAS, SYNTH_NORM_W } synth_kind;

/* One tensor to generate. Row r of the file holds generated row
   perm(r) (used to store Llama q/k in GGUF's interleaved-RoPE order). */
typedef struct {
    char name[96];     /* GGUF name; the values are seeded by it, so both formats agree */
    int dtype;         /* mllm_dtype of the stored values */
    int64_t ne0, ne1;  /* ne1 = 1 for vectors */
    synth_kind kind;
    int32_t permute_heads; /* > 0: Llama q/k permutation with this many heads */
    bool plus_one;         /* SYNTH_NORM_W in GGUF: store 1.0f + w */
    const float *values;   /* SYNTH_CONST: ne0 floats */
    /* streaming state */
    int64_t row;
    uint8_t *rowbuf;
    size_t row_bytes, row_pos;
} synth_tensor;

/* mllm_gguf_fill_fn over a synth_tensor (consecutive ranges). */
mllm_status synth_fill(void *user, void *buf, size_t offset, size_t n);
size_t synth_tensor_bytes(const synth_tensor *t);
void synth_tensor_reset(synth_tensor *t);
void synth_tensor_free(synth_tensor *t);
/* Generated values of row `row` (before any permutation) as f32. */
void synth_gen_row(const char *name, synth_kind kind, int64_t row, float *out, int64_t n);

/* The dtype of token_embd / output.weight for a file of `dtype`: q8_0 in
   q4_0 / q4_1 files (llama.cpp's q4 mixes keep them at higher precision),
   else `dtype` itself. Norm vectors are always f32. */
int synth_embd_dtype(int dtype);
/* Every tensor's dtype has a converter and its rows are whole blocks. */
mllm_status synth_check_blocks(const synth_tensor *ts, size_t n);

/* The list of tensors of a preset in GGUF order; *n gets the count. The HF
   writer uses the same list with HF names. Caller frees with mllm_free. */
synth_tensor *synth_tensor_list(const synth_preset *p, int dtype, bool gguf_layout, size_t *n, float **rope_freqs);

/* ---- tokenizer (synth_tokenizer.c) ------------------------------------ */

typedef struct {
    char **tokens;     /* (n_vocab) GPT-2 byte-to-unicode form, NUL-terminated */
    int32_t *types;    /* GGUF token types: 1 normal, 3 control, 4 user-defined, 5 unused */
    int32_t n_vocab;
    int32_t n_bpe;     /* 256 bytes + merged tokens: ids below this are BPE vocab */
    char **merges;     /* "a b" */
    int32_t n_merges;
    int32_t first_special, n_special;
    int32_t bos, eos, pad;
    bool add_bos;
    const char *pre;           /* GGUF tokenizer.ggml.pre */
    const char *chat_template;
    const char *hf_regex;      /* pre-tokenizer regex for tokenizer.json */
} synth_vocab;

mllm_status synth_vocab_build(const synth_preset *p, synth_vocab *v);
void synth_vocab_free(synth_vocab *v);
/* Whether special token i (0-based among the specials) is "special" in
   HF's added_tokens (Qwen's <think> tags are not). */
bool synth_special_is_hf_special(const synth_preset *p, int i);
/* The built-in English text the merges are learned from. */
extern const char synth_training_text[];

/* ---- writers ---------------------------------------------------------- */

typedef void (*synth_progress_fn)(void *user, const char *msg);
mllm_status synth_write_gguf(const synth_preset *p, int dtype, const char *path, synth_progress_fn progress,
                             void *user);
mllm_status synth_write_hf(const synth_preset *p, int dtype, const char *dir, synth_progress_fn progress,
                           void *user);

#endif
