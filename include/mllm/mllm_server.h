/*
 * mllm_server.h — the OpenAI-compatible HTTP server (`mllm serve`):
 * /v1/chat/completions, /v1/completions, /v1/embeddings, the /v1/audio endpoints,
 * /v1/models, /health and a chat page; docs/server.md. Part of the public
 * API: include mllm/mllm.h, which includes this header.
 *
 * A library built without the server (cmake -DMLLM_SERVER=OFF, every
 * wasm32-wasi build) has these functions too: mllm_server_start then
 * returns MLLM_ERR_UNSUPPORTED, saying so in mllm_last_error().
 *
 *     mllm_server_config c;  mllm_server_default_config(&c);
 *     c.port = 8080;
 *     mllm_server *srv;      mllm_server_start(model, &c, &srv);
 *     ... wait for SIGTERM ...
 *     mllm_server_drain(srv);   no new requests; queued ones get 503
 *     ... wait while mllm_server_busy(srv), up to a grace period ...
 *     mllm_server_stop(srv);    cancels what still runs, joins, frees
 */
#ifndef MLLM_MLLM_SERVER_H
#define MLLM_MLLM_SERVER_H
#ifndef MLLM_MLLM_H
#error "include <mllm/mllm.h>, not mllm_server.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The defaults of mllm_server_default_config (each a `mllm serve` option). */
#define MLLM_SERVER_DEFAULT_PORT 8080
#define MLLM_SERVER_DEFAULT_PARALLEL 2
#define MLLM_SERVER_DEFAULT_QUEUE 64
#define MLLM_SERVER_DEFAULT_MAX_BODY (1u << 20)    /* bytes of a request body */
#define MLLM_SERVER_DEFAULT_MAX_UPLOAD (25u << 20) /* bytes of a multipart upload (audio), OpenAI's limit */
#define MLLM_SERVER_DEFAULT_MAX_MESSAGES 256
#define MLLM_SERVER_DEFAULT_MAX_TOKENS_LIMIT 4096  /* the largest max_tokens accepted */
#define MLLM_SERVER_DEFAULT_MAX_TOKENS 256         /* when a request gives none */
#define MLLM_SERVER_DEFAULT_TIMEOUT_S 15           /* idle connection / slow request body */
#define MLLM_SERVER_DEFAULT_MAX_CONNECTIONS 128
#define MLLM_SERVER_DEFAULT_MAX_CONNECTIONS_PER_IP 64 /* half: one address cannot take them all */
#define MLLM_SERVER_DEFAULT_HEADER_TIMEOUT_S 10    /* whole request head, from connect or the last response */
#define MLLM_SERVER_MAX_KV_SIZE (1 << 26)          /* the largest kv_size */

typedef struct mllm_server mllm_server;

typedef struct {
    uint32_t struct_size;  /* = sizeof(mllm_server_config), set by the default */
    const char *host;      /* "127.0.0.1"; an address, IPv6 when it has ':' */
    int port;              /* 0 = any free port (see mllm_server_port) */
    const char *api_key;   /* NULL = no auth; else every endpoint but /health */
    const char *model_id;  /* the name /v1/models shows and requests must use ("mllm") */
    int n_parallel;        /* sequences generated at the same time */
    int n_ctx;             /* context per sequence; 0 = the session default */
    int n_threads;         /* compute threads, 0 = every core */
    int max_queue;         /* requests waiting for a slot; beyond: 503 */
    size_t max_body;       /* bytes; beyond: 413 */
    int max_messages;      /* chat messages per request; beyond: 400 */
    int max_tokens_limit;  /* largest max_tokens; beyond: 400 */
    int default_max_tokens;
    int timeout_s;         /* idle connection and request-body deadline: 408 */
    int max_connections;   /* beyond: the slowest connection still sending its request is closed */
    int max_connections_per_ip; /* the same, per client address */
    int header_timeout_s;  /* a request head not complete in this time: closed */
    const char *allowed_origins; /* NULL: no cross-origin requests; "*"; or "https://a.example,http://b:3000" */
    int log_requests;      /* 1 (default): one line per request on stderr */
    int context_shift;     /* 1: a full context drops old tokens and generation goes on to max_tokens */
    /* How requests speculate (NULL: the default, prompt lookup in
       MLLM_SPEC_AUTO). The engine (the default path) speculates by prompt
       lookup and, with a draft model (draft), by the draft too, a draft
       session per sequence (mode, lookup, n_draft_max, draft_p_min and the
       n-gram lengths are used). */
    const mllm_speculative_params *speculative;
    size_t max_upload;     /* bytes of a multipart body (/v1/audio/transcriptions); beyond: 413 */
    /* The engine's KV pool (every sequence's K/V, and the prefix cache):
       kv_size token positions (0: n_parallel x n_ctx), at least one context
       plus a block; kv_type MLLM_KV_PAGED_F32 (0 too) / _F16 / _Q8. */
    int kv_size;
    int kv_type;
    /* The persistent prefix store (engine path): a folder (NULL: none)
       whose file keeps the K/V blocks of prompts across restarts, bounded
       by prefix_store_size bytes (0: 1 GiB); docs/server.md. */
    const char *prefix_store;
    uint64_t prefix_store_size;
    /* A test option (`mllm serve --test-task-hold-ms`; 0: off): the thread
       that owns the compute (the engine loop, or the task worker) sleeps
       this long before it starts each embedding or audio request, so a
       test sees requests queue behind it (tests/e2e/serve_tasks.py). */
    int test_task_hold_ms;
} mllm_server_config;

/* Fills every field with its default (the MLLM_SERVER_DEFAULT_* values,
   host "127.0.0.1", model_id "mllm", log_requests 1; everything else 0 or
   NULL). c must not be NULL. Thread-safe. */
MLLM_API void mllm_server_default_config(mllm_server_config *c);
/* Creates the scheduler and starts listening; the strings of c are
   copied. The model (and c->speculative's draft) must outlive the server.
   Errors: MLLM_ERR_INVALID_ARG (NULL argument, wrong struct_size, a value
   out of range: the message names the option), MLLM_ERR_IO (cannot
   listen), MLLM_ERR_UNSUPPORTED (a library built without the server),
   MLLM_ERR_NOMEM; the detail is in mllm_last_error(). */
MLLM_API mllm_status mllm_server_start(mllm_model *model, const mllm_server_config *c, mllm_server **out);
/* The port the server listens on (useful with port 0); 0 for NULL. */
MLLM_API int mllm_server_port(const mllm_server *s);
/* Stops accepting connections and requests (new and queued ones get 503,
   /health says 503); running generations go on. Returns at once. */
MLLM_API void mllm_server_drain(mllm_server *s);
/* Requests running or queued. */
MLLM_API int mllm_server_busy(mllm_server *s);
/* Cancels running generations (their clients get what was generated so
   far and a clean end), joins every thread, frees. NULL is a no-op. */
MLLM_API void mllm_server_stop(mllm_server *s);

#ifdef __cplusplus
}
#endif
#endif
