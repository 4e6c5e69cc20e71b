/* Whisper (OpenAI's encoder-decoder speech model) over a CTranslate2
   folder (model.bin, config.json, tokenizer.json: what faster-whisper
   reads). The encoder is a graph (whisper_graph.c: im2col + matmul for
   the conv stem, attention_full, the cross-attention K/V stored in slot
   caches once per window), run by the scheduler over the backends of
   mllm_whisper_params.backends.

   Shapes (tiny.en: d 384, 6 heads, 4 + 4 layers, 51864 tokens):
     mel (n_mels, 3000) -> conv1 (k 3, pad 1) + GELU -> conv2 (k 3, stride 2,
     pad 1) + GELU -> + stored positions (1500, d) -> pre-LN blocks ->
     LayerNorm = encoder states (1500, d); per decoder layer K and V of the
     cross-attention are computed from them once.
     tokens -> embedding + learned positions (448, d) -> pre-LN blocks
     (self-attention with a KV cache, cross-attention, FFN) -> LayerNorm ->
     logits by the tied embedding. */
#ifndef MLLM_MODELS_WHISPER_H
#define MLLM_MODELS_WHISPER_H
#include <mllm/mllm.h>
#include "core/threadpool.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whisper's fixed frame counts: 3000 mel frames -> 1500 encoder positions. */
#define MLLM_WHISPER_N_FRAMES 3000
/* Most decoder sequences run together (beam search). */
#define MLLM_WHISPER_MAX_SEQ 16
/* Most entries of a suppress list in config.json. */
#define MLLM_WHISPER_MAX_SUPPRESS 4096

typedef struct {
    int n_mels, n_audio_ctx, d_model, n_head, head_dim, d_ff;
    int n_enc_layers, n_dec_layers, n_vocab, n_text_ctx;
} mllm_whisper_hparams;

/* Token ids of Whisper's special tokens (-1 when the vocabulary has none). */
typedef struct {
    int32_t eot, sot, sot_prev, sot_lm, transcribe, translate, no_speech, no_timestamps;
    int32_t timestamp_begin; /* <|0.00|>; every id from here to n_vocab - 1 is a timestamp */
    int32_t lang_first;      /* first language token (<|en|>) */
    int n_lang;              /* language tokens (1 counts for English-only models too) */
    bool multilingual;
} mllm_whisper_special;

typedef struct mllm_whisper mllm_whisper;

typedef struct {
    int n_threads;  /* >= 1 */
    /* MLLM_DTYPE_F16 (as stored: used in place from the file's mapping), F32
       (widened), Q8_0 or Q4_0 (quantized at load and packed into the x8
       layouts; conv1, 240 inputs, stays f16) */
    int weight_type;
    /* weight_type was asked for (`--weights`): a .mllm file, whose weights
       are stored in their final dtype, then refuses another one */
    bool weight_type_given;
    /* Called once per weight of the loaded model, after it is final: its
       WhisperSpec name, dtype (a kernel layout for packed matrices), shape
       (matrices as (rows, columns), conv weights flattened so) and bytes,
       valid while the model lives (mllm convert writes them). May be NULL. */
    void (*on_weight)(void *user, const char *name, int dtype, int rank, const uint32_t *dims, const void *data,
                      size_t bytes);
    void *user;
    /* The backends the encoder runs on, in order of preference ("opencl",
       "cuda,cpu"; mllm_load_params.backend's names); what one lacks runs
       on the CPU. NULL or "": the CPU alone. */
    const char *backends;
    /* A pool to run on, lent (the model's, shared with its other users;
       it must outlive the model); NULL: one of n_threads of its own. */
    mllm_pool *pool;
} mllm_whisper_params;

/* Loads dir/model.bin (a CTranslate2 WhisperSpec), dir/config.json
   (suppress lists) and dir/tokenizer.json. Errors name the file: IO,
   FORMAT (a variable missing or of the wrong shape), UNSUPPORTED (another
   spec, an activation other than GELU, quantized CTranslate2 weights). */
mllm_status mllm_whisper_load(const char *dir, const mllm_whisper_params *p, mllm_whisper **out);
/* The same from an open WhisperSpec (the model file's label `path`; the
   model takes c, success or not: weights kept as stored point into it), a config.json
   text (suppress_ids, suppress_ids_begin) and a tokenizer.json path: what
   the other layouts (whisper_open.h) load through. */
struct mllm_ct2;
mllm_status mllm_whisper_load_ct2(struct mllm_ct2 *c, const char *path, const char *config, size_t config_len,
                                  const char *tokenizer, const mllm_whisper_params *p, mllm_whisper **out);
void mllm_whisper_free(mllm_whisper *w);
const mllm_whisper_hparams *mllm_whisper_hp(const mllm_whisper *w);
const mllm_whisper_special *mllm_whisper_tokens(const mllm_whisper *w);
/* The token lists of config.json: suppress_ids (every step) and
   suppress_ids_begin (the first sampled token). */
const int32_t *mllm_whisper_suppress(const mllm_whisper *w, bool begin, int *n);
/* The suppress lists of a config.json text (what the loader reads; exposed
   for the fuzz target): each a list of at most MLLM_WHISPER_MAX_SUPPRESS
   ids in [0, n_vocab), absent = empty. Free both with mllm_free. Errors:
   FORMAT (not an object, not such a list), NOMEM; then both are NULL. */
mllm_status mllm_whisper_config_parse(const char *json, size_t len, const char *label, int n_vocab, int32_t **sup,
                                      int *n_sup, int32_t **begin, int *n_begin);
struct mllm_tokenizer *mllm_whisper_tokenizer(const mllm_whisper *w);
/* The language token for a code ("en", "de"); -1 if unknown. */
int32_t mllm_whisper_lang_token(const mllm_whisper *w, const char *code);
/* The code of a language token ("en"); NULL if tok is not one. */
const char *mllm_whisper_lang_code(const mllm_whisper *w, int32_t tok);
/* The English name of a language code ("en" -> "english"), NULL if unknown. */
const char *mllm_whisper_lang_name(const char *code);
/* The language of the encoded window (whisper_lang.c): the language token
   and its probability among the language tokens. English-only models
   answer <|en|> with 1 without running the decoder. Uses sequence 0's KV
   cache. Errors: the decoder's. */
mllm_status mllm_whisper_detect_language(mllm_whisper *w, int32_t *lang, float *prob);

/* Runs the encoder on one window's log-mel (n_mels, 3000), keeping its
   states and every decoder layer's cross K/V for the decode calls that
   follow. */
mllm_status mllm_whisper_encode(mllm_whisper *w, const float *mel);
/* mllm_mel_compute (audio/mel.h) of samples[0..n) with the model's n_mels
   on the model's thread pool: the same values. */
mllm_status mllm_whisper_mel(mllm_whisper *w, const float *samples, size_t n, float *mel);
/* The last encoder output, (n_audio_ctx, d_model) row-major. */
const float *mllm_whisper_encoder_states(const mllm_whisper *w);

/* Feeds n_tok tokens to each of n_seq sequences (tokens[s * n_tok + t]) at
   positions pos0 .. pos0 + n_tok - 1 of their KV caches; logits gets the
   n_seq x n_vocab scores of each sequence's last token (all_logits: n_seq
   x n_tok x n_vocab, every token). Errors: INVALID_ARG (no encode yet, a
   position past n_text_ctx, too many sequences, a token out of range). */
mllm_status mllm_whisper_decode(mllm_whisper *w, int n_seq, const int32_t *tokens, int n_tok, int pos0,
                                float *logits, bool all_logits);
/* Copies positions [0, n_pos) of sequence src's KV cache into dst (beam
   search reorders). */
void mllm_whisper_kv_copy(mllm_whisper *w, int dst, int src, int n_pos);
/* Sequence j (j < n_seq) continues what sequence parent[j] held, positions
   [0, n_pos): the caches are renamed, and copied only for a parent that
   more than one sequence continues. */
mllm_status mllm_whisper_kv_reorder(mllm_whisper *w, const int *parent, int n_seq, int n_pos);

#endif
