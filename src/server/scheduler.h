/* The scheduler owns the server's generation: HTTP threads hand it jobs
   with srv_sched_submit. The engine loop (sched_engine.c) runs them: one
   thread, one KV block pool shared by every request (prefix-cached across
   requests), one thread pool; every step runs one forward over a token of
   each running sequence (and its proposals: prompt lookup, a --draft
   model) plus chunks of pending prompts (continuous batching). --parallel
   caps the running sequences, --kv-size the pool. A bounded FIFO queue in
   front, refusal beyond it. */
#ifndef MLLM_SERVER_SCHEDULER_H
#define MLLM_SERVER_SCHEDULER_H
#include <mllm/mllm.h>
#include "server/job.h"
#include "server/metrics.h"

typedef struct srv_sched srv_sched;
typedef struct srv_tasks srv_tasks; /* tasks.h */

typedef enum { SRV_SUBMIT_OK = 0, SRV_SUBMIT_FULL = 1, SRV_SUBMIT_CLOSED = 2 } srv_submit;

typedef struct {
    int n_parallel;        /* sequences generated at the same time */
    int n_ctx;             /* per sequence; 0: the model's default */
    int n_threads;         /* the engine pool's threads (0: every core) */
    int max_queue;
    bool context_shift;    /* a full context drops old tokens (srv_job.n_keep kept) instead of ending "length" */
    const mllm_speculative_params *spec; /* NULL: the default (prompt lookup) */
    int kv_size;           /* token positions of the KV pool; 0: n_parallel x n_ctx */
    int kv_type;           /* MLLM_KV_PAGED_F32 (0 too) / _F16 / _Q8 */
    const char *prefix_store; /* the persistent prefix store's folder; NULL: none */
    uint64_t prefix_store_size; /* its file's bytes; 0: MLLM_ENGINE_DEFAULT_STORE_BYTES */
} srv_sched_params;

mllm_status srv_sched_new(mllm_model *m, const srv_sched_params *p, srv_metrics *metrics, srv_sched **out);
/* The context length of every sequence. */
int srv_sched_n_ctx(const srv_sched *s);
/* Takes a reference on the job when it is accepted. */
srv_submit srv_sched_submit(srv_sched *s, srv_job *j);
/* The job stops soon (queued: at once) and ends SRV_FINISH_CANCELLED. */
void srv_sched_cancel(srv_sched *s, srv_job *j);
/* From now on submit says CLOSED; queued jobs end with a 503 error. */
void srv_sched_close(srv_sched *s);
void srv_sched_gauges(srv_sched *s, srv_metrics_gauges *g);
/* Cancels running jobs and joins the threads; the struct stays valid for
   submit/cancel calls (they are refused / no-ops) until srv_sched_free. */
void srv_sched_shutdown(srv_sched *s);
void srv_sched_free(srv_sched *s); /* shuts down first if needed; NULL ok */
/* Whether the scheduler's thread owns q's tasks (tasks.h): the engine loop
   runs them between its steps. False (s NULL: no generation): q needs a
   worker of its own. */
bool srv_sched_own_tasks(srv_sched *s, srv_tasks *q);

/* The finish counters, and a finished choice's
   token and time counters (prompt_ms: queue end to first token). */
void srv_metrics_count_finish(srv_metrics *m, srv_finish f);
void srv_metrics_count_job(srv_metrics *m, const srv_job *j, srv_finish fin, size_t reused, int n_gen,
                           double prompt_ms, double gen_ms);

#endif
