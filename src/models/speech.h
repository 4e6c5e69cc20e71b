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
} mllm_speech_result;

void mllm_speech_result_free(mllm_speech_result *r);

typedef struct mllm_speech_family {
    /* Whether path holds a model of this family (names and first bytes only). */
    bool (*probe)(const char *path);
    /* Opens it to run on pool (lent: the model's, which must outlive it);
       backends: the backends its graphs run on, by name in order of
       preference ("opencl,cpu"; NULL: the CPU). */
    mllm_status (*open)(const char *path, mllm_pool *pool, const char *backends, void **out);
    void (*free)(void *model);
    /* The model's tokenizer, owned by it. */
    mllm_tokenizer *(*tokenizer)(void *model);
    /* The sizes the generic getters report (arch, n_vocab, n_ctx_train,
       n_embd, n_layer, n_head, head_dim, n_ff). */
    void (*describe)(const void *model, mllm_hparams *out);
    /* Transcribes samples[0..n) (16 kHz mono) with p (checked here: errors
       name the parameter). One call at a time per model. */
    mllm_status (*transcribe)(void *model, const float *samples, size_t n, const mllm_transcribe_params *p,
                              mllm_speech_result *res);
    /* The English name of a language code ("de" -> "german"), or NULL. */
    const char *(*language_name)(const char *code);
} mllm_speech_family;

#endif
