/* Fuzz target: the server's handling of a raw HTTP request (src/server).
   libmicrohttpd's own parser cannot be driven in-process without sockets
   and threads per input (and is not our code), so this harness has its
   own raw-request splitter (request line, header lines, body) and feeds
   what it finds to our layer, the same functions http.c calls: the head
   rules (http_check.c: NUL, Host, Content-Length, Origin, key, body
   limit, media type) and the JSON body parser (srv_parse_body). The
   OpenAI field parsers need a loaded model and are not reached here.
   Input: a mode byte (bit 0: an API key is set; bits 1-2: origins none,
   "*", a list, none), then the raw request. Checked: every refusal is a
   4xx with a message; what passes really meets the rules, per an
   independent reading of the same bytes. */
#include "fuzz_util.h"
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"
#include "server/internal.h"

#define FZ_MAX_BODY 4096
static const char KEY[] = "k3y";
static const char *const ORIGINS[] = {NULL, "*", "http://a.example,https://b.example:8443", NULL};

typedef struct {
    const char *p;
    size_t n;
} span;

/* Next line (without CR LF or LF) from *in; false at the end of input. */
static bool take_line(span *in, span *line) {
    const char *lf = in->n ? memchr(in->p, '\n', in->n) : NULL;
    if (!lf) return false;
    size_t n = (size_t)(lf - in->p);
    line->p = in->p;
    line->n = n && in->p[n - 1] == '\r' ? n - 1 : n;
    in->p += n + 1;
    in->n -= n + 1;
    return true;
}

/* The first space-separated word of *s, consumed. */
static span take_word(span *s) {
    const char *sp = s->n ? memchr(s->p, ' ', s->n) : NULL;
    span w = {s->p, sp ? (size_t)(sp - s->p) : s->n};
    s->p += w.n + (sp ? 1 : 0);
    s->n -= w.n + (sp ? 1 : 0);
    return w;
}

static bool span_is(span s, const char *lit) { return s.n == strlen(lit) && !memcmp(s.p, lit, s.n); }

/* Independent oracles for what the checks let through. */
static bool key_matches(srv_str auth) {
    return auth.p && auth.n == 7 + strlen(KEY) && !memcmp(auth.p, "Bearer ", 7) && !memcmp(auth.p + 7, KEY, strlen(KEY));
}

static bool origin_matches(const char *origins, srv_str o) {
    if (!strcmp(origins, "*")) return true;
    return (o.n == 16 && !memcmp(o.p, "http://a.example", 16)) || (o.n == 22 && !memcmp(o.p, "https://b.example:8443", 22));
}

static void check_err(const srv_err *e) {
    /* 4xx, or 501 for a Transfer-Encoding other than chunked */
    FZ_CHECK((e->status >= 400 && e->status < 500) || e->status == 501);
    FZ_CHECK(e->msg[0] != 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t mode = data[0];
    /* Exact-size copy of the request: reads past its end are ASan errors. */
    char *raw = fz_dup(data + 1, size - 1);
    span in = {raw, size - 1}, line;
    srv_policy pol = {.api_key = (mode & 1) ? KEY : NULL, .api_key_len = (mode & 1) ? strlen(KEY) : 0,
                      .origins = ORIGINS[(mode >> 1) & 3], .max_body = FZ_MAX_BODY};
    if (!take_line(&in, &line)) goto out;
    span method = take_word(&line), target = take_word(&line), version = line;
    if (!method.n || !target.n || !version.n) goto out; /* libmicrohttpd answers 400 itself */
    char vbuf[16];
    if (version.n >= sizeof vbuf) goto out;
    memcpy(vbuf, version.p, version.n);
    vbuf[version.n] = 0;

    srv_head h = {0};
    while (take_line(&in, &line) && line.n) {
        const char *colon = memchr(line.p, ':', line.n);
        if (!colon || line.p[0] == ' ' || line.p[0] == '\t') goto out; /* no name, or obs-fold: refused earlier */
        size_t nn = (size_t)(colon - line.p);
        srv_head_add(&h, line.p, nn, colon + 1, line.n - nn - 1);
    }
    FZ_CHECK(h.content_type.p == NULL || (h.content_type.p >= raw && h.content_type.p + h.content_type.n <= raw + size - 1));

    srv_err e = {0};
    if (srv_head_check_framing(&pol, &h, vbuf, &e)) {
        check_err(&e);
        goto out;
    }
    FZ_CHECK(!h.nul && !h.content_length_bad);
    FZ_CHECK(strcmp(vbuf, "HTTP/1.1") || h.n_host == 1);
    if (h.n_origin) FZ_CHECK(h.n_origin == 1 && pol.origins && origin_matches(pol.origins, h.origin));
    bool post = span_is(method, "POST");
    srv_req_kind k = {.post = post, .need_key = !span_is(target, "/health")};
    if (srv_head_check_access(&pol, &h, &k, &e)) {
        check_err(&e);
        goto out;
    }
    if (k.need_key && pol.api_key) FZ_CHECK(key_matches(h.authorization));
    if (!post) goto out;
    FZ_CHECK(h.n_content_type == 1 && srv_media_is_json(h.content_type));
    /* The body as libmicrohttpd would hand it over: Content-Length bytes
       (an incomplete one never reaches the handler), else the rest. */
    size_t blen = in.n;
    if (h.n_content_length) {
        if (h.content_length > in.n) goto out;
        blen = (size_t)h.content_length;
    }
    if (blen > FZ_MAX_BODY) goto out; /* 413 while reading (http.c body_append) */
    srv_req r = {0};
    r.body = fz_dup_str(in.p, blen);
    r.len = blen;
    cJSON *root = srv_parse_body(&r, &e);
    if (root) FZ_CHECK(cJSON_IsObject(root));
    else check_err(&e);
    cJSON_Delete(root);
    free(r.body);
out:
    free(raw);
    return 0;
}
