/* Request-head rules (http_check.h). Every comparison takes its lengths
   from the header bytes themselves, never from strlen: a value with an
   embedded NUL must not pass as its prefix. */
#include "server/http_check.h"
#include <string.h>
#include "server/internal.h"
#include "server/multipart.h"

static bool ieq(const char *a, size_t na, const char *b) {
    size_t nb = strlen(b);
    if (na != nb) return false;
    for (size_t i = 0; i < na; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (x >= 'A' && x <= 'Z') x = (unsigned char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = (unsigned char)(y - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

static bool is_ows(char c) { return c == ' ' || c == '\t'; }

static srv_str trim(const char *p, size_t n) {
    while (n && is_ows(*p)) p++, n--;
    while (n && is_ows(p[n - 1])) n--;
    return (srv_str){p, n};
}

/* 1*DIGIT; saturates instead of wrapping (a huge value is simply too big). */
static bool parse_digits(srv_str v, unsigned long long *out) {
    if (!v.n) return false;
    unsigned long long x = 0;
    for (size_t i = 0; i < v.n; i++) {
        if (v.p[i] < '0' || v.p[i] > '9') return false;
        unsigned d = (unsigned)(v.p[i] - '0');
        x = x > (~0ull - d) / 10 ? ~0ull : x * 10 + d;
    }
    *out = x;
    return true;
}

void srv_head_add(srv_head *h, const char *name, size_t name_len, const char *value, size_t value_len) {
    srv_str v = trim(value ? value : "", value ? value_len : 0);
    if (value && memchr(value, 0, value_len)) h->nul = true;
    if (ieq(name, name_len, "host")) {
        if (!h->n_host++) h->host = v;
    }
    else if (ieq(name, name_len, "content-length")) {
        unsigned long long x = 0;
        if (!parse_digits(v, &x)) h->content_length_bad = true;
        else if (h->n_content_length && x != h->content_length) h->content_length_bad = true;
        if (!h->n_content_length) h->content_length = x;
        h->n_content_length++;
    } else if (ieq(name, name_len, "transfer-encoding")) {
        /* libmicrohttpd decodes chunked alone; with any other coding it
           waits for a body it cannot frame until the timeout. */
        if (h->n_transfer_encoding++ || !ieq(v.p, v.n, "chunked")) h->te_unknown = true;
    }
    else if (ieq(name, name_len, "content-type")) {
        if (!h->n_content_type++) h->content_type = v;
    } else if (ieq(name, name_len, "origin")) {
        if (!h->n_origin++) h->origin = v;
    } else if (ieq(name, name_len, "authorization")) {
        if (!h->n_authorization++) h->authorization = (srv_str){value ? value : "", value ? value_len : 0};
    } else if (ieq(name, name_len, "access-control-request-method")) h->acr_method = v;
}

bool srv_media_is_json(srv_str ct) {
    static const char want[] = "application/json";
    if (!ct.p) return false;
    size_t n = 0;
    while (n < ct.n && ct.p[n] != ';') n++;
    srv_str type = trim(ct.p, n);
    return ieq(type.p, type.n, want);
}

bool srv_origin_allowed(const char *origins, srv_str origin) {
    if (!origins || !origin.p) return false;
    if (!strcmp(origins, "*")) return true;
    for (const char *s = origins; *s;) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        srv_str item = trim(s, len);
        if (item.n == origin.n && item.n && !memcmp(item.p, origin.p, item.n)) return true;
        s += len;
        if (*s == ',') s++;
    }
    return false;
}

/* host[:port] where host is dotted digits, [hex:colons.dots] or localhost. */
static bool host_is_address(srv_str h) {
    size_t end = h.n;
    if (h.n && h.p[0] == '[') {
        size_t i = 1;
        while (i < h.n && h.p[i] != ']') {
            char c = h.p[i];
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.'))
                return false;
            i++;
        }
        if (i >= h.n || i == 1) return false;
        end = i + 1;
    } else {
        end = 0;
        while (end < h.n && h.p[end] != ':') end++;
        bool dotted = end > 0;
        for (size_t i = 0; i < end; i++) dotted &= (h.p[i] >= '0' && h.p[i] <= '9') || h.p[i] == '.';
        if (!dotted && !ieq(h.p, end, "localhost")) return false;
    }
    if (end == h.n) return true;
    if (h.p[end] != ':' || end + 1 == h.n) return false;
    for (size_t i = end + 1; i < h.n; i++)
        if (h.p[i] < '0' || h.p[i] > '9') return false;
    return true;
}

bool srv_origin_same(srv_str origin, srv_str host) {
    static const char scheme[] = "http://";
    const size_t ns = sizeof scheme - 1;
    if (!origin.p || !host.p || !host.n || origin.n != ns + host.n) return false;
    return !memcmp(origin.p, scheme, ns) && !memcmp(origin.p + ns, host.p, host.n) && host_is_address(host);
}

bool srv_origins_valid(const char *origins) {
    if (!origins || !origins[0] || !strcmp(origins, "*")) return true;
    for (const char *s = origins; *s;) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        srv_str item = trim(s, len);
        /* An origin is scheme://host[:port], no path: a browser never sends more. */
        const char *sep = NULL;
        for (size_t i = 0; i + 2 < item.n; i++)
            if (item.p[i] == ':' && item.p[i + 1] == '/' && item.p[i + 2] == '/') { sep = item.p + i; break; }
        if (!sep || sep == item.p || (size_t)(sep + 3 - item.p) >= item.n) return false;
        for (const char *c = sep + 3; c < item.p + item.n; c++)
            if (*c == '/' || *c == '*' || is_ows(*c)) return false;
        s += len;
        if (*s == ',') s++;
    }
    return true;
}

bool srv_key_ok(const srv_policy *p, srv_str auth) {
    static const char bearer[] = "Bearer ";
    const size_t nb = sizeof bearer - 1;
    if (!p->api_key) return true;
    if (!auth.p || auth.n < nb || memcmp(auth.p, bearer, nb)) return false;
    const unsigned char *got = (const unsigned char *)auth.p + nb;
    size_t ng = auth.n - nb, nw = p->api_key_len;
    /* Every byte of the key is looked at whatever the input, so the time
       taken says nothing about how much of it matched. */
    unsigned diff = (unsigned)(ng != nw);
    for (size_t i = 0; i < nw; i++) diff |= (unsigned char)p->api_key[i] ^ (i < ng ? got[i] : 0u);
    return diff == 0;
}

int srv_head_check_framing(const srv_policy *p, const srv_head *h, const char *version, srv_err *e) {
    /* A NUL would let "Bearer KEY\0junk" pass as its prefix, or a proxy
       and this server read one header two ways. */
    if (h->nul)
        return srv_fail(e, 400, "invalid_header", NULL, "a header line holds a NUL byte or is folded onto the next");
    /* HTTP/1.1 and later 1.x need a Host; 1.0 did not have it. */
    if (version && !strncmp(version, "HTTP/1.", 7) && strcmp(version, "HTTP/1.0") && h->n_host != 1)
        return h->n_host ? srv_fail(e, 400, "invalid_host", NULL, "the request has %u Host headers; one is allowed", h->n_host)
                         : srv_fail(e, 400, "invalid_host", NULL, "an HTTP/1.1 request must have a Host header");
    if (h->content_length_bad)
        return srv_fail(e, 400, "invalid_content_length", NULL,
                        "Content-Length must be one decimal number (several differing values, or not a number)");
    if (h->n_content_length && h->n_transfer_encoding)
        return srv_fail(e, 400, "invalid_content_length", NULL,
                        "a request may have Content-Length or Transfer-Encoding, not both");
    if (h->te_unknown)
        return srv_fail(e, 501, "not_implemented", NULL,
                        "Transfer-Encoding: only one 'chunked' is supported (no other codings, no lists)");
    /* The origin is not echoed: it is the client's bytes, maybe not UTF-8. */
    if (h->n_origin && (h->n_origin > 1 || (!srv_origin_allowed(p->origins, h->origin) &&
                                            !(h->n_host == 1 && srv_origin_same(h->origin, h->host)))))
        return srv_fail(e, 403, "origin_not_allowed", NULL,
                        "cross-origin requests from this Origin are not allowed (see --allowed-origins)");
    return 0;
}

int srv_head_check_access(const srv_policy *p, const srv_head *h, const srv_req_kind *k, srv_err *e) {
    if (k->need_key && !srv_key_ok(p, h->authorization))
        return srv_fail(e, 401, "invalid_api_key", NULL,
                        "missing or wrong API key: send the header 'Authorization: Bearer KEY'");
    const size_t limit = k->multipart ? p->max_upload : p->max_body;
    if (h->n_content_length && h->content_length > limit)
        return srv_fail(e, 413, "request_too_large", NULL, "the request body is larger than %zu bytes", limit);
    srv_str boundary;
    if (k->post && k->multipart && (h->n_content_type != 1 || !srv_mp_boundary(h->content_type, &boundary)))
        return srv_fail(e, 415, "unsupported_media_type", NULL,
                        "the request body must be sent as 'Content-Type: multipart/form-data; boundary=...'");
    if (k->post && !k->multipart && (h->n_content_type != 1 || !srv_media_is_json(h->content_type)))
        return srv_fail(e, 415, "unsupported_media_type", NULL,
                        "the request body must be sent with 'Content-Type: application/json'");
    return 0;
}
