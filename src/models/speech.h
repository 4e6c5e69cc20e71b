/* The contract of a speech row (MLLM_KIND_SPEECH: Whisper): a model opened
   from a path the row's probe recognizes, its tokenizer (lent to the
   generic tokenize calls), and transcription of 16 kHz mono samples with
   the public mllm_transcribe_params. src/api/transcribe.c drives it
   without naming the family. */
#ifndef MLLM_MODELS_SPEECH_H
#define MLLM_MODELS_SPEECH_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/threadpool.h"
#include "models/hparams.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    double start, end;     /* seconds */
    char *text;            /* UTF-8, owned */
    int32_t *tokens;       /* text and timestamp tokens, owned */
    int n_tokens;
    float avg_logprob, no_speech_prob, compression_ratio, temperature;
    long seek;             /* the window's start, in the model's frames */
} mllm_speech_segment;

typedef struct {
    mllm_speech_segment *segs; /* owned */
    int n_segs;
    double duration;           /* of the audio, seconds */
    char lang[8];              /* the language's code ("en") */
    float lang_prob;           /* its detected probability; 1 when given */
    double mel_s, encode_s, decode_s; /* time spent in each stage */
    int n_windows, n_fallbacks;
} mllm_speech_result;

/* What the caller hears while a transcription runs (either may be NULL). */
typedef struct {
    void (*segment)(const mllm_speech_segment *s, void *user); /* each segment with text, as it is final */
    int (*abort)(void *user);  /* polled between windows; nonzero: stop (MLLM_ERR_CANCELLED) */
    void *user;
} mllm_speech_hooks;

void mllm_speech_result_free(mllm_speech_result *r);

typedef struct mllm_speech_family {
    /* Whether path holds a model of this family (names and first bytes only). */
    bool (*probe)(const char *path);
    /* Opens it to run on pool (lent: the model's, which must outlive it);
       backends: the backends its graphs run on, by name in order of
       preference ("opencl,cpu"; NULL: the CPU); weights: the weight type
       (mllm_load_params.weights; NULL: as stored). */
    mllm_status (*open)(const char *path, mllm_pool *pool, const char *backends, const char *weights, void **out);
    void (*free)(void *model);
    /* The model's tokenizer, owned by it. */
    mllm_tokenizer *(*tokenizer)(void *model);
    /* The sizes the generic getters report (arch, n_vocab, n_ctx_train,
       n_embd, n_layer, n_head, head_dim, n_ff). */
    void (*describe)(const void *model, mllm_hparams *out);
    /* Transcribes samples[0..n) (16 kHz mono) with p (checked here: errors
       name the parameter; p's callbacks are ignored, hooks carry them).
       One call at a time per model. */
    mllm_status (*transcribe)(void *model, const float *samples, size_t n, const mllm_transcribe_params *p,
                              const mllm_speech_hooks *hooks, mllm_speech_result *res);
    /* Whether the model transcribes other languages than English. */
    bool (*multilingual)(const void *model);
    /* The English name of a language code ("de" -> "german"), or NULL. */
    const char *(*language_name)(const char *code);
} mllm_speech_family;

#endif
