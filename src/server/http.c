/* The HTTP layer: libmicrohttpd daemon (one thread per connection), request
   bodies with size and time limits, API-key check, routing, replies. */
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

enum MHD_Result srv_reply(mllm_server *S, srv_req *r, unsigned status, const char *content_type,
                          const char *body, size_t len) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (status == MHD_HTTP_UNAUTHORIZED) MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, !strncmp(r->url, "/v1/models", 10) ||
                                                                     !strcmp(r->url, "/health") ||
                                                                     !strcmp(r->url, "/metrics")
                                                                 ? "GET, HEAD"
                                                                 : "POST");
    enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    if (ret == MHD_YES) {
        r->answered = true;
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

/* ---- routing ------------------------------------------------------------ */

typedef enum MHD_Result (*srv_handler)(mllm_server *S, srv_req *r);

typedef struct {
    const char *path;
    bool post;      /* else GET (and HEAD) */
    bool prefix;    /* path is a prefix: /v1/models/{id} */
    bool open;      /* no API key needed */
    srv_handler fn;
} srv_route;

static const srv_route ROUTES[] = {
    {"/health", false, false, true, srv_ep_health},
    {"/metrics", false, false, false, srv_ep_metrics},
    {"/v1/models", false, false, false, srv_ep_models},
    {"/models", false, false, false, srv_ep_models},
    {"/v1/models/", false, true, false, srv_ep_model},
    {"/v1/chat/completions", true, false, false, srv_ep_chat},
    {"/chat/completions", true, false, false, srv_ep_chat},
    {"/v1/completions", true, false, false, srv_ep_completions},
    {"/completions", true, false, false, srv_ep_completions},
    {"/tokenize", true, false, false, srv_ep_tokenize},
    {"/detokenize", true, false, false, srv_ep_detokenize},
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

/* Compares the whole key whatever the input, so timing says nothing. */
static bool key_ok(const char *want, const char *header) {
    static const char bearer[] = "Bearer ";
    if (!header || strncmp(header, bearer, sizeof bearer - 1)) return false;
    const char *got = header + sizeof bearer - 1;
    size_t nw = strlen(want), ng = strlen(got);
    unsigned diff = (unsigned)(nw != ng);
    for (size_t i = 0; i < nw; i++) diff |= (unsigned char)want[i] ^ (unsigned char)(i < ng ? got[i] : 0);
    return diff == 0;
}

/* Checks what can be checked before the body arrives; true if it answered. */
static bool reject_early(mllm_server *S, srv_req *r, const srv_route *rt, enum MHD_Result *ret) {
    bool is_get = !strcmp(r->method, MHD_HTTP_METHOD_GET) || !strcmp(r->method, MHD_HTTP_METHOD_HEAD);
    bool is_post = !strcmp(r->method, MHD_HTTP_METHOD_POST);
    if (!rt) {
        *ret = srv_reply_error(S, r, 404, "not_found", "no such endpoint: %s %.100s", r->method, r->url);
        return true;
    }
    if (rt->post ? !is_post : !is_get) {
        *ret = srv_reply_error(S, r, 405, "method_not_allowed", "%s %.100s: use %s", r->method, r->url,
                               rt->post ? "POST" : "GET");
        return true;
    }
    if (S->api_key && !rt->open &&
        !key_ok(S->api_key, MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION))) {
        *ret = srv_reply_error(S, r, 401, "invalid_api_key",
                               "missing or wrong API key: send the header 'Authorization: Bearer KEY'");
        return true;
    }
    const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        char *end = NULL;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (errno || end == cl || n > S->cfg.max_body) {
            *ret = srv_reply_error(S, r, 413, "request_too_large", "the request body is larger than %zu bytes",
                                   S->cfg.max_body);
            return true;
        }
    }
    if (atomic_load(&S->draining) && !rt->open) {
        *ret = srv_reply_error(S, r, 503, "shutting_down", "the server is shutting down");
        return true;
    }
    return false;
}

/* Appends an upload chunk; beyond max_body only a flag is kept. */
static void body_append(mllm_server *S, srv_req *r, const char *data, size_t n) {
    if (r->too_big) return;
    if (n > S->cfg.max_body - r->len) { r->too_big = true; return; }
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
        r->t0 = srv_now_ms();
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        r->fd = ci ? ci->connect_fd : -1;
        reject_early(S, r, route_find(url), &ret);
        return ret;
    }
    if (r->answered) { *upload_data_size = 0; return MHD_YES; } /* the rest of a refused body */
    if (*upload_data_size) {
        /* libmicrohttpd cannot answer in the middle of a body: a late body
           is discarded and answered 408 when it ends; one still trickling
           at twice the deadline is cut off. */
        double late = srv_now_ms() - r->t0 - 1000.0 * S->cfg.timeout_s;
        if (late > 1000.0 * S->cfg.timeout_s) return MHD_NO;
        if (late > 0) r->timed_out = true;
        if (!r->timed_out) body_append(S, r, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->timed_out)
        return srv_reply_error(S, r, 408, "timeout", "the request body took longer than %d s", S->cfg.timeout_s);
    if (r->too_big)
        return srv_reply_error(S, r, 413, "request_too_large", "the request body is larger than %zu bytes",
                               S->cfg.max_body);
    return route_find(url)->fn(S, r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
    mllm_server *S = cls;
    srv_req *r = *con_cls;
    if (!r) return;
    srv_conn_timeout(S, conn, true); /* the next request on this connection is timed again */
    if (r->responding) atomic_fetch_sub(&S->responding, 1);
    mllm_free(r->body);
    mllm_free(r);
    *con_cls = NULL;
}

/* libmicrohttpd's own messages, prefixed. Our content reader ends a stream
   "with error" exactly when the client has hung up: that one is routine. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    if (strstr(fmt, "application error generating response")) return;
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
    S->daemon = MHD_start_daemon(flags, (uint16_t)S->cfg.port, NULL, NULL, on_request, S,
                                 MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, /* must come first */
                                 MHD_OPTION_SOCK_ADDR, sa,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, S,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)S->cfg.max_connections,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)S->cfg.timeout_s,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024,
                                 MHD_OPTION_END);
    if (!S->daemon)
        return mllm_err(MLLM_ERR_IO, "server: cannot listen on %s port %d (in use, or not allowed)", S->host,
                        S->cfg.port);
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
    if (S->quiesced_fd >= 0) close(S->quiesced_fd);
    S->quiesced_fd = -1;
}
