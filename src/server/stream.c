/* The SSE content reader. It runs on the connection's own thread (thread
   per connection), so it may block on the job's condition variable; it
   wakes every 200 ms to notice a client that hung up. */
#include <string.h>
#include "core/alloc.h"
#include "server/stream.h"

#define STREAM_POLL_MS 200

typedef struct {
    mllm_server *S;
    srv_oai_req q;
    srv_job *first;     /* choice 0: the reference this stream holds (it owns the others) */
    srv_job *j;         /* the choice being streamed: one after the other, as they run */
    struct MHD_Connection *conn;
    int fd;
    char *out;          /* (out_len) SSE bytes not yet handed to MHD, from out_off */
    size_t out_len, out_off;
    size_t sent;        /* bytes of j->text already looked at */
    int lp_sent;        /* j->lp entries already sent */
    bool role_sent, done;
    /* With tools: what of the parsed answer went out (toolcall.h: it only grows). */
    size_t content_sent;
    int calls_sent;     /* calls whose first delta (id, name) went out */
    size_t args_sent[SRV_TC_MAX_CALLS];
    bool any_call;      /* the whole answer, parsed at its end, has calls */
} srv_stream;

/* Appends an event (taking ownership); false when out of memory. */
static bool push(srv_stream *st, char *ev) {
    if (!ev) return false;
    size_t n = strlen(ev);
    char *b = mllm_realloc(st->out, st->out_len + n + 1);
    if (!b) { mllm_free(ev); return false; }
    memcpy(b + st->out_len, ev, n + 1);
    st->out = b;
    st->out_len += n;
    mllm_free(ev);
    return true;
}

static bool push_chunk(srv_stream *st, const char *text, size_t n, const char *finish, int lp_to,
                       const srv_oai_tool_delta *tool) {
    bool ok = push(st, srv_oai_chunk(st->S, &st->q, text, n, false, finish, st->j, st->lp_sent, lp_to, st->j->index, tool));
    st->lp_sent = lp_to;
    return ok;
}

/* With tools (job mu held): the deltas between what went out and the
   answer parsed so far (final: the whole answer): content outside calls,
   then each call's first delta (id, name, the arguments so far) and its
   arguments as they grow. Markup never goes out as content. */
static bool tool_deltas(srv_stream *st, bool final) {
    srv_job *j = st->j;
    srv_tc_result r;
    if (srv_tc_parse(st->q.tc_style, j->text, final ? j->len : j->safe, final, st->q.max_calls, &r) != 0) return false;
    int lp_to = srv_job_logprobs_ready_locked(j);
    bool ok = true;
    if (r.content_len > st->content_sent) {
        ok = push_chunk(st, r.content + st->content_sent, r.content_len - st->content_sent, NULL, lp_to, NULL);
        st->content_sent = r.content_len;
    }
    for (int i = 0; ok && i < r.n_calls; i++) {
        const srv_tc_call *c = &r.calls[i];
        srv_oai_tool_delta d = {i, NULL, c->args, c->args_len};
        if (i >= st->calls_sent) {
            if (!c->name) break; /* its first delta carries the name */
            d.name = c->name;
            st->calls_sent = i + 1;
        } else if (c->args_len > st->args_sent[i]) {
            d.args += st->args_sent[i];
            d.args_len -= st->args_sent[i];
        } else {
            continue;
        }
        st->args_sent[i] = c->args_len;
        ok = push_chunk(st, NULL, 0, NULL, lp_to, &d);
    }
    if (final) st->any_call = r.n_calls > 0;
    srv_tc_result_free(&r);
    return ok;
}

/* The end of the current choice (its mu held): its last chunk, or the
   stream's error event. Returns false when out of memory; *fatal when the
   stream ends here (an error). */
static bool push_choice_end(srv_stream *st, bool *fatal) {
    srv_job *j = st->j;
    *fatal = true;
    if (j->finish == SRV_FINISH_ERROR) return push(st, srv_oai_error_event((unsigned)j->http_status, j->err));
    if (j->finish == SRV_FINISH_CANCELLED)
        return push(st, srv_oai_error_event(503, "generation cancelled: the server is shutting down"));
    *fatal = false;
    if (st->q.tc_style && !tool_deltas(st, true)) return false;
    const char *reason = j->finish == SRV_FINISH_LENGTH ? "length" : st->any_call ? "tool_calls" : "stop";
    /* tokens without text of their own, if any */
    return push_chunk(st, NULL, 0, reason, srv_job_logprobs_ready_locked(j), NULL);
}

/* After the last choice (no job lock held): usage, then [DONE]. */
static bool push_end(srv_stream *st) {
    bool ok = true;
    if (st->q.include_usage) {
        pthread_mutex_lock(&st->first->mu);
        ok = push(st, srv_oai_usage_chunk(st->S, &st->q, st->first));
        pthread_mutex_unlock(&st->first->mu);
    }
    return ok && push(st, mllm_strndup("data: [DONE]\n\n", 14));
}

/* The next choice starts from nothing sent. */
static void next_choice(srv_stream *st) {
    st->j = st->j->next;
    st->sent = 0;
    st->lp_sent = 0;
    st->role_sent = false;
    st->content_sent = 0;
    st->calls_sent = 0;
    st->any_call = false;
    memset(st->args_sent, 0, sizeof st->args_sent);
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max) {
    srv_stream *st = cls;
    double last_check = mllm_clock_mono_ms();
    (void)pos;
    for (;;) {
        if (st->out_off < st->out_len) {
            size_t n = st->out_len - st->out_off;
            if (n > max) n = max;
            memcpy(buf, st->out + st->out_off, n);
            st->out_off += n;
            return (ssize_t)n;
        }
        st->out_len = st->out_off = 0;
        if (st->done) return MHD_CONTENT_READER_END_OF_STREAM;
        srv_job *j = st->j;
        if (st->q.chat && !st->role_sent) {
            st->role_sent = true;
            if (!push(st, srv_oai_chunk(st->S, &st->q, NULL, 0, true, NULL, NULL, 0, 0, j->index, NULL)))
                return MHD_CONTENT_READER_END_WITH_ERROR;
            continue;
        }
        pthread_mutex_lock(&j->mu);
        bool ok = true, choice_done = false, fatal = false;
        if (j->safe > st->sent) {
            if (st->q.tc_style) ok = tool_deltas(st, false);
            else ok = push_chunk(st, j->text + st->sent, j->safe - st->sent, NULL, srv_job_logprobs_ready_locked(j), NULL);
            st->sent = j->safe;
        } else if (j->state == SRV_JOB_DONE) {
            ok = push_choice_end(st, &fatal);
            choice_done = true;
        } else {
            srv_job_wait_locked(j, STREAM_POLL_MS);
        }
        pthread_mutex_unlock(&j->mu);
        if (ok && choice_done) {
            if (fatal) ok = push(st, mllm_strndup("data: [DONE]\n\n", 14));
            else if (j->next) next_choice(st);
            else ok = push_end(st);
            st->done = fatal || !j->next;
        }
        if (!ok) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (st->done) srv_conn_timeout(st->S, st->conn, true);
        if (st->out_len == 0 && mllm_clock_mono_ms() - last_check >= STREAM_POLL_MS) {
            last_check = mllm_clock_mono_ms();
            if (srv_client_gone(st->fd)) return MHD_CONTENT_READER_END_WITH_ERROR; /* free_stream cancels */
        }
    }
}

static void free_stream(void *cls) {
    srv_stream *st = cls;
    if (!st->done) srv_sched_cancel(st->S->sched, st->first); /* the client went away mid-stream */
    srv_job_unref(st->first);
    srv_oai_req_free(&st->q);
    mllm_free(st->out);
    mllm_free(st);
}

enum MHD_Result srv_stream_start(mllm_server *S, srv_req *r, srv_oai_req *q, srv_job *j) {
    srv_stream *st = mllm_calloc(1, sizeof *st);
    if (!st) {
        srv_sched_cancel(S->sched, j);
        srv_job_unref(j);
        srv_oai_req_free(q);
        return MHD_NO;
    }
    st->S = S;
    st->q = *q;
    st->first = st->j = j;
    st->conn = r->conn;
    st->fd = r->fd;
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, reader, st, free_stream);
    if (!resp) { free_stream(st); return MHD_NO; }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    srv_add_cors(r, resp);
    enum MHD_Result ret = MHD_queue_response(r->conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp); /* frees st (free_stream) if it was not queued */
    if (ret == MHD_YES) {
        r->answered = true;
        r->status = MHD_HTTP_OK;
        srv_metrics_response(&S->metrics, 200);
    }
    return ret;
}
