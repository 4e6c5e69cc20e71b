/*
 * mllm.h — the public C API of mllm-c.
 *
 * A worked example first (error handling shortened):
 *
 *     mllm_load_params lp;   mllm_load_default_params(&lp);
 *     mllm_model *m;         mllm_model_load("model.gguf", &lp, &m);
 *     mllm_session_params sp; mllm_session_default_params(&sp);
 *     mllm_session *s;       mllm_session_new(m, &sp, &s);
 *     mllm_sampling smp;     mllm_sampling_default(&smp);
 *     smp.max_tokens = 64;
 *     mllm_generate(s, "Once upon a time", &smp, print_piece, NULL);
 *     mllm_session_free(s);  mllm_model_free(m);
 *
 * Threading contract: a model is immutable after load and may be shared by
 * any number of sessions and threads. A session is used by one thread at a
 * time; mllm_session_cancel() may be called from any thread.
 *
 * Errors: every fallible call returns mllm_status (MLLM_OK = 0, errors are
 * negative). mllm_status_str() names a status; mllm_last_error() returns a
 * thread-local message with the detail (file, offset, field) of the last
 * error raised on the calling thread. Every *_free(NULL) is a no-op.
 *
 * Caller buffers are (buf, cap, size_t *needed): on MLLM_ERR_BUFFER_TOO_SMALL
 * *needed says how large the buffer must be.
 *
 * Rules every function below follows unless its comment says otherwise:
 *  - A NULL handle or a NULL required pointer gives MLLM_ERR_INVALID_ARG
 *    (getters that return a value instead give 0, -1 or NULL).
 *  - A parameter struct whose struct_size is not the library's own
 *    sizeof gives MLLM_ERR_INVALID_ARG: always fill it with its
 *    *_default_params() / mllm_sampling_default() first (mllm_sampling
 *    also accepts the size of its first release, without the fields
 *    appended since).
 *  - Any call that allocates may return MLLM_ERR_NOMEM.
 *  - Ownership: a handle returned through an `out` pointer belongs to the
 *    caller, who frees it with the matching *_free(). Strings and arrays
 *    the caller passes in are only read during the call. Pointers the
 *    library returns stay owned by the library; each comment says how long
 *    they stay valid. Text is UTF-8; returned bytes (pieces, tokens) are
 *    not NUL-terminated unless the comment says so.
 *  - On an error, outputs not named in the comment are unspecified.
 *    Initialise handle variables to NULL: *_free(NULL) is then always safe.
 *  - Functions without a handle (version, status, default params) are
 *    thread-safe; functions on a model are thread-safe (the model is
 *    read-only); functions on a session need the caller to serialise them
 *    (mllm_session_cancel() excepted).
 */
#ifndef MLLM_MLLM_H
#define MLLM_MLLM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(MLLM_BUILDING)
#define MLLM_API __attribute__((visibility("default")))
#else
#define MLLM_API
#endif

#define MLLM_VERSION_MAJOR 0
#define MLLM_VERSION_MINOR 1
#define MLLM_VERSION_PATCH 0
/* Bumped whenever a struct layout or a signature below changes.
   8: mllm_transcribe_params grew best_of, patience, seed,
   condition_on_previous, fallback and the on_segment / abort callbacks
   (the ABI 7 size is still accepted: the defaults then);
   mllm_load_params grew `weights` (the ABI 7 and older sizes are still
   accepted: NULL); mllm_transcript_get_stats, mllm_audio_probe,
   mllm_path_can_transcribe, mllm_model_multilingual.
   7: mllm_speculative_stats grew `n_draft_evals` (smaller struct_size
   values are still accepted: the counters are copied up to it).
   6: mllm_load_params grew `backend` and `n_gpu_layers` (the ABI 5 and 4
   sizes are still accepted).
   5: mllm_load_params grew `mmproj`, mllm_timings image counters (the
   ABI 4 sizes are still accepted); mllm_chat_prefill.
   4: mllm_sampling grew a grammar (constrained decoding); mllm_generate*
   still accept the ABI 3 and ABI 2 sizes filled by the caller.
   mllm_load_params grew `exact`; mllm_model_load still accepts the struct
   of ABI 1 and of ABI 2/3 (zero-extended).
   3: mllm_sampling grew (presence/frequency penalties, logit bias,
   logprobs callback); mllm_sampling_default writes the new size, so a
   program compiled against an ABI 2 header must be rebuilt (mllm_generate*
   still accept an ABI 2 struct filled by the caller). */
#define MLLM_ABI_VERSION 8

typedef enum {
    MLLM_OK = 0,
    MLLM_ERR_INVALID_ARG = -1,
    MLLM_ERR_NOMEM = -2,
    MLLM_ERR_IO = -3,
    MLLM_ERR_FORMAT = -4,
    MLLM_ERR_UNSUPPORTED = -5,
    MLLM_ERR_CONTEXT_FULL = -6,
    MLLM_ERR_CANCELLED = -7,
    MLLM_ERR_BUFFER_TOO_SMALL = -8
} mllm_status;

typedef struct mllm_model mllm_model;     /* weights, config, tokenizer */
typedef struct mllm_session mllm_session; /* KV cache, position, sampler state */
typedef struct mllm_grammar mllm_grammar; /* a compiled grammar and how far the text has matched it */
/* Receives text the library produced (len bytes, valid only during the call). */
typedef void (*mllm_text_sink)(void *user, const char *text, size_t len);

/* The library's version, "MAJOR.MINOR.PATCH" ("0.1.0"): a static string,
   never NULL. May differ from the MLLM_VERSION_* the caller compiled with. */
MLLM_API const char *mllm_version(void);
/* The MLLM_ABI_VERSION the library was built with. A program or binding
   must refuse to use the library when it differs from the one it was
   written for (struct layouts or signatures changed). */
MLLM_API int mllm_abi_version(void);
/* Milliseconds on the library's monotonic clock (CLOCK_MONOTONIC, an
   arbitrary origin): the clock of mllm_timings, for timing calls. */
MLLM_API double mllm_time_ms(void);
/* A static English phrase for the status ("i/o error", "context full");
   never NULL ("unknown status" for values that are not an mllm_status). */
MLLM_API const char *mllm_status_str(mllm_status s);
/* The detail of the last error raised on the calling thread ("file.gguf:
   tensor 'x' at offset 123 is past the end"); never NULL, "" if none.
   Owned by the library (a per-thread buffer, NUL-terminated, at most 1023
   bytes); its text may change at the next mllm_* call on the same thread:
   copy it before calling again. Successful calls do not clear it (and may
   overwrite it), so read it only right after a call returned an error. */
MLLM_API const char *mllm_last_error(void);

/* ---- loading ---------------------------------------------------------- */

typedef struct {
    uint32_t struct_size;  /* = sizeof(mllm_load_params), set by the default */
    int n_threads;         /* worker threads for compute; 0 = all cores */
    int use_mmap;          /* 1 (default): weights are mmap'd, never copied */
    const char *tokenizer_path; /* llama2.c checkpoints: the tokenizer .bin */
    const char *chat_template;  /* NULL: the model's own; else a built-in name
                                   ("chatml", "llama3", ...) or a .jinja file */
    int exact;             /* 1: quantized matmuls take float32 activations
                              (weights dequantized row by row) instead of
                              rounding them to 8 bits first, so the logits are
                              the float32 answer on the file's weights; slower
                              (see docs/EXACTNESS.md). 0 (default): as llama.cpp */
    /* Appended in ABI 5 (the ABI 4 size is still accepted: NULL then). */
    const char *mmproj;    /* a GGUF text model's vision tower: the mmproj GGUF
                              llama.cpp's converter writes (clip.* keys;
                              Qwen2.5-VL). NULL: a Hugging Face folder's own
                              tower, if it has one. Opened on the first image;
                              copied, so the string need not outlive the call */
    /* Appended in ABI 6 (the ABI 5 and 4 sizes are still accepted: NULL, -1). */
    const char *backend;   /* where the decoder computes: "cpu", "opencl", "cuda",
                              or a comma-separated list in order of preference;
                              what a backend lacks runs on the CPU. NULL
                              (default): $MLLM_BACKENDS, else the CPU.
                              docs/backends.md */
    int n_gpu_layers;      /* with a backend other than the CPU: offload the last
                              N layers; more than the model has also offloads the
                              embeddings and the output (llama.cpp's -ngl). -1
                              (default): everything */
    /* Appended in ABI 7 (the ABI 6, 5 and 4 sizes are still accepted: NULL). */
    const char *requant;   /* "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_k", "q5_k" or
                              "q6_k": the decoder's matrices whose rows take more bytes
                              than this type's are requantized to it at load, in memory
                              (row by row through f32, as mllm convert --quant does;
                              the file is unchanged; a matrix in a packed layout, or
                              whose rows are not whole blocks of the type, keeps its
                              own). Lossy: meant for a draft model, whose precision
                              only changes how many of its proposals are kept.
                              NULL (default): the file's types */
    /* Appended in ABI 8 (the ABI 7 and older sizes are still accepted: NULL). */
    const char *weights;   /* a speech model's (Whisper's) weight type: "f16", "f32",
                              "q8_0" or "q4_0", converted at load; a .mllm file takes
                              only the type it stores. NULL (default): as stored (f16
                              used in place from the file). Text models ignore it */
} mllm_load_params;

/* Fills every field with its default and struct_size with the library's
   sizeof(mllm_load_params). p must not be NULL. Thread-safe. */
MLLM_API void mllm_load_default_params(mllm_load_params *p);
/* The device a backend opened in this process: "platform / device" for
   "opencl", the device's name for "cuda" (a static string, valid until the
   process exits). NULL when no model has opened that backend yet, for an
   unknown name, or in a build without it. Thread-safe. */
MLLM_API const char *mllm_backend_device(const char *backend);

/* Loads a GGUF file, a Hugging Face folder (config.json + *.safetensors +
   tokenizer.json) or a llama2.c checkpoint (.bin, with p->tokenizer_path);
   or a Whisper model (a CTranslate2 or Hugging Face Whisper folder), which
   transcribes (mllm_transcribe) instead of generating.
   p may be NULL (the defaults). On success *out owns the model; free it
   with mllm_model_free().
   The strings in p are only read during the call.
   Thread-safe: any number of models may be loaded at once from different
   threads; each model's weights stay mapped until mllm_model_free().
   Errors (mllm_last_error() names the file and the problem):
   MLLM_ERR_INVALID_ARG (path or out NULL, wrong p->struct_size, a llama2.c
   checkpoint without p->tokenizer_path, a p->chat_template that is neither
   a built-in name nor a readable file, or does not compile; a model
   without a template of its own still loads: mllm_chat then fails with
   MLLM_ERR_UNSUPPORTED), MLLM_ERR_IO (cannot open, read or
   map), MLLM_ERR_FORMAT (truncated or corrupt file, tokenizer larger than
   the model's vocabulary), MLLM_ERR_UNSUPPORTED (architecture or tensor
   dtype this build cannot run), MLLM_ERR_NOMEM. */
MLLM_API mllm_status mllm_model_load(const char *path, const mllm_load_params *p,
                                     mllm_model **out);
/* Frees the model and unmaps its weights. Every session made from it must
   have been freed first (sessions point into the model). NULL: no-op. */
MLLM_API void mllm_model_free(mllm_model *m);

/* The model's config as one JSON object ({"arch":"llama","n_vocab":512,
   "n_layer":5, ..., "tokenizer":"spm"}), NUL-terminated, into
   (buf, cap, needed). buf may be NULL with cap 0 to ask for the size.
   *needed (needed may be NULL) receives the size including the NUL.
   Errors: MLLM_ERR_INVALID_ARG (m NULL), MLLM_ERR_BUFFER_TOO_SMALL
   (cap < *needed; buf is left untouched). */
MLLM_API mllm_status mllm_model_info_json(const mllm_model *m, char *buf, size_t cap,
                                          size_t *needed);
/* What a benchmark table says of a loaded model (llama-bench's columns).
   The strings are static or live as long as the model. */
typedef struct {
    const char *arch;     /* the registry row's name: "llama", "qwen2", ... */
    const char *backend;  /* the backend that computes the layers: "CPU", "opencl", ... */
    const char *cpu_path; /* the CPU's kernel path: "generic", "avx2", "neon-dotprod", ... */
    /* The file type as llama.cpp names it ("Q4_K - Medium") when a GGUF
       says it, else the most common dtype of the 2-D weights ("Q4_1"; a
       kernel layout counts as the type it holds). */
    char type[32];
    uint64_t size;        /* bytes of weights in the file */
    uint64_t n_params;
} mllm_model_summary;
/* Fills *out. MLLM_ERR_INVALID_ARG for a NULL argument or a model without
   a text decoder or encoder (speech). */
MLLM_API mllm_status mllm_model_summarize(const mllm_model *m, mllm_model_summary *out);
/* The number of online CPUs: the thread count that n_threads 0 means. */
MLLM_API int mllm_n_cpus(void);
/* Seconds since 1970-01-01 UTC: SOURCE_DATE_EPOCH when it is set (the
   reproducible-builds convention), else the wall clock. A malformed
   SOURCE_DATE_EPOCH is MLLM_ERR_INVALID_ARG, naming the value. */
MLLM_API mllm_status mllm_time_now(int64_t *seconds);
/* Getters; thread-safe, never fail. NULL model: 0 (n_vocab, n_ctx_train)
   or -1 (bos, eos). n_vocab is the size of the logits vector; valid token
   ids are [0, n_vocab). n_ctx_train is the context the model was trained
   with (a format default when the file does not say). */
MLLM_API int32_t mllm_model_n_vocab(const mllm_model *m);
MLLM_API int32_t mllm_model_n_ctx_train(const mllm_model *m);
MLLM_API int32_t mllm_model_bos(const mllm_model *m); /* -1 if none */
MLLM_API int32_t mllm_model_eos(const mllm_model *m); /* -1 if none */
/* 1 if the model's tokenizer puts BOS in front of a text (mllm_tokenize
   with add_special) and the model has one, else 0 (NULL too). */
MLLM_API int mllm_model_add_bos(const mllm_model *m);

/* ---- embeddings -------------------------------------------------------- */

/* One vector per text. Encoder models (BERT: all-MiniLM-L6-v2 and the like)
   pool their last hidden states as the folder's sentence-transformers
   config says (modules.json, <Pooling>/config.json: mean, cls or
   lasttoken; a Normalize module: L2-normalised) and truncate at its
   max_seq_length; decoder models (any model mllm generates with) pool the
   final-normed hidden states, mean by default, and are L2-normalised.
   Thread-safe on a shared model: each call builds its own graph and uses
   the model's thread count. */
typedef enum {
    MLLM_POOLING_DEFAULT = 0, /* the model's config; mean where it says nothing */
    MLLM_POOLING_MEAN = 1,    /* the average over every token (special ones too) */
    MLLM_POOLING_CLS = 2,     /* the first token's ([CLS]) */
    MLLM_POOLING_LAST = 3,    /* the last token's */
} mllm_pooling;

typedef struct {
    uint32_t struct_size; /* = sizeof(mllm_embed_params), set by the default */
    int pooling;          /* mllm_pooling */
    int normalize;        /* -1 (default): as the model says; 0: raw pooled vector; 1: L2-normalised */
    int32_t max_tokens;   /* 0 (default): the model's max_seq_length, else its n_ctx_train (decoders at most
                             MLLM_EMBED_MAX_TOKENS); longer texts are truncated (the final [SEP] kept) */
} mllm_embed_params;

#define MLLM_EMBED_MAX_TOKENS 8192

MLLM_API void mllm_embed_default_params(mllm_embed_params *p);
/* The size of the vectors mllm_embed writes (the hidden size). 0 for NULL. */
MLLM_API int32_t mllm_model_n_embd(const mllm_model *m);
/* 1 for a model that generates text (a decoder), 0 for an embedding-only
   model (sessions cannot be made from it) or NULL. */
MLLM_API int mllm_model_can_generate(const mllm_model *m);
/* The tokens mllm_embed would embed for this text: special tokens added
   ([CLS] ... [SEP], BOS) and truncated to the token limit, into
   (ids, cap, n_ids) as mllm_tokenize. Errors: as mllm_tokenize, and
   MLLM_ERR_INVALID_ARG (bad p). */
MLLM_API mllm_status mllm_embed_tokenize(const mllm_model *m, const char *text, size_t len,
                                         const mllm_embed_params *p, int32_t *ids, size_t cap, size_t *n_ids);
/* Embeds n token ids (as mllm_embed_tokenize gives them; nothing is added)
   into out: *n_out = mllm_model_n_embd floats. p may be NULL (defaults).
   Errors: MLLM_ERR_INVALID_ARG (m, out or n_out NULL, n 0 or over the token
   limit, an id outside [0, n_vocab), wrong p->struct_size, unknown pooling),
   MLLM_ERR_BUFFER_TOO_SMALL (cap < *n_out; out untouched), MLLM_ERR_NOMEM. */
MLLM_API mllm_status mllm_embed_ids(mllm_model *m, const int32_t *ids, size_t n, const mllm_embed_params *p,
                                    float *out, size_t cap, size_t *n_out);
/* mllm_embed_tokenize + mllm_embed_ids: the vector of `len` bytes of UTF-8
   (NULL allowed when len is 0). Errors: those of both. */
MLLM_API mllm_status mllm_embed(mllm_model *m, const char *text, size_t len, const mllm_embed_params *p,
                                float *out, size_t cap, size_t *n_out);

/* ---- speech to text --------------------------------------------------- */

/* Whisper models (a CTranslate2 folder: model.bin, config.json,
   tokenizer.json, what faster-whisper reads; or a Hugging Face
   openai/whisper-* folder) load with mllm_model_load like
   any other; such a model transcribes and neither generates nor embeds
   (mllm_session_new and mllm_embed return MLLM_ERR_UNSUPPORTED). Its
   decoder state lives in the model, so transcriptions of one model run one
   at a time (a call waits for the one before it); each uses the model's
   threads. */
typedef struct mllm_transcript mllm_transcript;
#define MLLM_TRANSCRIBE_MAX_BEAM 8 /* the most beams (beam_size) or candidates (best_of) */
struct mllm_transcript_segment_;
/* Receives each segment as it becomes final, in order (valid only during
   the call; its struct_size is the library's sizeof). Called for every
   segment with text, also those whose text is only spaces, which the
   transcript itself drops. */
typedef void (*mllm_transcript_segment_cb)(void *user, const struct mllm_transcript_segment_ *seg);

typedef struct {
    uint32_t struct_size;  /* = sizeof(mllm_transcribe_params), set by the default */
    const char *language;  /* NULL or "auto" (default): detected on the first 30 s by a
                              multilingual model (English-only models: English); else a code
                              ("en", "de"); English-only models take only "en" */
    const char *prompt;    /* NULL or UTF-8 text conditioning the first window (OpenAI's prompt,
                              faster-whisper's initial_prompt) */
    float temperature;     /* the first temperature (0 default: greedy); the fallback then raises
                              it by 0.2 up to 1.0 on repetitive or unlikely text */
    int beam_size;         /* 1 (default): greedy; 2..8: beam search at temperature 0 */
    int timestamps;        /* 1: segments with times from Whisper's timestamp tokens;
                              0 (default): one segment per 30-s window */
    int translate;         /* 1: translate to English (multilingual models); default 0 */
    /* Appended in ABI 8 (the ABI 7 size is still accepted: the defaults below). */
    int best_of;           /* candidates sampled at a temperature > 0 (default 5; 1..MLLM_TRANSCRIBE_MAX_BEAM) */
    float patience;        /* beam search: stop after beam_size * patience finished beams
                              (default 1; 0.1..10) */
    uint64_t seed;         /* of the sampling at temperatures > 0 (default 0) */
    int condition_on_previous; /* 1 (default): a window is prompted with the text before it */
    int fallback;          /* 1 (default): raise the temperature as above; 0: decode at
                              `temperature` only (then 0..2) */
    mllm_transcript_segment_cb on_segment; /* NULL (default), or called as each segment is final */
    void *on_segment_user;
    int (*abort)(void *user); /* NULL (default), or polled before each 30-s window and each
                                 temperature fallback of a window: nonzero
                                 stops the call with MLLM_ERR_CANCELLED */
    void *abort_user;
} mllm_transcribe_params;

MLLM_API void mllm_transcribe_default_params(mllm_transcribe_params *p);
/* 1 for a speech-to-text model (Whisper), 0 otherwise or NULL. */
MLLM_API int mllm_model_can_transcribe(const mllm_model *m);
/* 1 for a speech model that transcribes other languages than English
   (and translates), 0 for an English-only one, any other model or NULL. */
MLLM_API int mllm_model_multilingual(const mllm_model *m);
/* 1 when path holds what mllm_model_load opens as a speech-to-text model
   (names and first bytes only: it may still fail to load), else 0. */
MLLM_API int mllm_path_can_transcribe(const char *path);

/* What an audio file image is, as mllm_transcribe would decode it. */
typedef struct {
    uint32_t struct_size;   /* set by the caller: sizeof(mllm_audio_desc) */
    char format[16];        /* "WAV", "FLAC", "OGG", "MP3", NUL-terminated */
    int sample_rate;        /* of the file, Hz */
    int channels;           /* of the file */
    double duration;        /* seconds: the samples after resampling to 16 kHz */
} mllm_audio_desc;
/* Decodes the image (audio, len; label as mllm_transcribe) to describe it
   into *out (at most out->struct_size bytes). Errors: MLLM_ERR_INVALID_ARG
   (NULL argument, struct_size smaller than the first field's),
   MLLM_ERR_FORMAT, MLLM_ERR_UNSUPPORTED, MLLM_ERR_NOMEM as mllm_transcribe. */
MLLM_API mllm_status mllm_audio_probe(const void *audio, size_t len, const char *label, mllm_audio_desc *out);
/* Transcribes an audio file image in memory (WAV, FLAC, OGG, MP3: docs/audio.md;
   any rate, any channel count; not copied, only read during the call).
   label names the audio in error messages (may be NULL). p may be NULL (the
   defaults). On success *out owns the transcript (mllm_transcript_free).
   Errors: MLLM_ERR_INVALID_ARG (NULL argument, wrong p->struct_size, an
   unknown or unusable language, beam_size or temperature out of range),
   MLLM_ERR_UNSUPPORTED (not a speech model; translate on an English-only
   model; audio over a limit), MLLM_ERR_FORMAT (the audio cannot be decoded:
   mllm_last_error() says why), MLLM_ERR_NOMEM. */
MLLM_API mllm_status mllm_transcribe(mllm_model *m, const void *audio, size_t len, const char *label,
                                     const mllm_transcribe_params *p, mllm_transcript **out);
/* The whole text (the segments' texts joined, leading space trimmed); never NULL. */
MLLM_API const char *mllm_transcript_text(const mllm_transcript *t);
/* The language transcribed: its code ("en") and, when it was detected, the
   probability the model gave it (1 when it was given or the model is English-only). */
MLLM_API const char *mllm_transcript_language(const mllm_transcript *t, float *prob);
/* The audio's length in seconds. */
MLLM_API double mllm_transcript_duration(const mllm_transcript *t);
MLLM_API int mllm_transcript_n_segments(const mllm_transcript *t);

typedef struct mllm_transcript_segment_ {
    uint32_t struct_size;   /* set by the caller: sizeof(mllm_transcript_segment) */
    double start, end;      /* seconds */
    const char *text;       /* UTF-8 (as Whisper writes it: usually a leading space); owned by the transcript */
    const int32_t *tokens;  /* the segment's text and timestamp tokens; owned by the transcript */
    int n_tokens;
    int seek;               /* the window's start in 10-ms mel frames */
    float temperature, avg_logprob, compression_ratio, no_speech_prob;
} mllm_transcript_segment;
/* Segment i into *out (at most out->struct_size bytes are written).
   Errors: MLLM_ERR_INVALID_ARG (t or out NULL, i out of range, a struct_size
   smaller than the first fields'). */
MLLM_API mllm_status mllm_transcript_get_segment(const mllm_transcript *t, int i, mllm_transcript_segment *out);
/* Where a transcription's time went and how often it decoded again. */
typedef struct {
    uint32_t struct_size;   /* set by the caller: sizeof(mllm_transcript_stats) */
    double mel_ms, encoder_ms, decoder_ms; /* wall-clock time in each stage */
    int n_windows;          /* 30-s windows decoded */
    int n_fallbacks;        /* windows decoded again at a higher temperature */
} mllm_transcript_stats;
/* The counters into *out (at most out->struct_size bytes). Errors:
   MLLM_ERR_INVALID_ARG (t or out NULL, struct_size smaller than the first field's). */
MLLM_API mllm_status mllm_transcript_get_stats(const mllm_transcript *t, mllm_transcript_stats *out);
MLLM_API void mllm_transcript_free(mllm_transcript *t);
/* The English name of a Whisper language code ("de" -> "german"); NULL if unknown. */
MLLM_API const char *mllm_language_name(const char *code);

/* ---- tokens ----------------------------------------------------------- */

/* Tokenizes `len` bytes of UTF-8. add_special: add BOS (and the model's
   other automatic specials) as the model's tokenizer config asks.
   Special-token text such as "<|im_start|>" is parsed as the special token.
   text need not be NUL-terminated (NULL is allowed when len is 0).
   *n_ids receives the count, also on MLLM_ERR_BUFFER_TOO_SMALL: call once
   with ids NULL and cap 0 to size the array. Thread-safe (the model is not
   changed). Errors: MLLM_ERR_INVALID_ARG (m or n_ids NULL, text NULL with
   len > 0, ids NULL with cap > 0), MLLM_ERR_BUFFER_TOO_SMALL (cap < *n_ids;
   ids is left untouched), MLLM_ERR_NOMEM. */
MLLM_API mllm_status mllm_tokenize(const mllm_model *m, const char *text, size_t len,
                                   int add_special, int32_t *ids, size_t cap, size_t *n_ids);
/* The bytes of one token (may be part of a UTF-8 character; SentencePiece
   "\xe2\x96\x81" is a space; control tokens give their text, "<s>"), into
   buf, not NUL-terminated. *n (n may be NULL) receives the length, also on
   MLLM_ERR_BUFFER_TOO_SMALL. To decode several tokens, concatenate their
   bytes and decode UTF-8 once at the end. Thread-safe.
   Errors: MLLM_ERR_INVALID_ARG (m NULL, id outside [0, n_vocab)),
   MLLM_ERR_BUFFER_TOO_SMALL (buf NULL or cap < length). */
/* Decodes token ids to UTF-8 text into (buf, cap, needed): pieces joined,
   the SentencePiece dummy-prefix space of the first token dropped, and
   control tokens (BOS, EOS, <|im_end|> ...) skipped when skip_special is
   non-zero. Errors: MLLM_ERR_INVALID_ARG (NULL model, an id out of range),
   MLLM_ERR_BUFFER_TOO_SMALL. Thread-safe on a shared model. */
MLLM_API mllm_status mllm_detokenize(const mllm_model *m, const int32_t *ids, size_t n, int skip_special,
                                     char *buf, size_t cap, size_t *needed);
MLLM_API mllm_status mllm_token_to_piece(const mllm_model *m, int32_t id, char *buf,
                                         size_t cap, size_t *n);

/* ---- sessions and generation ----------------------------------------- */

typedef struct {
    uint32_t struct_size;
    int n_ctx;      /* KV cache length in tokens; 0 = min(model's, 4096) */
    int n_threads;  /* 0 = the model's load setting */
    /* Added after n_threads (a caller built against the shorter struct
       passes its smaller struct_size and gets the defaults): */
    int kv_type;       /* MLLM_KV_CONTIGUOUS (0, default): one f32 cache of n_ctx positions;
                          MLLM_KV_PAGED_F32 / _F16 / _Q8: a pool of blocks (src/kv) with K/V in
                          that type (q8: int8 per token and head with an f32 scale) */
    int kv_block_size; /* paged: token positions per block; 0 = 16 */
} mllm_session_params;

#define MLLM_KV_CONTIGUOUS 0
#define MLLM_KV_PAGED_F32 1
#define MLLM_KV_PAGED_F16 2
#define MLLM_KV_PAGED_Q8 3

/* Fills every field with its default and struct_size with the library's
   sizeof(mllm_session_params). p must not be NULL. Thread-safe. */
MLLM_API void mllm_session_default_params(mllm_session_params *p);
/* A new, empty session on model m: allocates the KV cache
   (n_layer * 2 * n_ctx * n_head_kv * head_dim floats) and starts the
   session's own worker threads. p may be NULL (the defaults). m is only
   read and must outlive the session; any number of sessions may share one
   model, each used from its own thread. A paged cache (kv_type) holds
   ceil(n_ctx / kv_block_size) blocks of kv_block_size positions, each
   position mllm_session_kv_token_bytes() bytes.
   Errors: MLLM_ERR_INVALID_ARG (m or out NULL, wrong p->struct_size,
   n_ctx outside [1, 1048576], kv_type or kv_block_size out of range),
   MLLM_ERR_NOMEM (KV cache, threads, graphs). */
MLLM_API mllm_status mllm_session_new(mllm_model *m, const mllm_session_params *p,
                                      mllm_session **out);
/* Bytes of KV cache one token position takes in this session (all layers,
   K and V, q8 scales included). 0 for NULL. */
MLLM_API size_t mllm_session_kv_token_bytes(const mllm_session *s);
/* Frees the session, its KV cache and its threads. No call on s may be
   running (not even on another thread). NULL: no-op. */
MLLM_API void mllm_session_free(mllm_session *s);
/* Forgets all tokens and zeroes the timings (the KV cache memory is
   reused). NULL: no-op. */
MLLM_API void mllm_session_reset(mllm_session *s);

/* The most alternatives mllm_on_logprobs reports per token (OpenAI's limit). */
#define MLLM_MAX_TOP_LOGPROBS 20

/* Called once per sampled token with its log-probability and the n_top
   most likely tokens (ids and log-probabilities, most likely first; ties
   to the lower id). The probabilities are the model's own distribution:
   log-softmax of the raw logits at temperature 1, before penalties, biases,
   top-k/top-p/min-p and temperature, so they do not depend on the sampling
   settings. The arrays are valid only during the call. Same thread and
   re-entrancy rules as mllm_on_token. */
typedef void (*mllm_on_logprobs)(void *user, int32_t id, float logprob, const int32_t *top_ids,
                                 const float *top_logprobs, int n_top);

typedef struct {
    uint32_t struct_size;
    float temperature;    /* 0 = greedy */
    float top_p;          /* 1 = off */
    float min_p;          /* 0 = off */
    float repeat_penalty; /* 1 = off */
    int top_k;            /* 0 = off */
    int repeat_last_n;    /* tokens the penalty looks back over */
    int max_tokens;       /* stop after this many generated tokens */
    uint64_t seed;        /* same seed, same output */
    int ignore_eos;       /* 1: do not stop at EOS */
    /* The fields below were appended after ABI 2's first release: the
       struct_size of that release (the sizeof of the struct that ended at
       ignore_eos) is still accepted, and they then take their defaults. */
    float presence_penalty;  /* 0 = off; see mllm_sampling_default */
    float frequency_penalty; /* 0 = off */
    const int32_t *logit_bias_ids; /* (n_logit_bias) token ids; read during generation */
    const float *logit_bias;       /* (n_logit_bias) added to those ids' logits */
    int n_logit_bias;
    /* Per-token log-probabilities: when on_logprobs is non-NULL it is called
       for each sampled token, right before mllm_on_token for it. */
    mllm_on_logprobs on_logprobs;
    void *logprobs_user;     /* passed to on_logprobs */
    int n_top_logprobs;      /* alternatives per token, 0..MLLM_MAX_TOP_LOGPROBS */
    /* Appended in ABI 4 (the ABI 3 size is still accepted: NULL then).
       Constrained decoding: every generated token keeps the text a prefix
       of what the grammar matches, and end-of-generation tokens are allowed
       only where the text is complete; generation stops when nothing may
       follow. Generation starts from the grammar's current state and
       advances it (so a generation continued after a context shift goes
       on where it was); mllm_grammar_reset() starts over. Not owned; used
       by one generation at a time. NULL: unconstrained. */
    mllm_grammar *grammar;
} mllm_sampling;

/* Fills p with the defaults and struct_size with the library's
   sizeof(mllm_sampling): temperature 0.8, top_p 0.95, min_p 0.05,
   repeat_penalty 1, top_k 40, repeat_last_n 64, max_tokens 128, seed 0,
   ignore_eos 0, no presence/frequency penalty, no logit bias, no
   logprobs. p must not be NULL. Thread-safe. Values are checked when
   generation starts: temperature >= 0, 0 < top_p <= 1, 0 <= min_p <= 1,
   repeat_penalty > 0, top_k >= 0, repeat_last_n >= 0, presence and
   frequency penalties and biases finite, logit_bias_ids in [0, n_vocab)
   (and the arrays non-NULL when n_logit_bias > 0), n_top_logprobs in
   [0, MLLM_MAX_TOP_LOGPROBS], no grammar.
   Penalties follow llama.cpp: over the distinct tokens among the last
   repeat_last_n (prompt and generated), logit is divided (positive) or
   multiplied (negative) by repeat_penalty, then
   logit -= frequency_penalty * count + presence_penalty; the biases are
   added after that. */
MLLM_API void mllm_sampling_default(mllm_sampling *p);

/* Called for every generated token with its bytes (pieces are held back
   until they form whole UTF-8 characters); return non-zero to stop.
   It runs synchronously on the thread that called mllm_generate (or
   mllm_generate_ids, mllm_chat). `piece` is not NUL-terminated and is only
   valid during the call; len may be 0 (control tokens such as
   "<|im_end|>" are not text). id is -1 when the library flushes bytes it
   held back (at the end of generation, or around an oversized piece).
   The callback must not call mllm_* functions on the same session, except
   mllm_session_cancel() and the getters (mllm_session_n_past ...). */
typedef int (*mllm_on_token)(void *user, int32_t id, const char *piece, size_t len);

/* Feeds tokens (prefill) without sampling: appends ids[0..n) after the
   tokens the session holds; mllm_session_logits() then gives the last
   one's logits. n == 0 does nothing. Errors: MLLM_ERR_INVALID_ARG (s NULL,
   ids NULL with n > 0, an id outside [0, n_vocab): nothing evaluated),
   MLLM_ERR_CONTEXT_FULL (n_past + n > n_ctx: nothing evaluated),
   MLLM_ERR_NOMEM (tokens before the failing 512-token chunk stay). */
MLLM_API mllm_status mllm_session_eval(mllm_session *s, const int32_t *ids, size_t n);
/* The most tokens one mllm_session_eval_logits call evaluates. */
#define MLLM_EVAL_LOGITS_MAX 512
/* Evaluates ids[0..n) after the tokens the session holds, as
   mllm_session_eval, and writes the logits of tokens [first_out, n) to out:
   (n - first_out) rows of n_vocab floats (row j: the distribution of the
   token after ids[first_out + j]). What perplexity scores. Errors: as
   mllm_session_eval; MLLM_ERR_INVALID_ARG also for out NULL, n outside
   [1, MLLM_EVAL_LOGITS_MAX], first_out outside [0, n), a draft session
   whose logits are cut to a smaller vocabulary. */
MLLM_API mllm_status mllm_session_eval_logits(mllm_session *s, const int32_t *ids, int n, int first_out, float *out);
/* Makes the session hold exactly ids[0..n): the longest prefix shared with
   what the KV cache already holds is kept (not recomputed) and only the
   rest is evaluated. *n_reused (may be NULL) receives the number of tokens
   kept. This is how multi-turn chat prefills only the new tokens. The
   last token is always evaluated again so that the logits are its own.
   Errors: as mllm_session_eval; MLLM_ERR_CONTEXT_FULL when n > n_ctx (the
   session then still holds what it held). After another error the
   session holds a prefix of ids. */
MLLM_API mllm_status mllm_session_sync(mllm_session *s, const int32_t *ids, size_t n, size_t *n_reused);
/* Makes room in a full context (llama.cpp's context shift): keeps the
   first n_keep tokens (a system prompt; at most half of those held), drops
   the oldest half of the rest, re-evaluates what follows the cut and then
   `pending` (a token sampled from the last logits but not yet evaluated,
   as mllm_generate_ids leaves one when it returns MLLM_ERR_CONTEXT_FULL;
   -1 for none). The logits are then those of the last token, ready for
   mllm_generate_ids(s, NULL, 0, ...) to go on. Errors: as
   mllm_session_sync; MLLM_ERR_INVALID_ARG (s NULL, pending out of range). */
MLLM_API mllm_status mllm_session_shift(mllm_session *s, size_t n_keep, int32_t pending);
/* The tokens the session holds (prompt and generated), in order; *n
   (n may be NULL) receives their count (= mllm_session_n_past()). The
   array is owned by the session and valid, with that count, until the
   next call that changes the session. NULL session: NULL and *n = 0. */
MLLM_API const int32_t *mllm_session_tokens(const mllm_session *s, size_t *n);
/* The KV cache length in tokens; 0 for a NULL session. */
MLLM_API int mllm_session_n_ctx(const mllm_session *s);
/* Logits of the last evaluated position (n_vocab floats, owned by the
   session, valid until the next call on it; their values mean nothing
   before the first evaluation). NULL for a NULL session. */
MLLM_API const float *mllm_session_logits(const mllm_session *s);
/* The number of tokens in the KV cache; 0 for a NULL session. */
MLLM_API int mllm_session_n_past(const mllm_session *s);

/* Tokenizes `prompt` (NUL-terminated UTF-8; BOS is added if the model
   wants one and the session is empty), prefills it after the tokens the
   session already holds and samples up to sp->max_tokens tokens, calling
   cb (may be NULL) for each. Returns MLLM_OK when the model ends the text
   (EOS or another end-of-generation token, which is not delivered; unless
   sp->ignore_eos), after max_tokens tokens (max_tokens <= 0: prefill only),
   or when cb returns non-zero, or when sp->grammar is complete and nothing
   may follow (with a grammar an end token, allowed only where its text is
   complete, always ends the text). The session then holds the prompt and the
   delivered tokens (except the one on which cb asked to stop), so a later
   call continues the text; mllm_session_reset() starts afresh.
   Blocking; one call per session at a time; cancel it from another thread
   with mllm_session_cancel().
   Errors: MLLM_ERR_INVALID_ARG (s, prompt or sp NULL, sp->struct_size
   neither sizeof(mllm_sampling) nor that of ABI 3 or of the first release,
   sampling values out of range, empty prompt on an empty session),
   MLLM_ERR_CONTEXT_FULL (the prompt does not fit: nothing is evaluated; or
   the cache filled up while generating: the tokens delivered so far stay),
   MLLM_ERR_UNSUPPORTED (sp->grammar: no token of the vocabulary continues
   its text, or it is too ambiguous to follow: the message names the
   limit), MLLM_ERR_CANCELLED, MLLM_ERR_NOMEM. */
MLLM_API mllm_status mllm_generate(mllm_session *s, const char *prompt, const mllm_sampling *sp,
                                   mllm_on_token cb, void *user);
/* Same as mllm_generate, from token ids (added as given: no BOS is put
   in). n == 0 continues from the tokens the session holds. Errors: as
   mllm_generate; MLLM_ERR_INVALID_ARG also for ids NULL with n > 0 and
   for an id outside [0, n_vocab). */
MLLM_API mllm_status mllm_generate_ids(mllm_session *s, const int32_t *ids, size_t n,
                                       const mllm_sampling *sp, mllm_on_token cb, void *user);
/* Renders a conversation with the model's chat template. `conversation` is
   JSON: either an array of OpenAI-style messages
   ([{"role": "user", "content": "Hi"}]) or an object whose keys become the
   template's variables ({"messages": [...], "tools": [...],
   "enable_thinking": false}). add_generation_prompt is true unless the
   object sets it; bos_token / eos_token default to the model's. A template
   that calls strftime_now() (Llama 3.x prints today's date) reads the clock,
   or SOURCE_DATE_EPOCH when it is set (seconds since 1970, dated in UTC;
   a malformed value is MLLM_ERR_INVALID_ARG), so a render is reproducible
   on any day. mllm_chat and the server render the same way. The text
   goes to (buf, cap, needed). Errors: MLLM_ERR_UNSUPPORTED (the model has
   no template), MLLM_ERR_FORMAT (template syntax), MLLM_ERR_INVALID_ARG
   (bad JSON, template runtime error), MLLM_ERR_BUFFER_TOO_SMALL. */
MLLM_API mllm_status mllm_chat_render(const mllm_model *m, const char *conversation, char *buf,
                                      size_t cap, size_t *needed);
/* Renders the conversation and tokenizes it as mllm_chat does, into
   (ids, cap, n_ids): the template's own markup becomes special tokens, but
   text that came from the conversation never does (a message that says
   "<|im_end|>" is those characters, not the end of its turn, as in
   transformers and llama-server). Tokenizing mllm_chat_render's text with
   mllm_tokenize would parse such text as special tokens: use this for
   chat prompts. Errors as mllm_chat_render, and MLLM_ERR_BUFFER_TOO_SMALL
   (*n_ids says how many are needed). Thread-safe. */
MLLM_API mllm_status mllm_chat_tokenize(const mllm_model *m, const char *conversation, int32_t *ids,
                                        size_t cap, size_t *n_ids);
/* Renders the conversation, syncs the session to its tokens (tokenized as
   mllm_chat_tokenize does; only tokens after the prefix already in the KV
   cache are computed) and generates the reply like mllm_generate. n_reused
   (may be NULL) receives the number of prompt tokens that were reused from
   the cache. */
MLLM_API mllm_status mllm_chat(mllm_session *s, const char *conversation, const mllm_sampling *sp,
                               mllm_on_token cb, void *user, size_t *n_reused);

/* A chat template rendered from files alone, without loading a model
   (`mllm template`): the template comes from chat_template (a .jinja
   file, a tokenizer_config.json, or a built-in name), else from model (a
   GGUF file, a Hugging Face folder, or a tokenizer_config.json: only its
   template and tokens are read, so a tokenizer folder without weights is
   enough); model's bos_token / eos_token (or those of a
   tokenizer_config.json given as chat_template) fill the variables the
   context lacks. */
typedef struct {
    uint32_t struct_size;      /* = sizeof(mllm_chat_template_params), set by the default */
    const char *model;         /* NULL (default) or a model path */
    const char *chat_template; /* NULL (default) or a file or built-in name; with model, it replaces
                                  the model's template (a model without one is then accepted) */
} mllm_chat_template_params;
MLLM_API void mllm_chat_template_default_params(mllm_chat_template_params *p);
/* Renders the template with the variables of the JSON object context (len
   bytes; SIZE_MAX: NUL-terminated), as mllm_chat_render does, and passes
   the whole text to sink (NUL-terminated at len) once. Errors (the message
   begins with what failed: "cannot read the model's template: ...",
   "cannot compile the template: ...", "cannot render: ..."):
   MLLM_ERR_INVALID_ARG (NULL argument, wrong struct_size, neither model
   nor chat_template, a chat_template that is neither a file nor a
   built-in name, bad context JSON, a template runtime error),
   MLLM_ERR_IO / MLLM_ERR_FORMAT (a file that cannot be read, or has no
   template), MLLM_ERR_FORMAT (template syntax), MLLM_ERR_NOMEM. */
MLLM_API mllm_status mllm_chat_template_render(const mllm_chat_template_params *p, const char *context, size_t len,
                                               mllm_text_sink sink, void *user);
/* The source of a template shipped with mllm ("chatml", "llama3", ...; a
   static string), NULL if name is not one. */
MLLM_API const char *mllm_chat_template_builtin(const char *name);
/* The built-in names, comma separated (a static string). */
MLLM_API const char *mllm_chat_template_builtin_names(void);

/* ---- images ------------------------------------------------------------ */

/* The largest image file the library decodes (bytes). */
#define MLLM_IMAGE_MAX_FILE_BYTES ((size_t)256 << 20)

/* Prefills a conversation whose user messages carry images, as mllm_chat
   does its prompt (render, tokenize, sync: only tokens after the prefix
   the KV cache shares are computed), without generating: go on with
   mllm_generate_ids(s, NULL, 0, sp, cb, user).
   An image sits in a user message's content parts as {"type": "image"}
   (the order of the parts is where it goes); the model's chat template
   places it (Qwen2.5-VL's: <|vision_start|><|image_pad|><|vision_end|>;
   SmolVLM / Idefics3's: <image>, expanded to the tile markers as
   transformers' processor does),
   and images[k] (the encoded file: PNG, JPEG, BMP, GIF or WebP, image_lens[k]
   bytes, only read during the call) is the k-th image the rendered
   conversation places. Each image is decoded, resized and encoded by the
   model's vision tower (a Hugging Face folder's own, or
   mllm_load_params.mmproj) into its token count of embeddings, which
   stand in for its expanded <|image_pad|> tokens; M-RoPE positions as
   transformers' get_rope_index. The model keeps the embeddings of recent
   images (keyed by the file's bytes, bounded: docs/vision.md), shared by
   its sessions, so a later turn about the same image does not decode or
   encode it again, and a session whose cache holds the same image at the
   same place reuses it. mllm_session_timings counts images, cache hits,
   image tokens and the decode and vision-tower times.
   n_images may be 0 (then it is mllm_chat's prefill). n_reused (may be
   NULL) receives the prompt tokens reused from the KV cache.
   Errors: MLLM_ERR_INVALID_ARG (NULL argument, an empty image, a count
   that is not the conversation's, more than 64 images), MLLM_ERR_FORMAT
   (an image that is not one of the four formats, truncated or corrupt;
   the message names "image K"), MLLM_ERR_UNSUPPORTED (the model takes no
   images; an image over the pixel limits; a paged KV session, kv_type),
   MLLM_ERR_CONTEXT_FULL, MLLM_ERR_NOMEM, and the errors of
   mllm_chat_render. A session holding an image cannot be context-shifted
   past it (mllm_session_shift / sync: MLLM_ERR_UNSUPPORTED). */
/* 1 if m takes images (it has a vision tower: a Hugging Face folder's own,
   or mllm_load_params.mmproj), opening the tower on the first call; else 0,
   with mllm_last_error() saying why. Thread-safe. */
MLLM_API int mllm_model_takes_images(mllm_model *m);
MLLM_API mllm_status mllm_chat_prefill(mllm_session *s, const char *conversation, const void *const *images,
                                       const size_t *image_lens, int n_images, size_t *n_reused);

/* Asks a running generation on s to stop; it returns MLLM_ERR_CANCELLED
   before its next token. Thread-safe: the one call that may be made from
   any thread while another thread uses s (s must stay alive meanwhile).
   A generation clears the request when it starts, so a cancel that comes
   before mllm_generate begins has no effect; the prompt's prefill is not
   interrupted. NULL: no-op. */
MLLM_API void mllm_session_cancel(mllm_session *s);

/* ---- hiding the reasoning ---------------------------------------------- */

/* Hides (or passes) the <think>...</think> part of a streamed reply (Qwen3
   and other reasoning models). The reply arrives in pieces that may split a
   tag anywhere; text that could be the start of a tag is held back until
   it is known. One filter per reply; a filter is used by one thread. */
typedef struct mllm_think_filter mllm_think_filter;
/* show: 1 passes the thinking part through (tags included), 0 hides it.
   Errors: MLLM_ERR_INVALID_ARG (out NULL), MLLM_ERR_NOMEM. */
MLLM_API mllm_status mllm_think_filter_new(int show, mllm_think_filter **out);
/* reply[0..len) is the whole reply so far (it only grows between calls).
   Calls sink with the bytes that became visible; final: the reply is
   complete, the bytes held back are flushed. f NULL: no-op. */
MLLM_API void mllm_think_filter_feed(mllm_think_filter *f, const char *reply, size_t len, int final,
                                     mllm_text_sink sink, void *user);
MLLM_API void mllm_think_filter_free(mllm_think_filter *f);

/* ---- speculative decoding --------------------------------------------- */

/* Decoding is bound by memory bandwidth: checking several proposed tokens
   in one forward pass costs little more than one token. A proposer guesses
   the next tokens (prompt lookup: the continuation of the latest earlier
   occurrence of the last 2-4 tokens; a draft model: a small model with the
   same vocabulary), the model evaluates them in one batch and keeps those
   it would have produced. Greedy output is byte-identical to decoding
   without speculation (a token's logits do not depend on the batch); with
   temperature > 0 proposals are accepted with probability min(1, p/q) and
   a rejected one is resampled from norm(max(p - q, 0)) (p, q: the model's
   and the proposer's distributions after penalties, top-k, top-p, min-p
   and temperature), so the text has the model's distribution exactly.
   Every session speculates by default with prompt lookup (MLLM_SPEC_AUTO):
   a proposer is turned off for a while in a generation where it does not
   pay; docs/speculative.md gives the rule. A grammar-constrained
   generation does not speculate. */
typedef enum {
    MLLM_SPEC_AUTO = 0,   /* speculate where the measured speed-up says it pays */
    MLLM_SPEC_OFF = 1,    /* never: one token per forward pass */
    MLLM_SPEC_ALWAYS = 2, /* whenever a proposer has tokens (for tests and measurements) */
} mllm_spec_mode;

#define MLLM_SPEC_MAX_DRAFT 16

typedef struct {
    uint32_t struct_size; /* = sizeof(mllm_speculative_params), set by the default */
    int mode;             /* mllm_spec_mode (default MLLM_SPEC_AUTO) */
    mllm_model *draft;    /* a draft model (NULL, the default: none); must outlive the session */
    int lookup;           /* 1 (default): prompt lookup proposals; 0: off */
    int n_draft_max;      /* most tokens proposed per pass, 1..MLLM_SPEC_MAX_DRAFT (default 8); the
                             number used adapts to how many were accepted */
    int ngram_min, ngram_max; /* lookup: n-gram lengths tried, longest first, 1..8 (default 2, 4) */
    float draft_p_min;    /* the draft stops proposing below this probability of its token (default
                             0.1; above it, in MLLM_SPEC_AUTO, the proposal's cost decides) */
} mllm_speculative_params;

/* Fills every field with its default. p must not be NULL. Thread-safe. */
MLLM_API void mllm_speculative_default_params(mllm_speculative_params *p);
/* Sets how s speculates (p NULL: the defaults). With p->draft, a session on
   the draft model (same context length, sharing s's worker threads) is
   created and owned by s; it replaces a previous one. The vocabularies
   must match: the same size (the model's n_vocab may differ by at most 128
   padding rows), the same text for every token id, the same BOS and EOS.
   Errors: MLLM_ERR_INVALID_ARG (s NULL, wrong struct_size, a value out of
   range, a draft that cannot generate or whose vocabulary differs: the
   message names the first differing token), MLLM_ERR_NOMEM. On an error
   s keeps its previous setting. */
MLLM_API mllm_status mllm_session_set_speculative(mllm_session *s, const mllm_speculative_params *p);

/* Counters since mllm_session_new() or the last mllm_session_reset(). */
typedef struct {
    uint32_t struct_size;  /* set by the caller: sizeof(mllm_speculative_stats) */
    int n_plain;           /* tokens evaluated one per pass */
    int n_lookup_passes;   /* passes that checked prompt-lookup proposals */
    int n_lookup_drafted;  /* tokens proposed by prompt lookup */
    int n_lookup_accepted; /* of which accepted */
    int n_draft_passes;    /* the same for the draft model */
    int n_draft_drafted;
    int n_draft_accepted;
    int n_turned_off;      /* times a proposer was turned off for not paying (MLLM_SPEC_AUTO) */
    /* Appended in ABI 7. */
    int n_draft_evals;     /* forward passes of the draft model while generating: its proposals and
                              catching up with the tokens kept (its prefill of the prompt not counted) */
} mllm_speculative_stats;
/* Copies the counters into *out, at most out->struct_size bytes. s or out
   NULL: no-op. */
MLLM_API void mllm_session_speculative_stats(const mllm_session *s, mllm_speculative_stats *out);

/* ---- grammars (constrained decoding) ---------------------------------- */

/* Compiles a GBNF grammar as llama.cpp writes it (rules `name ::= ...`,
   alternatives |, "literals", [classes] with ranges and ^, ., ( ),
   * + ? {m} {m,} {m,n}, # comments; see docs/grammar.md), starting at the
   rule named root (NULL: "root"). The grammar is independent of any model:
   the same one may constrain any session (but one generation at a time).
   On success *out owns it; free it with mllm_grammar_free().
   Errors: MLLM_ERR_INVALID_ARG (gbnf or out NULL; a bad grammar, with
   mllm_last_error() = "grammar: line L, column C: what"; an undefined
   rule, no root, left recursion, a rule that never finishes, a limit:
   the message names it), MLLM_ERR_NOMEM. Thread-safe. */
MLLM_API mllm_status mllm_grammar_new(const char *gbnf, const char *root, mllm_grammar **out);
/* Compiles a JSON Schema (JSON text, NUL-terminated) to a grammar whose
   texts are JSON documents that validate against it (docs/grammar.md
   lists the supported keywords; others that constrain a value are
   refused, never ignored). "{}" or "true": any JSON value;
   {"type": "object"}: any JSON object (OpenAI's json_object).
   Errors: MLLM_ERR_INVALID_ARG (bad JSON; unsupported keyword, bad $ref,
   a limit: mllm_last_error() = "json schema: at #/path: what"),
   MLLM_ERR_NOMEM. Thread-safe. */
MLLM_API mllm_status mllm_grammar_from_json_schema(const char *schema, mllm_grammar **out);
/* The GBNF that mllm_grammar_from_json_schema compiles for a schema,
   NUL-terminated, into (buf, cap, needed) (buf may be NULL with cap 0).
   Errors as mllm_grammar_from_json_schema, and MLLM_ERR_BUFFER_TOO_SMALL. */
MLLM_API mllm_status mllm_json_schema_to_gbnf(const char *schema, char *buf, size_t cap, size_t *needed);
/* Back to the start of the grammar (nothing matched). NULL: no-op. */
MLLM_API void mllm_grammar_reset(mllm_grammar *g);
/* Advances the grammar by len bytes of text, as if they had been
   generated (a prefix the caller wrote itself). Errors:
   MLLM_ERR_INVALID_ARG (g NULL, or the grammar rejects the text: nothing
   is consumed then), MLLM_ERR_UNSUPPORTED (too ambiguous: a matcher limit
   is named). */
MLLM_API mllm_status mllm_grammar_accept(mllm_grammar *g, const char *text, size_t len);
/* 1 if the text so far is a complete match of the grammar, else 0. */
MLLM_API int mllm_grammar_complete(const mllm_grammar *g);
/* n random texts the grammar matches, each to sink (NUL-terminated at
   len), drawn from a fixed vocabulary of bytes and JSON-like pieces by the
   mask walk that constrains generation (to test a grammar or a schema:
   `mllm grammar --sample`). The same seed gives the same texts. g is reset
   before each text and left at the end of the last. Errors:
   MLLM_ERR_INVALID_ARG (g or sink NULL, n < 0), MLLM_ERR_UNSUPPORTED (no
   text of at most 20000 bytes came out of 20 draws: the message says so,
   and why the last draw stopped), MLLM_ERR_NOMEM. */
MLLM_API mllm_status mllm_grammar_sample(mllm_grammar *g, int n, uint64_t seed, mllm_text_sink sink, void *user);
MLLM_API void mllm_grammar_free(mllm_grammar *g);

/* Counters since mllm_session_new() or the last mllm_session_reset(). */
typedef struct {
    uint32_t struct_size; /* set by the caller: sizeof(mllm_timings) */
    double load_ms;   /* the model's load time */
    int n_prompt;     /* prompt tokens evaluated */
    double prompt_ms;
    int n_gen;        /* tokens sampled and delivered */
    double gen_ms;
    /* Appended in ABI 4 (a shorter struct_size gets the fields above). */
    int n_grammar;      /* full token masks computed for a grammar (when the
                           sampled token did not fit it) */
    double grammar_ms;  /* time spent checking tokens against the grammar and
                           computing masks (part of gen_ms) */
    /* Appended in ABI 5 (images, mllm_chat_prefill). */
    int n_images;         /* images in prompts evaluated */
    int n_images_cached;  /* of those, embeddings taken from the model's cache
                             (not decoded nor encoded again) */
    int n_image_tokens;   /* prompt tokens that were image embeddings */
    double image_decode_ms; /* decoding + preprocessing images */
    double vision_ms;     /* the vision tower */
} mllm_timings;
/* Copies the session's counters into *out, at most out->struct_size bytes
   (so callers built against an older, shorter struct keep working). Same
   thread rules as the other session calls. s or out NULL: no-op. */
MLLM_API void mllm_session_timings(const mllm_session *s, mllm_timings *out);

/* ---- Op plugins ------------------------------------------------------
   A shared object loaded at run time (mllm_plugin_load, `mllm run
   --plugin FILE`, the MLLM_PLUGINS environment variable) that adds ops to
   the graph. It exports
       mllm_status mllm_plugin_init(const mllm_plugin_host *host);
   which checks host->abi_version and registers its ops with
   host->register_op (the plugin links nothing of mllm). An op has a name,
   a shape rule, a CPU kernel over contiguous f32 tensors and, optionally,
   an OpenCL C kernel that the opencl backend runs when the scheduler puts
   the node there (no CUDA kernels yet: under --backend cuda plugin ops
   run on the CPU). Models do not call plugin ops by themselves: the graph
   API does (graph/graph.h, mllm_op_custom). examples/plugin/ holds a
   complete plugin. */
#define MLLM_PLUGIN_ABI_VERSION 1

typedef struct {
    int64_t ne[4]; /* elements per dimension, ne[0] fastest; unused ones 1 */
    float *data;   /* contiguous f32 */
} mllm_op_tensor;

typedef struct {
    uint32_t struct_size; /* sizeof(mllm_op_def) as the plugin was built */
    uint32_t abi_version; /* MLLM_PLUGIN_ABI_VERSION as the plugin was built */
    const char *name;     /* unique; letters, digits, '_' and '.'; under 64 bytes */
    int n_inputs;         /* 1 to 4 */
    /* The output's shape from the inputs': 0, or non-zero when they do not fit. */
    int (*shape)(const mllm_op_tensor *in, int n_in, int64_t out_ne[4], void *user);
    /* Thread ith of nth computes its share of out (all nth are called,
       each once per execution, with the same out and in). */
    void (*cpu_kernel)(const mllm_op_tensor *out, const mllm_op_tensor *in, int n_in, int ith, int nth,
                       void *user);
    void *user; /* passed to both */
    /* Optional, read only when struct_size covers them (a plugin built
       against an older mllm.h has none: its ops run on the CPU). An OpenCL
       C program and the name of its kernel, built once per device on first
       use. It is run over a 1-D range of one work-item per output element
       (ne[0] * ne[1] * ne[2] * ne[3] items, no local size) with the
       arguments: the output (__global float *), the n_inputs inputs
       (__global const float *), then the long4 ne of the output and of
       each input. Both NULL, or both set. */
    const char *opencl_source;
    const char *opencl_kernel;
} mllm_op_def;

typedef struct {
    uint32_t struct_size; /* sizeof(mllm_plugin_host) of the library */
    uint32_t abi_version; /* MLLM_PLUGIN_ABI_VERSION of the library */
    mllm_status (*register_op)(const mllm_op_def *def);
} mllm_plugin_host;

typedef mllm_status (*mllm_plugin_init_fn)(const mllm_plugin_host *host);

/* Registers an op (def is copied; name and user must stay valid).
   Errors: MLLM_ERR_INVALID_ARG (NULL, a bad or taken name, n_inputs out of
   range, a missing function, only one of the OpenCL fields),
   MLLM_ERR_UNSUPPORTED (def->abi_version is not this library's, or
   def->struct_size smaller than ABI 1's first mllm_op_def, up to user),
   MLLM_ERR_NOMEM (the table of ops is full). */
MLLM_API mllm_status mllm_op_register(const mllm_op_def *def);
/* dlopen()s path and runs its mllm_plugin_init. Errors: MLLM_ERR_IO (it
   cannot be loaded), MLLM_ERR_FORMAT (no mllm_plugin_init), or what
   mllm_plugin_init or mllm_op_register returned (an ABI mismatch is
   MLLM_ERR_UNSUPPORTED, with both versions in mllm_last_error()).
   MLLM_ERR_UNSUPPORTED in builds without dlopen (wasm32-wasi). */
MLLM_API mllm_status mllm_plugin_load(const char *path);
/* Loads every path of MLLM_PLUGINS (separated by ':'); MLLM_OK when unset. */
MLLM_API mllm_status mllm_plugins_load_env(void);

#ifdef __cplusplus
}
#endif

/* The topics of the API that only some programs need; each is part of
   this one entry point (include mllm/mllm.h, never them alone). */
#include "mllm_info.h"   /* architectures, tensors, graphs, files read without loading */
#include "mllm_tools.h"  /* convert, quantize, synthetic models */
#include "mllm_server.h" /* the OpenAI-compatible HTTP server */
#endif
