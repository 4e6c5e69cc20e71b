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
/* Bumped whenever a struct layout or a signature below changes. */
#define MLLM_ABI_VERSION 1

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

/* "0.1.0" */
MLLM_API const char *mllm_version(void);
MLLM_API int mllm_abi_version(void);
/* A static string naming the status; never NULL. */
MLLM_API const char *mllm_status_str(mllm_status s);
/* The detail of the last error on this thread; never NULL, "" if none. */
MLLM_API const char *mllm_last_error(void);

/* ---- loading ---------------------------------------------------------- */

typedef struct {
    uint32_t struct_size;  /* = sizeof(mllm_load_params), set by the default */
    int n_threads;         /* worker threads for compute; 0 = all cores */
    int use_mmap;          /* 1 (default): weights are mmap'd, never copied */
    const char *tokenizer_path; /* llama2.c checkpoints: the tokenizer .bin */
} mllm_load_params;

MLLM_API void mllm_load_default_params(mllm_load_params *p);

/* Loads a GGUF file, a Hugging Face folder (config.json + *.safetensors +
   tokenizer.json) or a llama2.c checkpoint (.bin, with p->tokenizer_path).
   On success *out owns the model; free it with mllm_model_free().
   Errors: MLLM_ERR_IO (cannot open/map), MLLM_ERR_FORMAT (truncated or
   corrupt), MLLM_ERR_UNSUPPORTED (architecture or dtype), MLLM_ERR_NOMEM. */
MLLM_API mllm_status mllm_model_load(const char *path, const mllm_load_params *p,
                                     mllm_model **out);
MLLM_API void mllm_model_free(mllm_model *m);

/* The model's config as a JSON object, into (buf, cap, needed). */
MLLM_API mllm_status mllm_model_info_json(const mllm_model *m, char *buf, size_t cap,
                                          size_t *needed);
MLLM_API int32_t mllm_model_n_vocab(const mllm_model *m);
MLLM_API int32_t mllm_model_n_ctx_train(const mllm_model *m);
MLLM_API int32_t mllm_model_bos(const mllm_model *m); /* -1 if none */
MLLM_API int32_t mllm_model_eos(const mllm_model *m); /* -1 if none */

/* ---- tokens ----------------------------------------------------------- */

/* Tokenizes `len` bytes of UTF-8. add_special: add BOS (and the model's
   other automatic specials) as the model's tokenizer config asks.
   Special-token text such as "<|im_start|>" is parsed as the special token.
   *n_ids receives the count; MLLM_ERR_BUFFER_TOO_SMALL when cap is short. */
MLLM_API mllm_status mllm_tokenize(const mllm_model *m, const char *text, size_t len,
                                   int add_special, int32_t *ids, size_t cap, size_t *n_ids);
/* The bytes of one token (may be part of a UTF-8 character). */
MLLM_API mllm_status mllm_token_to_piece(const mllm_model *m, int32_t id, char *buf,
                                         size_t cap, size_t *n);

/* ---- sessions and generation ----------------------------------------- */

typedef struct {
    uint32_t struct_size;
    int n_ctx;      /* KV cache length in tokens; 0 = min(model's, 4096) */
    int n_threads;  /* 0 = the model's load setting */
} mllm_session_params;

MLLM_API void mllm_session_default_params(mllm_session_params *p);
MLLM_API mllm_status mllm_session_new(mllm_model *m, const mllm_session_params *p,
                                      mllm_session **out);
MLLM_API void mllm_session_free(mllm_session *s);
/* Forgets all tokens (the KV cache is reused). */
MLLM_API void mllm_session_reset(mllm_session *s);

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
} mllm_sampling;

MLLM_API void mllm_sampling_default(mllm_sampling *p);

/* Called for every generated token with its bytes (pieces are held back
   until they form whole UTF-8 characters); return non-zero to stop. */
typedef int (*mllm_on_token)(void *user, int32_t id, const char *piece, size_t len);

/* Feeds tokens (prefill) without sampling. */
MLLM_API mllm_status mllm_session_eval(mllm_session *s, const int32_t *ids, size_t n);
/* Makes the session hold exactly ids[0..n): the longest prefix shared with
   what the KV cache already holds is kept (not recomputed) and only the
   rest is evaluated. *n_reused (may be NULL) receives the number of tokens
   kept. This is how multi-turn chat prefills only the new tokens. */
MLLM_API mllm_status mllm_session_sync(mllm_session *s, const int32_t *ids, size_t n, size_t *n_reused);
/* The tokens the session holds (prompt and generated), in order. */
MLLM_API const int32_t *mllm_session_tokens(const mllm_session *s, size_t *n);
MLLM_API int mllm_session_n_ctx(const mllm_session *s);
/* Logits of the last evaluated position (n_vocab floats, owned by the
   session, valid until the next call on it). */
MLLM_API const float *mllm_session_logits(const mllm_session *s);
MLLM_API int mllm_session_n_past(const mllm_session *s);

/* Tokenizes `prompt` (with BOS if the model wants one), prefills it and
   samples up to sp->max_tokens tokens, calling cb for each. */
MLLM_API mllm_status mllm_generate(mllm_session *s, const char *prompt, const mllm_sampling *sp,
                                   mllm_on_token cb, void *user);
/* Same as mllm_generate, from token ids. */
MLLM_API mllm_status mllm_generate_ids(mllm_session *s, const int32_t *ids, size_t n,
                                       const mllm_sampling *sp, mllm_on_token cb, void *user);
/* Asks a running generation to stop; it returns MLLM_ERR_CANCELLED. */
MLLM_API void mllm_session_cancel(mllm_session *s);

typedef struct {
    double load_ms;
    int n_prompt;
    double prompt_ms;
    int n_gen;
    double gen_ms;
} mllm_timings;
MLLM_API void mllm_session_timings(const mllm_session *s, mllm_timings *out);

#ifdef __cplusplus
}
#endif
#endif
