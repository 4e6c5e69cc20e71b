/* n > 1 choices of one prompt (engine.h, mllm_engine_submit_forks): the
   first choice reads the prompt; the others wait on it (mllm_eseq.forks)
   and, once its prompt's K/V are complete, share them by reference
   (mllm_kv_seq_fork) instead of reading the prompt again. */
#include "core/alloc.h"
#include "engine/engine_internal.h"

/* The tail of the waiting queue, taken off it. */
static mllm_eseq *take_tail(mllm_engine *e) {
    mllm_eseq **at = &e->waiting;
    while ((*at)->next) at = &(*at)->next;
    mllm_eseq *s = *at;
    *at = NULL;
    e->n_waiting--;
    return s;
}

mllm_status mllm_engine_submit_forks(mllm_engine *e, const mllm_engine_request *r, const mllm_engine_request *forks,
                                     int n_forks) {
    mllm_status st = mllm_engine_submit(e, r);
    if (st != MLLM_OK) return st;
    mllm_eseq *head = take_tail(e), **last = &head->forks;
    for (int i = 0; i < n_forks && st == MLLM_OK; i++) {
        mllm_engine_request f = forks[i];
        f.prompt = r->prompt;
        f.n_prompt = r->n_prompt;
        st = mllm_engine_submit(e, &f);
        if (st != MLLM_OK) break;
        *last = take_tail(e);
        (*last)->st_saved = -1; /* the first choice writes the prompt's blocks to the prefix store */
        last = &(*last)->next;
    }
    if (st != MLLM_OK) { /* nothing is queued: no callback was called */
        for (mllm_eseq *f = head->forks, *nx; f; f = nx) {
            nx = f->next;
            mllm_engine_seq_free(e, f);
        }
        mllm_engine_seq_free(e, head);
        return st;
    }
    mllm_eseq **at = &e->waiting;
    while (*at) at = &(*at)->next;
    *at = head;
    e->n_waiting++;
    return MLLM_OK;
}

/* Puts s's forks at the front of the queue, in order, as sequences of their
   own (their prompt then comes from the prefix cache, when it is there). */
static void queue_front(mllm_engine *e, mllm_eseq *first) {
    if (!first) return;
    mllm_eseq *lastf = first;
    int n = 1;
    for (; lastf->next; lastf = lastf->next) n++;
    lastf->next = e->waiting;
    e->waiting = first;
    e->n_waiting += n;
}

void mllm_engine_forks_release(mllm_engine *e, mllm_eseq *s) {
    mllm_eseq *f = s->forks;
    s->forks = NULL;
    queue_front(e, f);
}

void mllm_engine_fork(mllm_engine *e, mllm_eseq *s) {
    /* s's prompt has K/V up to its end (and proposals after it, if any):
       the forks keep all but its last position, which each evaluates again
       for the logits of its own first draw (a token's logits do not depend
       on the batch, so they are s's bits). */
    const int keep = s->r.n_prompt - 1;
    mllm_eseq *f = s->forks, *rest = NULL, **rest_at = &rest;
    s->forks = NULL;
    while (f) {
        mllm_eseq *nx = f->next;
        f->next = NULL;
        int slot = 0;
        while (slot < e->p.max_running && e->slot_used[slot]) slot++;
        if (e->n_running >= e->p.max_running || slot == e->p.max_running ||
            mllm_kv_seq_fork(&e->kp, &f->kv, &s->kv) != MLLM_OK) {
            *rest_at = f; /* no room now: it waits, first in line */
            rest_at = &f->next;
            f = nx;
            continue;
        }
        mllm_kv_seq_truncate(&e->kp, &f->kv, keep);
        f->n_done = keep;
        e->slot_used[slot] = true;
        f->slot = slot;
        f->admit_order = ++e->n_admits;
        mllm_eseq **at = &e->running;
        while (*at) at = &(*at)->next;
        *at = f;
        e->n_running++;
        f->admitted_once = true;
        f->res.n_cached = keep;
        if (f->r.on_admit) f->r.on_admit(f->r.user, keep);
        f = nx;
    }
    queue_front(e, rest);
}
