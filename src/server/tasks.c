/* The task queue (tasks.h): a bounded FIFO, one owner thread running a
   slice at a time, cancel, close. Lock order: the queue's mu, then a
   task's mu. */
#include "server/tasks.h"
#include <string.h>
#include <time.h>
#include "core/clock.h"
#include "core/alloc.h"
#include "core/error.h"
#include "server/internal.h"

struct srv_tasks {
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* the worker's: a task, or quit */
    srv_task **q;           /* (max_queue) FIFO */
    int n, cap;
    srv_task *cur;          /* the task being run (between its slices too); the queue's reference */
    bool closed, quit, worker, joined;
    atomic_int pending;     /* n + (cur != NULL): read by the owner loop's wait */
    int hold_ms;
    srv_metrics *m;
    void (*wake)(void *);
    void *wake_user;
    pthread_t thread;
};

bool srv_task_init(srv_task *t, srv_task_kind kind, bool (*step)(srv_task *), void (*free_fn)(srv_task *)) {
    t->kind = kind;
    t->step = step;
    t->free = free_fn;
    t->submitter = pthread_self();
    atomic_init(&t->cancel, false);
    atomic_init(&t->refs, 1);
    t->done = t->cancelled = false;
    t->failed = t->closed = false;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* as a job's: timed waits ignore wall-clock jumps */
    const bool ok = pthread_cond_init(&t->cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (!ok) return false;
    if (pthread_mutex_init(&t->mu, NULL) != 0) { pthread_cond_destroy(&t->cv); return false; }
    return true;
}

void srv_task_ref(srv_task *t) { atomic_fetch_add(&t->refs, 1); }

void srv_task_unref(srv_task *t) {
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    t->free(t);
}

/* Records t's end (closed: unrun, the server shuts down) and wakes its waiter. */
static void finish(srv_tasks *q, srv_task *t, bool cancelled, bool closed) {
    pthread_mutex_lock(&t->mu);
    if (!t->done) {
        t->done = true;
        t->cancelled = cancelled;
        t->closed = closed;
        atomic_ulong *c = cancelled ? &q->m->tasks_cancelled[t->kind]
                          : closed || t->failed ? &q->m->tasks_error[t->kind] : &q->m->tasks_ok[t->kind];
        atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
    }
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void srv_tasks_run_one(srv_tasks *q) {
    pthread_mutex_lock(&q->mu);
    bool first = false;
    if (!q->cur && q->n > 0) {
        q->cur = q->q[0];
        memmove(q->q, q->q + 1, (size_t)(q->n - 1) * sizeof *q->q);
        q->n--;
        first = true;
    }
    srv_task *t = q->cur;
    if (!t) { pthread_mutex_unlock(&q->mu); return; }
    pthread_mutex_unlock(&q->mu);
    if (first) {
        /* Proof of the layout for /metrics and its test: the HTTP thread that
           submitted a task never runs it. */
        if (pthread_equal(pthread_self(), t->submitter))
            atomic_fetch_add_explicit(&q->m->tasks_on_request_thread, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&q->m->tasks_started[q->worker ? 1 : 0], 1, memory_order_relaxed);
        if (q->hold_ms > 0) sleep_ms(q->hold_ms);
    }
    const bool gone = atomic_load(&t->cancel);
    const bool end = gone || t->step(t);
    if (end) finish(q, t, gone || atomic_load(&t->cancel), false);
    pthread_mutex_lock(&q->mu);
    if (end) {
        q->cur = NULL;
        atomic_fetch_sub(&q->pending, 1);
    }
    pthread_mutex_unlock(&q->mu);
    if (end) srv_task_unref(t);
}

static void *worker_main(void *arg) {
    srv_tasks *q = arg;
    for (;;) {
        pthread_mutex_lock(&q->mu);
        while (!q->quit && !q->cur && q->n == 0) pthread_cond_wait(&q->cv, &q->mu);
        const bool quit = q->quit;
        pthread_mutex_unlock(&q->mu);
        if (quit) return NULL;
        srv_tasks_run_one(q);
    }
}

static void wake_worker(void *user) {
    srv_tasks *q = user;
    pthread_mutex_lock(&q->mu);
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

mllm_status srv_tasks_new(int max_queue, int hold_ms, srv_metrics *m, srv_tasks **out) {
    *out = NULL;
    srv_tasks *q = mllm_calloc(1, sizeof *q);
    if (!q) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    q->cap = max_queue;
    q->q = mllm_calloc((size_t)(max_queue > 0 ? max_queue : 1), sizeof *q->q);
    q->hold_ms = hold_ms;
    q->m = m;
    atomic_init(&q->pending, 0);
    q->joined = true; /* no thread yet */
    if (!q->q || pthread_mutex_init(&q->mu, NULL) != 0) {
        mllm_free(q->q);
        mllm_free(q);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    pthread_cond_init(&q->cv, NULL);
    *out = q;
    return MLLM_OK;
}

mllm_status srv_tasks_start_worker(srv_tasks *q) {
    q->worker = true;
    srv_tasks_set_owner(q, wake_worker, q);
    if (pthread_create(&q->thread, NULL, worker_main, q) != 0)
        return mllm_err(MLLM_ERR_NOMEM, "server: cannot start the task worker thread");
    q->joined = false;
    return MLLM_OK;
}

void srv_tasks_set_owner(srv_tasks *q, void (*wake)(void *), void *user) {
    q->wake = wake;
    q->wake_user = user;
}

bool srv_tasks_pending(srv_tasks *q) { return atomic_load(&q->pending) > 0; }

srv_submit srv_tasks_submit(srv_tasks *q, srv_task *t) {
    pthread_mutex_lock(&q->mu);
    srv_submit r = SRV_SUBMIT_OK;
    if (q->closed) r = SRV_SUBMIT_CLOSED;
    else if (q->n >= q->cap) r = SRV_SUBMIT_FULL;
    else {
        srv_task_ref(t);
        t->submitter = pthread_self();
        q->q[q->n++] = t;
        atomic_fetch_add(&q->pending, 1);
    }
    pthread_mutex_unlock(&q->mu);
    if (r == SRV_SUBMIT_FULL) atomic_fetch_add_explicit(&q->m->rejected_full, 1, memory_order_relaxed);
    if (r == SRV_SUBMIT_OK && q->wake) q->wake(q->wake_user);
    return r;
}

/* Removes t from the FIFO if it waits there; under q->mu. */
static bool dequeue(srv_tasks *q, srv_task *t) {
    for (int i = 0; i < q->n; i++) {
        if (q->q[i] != t) continue;
        memmove(q->q + i, q->q + i + 1, (size_t)(q->n - i - 1) * sizeof *q->q);
        q->n--;
        atomic_fetch_sub(&q->pending, 1);
        return true;
    }
    return false;
}

void srv_tasks_cancel(srv_tasks *q, srv_task *t) {
    atomic_store(&t->cancel, true);
    pthread_mutex_lock(&q->mu);
    const bool queued = dequeue(q, t);
    pthread_mutex_unlock(&q->mu);
    if (queued) {
        finish(q, t, true, false);
        srv_task_unref(t);
    }
}

bool srv_task_wait(srv_tasks *q, srv_task *t, int fd) {
    double last = mllm_clock_mono_ms();
    pthread_mutex_lock(&t->mu);
    while (!t->done) {
        struct timespec ts;
        mllm_clock_mono(&ts); /* the condition's clock (set where the task is made) */
        ts.tv_nsec += 200 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        if (t->done || mllm_clock_mono_ms() - last < 200) continue;
        last = mllm_clock_mono_ms();
        if (srv_client_gone(fd)) {
            pthread_mutex_unlock(&t->mu);
            srv_tasks_cancel(q, t);
            return false;
        }
    }
    pthread_mutex_unlock(&t->mu);
    return true;
}

void srv_tasks_close(srv_tasks *q) {
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    while (q->n > 0) {
        srv_task *t = q->q[--q->n];
        atomic_fetch_sub(&q->pending, 1);
        finish(q, t, false, true);
        srv_task_unref(t);
    }
    pthread_mutex_unlock(&q->mu);
}

void srv_tasks_counts(srv_tasks *q, int *queued, int *running) {
    pthread_mutex_lock(&q->mu);
    *queued = q->n;
    *running = q->cur != NULL;
    pthread_mutex_unlock(&q->mu);
}

void srv_tasks_cancel_running(srv_tasks *q) {
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    if (q->cur) atomic_store(&q->cur->cancel, true);
    pthread_mutex_unlock(&q->mu);
}

void srv_tasks_shutdown(srv_tasks *q) {
    if (!q) return;
    srv_tasks_close(q);
    pthread_mutex_lock(&q->mu);
    q->quit = true;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    if (!q->joined) pthread_join(q->thread, NULL);
    q->joined = true;
    /* A task its owner left between two slices (the engine loop stopped). */
    pthread_mutex_lock(&q->mu);
    srv_task *t = q->cur;
    q->cur = NULL;
    pthread_mutex_unlock(&q->mu);
    if (t) {
        finish(q, t, true, false);
        srv_task_unref(t);
    }
}

void srv_tasks_free(srv_tasks *q) {
    if (!q) return;
    srv_tasks_shutdown(q);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    mllm_free(q->q);
    mllm_free(q);
}

/* The HTTP side of a task (internal.h). */
int srv_run_task(mllm_server *S, srv_req *r, srv_task *t, bool *hung_up, srv_err *e) {
    *hung_up = false;
    const srv_submit sub = srv_tasks_submit(S->tasks, t);
    if (sub == SRV_SUBMIT_FULL) {
        srv_fail(e, 503, "server_busy", NULL, "%d embedding or audio requests are waiting; retry later",
                 S->cfg.max_queue);
        e->retry_after = SRV_RETRY_AFTER_S;
        return -1;
    }
    if (sub == SRV_SUBMIT_CLOSED) return srv_fail(e, 503, "shutting_down", NULL, "the server is shutting down");
    /* Shutdown waits for this response to be sent (on_completed). */
    r->responding = true;
    atomic_fetch_add(&S->responding, 1);
    srv_conn_timeout(S, r->conn, false); /* a long queue or file keeps the connection quiet */
    const bool answered = srv_task_wait(S->tasks, t, r->fd);
    srv_conn_timeout(S, r->conn, true);
    if (!answered) {
        *hung_up = true;
        return -1;
    }
    pthread_mutex_lock(&t->mu);
    int rc = 0;
    if (t->closed || t->cancelled) rc = srv_fail(e, 503, "shutting_down", NULL, "the server is shutting down");
    pthread_mutex_unlock(&t->mu);
    return rc;
}
