/* Fuzz target: the multipart/form-data parser of the upload endpoints
   (src/server/multipart.c) and the boundary parameter of a Content-Type.
   Input: a length byte L, L bytes of Content-Type value, then the body.
   Checked: a refusal is a 400 with a message; an accepted boundary is 1..70
   characters inside the Content-Type; every part found lies inside the
   body, in order, without overlap, has a name, and is followed by CR LF
   "--" boundary (an independent reading of the same bytes). */
#include "fuzz_util.h"
#include <stdlib.h>
#include <string.h>
#include "server/internal.h"
#include "server/multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t ct_len = data[0];
    if (ct_len > size - 1) ct_len = size - 1;
    char *ct = fz_dup(data + 1, ct_len);
    const size_t blen = size - 1 - ct_len;
    char *body = fz_dup(data + 1 + ct_len, blen);
    srv_str b = {0};
    if (srv_mp_boundary((srv_str){ct, ct_len}, &b)) {
        FZ_CHECK(b.p >= ct && b.n >= 1 && b.n <= SRV_MP_MAX_BOUNDARY && b.p + b.n <= ct + ct_len);
    } else {
        b = (srv_str){"b0undary", 8}; /* the body is still parsed, with a fixed boundary */
    }
    srv_mp_part parts[SRV_MP_MAX_PARTS];
    srv_err e = {0};
    int n = -1;
    const int max = 1 + (int)(ct_len % SRV_MP_MAX_PARTS);
    const int rc = srv_mp_parse(body, blen, b, parts, max, &n, &e);
    if (rc) {
        FZ_CHECK(rc == -1 && e.status == 400 && e.msg[0]);
    } else {
        FZ_CHECK(n >= 0 && n <= max);
        const char *prev_end = body;
        for (int i = 0; i < n; i++) {
            const srv_mp_part *p = &parts[i];
            FZ_CHECK(p->data >= prev_end && p->data + p->len <= body + blen);
            FZ_CHECK(p->name.p && p->name.n > 0 && p->name.p >= body && p->name.p + p->name.n <= p->data);
            if (p->filename.p) FZ_CHECK(p->filename.p >= body && p->filename.p + p->filename.n <= p->data);
            if (p->content_type.p) FZ_CHECK(p->content_type.p >= body && p->content_type.p + p->content_type.n <= p->data);
            const char *end = p->data + p->len;
            FZ_CHECK((size_t)(body + blen - end) >= 4 + b.n && !memcmp(end, "\r\n--", 4) && !memcmp(end + 4, b.p, b.n));
            prev_end = end;
        }
    }
    free(ct);
    free(body);
    return 0;
}
