/* The HTTP layer: libmicrohttpd daemon (one thread per connection), the
   request-head checks (http_check.c) and CORS, request bodies with size and
   time limits, routing, replies. Slow clients are the guard's (guard.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "core/alloc.h"
#include "core/json_check.h"
#include "core/error.h"
#include "server/internal.h"

int srv_fail(srv_err *e, unsigned status, const char *code, const char *param, const char *fmt, ...) {
    e->status = status;
    e->code = code;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int srv_fail_busy(mllm_server *S, srv_err *e) {
    srv_fail(e, 503, "server_busy", NULL, "all %d slots are busy and %d requests are waiting; retry later",
             S->cfg.n_parallel, S->cfg.max_queue);
    e->retry_after = SRV_RETRY_AFTER_S;
    return -1;
}

/* ---- routing ------------------------------------------------------------ */

typedef enum MHD_Result (*srv_handler)(mllm_server *S, srv_req *r);

typedef struct {
    const char *path;
    bool post;      /* else GET (and HEAD) */
    bool upload;    /* the body is multipart/form-data, up to max_upload bytes */
    bool prefix;    /* path is a prefix: /v1/models/{id} */
    bool open;      /* no API key needed */
    srv_handler fn;
} srv_route;

static const srv_route ROUTES[] = {
    {"/", false, false, false, true, srv_ep_page},
    {"/chat.js", false, false, false, true, srv_ep_page},
    {"/chat.css", false, false, false, true, srv_ep_page},
    {"/health", false, false, false, true, srv_ep_health},
    {"/metrics", false, false, false, false, srv_ep_metrics},
    {"/v1/models", false, false, false, false, srv_ep_models},
    {"/models", false, false, false, false, srv_ep_models},
    {"/v1/models/", false, false, true, false, srv_ep_model},
    {"/v1/chat/completions", true, false, false, false, srv_ep_chat},
    {"/chat/completions", true, false, false, false, srv_ep_chat},
    {"/v1/completions", true, false, false, false, srv_ep_completions},
    {"/completions", true, false, false, false, srv_ep_completions},
    {"/v1/embeddings", true, false, false, false, srv_ep_embeddings},
    {"/embeddings", true, false, false, false, srv_ep_embeddings},
    {"/v1/audio/transcriptions", true, true, false, false, srv_ep_transcriptions},
    {"/audio/transcriptions", true, true, false, false, srv_ep_transcriptions},
    {"/v1/audio/translations", true, true, false, false, srv_ep_translations},
    {"/audio/translations", true, true, false, false, srv_ep_translations},
    {"/tokenize", true, false, false, false, srv_ep_tokenize},
    {"/detokenize", true, false, false, false, srv_ep_detokenize},
};

static const srv_route *route_find(const char *url) {
    for (size_t i = 0; i < sizeof ROUTES / sizeof ROUTES[0]; i++) {
        const srv_route *rt = &ROUTES[i];
        if (rt->prefix ? !strncmp(url, rt->path, strlen(rt->path)) && url[strlen(rt->path)]
                       : !strcmp(url, rt->path))
            return rt;
    }
    return NULL;
}

static const char *allow_methods(const char *url) {
    const srv_route *rt = route_find(url);
    return rt && rt->post ? "POST, OPTIONS" : "GET, HEAD, OPTIONS";
}

void srv_add_cors(const srv_req *r, struct MHD_Response *resp) {
    /* Caches must not hand one origin's answer to another. */
    MHD_add_response_header(resp, "Vary", "Origin");
    if (!r->origin.p) return;
    char o[512];
    if (r->origin.n >= sizeof o) return; /* srv_origin_allowed never allows one this long unless "*" */
    memcpy(o, r->origin.p, r->origin.n);
    o[r->origin.n] = 0;
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", o);
}

enum MHD_Result srv_reply(mllm_server *S, srv_req *r, unsigned status, const char *content_type,
                          const char *body, size_t len) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp) return MHD_NO;
    if (content_type) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (status == MHD_HTTP_UNAUTHORIZED) MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (r->retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", r->retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED || status == MHD_HTTP_NO_CONTENT)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow_methods(r->url));
    if (status == MHD_HTTP_NO_CONTENT && r->origin.p) { /* an allowed CORS preflight */
        MHD_add_response_header(resp, "Access-Control-Allow-Methods", allow_methods(r->url));
        MHD_add_response_header(resp, "Access-Control-Allow-Headers", "Authorization, Content-Type");
        MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
    }
    srv_add_cors(r, resp);
    enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    if (ret == MHD_YES) {
        r->answered = true;
        r->status = status;
        srv_metrics_response(&S->metrics, status);
    }
    return ret;
}

enum MHD_Result srv_reply_json(mllm_server *S, srv_req *r, unsigned status, cJSON *obj) {
    char *txt = obj ? cJSON_PrintUnformatted(obj) : NULL;
    cJSON_Delete(obj);
    if (!txt) return srv_reply_error(S, r, 500, NULL, "out of memory");
    enum MHD_Result ret = srv_reply(S, r, status, "application/json", txt, strlen(txt));
    cJSON_free(txt);
    return ret;
}

enum MHD_Result srv_reply_err(mllm_server *S, srv_req *r, const srv_err *e) {
    cJSON *root = cJSON_CreateObject(), *err = cJSON_AddObjectToObject(root, "error");
    if (err) {
        cJSON_AddStringToObject(err, "message", e->msg);
        cJSON_AddStringToObject(err, "type", e->status >= 500 ? "server_error" : "invalid_request_error");
        if (e->param[0]) cJSON_AddStringToObject(err, "param", e->param);
        else cJSON_AddNullToObject(err, "param");
        if (e->code) cJSON_AddStringToObject(err, "code", e->code);
        else cJSON_AddNullToObject(err, "code");
    }
    char *txt = err ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    r->retry_after = e->retry_after;
    /* Out of memory: a fixed body still tells the client what happened. */
    static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}";
    enum MHD_Result ret = txt ? srv_reply(S, r, e->status, "application/json", txt, strlen(txt))
                              : srv_reply(S, r, 500, "application/json", oom, sizeof oom - 1);
    cJSON_free(txt);
    return ret;
}

enum MHD_Result srv_reply_error(mllm_server *S, srv_req *r, unsigned status, const char *code, const char *fmt, ...) {
    srv_err e = {.status = status, .code = code};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
    return srv_reply_err(S, r, &e);
}

void srv_conn_timeout(mllm_server *S, struct MHD_Connection *c, bool on) {
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, on ? (unsigned)S->cfg.timeout_s : 0u);
}

bool srv_client_gone(int fd) {
    if (fd < 0) return false;
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return true;
    return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

cJSON *srv_parse_body(const srv_req *r, srv_err *e) {
    if (r->len == 0) { srv_fail(e, 400, NULL, NULL, "the request body is empty; expected a JSON object"); return NULL; }
    char why[160];
    if (!mllm_json_text_check(r->body, r->len, why, sizeof why)) { /* cJSON would cut text at a NUL */
        srv_fail(e, 400, NULL, NULL, "the request body is not valid here: %s", why);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(r->body, r->len, &end, false);
    if (!root) {
        size_t at = end && end >= r->body ? (size_t)(end - r->body) : 0;
        srv_fail(e, 400, NULL, NULL, "the request body is not valid JSON (error near byte %zu)", at);
        return NULL;
    }
    /* Only whitespace may follow the value. */
    for (const char *p = end; p < r->body + r->len; p++) {
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
            cJSON_Delete(root);
            srv_fail(e, 400, NULL, NULL, "the request body has bytes after the JSON value (byte %zu)",
                     (size_t)(p - r->body));
            return NULL;
        }
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        srv_fail(e, 400, NULL, NULL, "the request body must be a JSON object");
        return NULL;
    }
    return root;
}

/* libmicrohttpd 0.9.75 measures header values with strlen, so a NUL byte
   hides the rest of its line: "Bearer KEY\0junk" reads as "Bearer KEY".
   It parses the head in place, turning each line end (CR LF, or LF) into
   NULs, so the next header's name starts right after the NUL that ends a
   value (LF) or one byte later (CR LF). Anything else in between is the
   hidden rest of a line, or a folded continuation line (obs-fold, which
   libmicrohttpd mangles and RFC 9112 lets a server refuse). After the last
   header only NULs (its line end, the blank line) may follow at once. */
typedef struct {
    srv_head *h;
    const char *prev_end; /* the NUL after the previous header's value */
} head_walk;

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                  const char *value, size_t value_size) {
    (void)kind;
    head_walk *w = cls;
    const char *end = w->prev_end;
    if (end && key != end + 1 && !(key == end + 2 && end[1] == 0)) w->h->nul = true;
    w->prev_end = value ? value + value_size : NULL;
    srv_head_add(w->h, key, key_size, value, value_size);
    return MHD_YES;
}

static void read_head(struct MHD_Connection *conn, srv_head *h) {
    head_walk w = {h, NULL};
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, add_header, &w);
    if (w.prev_end && w.prev_end[1]) h->nul = true;
}

/* The path's percent-escapes decoded, as libmicrohttpd does, except that
   a path holding %00 becomes the empty string (which no request line can
   give otherwise): decoded, the NUL would cut the route, so /health%00evil
   would answer as /health and the log would record the cut path.
   reject_early refuses it. Also applied to query arguments, where such a
   value becomes empty. */
static size_t unescape_uri(void *cls, struct MHD_Connection *conn, char *s) {
    (void)cls, (void)conn;
    for (const char *q = strchr(s, '%'); q; q = strchr(q + 1, '%'))
        if (q[1] == '0' && q[2] == '0') {
            s[0] = 0;
            return 0;
        }
    return MHD_http_unescape(s);
}

/* Checks what can be checked before the body arrives; true if it answered. */
static bool reject_early(mllm_server *S, srv_req *r, const char *version, const srv_route *rt, enum MHD_Result *ret) {
    bool is_get = !strcmp(r->method, MHD_HTTP_METHOD_GET) || !strcmp(r->method, MHD_HTTP_METHOD_HEAD);
    bool is_post = !strcmp(r->method, MHD_HTTP_METHOD_POST);
    bool is_options = !strcmp(r->method, MHD_HTTP_METHOD_OPTIONS);
    srv_head h = {0};
    srv_err e = {0};
    read_head(r->conn, &h);
    if (srv_head_check_framing(&S->policy, &h, version, &e)) { *ret = srv_reply_err(S, r, &e); return true; }
    if (!r->url[0]) {
        *ret = srv_reply_error(S, r, 400, "invalid_path", "the path holds an encoded NUL byte (%%00)");
        return true;
    }
    if (h.n_origin) r->origin = h.origin; /* allowed, or framing would have refused it */
    if (h.n_content_type == 1) r->content_type = h.content_type; /* points into the connection's head */
    if (!rt) {
        *ret = srv_reply_error(S, r, 404, "not_found", "no such endpoint: %s %.100s", r->method, r->url);
        return true;
    }
    if (is_options) {
        /* A CORS preflight (or a plain OPTIONS): never needs the key, as
           browsers send preflights without credentials. */
        bool want_post = h.acr_method.n == 4 && !memcmp(h.acr_method.p, "POST", 4);
        bool want_get = (h.acr_method.n == 3 && !memcmp(h.acr_method.p, "GET", 3)) ||
                        (h.acr_method.n == 4 && !memcmp(h.acr_method.p, "HEAD", 4));
        if (h.acr_method.p && (rt->post ? !want_post : !want_get)) {
            *ret = srv_reply_error(S, r, 405, "method_not_allowed", "%.100s: use %s", r->url, rt->post ? "POST" : "GET");
            return true;
        }
        *ret = srv_reply(S, r, MHD_HTTP_NO_CONTENT, NULL, "", 0);
        return true;
    }
    if (rt->post ? !is_post : !is_get) {
        *ret = srv_reply_error(S, r, 405, "method_not_allowed", "%s %.100s: use %s", r->method, r->url,
                               rt->post ? "POST" : "GET");
        return true;
    }
    srv_req_kind k = {.post = rt->post, .need_key = !rt->open, .multipart = rt->upload};
    r->limit = rt->upload ? S->cfg.max_upload : S->cfg.max_body;
    if (srv_head_check_access(&S->policy, &h, &k, &e)) { *ret = srv_reply_err(S, r, &e); return true; }
    if (atomic_load(&S->draining) && !rt->open) {
        *ret = srv_reply_error(S, r, 503, "shutting_down", "the server is shutting down");
        return true;
    }
    return false;
}

/* Appends an upload chunk; beyond the route's limit only a flag is kept. */
static void body_append(srv_req *r, const char *data, size_t n) {
    if (r->too_big) return;
    if (n > r->limit - r->len) { r->too_big = true; return; }
    if (r->len + n + 1 > r->cap) {
        size_t nc = r->cap ? r->cap : 1024;
        while (nc < r->len + n + 1) nc *= 2;
        char *b = mllm_realloc(r->body, nc);
        if (!b) { r->too_big = true; return; }
        r->body = b;
        r->cap = nc;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    mllm_server *S = cls;
    srv_req *r = *con_cls;
    enum MHD_Result ret = MHD_YES;
    if (!r) {
        r = mllm_calloc(1, sizeof *r);
        if (!r) return MHD_NO;
        *con_cls = r;
        r->conn = conn;
        r->url = url;
        r->method = method;
        r->t0 = mllm_clock_mono_ms();
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        r->fd = ci ? ci->connect_fd : -1;
        r->gc = srv_guard_conn(conn);
        srv_guard_phase(S->guard, r->gc, SRV_CONN_BODY); /* the head is complete */
        reject_early(S, r, version, route_find(url), &ret);
        return ret;
    }
    if (r->answered) { *upload_data_size = 0; return MHD_YES; } /* the rest of a refused body */
    if (*upload_data_size) {
        /* libmicrohttpd cannot answer in the middle of a body: a late body
           is discarded and answered 408 when it ends; one still trickling
           at twice the deadline is cut off. */
        double late = mllm_clock_mono_ms() - r->t0 - 1000.0 * S->cfg.timeout_s;
        if (late > 1000.0 * S->cfg.timeout_s) return MHD_NO;
        if (late > 0) r->timed_out = true;
        if (!r->timed_out) body_append(r, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->timed_out)
        return srv_reply_error(S, r, 408, "timeout", "the request body took longer than %d s", S->cfg.timeout_s);
    if (r->too_big)
        return srv_reply_error(S, r, 413, "request_too_large", "the request body is larger than %zu bytes",
                               r->limit);
    srv_guard_phase(S->guard, r->gc, SRV_CONN_BUSY); /* answering now: no deadline */
    return route_find(url)->fn(S, r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
    mllm_server *S = cls;
    srv_req *r = *con_cls;
    if (!r) return;
    srv_conn_timeout(S, conn, true); /* the next request on this connection is timed again */
    srv_guard_phase(S->guard, r->gc, SRV_CONN_HEAD);
    if (S->cfg.log_requests) srv_log_request(r, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
    srv_job_unref(r->job);
    if (r->responding) atomic_fetch_sub(&S->responding, 1);
    mllm_free(r->body);
    mllm_free(r);
    *con_cls = NULL;
}

/* libmicrohttpd's own messages, prefixed. Our content reader ends a stream
   "with error" exactly when the client has hung up, and a connection the
   guard closes mid-request reads as one "closed by remote side": those are
   routine, and one line per shed connection would let slow clients flood
   the log (mllm_connections_shed_total counts them instead). */
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    if (strstr(fmt, "application error generating response") || strstr(fmt, "closed by remote side")) return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = 0;
    fprintf(stderr, "mllm serve: http: %s\n", msg);
}

mllm_status srv_http_start(mllm_server *S) {
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    const struct sockaddr *sa;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG;
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    if (inet_pton(AF_INET, S->host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)S->cfg.port);
        sa = (const struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, S->host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)S->cfg.port);
        sa = (const struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        return mllm_err(MLLM_ERR_INVALID_ARG, "server: --host '%s' is not an IPv4 or IPv6 address", S->host);
    }
    srv_guard_cfg gc = {.max_connections = S->cfg.max_connections,
                        .max_per_ip = S->cfg.max_connections_per_ip,
                        .header_ms = 1000 * S->cfg.header_timeout_s,
                        .body_ms = 2000 * S->cfg.timeout_s}; /* 408 at timeout_s, cut off at twice that */
    mllm_status st = srv_guard_new(&gc, &S->metrics, &S->guard);
    if (st != MLLM_OK) return st;
    S->daemon = MHD_start_daemon(flags, (uint16_t)S->cfg.port, NULL, NULL, on_request, S,
                                 MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, /* must come first */
                                 MHD_OPTION_SOCK_ADDR, sa,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, S,
                                 MHD_OPTION_NOTIFY_CONNECTION, srv_guard_notify, S->guard,
                                 MHD_OPTION_CONNECTION_LIMIT, srv_guard_mhd_limit(&gc),
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)S->cfg.timeout_s,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024,
                                 MHD_OPTION_UNESCAPE_CALLBACK, unescape_uri, NULL,
                                 MHD_OPTION_END);
    if (!S->daemon) {
        srv_guard_free(S->guard);
        S->guard = NULL;
        return mllm_err(MLLM_ERR_IO, "server: cannot listen on %s port %d (in use, or not allowed)", S->host,
                        S->cfg.port);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(S->daemon, MHD_DAEMON_INFO_BIND_PORT);
    S->port = di ? di->port : S->cfg.port;
    return MLLM_OK;
}

void srv_http_quiesce(mllm_server *S) {
    if (!S->daemon) return;
    MHD_socket fd = MHD_quiesce_daemon(S->daemon);
    if (fd == MHD_INVALID_SOCKET) return;
    /* Without accept() the kernel would still complete handshakes into the
       backlog, leaving clients hanging; shutdown() takes the socket out of
       LISTEN (new connections are refused) while the fd stays valid: MHD
       threads may still look at it until stop, when it is closed. */
    shutdown(fd, SHUT_RDWR);
    S->quiesced_fd = fd;
}

void srv_http_stop(mllm_server *S) {
    if (S->daemon) MHD_stop_daemon(S->daemon);
    S->daemon = NULL;
    srv_guard_free(S->guard); /* after the daemon: it reports every connection closed first */
    S->guard = NULL;
    if (S->quiesced_fd >= 0) close(S->quiesced_fd);
    S->quiesced_fd = -1;
}
