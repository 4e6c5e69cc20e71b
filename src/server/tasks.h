/* The server's other compute: /v1/embeddings and /v1/audio requests as
   tasks in a bounded FIFO queue, run by the one thread that owns the
   model's compute, never by the HTTP thread that received them.

   The owner is the engine loop (sched_engine.c) when the model generates
   on the engine path: it runs a slice of the current task between two
   engine steps (an embedding request embeds one input per slice), so
   generation keeps flowing. Otherwise (an embedding-only or speech model)
   a worker thread of the queue's own runs them.

   An HTTP thread parses and validates, submits (a full queue: refused,
   503 with Retry-After), then waits for the task's end (srv_task_wait),
   cancelling it when its client hangs up. A task is reference counted
   like a job: the submitter's reference and the queue's. */
#ifndef MLLM_SERVER_TASKS_H
#define MLLM_SERVER_TASKS_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "server/metrics.h"
#include "server/scheduler.h"

typedef enum { SRV_TASK_EMBED, SRV_TASK_AUDIO } srv_task_kind; /* the index of its metrics */

typedef struct srv_task srv_task;
struct srv_task {
    /* input, set before submit */
    srv_task_kind kind;
    /* One slice of the work, on the owner thread; returns true when the
       task is finished (its result filled). Called again until then. */
    bool (*step)(srv_task *t);
    bool failed;                /* set by step: the result is an error (kept by the struct that embeds this one) */
    void (*free)(srv_task *t);  /* frees the struct that embeds this one */
    pthread_t submitter;        /* the HTTP thread (set by submit); counted in /metrics if it ever runs it */
    atomic_bool cancel;         /* the client is gone: step stops early */
    atomic_int refs;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    bool done;
    bool cancelled;             /* ended unrun or cut short */
    bool closed;                /* ended unrun: the server is shutting down (503) */
};

/* Initialises t (one reference) for `kind`; false when out of resources. */
bool srv_task_init(srv_task *t, srv_task_kind kind, bool (*step)(srv_task *), void (*free_fn)(srv_task *));
void srv_task_ref(srv_task *t);
void srv_task_unref(srv_task *t); /* NULL is a no-op */

/* A queue of at most max_queue waiting tasks (besides the one running);
   hold_ms > 0 (a test option, mllm_server_config.test_task_hold_ms) makes
   the owner sleep that long before it starts each task. */
mllm_status srv_tasks_new(int max_queue, int hold_ms, srv_metrics *m, srv_tasks **out);
/* The owner is a worker thread of the queue's own. */
mllm_status srv_tasks_start_worker(srv_tasks *q);
/* The owner is another thread's loop: wake(user) is called (without the
   queue's lock) when a task arrives; the loop calls srv_tasks_run_one while
   srv_tasks_pending. */
void srv_tasks_set_owner(srv_tasks *q, void (*wake)(void *), void *user);
bool srv_tasks_pending(srv_tasks *q);
/* One slice of the current (or next) task; on the owner thread. */
void srv_tasks_run_one(srv_tasks *q);

/* Asks the running task to stop at its next check (a transcription before
   its next window): the server is stopping after its grace period. */
void srv_tasks_cancel_running(srv_tasks *q);

/* Takes a reference when accepted. */
srv_submit srv_tasks_submit(srv_tasks *q, srv_task *t);
/* Waits for t's end; false (t then cancelled) if the client on fd hung up first. */
bool srv_task_wait(srv_tasks *q, srv_task *t, int fd);
/* Queued: ends at once; running: at its next slice. */
void srv_tasks_cancel(srv_tasks *q, srv_task *t);
/* From now on submit says CLOSED; queued tasks end with a 503. */
void srv_tasks_close(srv_tasks *q);
/* Tasks queued and running. */
void srv_tasks_counts(srv_tasks *q, int *queued, int *running);
/* Closes, joins the worker (an owner loop must have stopped calling
   run_one) and ends what is left (cancelled); the queue stays valid for
   submit and cancel (refused / no-ops) until srv_tasks_free. NULL ok. */
void srv_tasks_shutdown(srv_tasks *q);
void srv_tasks_free(srv_tasks *q); /* shuts down first if needed; NULL ok */

#endif
