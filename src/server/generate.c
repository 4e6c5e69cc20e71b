/* POST /v1/completions and /v1/chat/completions: validate, tokenize, check
   the context, enqueue, then wait for the job (or stream it, stream.c). */
#include <string.h>
#include "core/alloc.h"
#include "server/oai.h"
#include "server/stream.h"

/* The job's prompt ids, and max_tokens fitted to the context. */
static int prompt_ids(mllm_server *S, srv_oai_req *q, srv_job *j, srv_err *e) {
    j->images = q->images; /* image_url parts: the scheduler reads q->conv with them */
    j->conv = q->conv;
    j->own_images = q->images != NULL;
    q->images = NULL;
    q->conv = NULL;
    if (q->ids) {
        j->ids = q->ids;
        j->n_ids = q->n_ids;
        q->ids = NULL;
    } else {
        /* A chat template writes BOS itself when the model wants one (as
           mllm_chat and apply_chat_template do); a plain prompt gets it. */
        int add_special = !q->chat;
        size_t len = strlen(q->prompt), n = 0;
        mllm_status st = mllm_tokenize(S->model, q->prompt, len, add_special, NULL, 0, &n);
        if (st == MLLM_OK || st == MLLM_ERR_BUFFER_TOO_SMALL) {
            j->ids = mllm_malloc((n ? n : 1) * sizeof *j->ids);
            st = j->ids ? mllm_tokenize(S->model, q->prompt, len, add_special, j->ids, n, &n) : MLLM_ERR_NOMEM;
        }
        if (st != MLLM_OK) return srv_fail(e, 500, NULL, NULL, "tokenize failed: %s", mllm_last_error());
        j->n_ids = n;
    }
    size_t n_ctx = (size_t)srv_sched_n_ctx(S->sched);
    if (j->n_ids == 0) return srv_fail(e, 400, NULL, q->chat ? "messages" : "prompt", "the prompt is empty");
    if (j->n_ids >= n_ctx)
        return srv_fail(e, 400, "context_length_exceeded", q->chat ? "messages" : "prompt",
                        "this model's context is %zu tokens; the prompt has %zu", n_ctx, j->n_ids);
    /* What a context shift keeps: the system turn (found while rendering),
       else a leading BOS. */
    j->n_keep = q->n_keep ? q->n_keep : j->ids[0] == mllm_model_bos(S->model);
    /* With context shifts the answer is not bounded by the room left. */
    if (S->cfg.context_shift) {
        if (!q->max_tokens_given) j->sampling.max_tokens = S->cfg.default_max_tokens;
        return 0;
    }
    size_t room = n_ctx - j->n_ids;
    if (q->max_tokens_given && (size_t)j->sampling.max_tokens > room)
        return srv_fail(e, 400, "context_length_exceeded", "max_tokens",
                        "this model's context is %zu tokens; the prompt has %zu and max_tokens is %d", n_ctx,
                        j->n_ids, j->sampling.max_tokens);
    if (!q->max_tokens_given)
        j->sampling.max_tokens = (size_t)S->cfg.default_max_tokens < room ? S->cfg.default_max_tokens : (int)room;
    return 0;
}

/* Blocks until the job and every choice chained to it end; false if the
   client hung up first (they are then cancelled). */
static bool wait_job(mllm_server *S, srv_req *r, srv_job *j0) {
    double last = mllm_clock_mono_ms();
    for (srv_job *j = j0; j; j = j->next) {
        pthread_mutex_lock(&j->mu);
        while (j->state != SRV_JOB_DONE) {
            srv_job_wait_locked(j, 200);
            if (j->state == SRV_JOB_DONE || mllm_clock_mono_ms() - last < 200) continue;
            last = mllm_clock_mono_ms();
            if (srv_client_gone(r->fd)) {
                pthread_mutex_unlock(&j->mu);
                srv_sched_cancel(S->sched, j0);
                return false;
            }
        }
        pthread_mutex_unlock(&j->mu);
    }
    return true;
}

/* All choices are done: the response, or the first choice's error. */
static enum MHD_Result reply_done(mllm_server *S, srv_req *r, const srv_oai_req *q, srv_job *j0) {
    srv_err e = {0};
    for (srv_job *j = j0; j && !e.status; j = j->next) {
        pthread_mutex_lock(&j->mu);
        if (j->finish == SRV_FINISH_ERROR) srv_fail(&e, (unsigned)j->http_status, NULL, NULL, "%s", j->err);
        else if (j->finish == SRV_FINISH_CANCELLED) srv_fail(&e, 503, "shutting_down", NULL, "the server is shutting down");
        pthread_mutex_unlock(&j->mu);
    }
    if (e.status) return srv_reply_err(S, r, &e);
    pthread_mutex_lock(&j0->mu);
    cJSON *o = srv_oai_result(S, q, j0);
    pthread_mutex_unlock(&j0->mu);
    return srv_reply_json(S, r, 200, o);
}

static enum MHD_Result generate(mllm_server *S, srv_req *r, bool chat) {
    srv_err e = {0};
    if (!S->sched)
        return srv_reply_error(S, r, 400, "model_not_supported", "the model '%s' is %s, not %s", S->model_id,
                               mllm_model_can_transcribe(S->model)
                                   ? "a speech-to-text model: it answers /v1/audio/transcriptions"
                                   : "an embedding model: it answers /v1/embeddings",
                               chat ? "/v1/chat/completions" : "/v1/completions");
    cJSON *root = srv_parse_body(r, &e);
    if (!root) return srv_reply_err(S, r, &e);
    srv_job *j = srv_job_new();
    if (!j) { cJSON_Delete(root); return srv_reply_error(S, r, 500, NULL, "out of memory"); }
    srv_oai_req q;
    int rc = srv_oai_parse(S, root, chat, &q, j, &e);
    cJSON_Delete(root);
    if (rc == 0) rc = prompt_ids(S, &q, j, &e);
    /* n > 1: more choices, chained to the first, with seeds seed + 1, ... */
    for (int c = 1; rc == 0 && c < q.n; c++)
        if (!srv_job_add_choice(j, c)) rc = srv_fail(&e, 500, NULL, NULL, "out of memory");
    mllm_free(q.prompt);
    q.prompt = NULL;
    if (rc == 0) {
        srv_submit sub = srv_sched_submit(S->sched, j);
        if (sub == SRV_SUBMIT_FULL) rc = srv_fail_busy(S, &e);
        else if (sub == SRV_SUBMIT_CLOSED) rc = srv_fail(&e, 503, "shutting_down", NULL, "the server is shutting down");
    }
    if (rc) {
        srv_oai_req_free(&q);
        srv_job_unref(j);
        return srv_reply_err(S, r, &e);
    }
    srv_job_ref(j); /* for the request log's token counts (on_completed) */
    r->job = j;
    /* Shutdown waits for this response to be sent (on_completed). */
    r->responding = true;
    atomic_fetch_add(&S->responding, 1);
    /* A generation may keep the connection quiet for long: no idle timeout
       until it ends (a hang-up still cancels it). */
    srv_conn_timeout(S, r->conn, false);
    if (q.stream) return srv_stream_start(S, r, &q, j); /* takes q and the job reference */
    enum MHD_Result ret = wait_job(S, r, j) ? reply_done(S, r, &q, j) : MHD_NO;
    srv_oai_req_free(&q);
    srv_job_unref(j);
    return ret;
}

enum MHD_Result srv_ep_completions(mllm_server *S, srv_req *r) { return generate(S, r, false); }
enum MHD_Result srv_ep_chat(mllm_server *S, srv_req *r) { return generate(S, r, true); }
