/* The rules a request's head must meet before its body is read: one Host
   (HTTP/1.1), one Content-Length, a JSON media type for bodies, an allowed
   Origin, the exact API key. Pure functions over the header bytes (no
   libmicrohttpd), so tests/fuzz/fuzz_http.c can drive them with raw
   requests. Lengths are explicit everywhere: a header value may hold NUL. */
#ifndef MLLM_SERVER_HTTP_CHECK_H
#define MLLM_SERVER_HTTP_CHECK_H
#include <stdbool.h>
#include <stddef.h>

typedef struct srv_err srv_err;

typedef struct {
    const char *p; /* not NUL-terminated in general; NULL when absent */
    size_t n;
} srv_str;

/* What the checks need from a request's headers, gathered one header at a
   time (srv_head_add); values point into the caller's buffer. */
typedef struct {
    unsigned n_host, n_content_length, n_transfer_encoding, n_content_type, n_origin, n_authorization;
    bool content_length_bad;          /* a value not all digits, or two that differ */
    bool te_unknown;                  /* a Transfer-Encoding other than one "chunked" */
    bool nul;                         /* a value holds a NUL byte (RFC 9110 forbids it); http.c also
                                         sets it for folded lines */
    unsigned long long content_length; /* the first value (saturated) */
    srv_str content_type, origin, authorization, host;
    srv_str acr_method;               /* Access-Control-Request-Method (preflight) */
} srv_head;

/* Who may call: the key, the origins, the body limit. */
typedef struct {
    const char *api_key;   /* NULL: no key needed */
    size_t api_key_len;
    const char *origins;   /* NULL: no cross-origin access; "*"; or "https://a.example,http://b:3000" */
    size_t max_body;
    size_t max_upload;     /* the body limit of multipart routes */
} srv_policy;

/* The route, as far as the checks care. */
typedef struct {
    bool post;             /* the route takes a JSON body */
    bool need_key;         /* the route is not open (/health is) */
    bool multipart;        /* the route takes multipart/form-data (an upload), not JSON */
} srv_req_kind;

void srv_head_add(srv_head *h, const char *name, size_t name_len, const char *value, size_t value_len);

/* "application/json", any case, optionally followed by parameters
   ("; charset=utf-8"); nothing else. */
bool srv_media_is_json(srv_str content_type);
/* origin is exactly (bytes and length) one entry of the list, or the list
   is "*". No Origin header never reaches here: it is not cross-origin. */
bool srv_origin_allowed(const char *origins, srv_str origin);
/* The request comes from a page this server served: origin is exactly
   "http://" + host, and host names an address (an IP literal, [IPv6], or
   localhost, with any port). A domain name is not enough: with DNS
   rebinding a hostile page on evil.example:8080 reaches the server with
   Origin and Host both saying evil.example:8080. */
bool srv_origin_same(srv_str origin, srv_str host);
/* "Bearer " + exactly the key: lengths and every byte compared, in time
   that does not depend on where they differ. */
bool srv_key_ok(const srv_policy *p, srv_str authorization);
/* A --allowed-origins value is well formed: "*" or comma-separated
   scheme://host[:port] entries. NULL or "" is fine (none). */
bool srv_origins_valid(const char *origins);

/* The head is well framed and its origin allowed (listed, or the server's
   own page: srv_origin_same): 0, or -1 with e filled (400 NUL in a value /
   Host / Content-Length, 403 Origin). version: "HTTP/1.1", ... */
int srv_head_check_framing(const srv_policy *p, const srv_head *h, const char *version, srv_err *e);
/* The caller may use the route: 0, or -1 with e filled (401 key, 413 too
   large: max_body, or max_upload for a multipart route; 415 media type:
   JSON, or multipart/form-data with a valid boundary), in that order. */
int srv_head_check_access(const srv_policy *p, const srv_head *h, const srv_req_kind *k, srv_err *e);

#endif
