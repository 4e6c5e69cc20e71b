/* multipart/form-data bodies (RFC 7578, the delimiters of RFC 2046): what
   OpenAI's upload endpoints take (POST /v1/audio/transcriptions). A pure
   parser over the body bytes, no libmicrohttpd, so tests/fuzz/fuzz_multipart.c
   drives it directly. Every part points into the body: nothing is copied.
   Lengths are explicit everywhere (a value may hold NUL, an upload is
   binary). */
#ifndef MLLM_SERVER_MULTIPART_H
#define MLLM_SERVER_MULTIPART_H
#include <stdbool.h>
#include <stddef.h>
#include "server/http_check.h"

/* Most parts one body may have (a transcription request has at most 8). */
#define SRV_MP_MAX_PARTS 32
/* Most bytes of one part's header block (the Content-Disposition line of a
   real client is under 200 bytes). */
#define SRV_MP_MAX_HEADER 2048
/* RFC 2046: a boundary is 1 to 70 characters. */
#define SRV_MP_MAX_BOUNDARY 70

typedef struct {
    srv_str name;          /* Content-Disposition's name= (unquoted, without the quotes) */
    srv_str filename;      /* filename=, p NULL when absent */
    srv_str content_type;  /* the part's Content-Type, p NULL when absent */
    const char *data;      /* the part's bytes (len of them) */
    size_t len;
} srv_mp_part;

/* "multipart/form-data" (any case) with a boundary= parameter (quoted or
   not, 1..70 characters of RFC 2046's set); true and *boundary (pointing
   into content_type) if so. */
bool srv_mp_boundary(srv_str content_type, srv_str *boundary);

/* Splits body into its parts (at most max, in order; *n of them). Every
   part needs a Content-Disposition: form-data header with a name; header
   lines end in CR LF, as the RFC says (a bare LF too, as browsers never
   send but curl scripts may). A preamble before the first delimiter and an
   epilogue after the last are ignored. Returns 0, or -1 with e filled (a
   400 naming what is wrong: no delimiter, a part without an end, too many
   parts, a header block too long or malformed). */
int srv_mp_parse(const char *body, size_t len, srv_str boundary, srv_mp_part *parts, int max, int *n, srv_err *e);

/* s equals the NUL-terminated lit, byte for byte. */
bool srv_str_is(srv_str s, const char *lit);

#endif
