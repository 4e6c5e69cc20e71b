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
    srv_job *j;
    struct MHD_Connection *conn;
    int fd;
    char *out;          /* (out_len) SSE bytes not yet handed to MHD, from out_off */
    size_t out_len, out_off;
    size_t sent;        /* bytes of j->text already sent */
    int lp_sent;        /* j->lp entries already sent */
    bool role_sent, done;
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

/* The end of the stream (job mu held): final chunk or error, usage, [DONE]. */
static bool push_end(srv_stream *st) {
    srv_job *j = st->j;
    bool ok;
    if (j->finish == SRV_FINISH_ERROR) ok = push(st, srv_oai_error_event((unsigned)j->http_status, j->err));
    else if (j->finish == SRV_FINISH_CANCELLED)
        ok = push(st, srv_oai_error_event(503, "generation cancelled: the server is shutting down"));
    else {
        const char *reason = j->finish == SRV_FINISH_LENGTH ? "length" : "stop";
        int to = srv_job_logprobs_ready_locked(j); /* tokens without text of their own, if any */
        ok = push(st, srv_oai_chunk(st->S, &st->q, NULL, 0, false, reason, j, st->lp_sent, to));
        st->lp_sent = to;
        if (ok && st->q.include_usage) ok = push(st, srv_oai_usage_chunk(st->S, &st->q, j));
    }
    char *done = mllm_strndup("data: [DONE]\n\n", 14);
    return ok && push(st, done);
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max) {
    srv_stream *st = cls;
    srv_job *j = st->j;
    double last_check = srv_now_ms();
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
        if (st->q.chat && !st->role_sent) {
            st->role_sent = true;
            if (!push(st, srv_oai_chunk(st->S, &st->q, NULL, 0, true, NULL, NULL, 0, 0))) return MHD_CONTENT_READER_END_WITH_ERROR;
            continue;
        }
        pthread_mutex_lock(&j->mu);
        bool ok = true;
        if (j->safe > st->sent) {
            int to = srv_job_logprobs_ready_locked(j);
            ok = push(st, srv_oai_chunk(st->S, &st->q, j->text + st->sent, j->safe - st->sent, false, NULL, j,
                                        st->lp_sent, to));
            st->sent = j->safe;
            st->lp_sent = to;
        } else if (j->state == SRV_JOB_DONE) {
            ok = push_end(st);
            st->done = true;
        } else {
            srv_job_wait_locked(j, STREAM_POLL_MS);
        }
        pthread_mutex_unlock(&j->mu);
        if (!ok) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (st->done) srv_conn_timeout(st->S, st->conn, true);
        if (st->out_len == 0 && srv_now_ms() - last_check >= STREAM_POLL_MS) {
            last_check = srv_now_ms();
            if (srv_client_gone(st->fd)) return MHD_CONTENT_READER_END_WITH_ERROR; /* free_stream cancels */
        }
    }
}

static void free_stream(void *cls) {
    srv_stream *st = cls;
    if (!st->done) srv_sched_cancel(st->S->sched, st->j); /* the client went away mid-stream */
    srv_job_unref(st->j);
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
    st->j = j;
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
