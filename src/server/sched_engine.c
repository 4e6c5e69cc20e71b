/* The engine path of the scheduler: one loop thread owns the engine
   (src/engine) and is the only one to call it; HTTP threads append jobs to
   `incoming` and set cancel flags, under `mu`. The loop moves incoming
   jobs into the engine, steps it, and publishes its counters for /metrics.

   A request with n > 1 choices goes to the engine as one sequence and its
   forks (mllm_engine_submit_forks): the prompt is read once, and each
   other choice shares its K/V. With a grammar each choice has a match
   state of its own (mllm_engine_grammar_new).

   A request with images (image_url parts) is read on the loop thread when
   it starts: the model's vision tower (through its embedding cache) and
   the tower's prompt expansion give its prompt and image rows
   (mllm_engine_image_prompt_new), which every choice submits; an image
   that cannot be read ends the request with a 400.

   Lock order: mu, then a job's mu. Engine callbacks run on the loop thread
   without mu. */
#include "server/sched_engine.h"
#include <stdio.h>
#include <string.h>
#include "api/engine_api.h"
#include "api/engine_draft.h"
#include "core/alloc.h"
#include "core/error.h"
#include "engine/engine.h"
#include "server/image_parts.h"
#include "server/tasks.h"

typedef struct ereq {
    struct srv_esched *S;
    srv_job *head;        /* one reference, dropped when every choice is done */
    int outstanding;      /* choices submitted to the engine and not finished */
    bool dropped;         /* closed before it started: it ends with a 503 */
    mllm_engine_image_prompt *img; /* the request's images and expanded prompt; NULL: text */
    struct ereq *next, *prev; /* the loop's list of requests in the engine */
} ereq;

typedef struct {
    ereq *rq;
    srv_job *j;
    mllm_engine_grammar *eg;
    mllm_sampling sp;     /* j's, with the logprobs callback */
} echoice;

struct srv_esched {
    mllm_model *model;
    srv_metrics *metrics;
    mllm_model_engine me;
    mllm_engine_draft *draft; /* --draft: the engine's proposer; NULL: prompt lookup */
    int n_ctx, n_parallel, max_queue;
    bool context_shift, store, store_fail_logged;
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* wakes the loop: a job, a cancel, close or quit */
    srv_job **incoming;   /* (max_queue + n_parallel) jobs not yet in the engine, FIFO */
    int n_incoming, cap_incoming;
    int n_requests;       /* accepted and not finished (incoming or in the engine) */
    bool closed, quit, joined, started, drop_waiting;
    pthread_t thread;
    srv_job **batch;      /* (cap_incoming) the loop's copy of incoming */
    ereq *active;         /* requests in the engine; the loop thread's only */
    mllm_engine_stats st; /* the last published, under mu */
    srv_tasks *tasks;     /* embedding / audio tasks the loop runs between steps; NULL: none */
};

int srv_esched_n_ctx(const srv_esched *S) { return S->n_ctx; }

static void on_admit(void *user, int n_cached) {
    echoice *c = user;
    srv_job *j = c->j;
    pthread_mutex_lock(&j->mu);
    j->state = SRV_JOB_RUNNING;
    j->t_start = mllm_clock_mono_ms();
    j->n_reused = (size_t)n_cached;
    pthread_mutex_unlock(&j->mu);
}

static int on_token(void *user, int32_t id, const char *piece, size_t len) {
    echoice *c = user;
    return srv_job_on_token(c->j, id, piece, len);
}

static void on_finish(void *user, const mllm_engine_result *r) {
    echoice *c = user;
    ereq *rq = c->rq;
    srv_job *j = c->j;
    srv_esched *S = rq->S;
    char err[256] = "";
    if (r->finish == MLLM_ENGINE_ERROR) snprintf(err, sizeof err, "generation failed: %s", r->message);
    pthread_mutex_lock(&j->mu);
    const bool never_ran = j->state == SRV_JOB_QUEUED;
    j->n_shifts = r->n_shifts;
    srv_finish fin = SRV_FINISH_STOP;
    int code = 0;
    const char *msg = NULL;
    if (err[0]) fin = SRV_FINISH_ERROR, code = 500, msg = err;
    else if (never_ran && rq->dropped) fin = SRV_FINISH_ERROR, code = 503, msg = "the server is shutting down";
    else if (atomic_load(&j->cancel) || r->finish == MLLM_ENGINE_CANCELLED) fin = SRV_FINISH_CANCELLED;
    else if (r->finish == MLLM_ENGINE_LENGTH) fin = SRV_FINISH_LENGTH;
    const double t_first = j->t_first > 0 ? j->t_first : mllm_clock_mono_ms(), t_start = never_ran ? t_first : j->t_start;
    pthread_mutex_unlock(&j->mu);
    /* The counters and the gauges first, then the job's end: a client that
       reads /metrics once its answer is complete sees both (the engine has
       freed the sequence's blocks before calling this). */
    srv_metrics_count_job(S->metrics, j, fin, (size_t)r->n_cached, r->n_gen, t_first - t_start,
                          mllm_clock_mono_ms() - t_first);
    mllm_engine_stats st;
    mllm_engine_get_stats(S->me.e, &st);
    pthread_mutex_lock(&S->mu);
    S->st = st;
    pthread_mutex_unlock(&S->mu);
    pthread_mutex_lock(&j->mu);
    srv_job_finish_locked(j, fin, code, msg);
    pthread_mutex_unlock(&j->mu);
    mllm_engine_grammar_free(c->eg);
    mllm_free(c);
    if (--rq->outstanding == 0) {
        if (rq->prev) rq->prev->next = rq->next;
        else S->active = rq->next;
        if (rq->next) rq->next->prev = rq->prev;
        pthread_mutex_lock(&S->mu);
        S->n_requests--;
        pthread_mutex_unlock(&S->mu);
        srv_job_unref(rq->head);
        mllm_engine_image_prompt_free(rq->img);
        mllm_free(rq);
    }
}

/* The engine's view of choice j: *out (its callbacks' user) and *r. */
static mllm_status choice_new(ereq *rq, srv_job *j, echoice **out, mllm_engine_request *r) {
    srv_esched *S = rq->S;
    echoice *c = *out = mllm_calloc(1, sizeof *c);
    if (!c) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    c->rq = rq;
    c->j = j;
    c->sp = j->sampling;
    if (j->logprobs >= 0) {
        c->sp.on_logprobs = srv_job_on_logprobs;
        c->sp.logprobs_user = j;
        c->sp.n_top_logprobs = j->logprobs;
    }
    if (j->sampling.grammar) { /* a match state of its own, from the grammar's start */
        mllm_status st = mllm_engine_grammar_new(S->model, j->sampling.grammar, &c->eg);
        if (st != MLLM_OK) return st;
    }
    const mllm_engine_image_prompt *ip = rq->img; /* the request's images: every choice reads them */
    *r = (mllm_engine_request){.prompt = ip ? ip->ids : j->ids, .n_prompt = ip ? ip->n : (int)j->n_ids,
                               .sampling = &c->sp, .constraint = c->eg ? mllm_engine_grammar_constraint(c->eg) : NULL,
                               .context_shift = S->context_shift, .n_keep = (int)j->n_keep,
                               .image = ip ? &ip->image : NULL, .cancel = &j->cancel,
                               .on_token = on_token, .on_admit = on_admit, .on_finish = on_finish, .user = c};
    return MLLM_OK;
}

/* j's images read (rq->img) and the prompt they expand to counted in
   each choice's usage; false when j has ended (a 400: the images cannot be
   read, or do not fit). */
static bool read_images(srv_esched *S, ereq *rq, srv_job *j) {
    const void *img[SRV_MAX_IMAGES];
    for (int i = 0; i < j->images->n; i++) img[i] = j->images->data[i];
    mllm_status st = mllm_engine_image_prompt_new(S->model, j->conv, img, j->images->len, j->images->n, S->n_ctx - 1,
                                                  &rq->img);
    if (st == MLLM_OK) {
        for (srv_job *c = j; c; c = c->next) {
            pthread_mutex_lock(&c->mu);
            c->n_prompt = (size_t)rq->img->n; /* usage counts an image's expanded tokens, as OpenAI's does */
            pthread_mutex_unlock(&c->mu);
        }
        return true;
    }
    const bool bad = st == MLLM_ERR_FORMAT || st == MLLM_ERR_UNSUPPORTED || st == MLLM_ERR_INVALID_ARG ||
                     st == MLLM_ERR_CONTEXT_FULL;
    char err[256];
    snprintf(err, sizeof err, "%s: %s", bad ? "image" : "generation failed", mllm_last_error());
    srv_job_finish_all(j, SRV_FINISH_ERROR, bad ? 400 : 500, err);
    for (srv_job *c = j; c; c = c->next) srv_metrics_count_finish(S->metrics, SRV_FINISH_ERROR);
    return false;
}


/* Hands a request's choices to the engine, the first with the others as its
   forks (loop thread); a refusal ends them all. */
static void submit_choices(ereq *rq) {
    srv_esched *S = rq->S;
    srv_job *j = rq->head;
    int n = 0;
    for (srv_job *k = j; k; k = k->next) n++;
    echoice **c = mllm_calloc((size_t)n, sizeof *c);
    mllm_engine_request *r = mllm_calloc((size_t)n, sizeof *r);
    mllm_status st = c && r ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "out of memory");
    srv_job *k = j;
    for (int i = 0; i < n && st == MLLM_OK; i++, k = k->next) st = choice_new(rq, k, &c[i], &r[i]);
    if (st == MLLM_OK)
        st = n > 1 ? mllm_engine_submit_forks(S->me.e, &r[0], r + 1, n - 1) : mllm_engine_submit(S->me.e, &r[0]);
    if (st == MLLM_OK) {
        rq->outstanding += n;
    } else {
        char err[256];
        snprintf(err, sizeof err, "generation failed: %s", mllm_last_error());
        for (int i = 0; c && i < n; i++) {
            if (c[i]) mllm_engine_grammar_free(c[i]->eg);
            mllm_free(c[i]);
        }
        for (k = j; k; k = k->next) srv_metrics_count_finish(S->metrics, SRV_FINISH_ERROR);
        srv_job_finish_all(j, SRV_FINISH_ERROR, 500, err);
    }
    mllm_free(c);
    mllm_free(r);
}

/* A new request: its choices into the engine (loop thread). */
static void start_request(srv_esched *S, srv_job *j) {
    ereq *rq = mllm_calloc(1, sizeof *rq);
    if (rq) {
        rq->S = S;
        rq->head = j;
        /* (cancelled already: the engine ends it at its next step, unread) */
        if (j->images && !atomic_load(&j->cancel) && !read_images(S, rq, j)) {
            mllm_free(rq);
            pthread_mutex_lock(&S->mu);
            S->n_requests--;
            pthread_mutex_unlock(&S->mu);
            srv_job_unref(j);
            return;
        }
        submit_choices(rq);
        if (rq->outstanding > 0) {
            rq->next = S->active;
            if (S->active) S->active->prev = rq;
            S->active = rq;
            return;
        }
        mllm_engine_image_prompt_free(rq->img);
        mllm_free(rq);
    } else {
        srv_job_finish_all(j, SRV_FINISH_ERROR, 500, "out of memory");
    }
    srv_job_finish_all(j, SRV_FINISH_ERROR, 500, "generation failed");
    pthread_mutex_lock(&S->mu);
    S->n_requests--;
    pthread_mutex_unlock(&S->mu);
    srv_job_unref(j);
}

/* Server closing: requests that have not started end with a 503 (as the
   queue's do); those running go on. */
static void drop_unstarted(srv_esched *S) {
    for (ereq *rq = S->active; rq; rq = rq->next) {
        pthread_mutex_lock(&rq->head->mu);
        const bool queued = rq->head->state == SRV_JOB_QUEUED;
        pthread_mutex_unlock(&rq->head->mu);
        if (!queued) continue;
        rq->dropped = true;
        srv_job_cancel_all(rq->head); /* the engine ends it at the step below */
    }
}

static void *loop_main(void *arg) {
    srv_esched *S = arg;
    mllm_engine *e = S->me.e;
    pthread_mutex_lock(&S->mu);
    for (;;) {
        while (!S->quit && S->n_incoming == 0 && mllm_engine_idle(e) && !S->drop_waiting &&
               !(S->tasks && srv_tasks_pending(S->tasks)))
            pthread_cond_wait(&S->cv, &S->mu);
        srv_tasks *tasks = S->tasks;
        if (S->quit) break;
        const int n = S->n_incoming;
        memcpy(S->batch, S->incoming, (size_t)n * sizeof *S->batch);
        S->n_incoming = 0;
        const bool drop = S->drop_waiting;
        S->drop_waiting = false;
        pthread_mutex_unlock(&S->mu);
        for (int i = 0; i < n; i++) start_request(S, S->batch[i]);
        if (drop) drop_unstarted(S);
        mllm_engine_step(e); /* an error has ended the sequences it concerns */
        if (tasks) srv_tasks_run_one(tasks); /* a slice: the streams go on at the next step */
        mllm_engine_stats st;
        mllm_engine_get_stats(e, &st);
        if (st.store_failed && !S->store_fail_logged) { /* once: the store reads on, it no longer writes */
            S->store_fail_logged = true;
            fprintf(stderr, "mllm serve: %s\n", mllm_engine_store_note(e));
        }
        pthread_mutex_lock(&S->mu);
        S->st = st;
    }
    pthread_mutex_unlock(&S->mu);
    /* Quit: every sequence ends cancelled (on_finish finishes its job). */
    mllm_model_engine_close(&S->me);
    return NULL;
}

mllm_status srv_esched_new(mllm_model *m, const srv_sched_params *p, srv_metrics *metrics, srv_esched **out) {
    *out = NULL;
    if (p->n_parallel < 1 || p->max_queue < 0)
        return mllm_err(MLLM_ERR_INVALID_ARG, "server: %d parallel sequences, queue %d", p->n_parallel, p->max_queue);
    const int kv_type = p->kv_type == MLLM_KV_CONTIGUOUS ? MLLM_KV_PAGED_F32 : p->kv_type;
    if (kv_type < MLLM_KV_PAGED_F32 || kv_type > MLLM_KV_PAGED_Q8)
        return mllm_err(MLLM_ERR_INVALID_ARG, "server: kv type %d out of range", p->kv_type);
    srv_esched *S = mllm_calloc(1, sizeof *S);
    if (!S) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    S->model = m;
    S->metrics = metrics;
    S->n_parallel = p->n_parallel;
    S->max_queue = p->max_queue;
    S->context_shift = p->context_shift;
    S->store = p->prefix_store != NULL;
    S->n_ctx = p->n_ctx > 0 ? p->n_ctx : mllm_model_default_ctx(m);
    pthread_mutex_init(&S->mu, NULL);
    pthread_cond_init(&S->cv, NULL);
    S->cap_incoming = p->max_queue + p->n_parallel;
    S->incoming = mllm_calloc((size_t)S->cap_incoming, sizeof *S->incoming);
    S->batch = mllm_calloc((size_t)S->cap_incoming, sizeof *S->batch);
    const int bs = 16;
    /* --kv-size in token positions, rounded up to whole blocks; by default
       every parallel sequence's whole context and a block for a copy on
       write. */
    const long long kv_tokens = p->kv_size > 0 ? p->kv_size : (long long)p->n_parallel * S->n_ctx + bs;
    const long long n_blocks = (kv_tokens + bs - 1) / bs;
    mllm_engine_params ep = {.max_running = p->n_parallel, .n_ctx = S->n_ctx, .block_size = bs,
                             .n_blocks = n_blocks > (1 << 28) ? (1 << 28) : (int)n_blocks,
                             .kv_dtype = kv_type - MLLM_KV_PAGED_F32, .store_dir = p->prefix_store,
                             .store_bytes = p->prefix_store_size};
    /* Prompt lookup inside the engine, as each session would do it (the
       server's default: MLLM_SPEC_AUTO). */
    const bool draft = p->spec && p->spec->draft && p->spec->mode != MLLM_SPEC_OFF;
    if (p->spec) {
        ep.spec_mode = p->spec->lookup || draft ? p->spec->mode : MLLM_SPEC_OFF;
        ep.spec_max = p->spec->n_draft_max;
        ep.ngram_min = p->spec->ngram_min;
        ep.ngram_max = p->spec->ngram_max;
        ep.lookup_first = p->spec->lookup != 0;
    }
    mllm_status st = S->incoming && S->batch ? mllm_model_engine_open(m, &ep, p->n_threads, &S->me)
                                 : mllm_err(MLLM_ERR_NOMEM, "out of memory");
    /* A draft model proposes on the engine's own threads, between its steps. */
    if (st == MLLM_OK && draft) {
        mllm_engine_draft_params dp = {.draft = p->spec->draft, .model = m, .pool = S->me.pool,
                                       .n_slots = p->n_parallel, .n_ctx = S->n_ctx, .p_min = p->spec->draft_p_min};
        if ((st = mllm_engine_draft_new(&dp, &S->draft)) == MLLM_OK)
            mllm_engine_set_proposer(S->me.e, mllm_engine_draft_propose, S->draft, true);
    }
    if (st == MLLM_OK && pthread_create(&S->thread, NULL, loop_main, S) != 0)
        st = mllm_err(MLLM_ERR_NOMEM, "server: cannot start the engine thread");
    if (st != MLLM_OK) {
        mllm_model_engine_close(&S->me);
        S->joined = true;
        srv_esched_free(S);
        return st;
    }
    S->started = true;
    const char *note = mllm_engine_store_note(S->me.e);
    if (note[0]) fprintf(stderr, "mllm serve: %s\n", note);
    *out = S;
    return MLLM_OK;
}

srv_submit srv_esched_submit(srv_esched *S, srv_job *j) {
    pthread_mutex_lock(&S->mu);
    srv_submit r = SRV_SUBMIT_OK;
    if (S->closed || S->quit) r = SRV_SUBMIT_CLOSED;
    else if (S->n_requests >= S->n_parallel + S->max_queue || S->n_incoming >= S->cap_incoming) {
        r = SRV_SUBMIT_FULL;
        atomic_fetch_add_explicit(&S->metrics->rejected_full, 1, memory_order_relaxed);
    } else {
        srv_job_ref(j);
        S->incoming[S->n_incoming++] = j;
        S->n_requests++;
        pthread_cond_signal(&S->cv);
    }
    pthread_mutex_unlock(&S->mu);
    return r;
}

/* Removes j from incoming if it is there; under mu. */
static bool incoming_remove(srv_esched *S, srv_job *j) {
    for (int i = 0; i < S->n_incoming; i++) {
        if (S->incoming[i] != j) continue;
        memmove(S->incoming + i, S->incoming + i + 1, (size_t)(S->n_incoming - i - 1) * sizeof *S->incoming);
        S->n_incoming--;
        S->n_requests--;
        return true;
    }
    return false;
}

void srv_esched_cancel(srv_esched *S, srv_job *j) {
    srv_job_cancel_all(j); /* the engine ends it at its next step */
    pthread_mutex_lock(&S->mu);
    const bool queued = incoming_remove(S, j);
    pthread_cond_signal(&S->cv);
    pthread_mutex_unlock(&S->mu);
    if (queued) {
        srv_job_finish_all(j, SRV_FINISH_CANCELLED, 0, NULL);
        srv_metrics_count_finish(S->metrics, SRV_FINISH_CANCELLED);
        srv_job_unref(j);
    }
}

void srv_esched_close(srv_esched *S) {
    pthread_mutex_lock(&S->mu);
    S->closed = true;
    S->drop_waiting = true; /* the loop ends sequences that never started: 503 */
    for (int i = 0; i < S->n_incoming; i++) {
        srv_job_finish_all(S->incoming[i], SRV_FINISH_ERROR, 503, "the server is shutting down");
        srv_job_unref(S->incoming[i]);
    }
    S->n_requests -= S->n_incoming;
    S->n_incoming = 0;
    pthread_cond_signal(&S->cv);
    pthread_mutex_unlock(&S->mu);
}

static void wake_loop(void *user) {
    srv_esched *S = user;
    pthread_mutex_lock(&S->mu);
    pthread_cond_signal(&S->cv);
    pthread_mutex_unlock(&S->mu);
}

void srv_esched_own_tasks(srv_esched *S, srv_tasks *q) {
    srv_tasks_set_owner(q, wake_loop, S);
    pthread_mutex_lock(&S->mu);
    S->tasks = q;
    pthread_mutex_unlock(&S->mu);
}

void srv_esched_gauges(srv_esched *S, srv_metrics_gauges *g) {
    pthread_mutex_lock(&S->mu);
    g->slots_total = S->n_parallel;
    g->slots_busy = S->st.running;
    /* Accepted but not running: incoming, waiting in the engine, or between choices. */
    g->queue_len = S->n_requests - S->st.running > 0 ? S->n_requests - S->st.running : 0;
    g->engine = true;
    g->seq_running = S->st.running;
    g->seq_waiting = S->st.waiting + S->n_incoming;
    g->kv_blocks_total = S->st.blocks_total;
    g->kv_blocks_used = S->st.blocks_used;
    g->kv_blocks_cached = S->st.blocks_cached;
    g->kv_blocks_free = S->st.blocks_free;
    g->kv_block_tokens = 16;
    g->prefix_lookups = S->st.prefix_lookups;
    g->prefix_hit_tokens = S->st.prefix_hit_tokens;
    g->engine_steps = S->st.steps;
    g->engine_tokens_evaluated = S->st.tokens_evaluated;
    g->engine_preemptions = S->st.preemptions;
    g->prefix_waits = S->st.prefix_waits;
    g->spec_passes = S->st.spec_passes;
    g->spec_drafted = S->st.spec_drafted;
    g->spec_accepted = S->st.spec_accepted;
    g->spec_checked = S->st.spec_checked;
    g->spec_checked_kept = S->st.spec_checked_kept;
    g->prefix_store = S->store;
    g->store_hit_blocks = S->st.store_hit_blocks;
    g->store_writes = S->st.store_writes;
    g->store_entries = S->st.store_entries;
    g->store_bytes = S->st.store_bytes;
    pthread_mutex_unlock(&S->mu);
}

void srv_esched_shutdown(srv_esched *S) {
    if (S->joined) return;
    srv_esched_close(S);
    pthread_mutex_lock(&S->mu);
    S->quit = true;
    pthread_cond_signal(&S->cv);
    pthread_mutex_unlock(&S->mu);
    if (S->started) pthread_join(S->thread, NULL);
    S->joined = true;
}

void srv_esched_free(srv_esched *S) {
    if (!S) return;
    srv_esched_shutdown(S);
    mllm_engine_draft_free(S->draft); /* after the engine, which calls it */
    mllm_free(S->incoming);
    mllm_free(S->batch);
    pthread_cond_destroy(&S->cv);
    pthread_mutex_destroy(&S->mu);
    mllm_free(S);
}
