/* The scheduler's interface (scheduler.h) over the engine loop
   (sched_engine.c), and the counters it updates. */
#include "server/scheduler.h"
#include "core/alloc.h"
#include "core/error.h"
#include "server/sched_engine.h"

struct srv_sched {
    srv_esched *en;
};

mllm_status srv_sched_new(mllm_model *m, const srv_sched_params *p, srv_metrics *metrics, srv_sched **out) {
    *out = NULL;
    srv_sched *S = mllm_calloc(1, sizeof *S);
    if (!S) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    mllm_status st = srv_esched_new(m, p, metrics, &S->en);
    if (st != MLLM_OK) { mllm_free(S); return st; }
    *out = S;
    return MLLM_OK;
}

int srv_sched_n_ctx(const srv_sched *s) { return s ? srv_esched_n_ctx(s->en) : 0; }

srv_submit srv_sched_submit(srv_sched *s, srv_job *j) { return srv_esched_submit(s->en, j); }

void srv_sched_cancel(srv_sched *s, srv_job *j) { srv_esched_cancel(s->en, j); }

void srv_sched_close(srv_sched *s) {
    if (s) srv_esched_close(s->en);
}

void srv_sched_gauges(srv_sched *s, srv_metrics_gauges *g) {
    *g = (srv_metrics_gauges){0};
    if (s) srv_esched_gauges(s->en, g); /* NULL: an embedding-only server, no generation */
}

void srv_sched_shutdown(srv_sched *s) {
    if (s) srv_esched_shutdown(s->en);
}

void srv_sched_free(srv_sched *s) {
    if (!s) return;
    srv_esched_free(s->en);
    mllm_free(s);
}

bool srv_sched_own_tasks(srv_sched *s, srv_tasks *q) {
    if (!s) return false;
    srv_esched_own_tasks(s->en, q);
    return true;
}

void srv_metrics_count_finish(srv_metrics *m, srv_finish f) {
    atomic_ulong *c = f == SRV_FINISH_STOP     ? &m->completions_stop
                      : f == SRV_FINISH_LENGTH ? &m->completions_length
                      : f == SRV_FINISH_CANCELLED ? &m->completions_cancelled
                                                  : &m->completions_error;
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

void srv_metrics_count_job(srv_metrics *m, const srv_job *j, srv_finish fin, size_t reused, int n_gen,
                           double prompt_ms, double gen_ms) {
    srv_metrics_count_finish(m, fin);
    if (j->index == 0) { /* later choices reuse the first one's prompt: counted once, as in usage */
        atomic_fetch_add_explicit(&m->prompt_tokens, j->n_ids, memory_order_relaxed);
        atomic_fetch_add_explicit(&m->prompt_tokens_reused, reused, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&m->generated_tokens, (unsigned long)n_gen, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->prompt_us, (unsigned long)(prompt_ms * 1e3), memory_order_relaxed);
    atomic_fetch_add_explicit(&m->gen_us, (unsigned long)(gen_ms * 1e3), memory_order_relaxed);
    if (n_gen > 0 && gen_ms > 0)
        atomic_store_explicit(&m->last_gen_tps_milli, (unsigned long)(n_gen / (gen_ms / 1e3) * 1e3),
                              memory_order_relaxed);
}
