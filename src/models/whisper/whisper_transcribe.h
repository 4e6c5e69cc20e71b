/* Whisper transcription: 30-s windows over the audio, each decoded with
   Whisper's rules (as openai-whisper's transcribe() and faster-whisper do):
   greedy or beam search, the suppress lists, the timestamp rules, the
   temperature fallback on repetitive or unlikely text, no-speech skipping,
   the window advanced to the last complete timestamp pair. */
#ifndef MLLM_MODELS_WHISPER_TRANSCRIBE_H
#define MLLM_MODELS_WHISPER_TRANSCRIBE_H
#include "models/speech.h"
#include "models/whisper/whisper.h"

/* Most temperatures tried per window. */
#define MLLM_WHISPER_MAX_TEMPS 8

/* A segment (seconds, text, tokens, decoding figures): the speech
   contract's, so a transcription's segments change hands without a copy. */
typedef mllm_speech_segment mllm_whisper_segment;

typedef struct mllm_whisper_segment_cb_ {
    void (*fn)(const mllm_whisper_segment *s, void *user);
    void *user;
} mllm_whisper_segment_cb;

typedef struct {
    int beam_size;             /* 1: greedy; 2..MLLM_WHISPER_MAX_SEQ */
    float patience;            /* beam search: stop after beam_size * patience finished */
    int best_of;               /* sampled candidates per window at temperature > 0 */
    bool timestamps;           /* decode timestamp tokens (segments from the model) */
    int32_t language;          /* language token; -1: detected on the first window (multilingual
                                  models; English-only ones need none) */
    bool translate;            /* <|translate|> instead of <|transcribe|> (multilingual models) */
    const int32_t *initial_prompt; /* text tokens given as the first window's previous text (may be NULL) */
    int n_initial_prompt;
    bool condition_on_previous_text;
    float temperatures[MLLM_WHISPER_MAX_TEMPS];
    int n_temperatures;        /* 1 with 0.0: no fallback */
    float compression_ratio_threshold; /* <= 0: off */
    float logprob_threshold;   /* >= 0: off */
    float no_speech_threshold; /* <= 0: off */
    float max_initial_timestamp; /* seconds, timestamps mode */
    uint64_t seed;
    mllm_whisper_segment_cb on_segment; /* called as each segment is final (may be NULL) */
    int (*abort)(void *user);  /* polled before each window and fallback; nonzero: stop, MLLM_ERR_CANCELLED (may be NULL) */
    void *abort_user;
} mllm_whisper_options;

/* faster-whisper's defaults (beam 5, patience 1, best_of 5, temperatures
   0 .. 1 by 0.2, thresholds 2.4 / -1 / 0.6, conditioned on previous text). */
void mllm_whisper_options_default(mllm_whisper_options *o);

typedef struct {
    mllm_whisper_segment *segs;
    int n_segs;
    double duration;           /* of the audio, seconds */
    double encode_s, decode_s, mel_s; /* time spent, for the CLI's timings */
    int n_windows, n_fallbacks;
    int32_t language;          /* the language token used (-1: an English-only model) */
    float language_prob;       /* its detected probability; 1 when given */
} mllm_whisper_result;

/* Transcribes samples[0..n) (16 kHz mono). Errors: INVALID_ARG (options
   out of range), NOMEM, and the model's. */
mllm_status mllm_whisper_transcribe(mllm_whisper *w, const float *samples, size_t n, const mllm_whisper_options *o,
                                    mllm_whisper_result *res);
void mllm_whisper_result_free(mllm_whisper_result *res);

/* One window's decode (whisper_search.c): prompt -> tokens (no EOT), the
   model already encoded. */
typedef struct {
    int32_t *tokens;
    int n_tokens;
    float sum_logprob, avg_logprob, no_speech_prob;
} mllm_whisper_hyp;

mllm_status mllm_whisper_decode_window(mllm_whisper *w, const mllm_whisper_options *o, const int32_t *prompt,
                                       int n_prompt, int sot_index, float temperature, uint64_t seed,
                                       mllm_whisper_hyp *out);

#endif
