/* What the server's files share: the server struct, one HTTP request, the
   error record, and the reply helpers (http.c). */
#ifndef MLLM_SERVER_INTERNAL_H
#define MLLM_SERVER_INTERNAL_H
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <cjson/cJSON.h>
#include "server/guard.h"
#include "server/http_check.h"
#include "server/job.h"
#include "server/metrics.h"
#include "server/scheduler.h"
#include "server/server.h"
#include "server/tasks.h"

struct mllm_server {
    mllm_model *model;
    mllm_server_config cfg;  /* its strings point at the copies below */
    char *host, *api_key, *model_id, *allowed_origins;
    srv_policy policy;       /* key, origins, body limit: points at the copies above */
    struct MHD_Daemon *daemon;
    srv_guard *guard;        /* deadlines and connection caps (guard.h) */
    int quiesced_fd;         /* the listen socket after quiesce: closed after stop */
    srv_sched *sched;        /* NULL for an embedding-only model (no generation) */
    srv_tasks *tasks;        /* embedding and audio requests: queued, run by the compute's owner */
    srv_metrics metrics;
    atomic_bool draining;
    atomic_ulong next_id;
    atomic_int responding;   /* accepted generation requests whose response is not done */
    int port;
    long long created;       /* unix time of start: /v1/models "created" */
};

/* One HTTP request, from its first byte to the end of its response. */
typedef struct {
    struct MHD_Connection *conn;
    const char *url, *method;
    char *body;              /* (cap) NUL-terminated */
    size_t len, cap;
    bool too_big, timed_out, answered;
    bool responding;         /* counted in mllm_server.responding */
    double t0;               /* ms: when the request line arrived */
    int fd;                  /* the client socket, to notice a hang-up */
    srv_conn *gc;            /* the connection's guard record, or NULL */
    srv_str origin;          /* an allowed Origin, echoed in CORS headers; p NULL: none */
    unsigned status;         /* of the response queued; 0: none (yet) */
    srv_job *job;            /* a reference to the generation it asked for, or NULL: its token counts */
    size_t limit;            /* of the body: cfg.max_body, or cfg.max_upload on a multipart route */
    srv_str content_type;    /* the request's (one, checked) Content-Type; p NULL: none */
    int retry_after;         /* s: the reply carries Retry-After (a full queue's 503); 0: none */
} srv_req;

/* An error for the client, in OpenAI's shape:
   {"error": {"message", "type", "param", "code"}}. */
typedef struct srv_err {
    unsigned status;
    const char *code;        /* NULL or "model_not_found", ... */
    char param[64];          /* "" or the offending field */
    char msg[320];
    int retry_after;         /* s: a Retry-After header (SRV_RETRY_AFTER_S on a full queue); 0: none */
} srv_err;

/* What a 503 for a full queue tells the client to wait before it retries. */
#define SRV_RETRY_AFTER_S 1
/* Fills e with that 503 (server_busy, Retry-After); returns -1. */
int srv_fail_busy(mllm_server *S, srv_err *e);

/* Fills e; returns -1 so parsers can `return srv_fail(e, ...)`. */
int srv_fail(srv_err *e, unsigned status, const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Adds the CORS headers a reply to an allowed Origin carries. */
void srv_add_cors(const srv_req *r, struct MHD_Response *resp);
/* Replies (MHD_queue_response); the body is copied. */
enum MHD_Result srv_reply(mllm_server *S, srv_req *r, unsigned status, const char *content_type,
                          const char *body, size_t len);
/* Prints and deletes obj (NULL: a 500). */
enum MHD_Result srv_reply_json(mllm_server *S, srv_req *r, unsigned status, cJSON *obj);
enum MHD_Result srv_reply_err(mllm_server *S, srv_req *r, const srv_err *e);
enum MHD_Result srv_reply_error(mllm_server *S, srv_req *r, unsigned status, const char *code,
                                const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Lifts the idle timeout while a generation keeps the connection quiet,
   and puts it back. */
void srv_conn_timeout(mllm_server *S, struct MHD_Connection *c, bool on);
/* True when the peer has closed the connection (EOF or reset). */
bool srv_client_gone(int fd);

/* Endpoints (endpoints.c, generate.c, web.c). Each queues exactly one response. */
enum MHD_Result srv_ep_health(mllm_server *S, srv_req *r);
enum MHD_Result srv_ep_models(mllm_server *S, srv_req *r);
enum MHD_Result srv_ep_model(mllm_server *S, srv_req *r);
enum MHD_Result srv_ep_metrics(mllm_server *S, srv_req *r);
enum MHD_Result srv_ep_tokenize(mllm_server *S, srv_req *r);
enum MHD_Result srv_ep_detokenize(mllm_server *S, srv_req *r);
enum MHD_Result srv_ep_completions(mllm_server *S, srv_req *r);
enum MHD_Result srv_ep_chat(mllm_server *S, srv_req *r);
enum MHD_Result srv_ep_embeddings(mllm_server *S, srv_req *r); /* embeddings.c */
enum MHD_Result srv_ep_transcriptions(mllm_server *S, srv_req *r); /* transcribe.c */
enum MHD_Result srv_ep_translations(mllm_server *S, srv_req *r);
enum MHD_Result srv_ep_page(mllm_server *S, srv_req *r); /* web.c: the chat page and its files */

/* The scheduler's gauges and the task queue's. */
void srv_server_gauges(mllm_server *S, srv_metrics_gauges *g);
/* Submits t and waits for its end; 0 (t ran: its result, or its own
   error when t->failed), or -1 with e filled (503: the queue is full, with
   Retry-After, or the server shuts down) or with *hung_up (the client
   left: answer MHD_NO). */
int srv_run_task(mllm_server *S, srv_req *r, srv_task *t, bool *hung_up, srv_err *e);

/* Parses the request body as a JSON object; NULL with e filled. */
cJSON *srv_parse_body(const srv_req *r, srv_err *e);

/* Writes the request's log line (reqlog.c); completed: the whole response
   was sent. */
void srv_log_request(const srv_req *r, bool completed);

/* The http daemon (http.c). */
mllm_status srv_http_start(mllm_server *S);
void srv_http_quiesce(mllm_server *S);
void srv_http_stop(mllm_server *S);

#endif
