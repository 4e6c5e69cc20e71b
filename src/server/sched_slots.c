/* The per-slot scheduler (the path a speculative draft model needs, see
   scheduler.h): slots (session + worker thread), the bounded queue, and
   the run of one job on a slot. One mutex (mu) guards slot assignment and
   the queue; each job's output has its own mutex. Lock order: mu, then a
   job's mu. */
#include "server/sched_slots.h"
#include "server/image_parts.h"
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"

typedef struct {
    struct srv_slots *S;
    int index;
    mllm_session *sess;   /* touched only by this slot's worker */
    pthread_t thread;
    bool started;
    pthread_cond_t cv;    /* wakes the worker: a job was assigned, or quit */
    srv_job *job;         /* assigned or running; under S->mu */
    int32_t *cache;       /* (n_ctx) copy of the tokens the session holds, under S->mu */
    size_t n_cache;
} srv_slot;

struct srv_slots {
    mllm_model *model;
    srv_metrics *metrics;
    pthread_mutex_t mu;
    srv_slot *slots;      /* (n_slots) */
    int n_slots, n_ctx;
    bool context_shift;   /* a full context drops old tokens instead of ending the answer */
    srv_job **queue;      /* (max_queue) ring buffer of waiting jobs */
    int max_queue, q_head, q_len;
    bool closed, quit, joined;
};

int srv_slots_n_ctx(const srv_slots *s) { return s ? s->n_ctx : 0; }

static srv_job *queue_pop(srv_slots *S) {
    if (S->q_len == 0) return NULL;
    srv_job *j = S->queue[S->q_head];
    S->q_head = (S->q_head + 1) % S->max_queue;
    S->q_len--;
    return j;
}

typedef struct {
    srv_job *j;
    int32_t last; /* the last token handed out: not yet evaluated when the context filled */
    int n;        /* tokens handed out in this round */
} gen_ctx;

static int on_token(void *user, int32_t id, const char *piece, size_t len) {
    gen_ctx *g = user;
    if (id >= 0) {
        g->last = id;
        g->n++;
    }
    return srv_job_on_token(g->j, id, piece, len);
}

/* Generates up to the job's max_tokens. When the context fills and the
   scheduler shifts contexts, mllm_session_shift keeps the first n_keep
   tokens (the system turn, or BOS), drops the oldest half of the rest and
   re-evaluates with the token the full context could not take, as
   `mllm run --context-shift` does; then generation goes on. */
static mllm_status generate_shifting(srv_slot *sl, srv_job *j) {
    mllm_sampling sp = j->sampling;
    if (j->logprobs >= 0) {
        sp.on_logprobs = srv_job_on_logprobs;
        sp.logprobs_user = j;
        sp.n_top_logprobs = j->logprobs;
    }
    int remaining = j->sampling.max_tokens;
    for (int shifts = 0;; shifts++) {
        gen_ctx g = {j, -1, 0};
        sp.max_tokens = remaining;
        sp.seed = j->sampling.seed + (uint64_t)shifts; /* a shift must not replay the same random draws */
        mllm_status st = mllm_generate_ids(sl->sess, NULL, 0, &sp, on_token, &g);
        remaining -= g.n;
        if (st != MLLM_ERR_CONTEXT_FULL || !sl->S->context_shift || remaining <= 0 || g.last < 0 ||
            atomic_load(&j->cancel))
            return st;
        st = mllm_session_shift(sl->sess, j->n_keep, g.last);
        if (st != MLLM_OK) return st;
        pthread_mutex_lock(&j->mu);
        j->n_shifts++;
        pthread_mutex_unlock(&j->mu);
    }
}

/* A job with images: the conversation prefilled through mllm_chat_prefill
   (the model's vision tower and embedding cache; the slot's own session,
   so images need this per-slot path, not the engine's paged KV pool). */
static mllm_status srv_image_prefill(mllm_session *s, const srv_job *j, size_t *reused) {
    const void *img[SRV_MAX_IMAGES];
    for (int i = 0; i < j->images->n; i++) img[i] = j->images->data[i];
    return mllm_chat_prefill(s, j->conv, img, j->images->len, j->images->n, reused);
}

/* Runs one job on the slot's session: keep the shared KV prefix, evaluate
   the rest of the prompt, generate. */
static void run_job(srv_slot *sl, srv_job *j, bool cancelled) {
    srv_slots *S = sl->S;
    if (cancelled) atomic_store(&j->cancel, true);
    /* Each choice follows the grammar from its start. */
    mllm_grammar_reset(j->sampling.grammar);
    pthread_mutex_lock(&j->mu);
    j->state = SRV_JOB_RUNNING;
    j->t_start = mllm_clock_mono_ms();
    pthread_mutex_unlock(&j->mu);
    mllm_status st = MLLM_OK;
    size_t reused = 0, n_prompt = j->n_ids;
    double t0 = mllm_clock_mono_ms(), t1 = t0;
    if (!atomic_load(&j->cancel)) {
        st = j->images ? srv_image_prefill(sl->sess, j, &reused) : mllm_session_sync(sl->sess, j->ids, j->n_ids, &reused);
        /* usage counts an image's expanded tokens, as OpenAI's does */
        if (j->images && st == MLLM_OK) n_prompt = (size_t)mllm_session_n_past(sl->sess);
        t1 = mllm_clock_mono_ms();
        if (st == MLLM_OK && !atomic_load(&j->cancel))
            st = generate_shifting(sl, j);
    }
    double t2 = mllm_clock_mono_ms();
    char err[256] = "";
    int err_status = 500;
    if (j->images && (st == MLLM_ERR_FORMAT || st == MLLM_ERR_UNSUPPORTED || st == MLLM_ERR_INVALID_ARG ||
                      (st == MLLM_ERR_CONTEXT_FULL && j->n_gen == 0)))
        err_status = 400; /* the request's images: not decodable, too large, or too many tokens */
    if (err_status == 400 || (st != MLLM_OK && st != MLLM_ERR_CANCELLED && st != MLLM_ERR_CONTEXT_FULL)) {
        snprintf(err, sizeof err, "%s: %s", err_status == 400 ? "image" : "generation failed", mllm_last_error());
        mllm_session_reset(sl->sess); /* its state is unknown now */
    }
    pthread_mutex_lock(&j->mu);
    j->n_reused = reused;
    j->n_prompt = n_prompt;
    if (err[0]) srv_job_finish_locked(j, SRV_FINISH_ERROR, err_status, err);
    else if (atomic_load(&j->cancel) || st == MLLM_ERR_CANCELLED) srv_job_finish_locked(j, SRV_FINISH_CANCELLED, 0, NULL);
    else if (st == MLLM_ERR_CONTEXT_FULL || j->n_gen >= j->sampling.max_tokens)
        srv_job_finish_locked(j, SRV_FINISH_LENGTH, 0, NULL);
    else srv_job_finish_locked(j, SRV_FINISH_STOP, 0, NULL);
    srv_finish fin = j->finish;
    int n_gen = j->n_gen;
    pthread_mutex_unlock(&j->mu);

    srv_metrics_count_job(S->metrics, j, fin, reused, n_gen, t1 - t0, t2 - t1);
}

static void *worker_main(void *arg) {
    srv_slot *sl = arg;
    srv_slots *S = sl->S;
    pthread_mutex_lock(&S->mu);
    for (;;) {
        while (!sl->job && !S->quit) {
            if ((sl->job = queue_pop(S))) break;
            pthread_cond_wait(&sl->cv, &S->mu);
        }
        srv_job *j = sl->job;
        if (!j) break;
        pthread_mutex_unlock(&S->mu);
        /* The choices of one request (n > 1), one after the other: each
           syncs to the same prompt, which the KV cache still holds, so only
           its last token is evaluated again. */
        for (srv_job *c = j; c; c = c->next) run_job(sl, c, c != j && atomic_load(&j->cancel));
        size_t n = 0;
        const int32_t *toks = mllm_session_tokens(sl->sess, &n);
        pthread_mutex_lock(&S->mu);
        if (n > (size_t)S->n_ctx) n = (size_t)S->n_ctx;
        memcpy(sl->cache, toks, n * sizeof *toks);
        sl->n_cache = n;
        sl->job = NULL;
        pthread_mutex_unlock(&S->mu);
        srv_job_unref(j);
        pthread_mutex_lock(&S->mu);
    }
    pthread_mutex_unlock(&S->mu);
    return NULL;
}

mllm_status srv_slots_new(mllm_model *m, int n_slots, int n_ctx, int n_threads, int max_queue, bool context_shift,
                          const mllm_speculative_params *spec, srv_metrics *metrics, srv_slots **out) {
    *out = NULL;
    if (!m || n_slots < 1 || max_queue < 0)
        return mllm_err(MLLM_ERR_INVALID_ARG, "server: %d slots, queue %d", n_slots, max_queue);
    srv_slots *S = mllm_calloc(1, sizeof *S);
    if (!S) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    S->model = m;
    S->metrics = metrics;
    S->max_queue = max_queue;
    S->context_shift = context_shift;
    pthread_mutex_init(&S->mu, NULL);
    S->slots = mllm_calloc((size_t)n_slots, sizeof *S->slots);
    S->queue = mllm_calloc((size_t)(max_queue > 0 ? max_queue : 1), sizeof *S->queue);
    if (!S->slots || !S->queue) { srv_slots_free(S); return mllm_err(MLLM_ERR_NOMEM, "out of memory"); }
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = n_ctx;
    sp.n_threads = n_threads;
    for (int i = 0; i < n_slots; i++) {
        srv_slot *sl = &S->slots[i];
        sl->S = S;
        sl->index = i;
        pthread_cond_init(&sl->cv, NULL);
        S->n_slots = i + 1;
        mllm_status st = mllm_session_new(m, &sp, &sl->sess);
        if (st == MLLM_OK && spec) st = mllm_session_set_speculative(sl->sess, spec);
        if (st != MLLM_OK) { srv_slots_free(S); return st; }
        S->n_ctx = mllm_session_n_ctx(sl->sess);
        sl->cache = mllm_malloc((size_t)S->n_ctx * sizeof(int32_t));
        if (!sl->cache) { srv_slots_free(S); return mllm_err(MLLM_ERR_NOMEM, "out of memory"); }
    }
    for (int i = 0; i < n_slots; i++) {
        if (pthread_create(&S->slots[i].thread, NULL, worker_main, &S->slots[i]) != 0) {
            srv_slots_free(S);
            return mllm_err(MLLM_ERR_NOMEM, "server: cannot start slot thread %d", i);
        }
        S->slots[i].started = true;
    }
    *out = S;
    return MLLM_OK;
}

static size_t common_prefix(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
    size_t k = 0;
    while (k < na && k < nb && a[k] == b[k]) k++;
    return k;
}

srv_submit srv_slots_submit(srv_slots *S, srv_job *j) {
    pthread_mutex_lock(&S->mu);
    if (S->closed || S->quit) { pthread_mutex_unlock(&S->mu); return SRV_SUBMIT_CLOSED; }
    srv_slot *best = NULL;
    size_t best_k = 0;
    for (int i = 0; i < S->n_slots; i++) {
        srv_slot *sl = &S->slots[i];
        if (sl->job) continue;
        size_t k = common_prefix(sl->cache, sl->n_cache, j->ids, j->n_ids);
        if (!best || k > best_k) { best = sl; best_k = k; }
    }
    srv_submit r = SRV_SUBMIT_OK;
    if (best) {
        srv_job_ref(j);
        best->job = j;
        pthread_cond_signal(&best->cv);
    } else if (S->q_len < S->max_queue) {
        /* No slot is idle, so every worker will look at the queue when its job ends. */
        srv_job_ref(j);
        S->queue[(S->q_head + S->q_len) % S->max_queue] = j;
        S->q_len++;
    } else {
        r = SRV_SUBMIT_FULL;
        atomic_fetch_add_explicit(&S->metrics->rejected_full, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&S->mu);
    return r;
}

/* Removes j from the queue if it is there; under mu. */
static bool queue_remove(srv_slots *S, srv_job *j) {
    for (int i = 0; i < S->q_len; i++) {
        int at = (S->q_head + i) % S->max_queue;
        if (S->queue[at] != j) continue;
        for (int k = i; k + 1 < S->q_len; k++)
            S->queue[(S->q_head + k) % S->max_queue] = S->queue[(S->q_head + k + 1) % S->max_queue];
        S->q_len--;
        return true;
    }
    return false;
}

void srv_slots_cancel(srv_slots *S, srv_job *j) {
    srv_job_cancel_all(j);
    pthread_mutex_lock(&S->mu);
    bool queued = queue_remove(S, j);
    for (int i = 0; i < S->n_slots && !queued; i++)
        if (S->slots[i].job == j) mllm_session_cancel(S->slots[i].sess); /* allowed from any thread */
    pthread_mutex_unlock(&S->mu);
    if (queued) {
        srv_job_finish_all(j, SRV_FINISH_CANCELLED, 0, NULL);
        srv_metrics_count_finish(S->metrics, SRV_FINISH_CANCELLED);
        srv_job_unref(j);
    }
}

void srv_slots_close(srv_slots *S) {
    if (!S) return;
    pthread_mutex_lock(&S->mu);
    S->closed = true;
    srv_job *j;
    while ((j = queue_pop(S))) {
        srv_job_finish_all(j, SRV_FINISH_ERROR, 503, "the server is shutting down");
        srv_job_unref(j);
    }
    pthread_mutex_unlock(&S->mu);
}

void srv_slots_gauges(srv_slots *S, srv_metrics_gauges *g) {
    pthread_mutex_lock(&S->mu);
    g->queue_len = S->q_len;
    g->slots_total = S->n_slots;
    g->slots_busy = 0;
    for (int i = 0; i < S->n_slots; i++) g->slots_busy += S->slots[i].job != NULL;
    pthread_mutex_unlock(&S->mu);
}

void srv_slots_shutdown(srv_slots *S) {
    if (!S || S->joined) return;
    srv_slots_close(S);
    pthread_mutex_lock(&S->mu);
    S->quit = true;
    for (int i = 0; i < S->n_slots; i++) {
        srv_slot *sl = &S->slots[i];
        if (sl->job) {
            srv_job_cancel_all(sl->job);
            mllm_session_cancel(sl->sess);
        }
        pthread_cond_signal(&sl->cv);
    }
    pthread_mutex_unlock(&S->mu);
    for (int i = 0; i < S->n_slots; i++)
        if (S->slots[i].started) pthread_join(S->slots[i].thread, NULL);
    S->joined = true;
}

void srv_slots_free(srv_slots *S) {
    if (!S) return;
    srv_slots_shutdown(S);
    for (int i = 0; S->slots && i < S->n_slots; i++) {
        mllm_session_free(S->slots[i].sess);
        mllm_free(S->slots[i].cache);
        pthread_cond_destroy(&S->slots[i].cv);
    }
    mllm_free(S->slots);
    mllm_free(S->queue);
    pthread_mutex_destroy(&S->mu);
    mllm_free(S);
}
