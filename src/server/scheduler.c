/* The scheduler's two paths behind one interface (scheduler.h), and the
   counters both update. */
#include "server/scheduler.h"
#include "core/alloc.h"
#include "core/error.h"
#include "server/sched_engine.h"
#include "server/sched_slots.h"

struct srv_sched {
    srv_esched *en; /* exactly one of the two */
    srv_slots *sl;
};

/* The per-slot path serves what the engine does not do as well yet: a
   draft model with one slot (a session's speculation prices each proposal
   from the draft's own confidence and the measured cost of each pass
   length, which pays more for one stream than the engine's per-sequence
   estimate). With more slots the draft proposes inside the engine
   (api/engine_draft.c), whose batching is worth more. Images go to the
   engine (sched_engine.c) like any prompt. */
bool srv_sched_uses_slots(mllm_model *m, const srv_sched_params *p) {
    (void)m;
    const bool draft = p->spec && p->spec->draft && p->spec->mode != MLLM_SPEC_OFF;
    return draft && p->n_parallel == 1;
}

mllm_status srv_sched_new(mllm_model *m, const srv_sched_params *p, srv_metrics *metrics, srv_sched **out) {
    *out = NULL;
    srv_sched *S = mllm_calloc(1, sizeof *S);
    if (!S) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    if (p->prefix_store && srv_sched_uses_slots(m, p)) {
        mllm_free(S);
        return mllm_err(MLLM_ERR_UNSUPPORTED, "server: --prefix-store needs the engine path (not with --draft "
                        "and --parallel 1)");
    }
    mllm_status st = srv_sched_uses_slots(m, p)
                         ? srv_slots_new(m, p->n_parallel, p->n_ctx, p->n_threads, p->max_queue, p->context_shift,
                                         p->spec, metrics, &S->sl)
                         : srv_esched_new(m, p, metrics, &S->en);
    if (st != MLLM_OK) { mllm_free(S); return st; }
    *out = S;
    return MLLM_OK;
}

int srv_sched_n_ctx(const srv_sched *s) { return !s ? 0 : s->en ? srv_esched_n_ctx(s->en) : srv_slots_n_ctx(s->sl); }

srv_submit srv_sched_submit(srv_sched *s, srv_job *j) {
    return s->en ? srv_esched_submit(s->en, j) : srv_slots_submit(s->sl, j);
}

void srv_sched_cancel(srv_sched *s, srv_job *j) {
    if (s->en) srv_esched_cancel(s->en, j);
    else srv_slots_cancel(s->sl, j);
}

void srv_sched_close(srv_sched *s) {
    if (!s) return;
    if (s->en) srv_esched_close(s->en);
    else srv_slots_close(s->sl);
}

void srv_sched_gauges(srv_sched *s, srv_metrics_gauges *g) {
    *g = (srv_metrics_gauges){0};
    if (!s) return; /* an embedding-only server: no generation */
    if (s->en) srv_esched_gauges(s->en, g);
    else srv_slots_gauges(s->sl, g);
}

void srv_sched_shutdown(srv_sched *s) {
    if (!s) return;
    if (s->en) srv_esched_shutdown(s->en);
    else srv_slots_shutdown(s->sl);
}

void srv_sched_free(srv_sched *s) {
    if (!s) return;
    if (s->en) srv_esched_free(s->en);
    else srv_slots_free(s->sl);
    mllm_free(s);
}

bool srv_sched_own_tasks(srv_sched *s, srv_tasks *q) {
    if (!s || !s->en) return false;
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
