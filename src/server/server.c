/* mllm_server: config, start (the scheduler, then the listener), drain and stop. */
#include <string.h>
#include <time.h>
#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "server/internal.h"

/* How long stop waits for cancelled responses to reach their clients. */
#define SRV_STOP_FLUSH_MS 3000

static mllm_status check_config(const mllm_server_config *c) {
    if (!c->host || !c->model_id || !c->model_id[0])
        return mllm_err(MLLM_ERR_INVALID_ARG, "server: host and model id are required");
    if (c->port < 0 || c->port > 65535) return mllm_err(MLLM_ERR_INVALID_ARG, "server: port %d out of range", c->port);
    if (c->n_parallel < 1 || c->n_parallel > 256)
        return mllm_err(MLLM_ERR_INVALID_ARG, "server: --parallel %d out of range [1, 256]", c->n_parallel);
    if (c->kv_size < 0 || c->kv_size > MLLM_SERVER_MAX_KV_SIZE)
        return mllm_err(MLLM_ERR_INVALID_ARG, "server: --kv-size %d out of range [0, %d]", c->kv_size, MLLM_SERVER_MAX_KV_SIZE);
    if (c->kv_type < MLLM_KV_CONTIGUOUS || c->kv_type > MLLM_KV_PAGED_Q8)
        return mllm_err(MLLM_ERR_INVALID_ARG, "server: kv type %d out of range", c->kv_type);
    if (c->max_queue < 0 || c->max_queue > 100000)
        return mllm_err(MLLM_ERR_INVALID_ARG, "server: --queue %d out of range [0, 100000]", c->max_queue);
    if (c->max_body < 64) return mllm_err(MLLM_ERR_INVALID_ARG, "server: --max-body %zu is too small", c->max_body);
    if (c->max_upload < 1024)
        return mllm_err(MLLM_ERR_INVALID_ARG, "server: --max-upload %zu is too small", c->max_upload);
    if (c->max_messages < 1 || c->max_tokens_limit < 1 || c->default_max_tokens < 1 || c->timeout_s < 1 ||
        c->max_connections < 1 || c->max_connections_per_ip < 1 || c->header_timeout_s < 1)
        return mllm_err(MLLM_ERR_INVALID_ARG, "server: limits must be positive");
    if (!srv_origins_valid(c->allowed_origins))
        return mllm_err(MLLM_ERR_INVALID_ARG,
                        "server: --allowed-origins '%s' is not '*' or a comma-separated list of scheme://host[:port]",
                        c->allowed_origins);
    if (c->api_key && !c->api_key[0]) return mllm_err(MLLM_ERR_INVALID_ARG, "server: the API key is empty");
    if (c->test_task_hold_ms < 0 || c->test_task_hold_ms > 600000)
        return mllm_err(MLLM_ERR_INVALID_ARG, "server: --test-task-hold-ms %d out of range [0, 600000]",
                        c->test_task_hold_ms);
    return MLLM_OK;
}

static void server_free(mllm_server *S) {
    srv_sched_free(S->sched);
    srv_tasks_free(S->tasks);
    mllm_free(S->host);
    mllm_free(S->api_key);
    mllm_free(S->model_id);
    mllm_free(S->allowed_origins);
    mllm_free(S);
}

mllm_status mllm_server_start(mllm_model *model, const mllm_server_config *c, mllm_server **out) {
    if (!model || !c || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_server_start: NULL argument");
    *out = NULL;
    if (c->struct_size != sizeof *c)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_server_start: struct_size %u is not %zu (fill the config with "
                        "mllm_server_default_config)", c->struct_size, sizeof *c);
    mllm_status st = check_config(c);
    if (st != MLLM_OK) return st;
    int64_t now;
    st = mllm_clock_now(&now, NULL); /* SOURCE_DATE_EPOCH pins `created` */
    if (st != MLLM_OK) return st;
    mllm_server *S = mllm_calloc(1, sizeof *S);
    if (!S) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    S->model = model;
    S->cfg = *c;
    S->quiesced_fd = -1;
    S->created = (long long)now;
    atomic_init(&S->draining, false);
    atomic_init(&S->responding, 0);
    atomic_init(&S->next_id, (unsigned long)S->created << 20);
    srv_metrics_init(&S->metrics);
    S->host = mllm_strndup(c->host, strlen(c->host));
    S->model_id = mllm_strndup(c->model_id, strlen(c->model_id));
    S->api_key = c->api_key ? mllm_strndup(c->api_key, strlen(c->api_key)) : NULL;
    bool origins = c->allowed_origins && c->allowed_origins[0];
    S->allowed_origins = origins ? mllm_strndup(c->allowed_origins, strlen(c->allowed_origins)) : NULL;
    if (!S->host || !S->model_id || (c->api_key && !S->api_key) || (origins && !S->allowed_origins)) {
        server_free(S);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    S->cfg.host = S->host;
    S->cfg.model_id = S->model_id;
    S->cfg.api_key = S->api_key;
    S->cfg.allowed_origins = S->allowed_origins;
    S->policy = (srv_policy){.api_key = S->api_key, .api_key_len = S->api_key ? strlen(S->api_key) : 0,
                             .origins = S->allowed_origins, .max_body = c->max_body,
                             .max_upload = c->max_upload};
    srv_sched_params sp = {.n_parallel = c->n_parallel, .n_ctx = c->n_ctx, .n_threads = c->n_threads,
                           .max_queue = c->max_queue, .context_shift = c->context_shift, .spec = c->speculative,
                           .kv_size = c->kv_size, .kv_type = c->kv_type, .prefix_store = c->prefix_store,
                           .prefix_store_size = c->prefix_store_size};
    /* An embedding model (BERT) or a speech model (Whisper) has no
       generation: only /v1/embeddings or /v1/audio/transcriptions and
       the small endpoints answer. */
    if (mllm_model_can_generate(model)) st = srv_sched_new(model, &sp, &S->metrics, &S->sched);
    /* Embedding and audio requests: run by the engine loop between its
       steps, else by a worker of their own (tasks.h). */
    if (st == MLLM_OK) st = srv_tasks_new(c->max_queue, c->test_task_hold_ms, &S->metrics, &S->tasks);
    if (st == MLLM_OK && !srv_sched_own_tasks(S->sched, S->tasks)) st = srv_tasks_start_worker(S->tasks);
    if (st == MLLM_OK) st = srv_http_start(S);
    if (st != MLLM_OK) { server_free(S); return st; }
    *out = S;
    return MLLM_OK;
}

void srv_server_gauges(mllm_server *S, srv_metrics_gauges *g) {
    srv_sched_gauges(S->sched, g);
    if (S->tasks) srv_tasks_counts(S->tasks, &g->tasks_queued, &g->tasks_running);
}

int mllm_server_port(const mllm_server *S) { return S ? S->port : 0; }

void mllm_server_drain(mllm_server *S) {
    if (!S) return;
    atomic_store(&S->draining, true);
    srv_http_quiesce(S);
    srv_sched_close(S->sched);
    srv_tasks_close(S->tasks);
}

int mllm_server_busy(mllm_server *S) {
    if (!S) return 0;
    srv_metrics_gauges g;
    srv_server_gauges(S, &g);
    return g.queue_len + g.slots_busy + g.tasks_queued + g.tasks_running;
}

void mllm_server_stop(mllm_server *S) {
    if (!S) return;
    atomic_store(&S->draining, true);
    /* Jobs end first, so every connection thread blocked on one finishes
       its response (the end of a stream, an error); stopping the daemon
       would cut those off, so it waits for them, a bounded while. */
    srv_tasks_cancel_running(S->tasks); /* a long transcription stops at its next window */
    srv_sched_shutdown(S->sched);
    srv_tasks_shutdown(S->tasks); /* after the engine loop, which may own them */
    for (int i = 0; i < SRV_STOP_FLUSH_MS / 10 && atomic_load(&S->responding) > 0; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    srv_http_stop(S);
    server_free(S);
}
