/* srv_job: the generated text with stop-string hold-back, and its lifetime. */
#include "server/job.h"
#include "server/image_parts.h"
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "core/alloc.h"
#include "core/clock.h"

const char *srv_finish_name(srv_finish f) {
    switch (f) {
    case SRV_FINISH_STOP: return "stop";
    case SRV_FINISH_LENGTH: return "length";
    case SRV_FINISH_CANCELLED: return "cancelled";
    case SRV_FINISH_ERROR: return "error";
    default: return "none";
    }
}

srv_job *srv_job_new(void) {
    srv_job *j = mllm_calloc(1, sizeof *j);
    if (!j) return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    /* Timed waits use the monotonic clock: wall-clock jumps cannot stall them. */
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&j->mu, NULL);
    atomic_init(&j->refs, 1);
    atomic_init(&j->cancel, false);
    j->state = SRV_JOB_QUEUED;
    j->logprobs = -1;
    j->t_queued = mllm_clock_mono_ms();
    return j;
}

void srv_job_ref(srv_job *j) { atomic_fetch_add(&j->refs, 1); }

void srv_job_unref(srv_job *j) {
    if (!j || atomic_fetch_sub(&j->refs, 1) != 1) return;
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    for (int i = 0; i < j->n_stop; i++) mllm_free(j->stop[i]);
    mllm_free(j->ids);
    mllm_free(j->text);
    mllm_free(j->bias_ids);
    mllm_free(j->bias);
    mllm_grammar_free(j->grammar);
    mllm_free(j->lp);
    if (j->own_images) {
        srv_images_free(j->images);
        mllm_free(j->conv);
    }
    srv_job *next = j->next;
    mllm_free(j);
    srv_job_unref(next);
}

bool srv_job_add_choice(srv_job *j, int idx) {
    srv_job *c = srv_job_new(), *last = j;
    if (!c) return false;
    while (last->next) last = last->next;
    last->next = c;
    c->index = idx;
    c->ids = mllm_malloc((j->n_ids ? j->n_ids : 1) * sizeof *c->ids);
    if (!c->ids) return false;
    memcpy(c->ids, j->ids, j->n_ids * sizeof *c->ids);
    c->n_ids = j->n_ids;
    c->sampling = j->sampling; /* bias and grammar: j's, reset before each choice */
    c->sampling.seed = j->sampling.seed + (uint64_t)idx;
    for (int i = 0; i < j->n_stop; i++)
        if (!srv_job_add_stop(c, j->stop[i], j->stop_len[i])) return false;
    c->n_keep = j->n_keep;
    c->logprobs = j->logprobs;
    c->images = j->images; /* j's (own_images false) */
    c->conv = j->conv;
    return true;
}

void srv_job_cancel_all(srv_job *j) {
    for (; j; j = j->next) atomic_store(&j->cancel, true);
}

void srv_job_finish_all(srv_job *j, srv_finish f, int http_status, const char *err) {
    for (; j; j = j->next) {
        pthread_mutex_lock(&j->mu);
        if (j->state != SRV_JOB_DONE) srv_job_finish_locked(j, f, http_status, err);
        pthread_mutex_unlock(&j->mu);
    }
}

bool srv_job_add_stop(srv_job *j, const char *s, size_t len) {
    if (j->n_stop >= SRV_MAX_STOP) return false;
    char *c = mllm_strndup(s, len);
    if (!c) return false;
    j->stop[j->n_stop] = c;
    j->stop_len[j->n_stop++] = len;
    return true;
}

/* First index >= from where needle occurs in hay, or (size_t)-1. */
static size_t find_bytes(const char *hay, size_t n, size_t from, const char *needle, size_t m) {
    if (m == 0 || n < m) return (size_t)-1;
    for (size_t i = from; i + m <= n; i++)
        if (hay[i] == needle[0] && !memcmp(hay + i, needle, m)) return i;
    return (size_t)-1;
}

bool srv_job_append_locked(srv_job *j, const char *piece, size_t len) {
    if (j->finish != SRV_FINISH_NONE || len == 0) return false;
    if (j->len + len + 1 > j->cap) {
        size_t nc = j->cap ? j->cap : 256;
        while (nc < j->len + len + 1) nc *= 2;
        char *t = mllm_realloc(j->text, nc);
        if (!t) return false; /* the text stays as it was; generation goes on */
        j->text = t;
        j->cap = nc;
    }
    size_t old = j->len;
    memcpy(j->text + j->len, piece, len);
    j->len += len;
    j->text[j->len] = 0;
    /* A stop string can only newly appear where it overlaps the new bytes. */
    size_t cut = (size_t)-1;
    for (int s = 0; s < j->n_stop; s++) {
        size_t m = j->stop_len[s];
        size_t from = old >= m - 1 ? old - (m - 1) : 0;
        size_t at = find_bytes(j->text, j->len, from, j->stop[s], m);
        if (at < cut) cut = at;
    }
    if (cut != (size_t)-1) {
        j->len = cut;
        j->text[cut] = 0;
        j->safe = cut;
        pthread_cond_broadcast(&j->cv);
        return true;
    }
    /* Hold back the longest tail that is the start of some stop string. */
    size_t hold = 0;
    for (int s = 0; s < j->n_stop; s++) {
        size_t m = j->stop_len[s];
        for (size_t k = m - 1; k > hold; k--)
            if (k <= j->len && !memcmp(j->text + j->len - k, j->stop[s], k)) { hold = k; break; }
    }
    size_t safe = j->len - hold;
    if (safe > j->safe) j->safe = safe;
    pthread_cond_broadcast(&j->cv);
    return false;
}

void srv_job_finish_locked(srv_job *j, srv_finish f, int http_status, const char *err) {
    if (j->finish == SRV_FINISH_NONE) j->finish = f;
    if (f == SRV_FINISH_ERROR) {
        j->http_status = http_status;
        snprintf(j->err, sizeof j->err, "%s", err ? err : "internal error");
    }
    j->safe = j->len; /* a held-back tail that never became a stop string is text */
    j->state = SRV_JOB_DONE;
    j->t_end = mllm_clock_mono_ms();
    pthread_cond_broadcast(&j->cv);
}

void srv_job_add_logprob_locked(srv_job *j, int32_t id, float lp, const int32_t *top_ids, const float *top_lp,
                                int n_top) {
    if (j->finish != SRV_FINISH_NONE) return;
    if (j->n_lp == j->cap_lp) {
        int nc = j->cap_lp ? 2 * j->cap_lp : 64;
        srv_logprob *t = mllm_realloc(j->lp, (size_t)nc * sizeof *t);
        if (!t) return; /* that token goes without; generation goes on */
        j->lp = t;
        j->cap_lp = nc;
    }
    srv_logprob *e = &j->lp[j->n_lp++];
    e->id = id;
    e->logprob = lp;
    e->start = e->end = j->len;
    e->n_top = n_top;
    memcpy(e->top_id, top_ids, (size_t)n_top * sizeof *top_ids);
    memcpy(e->top_lp, top_lp, (size_t)n_top * sizeof *top_lp);
}

int srv_job_logprobs_ready_locked(const srv_job *j) {
    int k = 0;
    if (j->state == SRV_JOB_DONE)
        while (k < j->n_lp && (j->lp[k].start < j->len || j->lp[k].end <= j->len)) k++;
    else
        while (k < j->n_lp && j->lp[k].end <= j->safe) k++;
    return k;
}

void srv_job_wait_locked(srv_job *j, int ms) {
    struct timespec ts;
    mllm_clock_mono(&ts); /* the condition's clock (srv_job_new) */
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&j->cv, &j->mu, &ts);
}

int srv_job_on_token(srv_job *j, int32_t id, const char *piece, size_t len) {
    pthread_mutex_lock(&j->mu);
    if (id >= 0) {
        j->n_gen++;
        if (j->n_gen == 1) j->t_first = mllm_clock_mono_ms();
    }
    /* The token's logprobs were recorded just before (on_logprobs). */
    srv_logprob *e = id >= 0 && j->n_lp > 0 && j->n_lp == j->n_gen ? &j->lp[j->n_lp - 1] : NULL;
    if (e) {
        e->start = j->len;
        e->end = j->len + len; /* before a stop-string cut: a token past the cut then ends past it */
    }
    bool stop = srv_job_append_locked(j, piece, len);
    if (stop) j->finish = SRV_FINISH_STOP; /* the job ends DONE when the slot is through with it */
    pthread_mutex_unlock(&j->mu);
    return stop || atomic_load(&j->cancel);
}

void srv_job_on_logprobs(void *user, int32_t id, float lp, const int32_t *top_ids, const float *top_lp, int n_top) {
    srv_job *j = user;
    pthread_mutex_lock(&j->mu);
    srv_job_add_logprob_locked(j, id, lp, top_ids, top_lp, n_top);
    pthread_mutex_unlock(&j->mu);
}
