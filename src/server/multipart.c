/* multipart/form-data parsing (multipart.h). The body is never modified and
   never read past len; every position below is checked against the end
   before it is dereferenced. The delimiter search is linear: a boundary
   holds no CR (RFC 2046's characters), so candidate matches never overlap
   and each byte is compared at most twice. */
#include "server/multipart.h"
#include <string.h>
#include "server/internal.h"

bool srv_str_is(srv_str s, const char *lit) { return s.p && s.n == strlen(lit) && !memcmp(s.p, lit, s.n); }

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

static bool ieq_n(const char *a, size_t n, const char *lit) {
    if (n != strlen(lit)) return false;
    for (size_t i = 0; i < n; i++)
        if (lower(a[i]) != lit[i]) return false;
    return true;
}

static bool is_ows(char c) { return c == ' ' || c == '\t'; }

static srv_str trim(srv_str s) {
    while (s.n && is_ows(*s.p)) s.p++, s.n--;
    while (s.n && is_ows(s.p[s.n - 1])) s.n--;
    return s;
}

/* RFC 2046 bchars: DIGIT ALPHA ' ( ) + _ , - . / : = ? and space (not last). */
static bool is_bchar(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || strchr("'()+_,-./:=? ", c);
}

/* RFC 9110 token characters (parameter and header names). */
static bool is_tchar(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* One `; name=value` parameter from *s (value a token or a quoted string,
   whose backslash escapes stay in it as sent). False when malformed. */
static bool next_param(srv_str *s, srv_str *name, srv_str *value) {
    srv_str t = trim(*s);
    if (!t.n || *t.p != ';') return false;
    t.p++, t.n--;
    t = trim(t);
    size_t i = 0;
    while (i < t.n && is_tchar(t.p[i])) i++;
    if (!i || i >= t.n || t.p[i] != '=') return false;
    *name = (srv_str){t.p, i};
    i++;
    if (i < t.n && t.p[i] == '"') {
        size_t j = i + 1;
        while (j < t.n && t.p[j] != '"') j += t.p[j] == '\\' && j + 1 < t.n ? 2 : 1;
        if (j >= t.n) return false; /* unterminated */
        *value = (srv_str){t.p + i + 1, j - i - 1};
        i = j + 1;
    } else {
        size_t j = i;
        while (j < t.n && is_tchar(t.p[j])) j++;
        if (j == i) return false;
        *value = (srv_str){t.p + i, j - i};
        i = j;
    }
    *s = (srv_str){t.p + i, t.n - i};
    return true;
}

bool srv_mp_boundary(srv_str content_type, srv_str *boundary) {
    srv_str t = trim(content_type);
    static const char mt[] = "multipart/form-data";
    if (!t.p || t.n < sizeof mt - 1 || !ieq_n(t.p, sizeof mt - 1, mt)) return false;
    srv_str rest = {t.p + sizeof mt - 1, t.n - (sizeof mt - 1)}, name, value;
    bool found = false;
    while (trim(rest).n) {
        if (!next_param(&rest, &name, &value)) return false;
        if (!ieq_n(name.p, name.n, "boundary")) continue;
        if (found || value.n < 1 || value.n > SRV_MP_MAX_BOUNDARY || value.p[value.n - 1] == ' ') return false;
        for (size_t i = 0; i < value.n; i++)
            if (!is_bchar(value.p[i])) return false;
        *boundary = value;
        found = true;
    }
    return found;
}

/* The offset of the next "\r\n--boundary" at or after from, or len. */
static size_t find_delim(const char *b, size_t len, size_t from, srv_str bd) {
    const size_t need = 4 + bd.n;
    while (from < len && len - from >= need) {
        const char *cr = memchr(b + from, '\r', len - from - need + 1);
        if (!cr) return len;
        size_t at = (size_t)(cr - b);
        if (b[at + 1] == '\n' && b[at + 2] == '-' && b[at + 3] == '-' && !memcmp(b + at + 4, bd.p, bd.n)) return at;
        from = at + 1;
    }
    return len;
}

/* Parses one part's header block [p, p + n) (lines without the final blank
   one) into part. */
static int part_headers(const char *p, size_t n, int idx, srv_mp_part *part, srv_err *e) {
    bool have_cd = false;
    while (n) {
        const char *cr = memchr(p, '\r', n);
        size_t ln = cr ? (size_t)(cr - p) : n;
        if (cr && (ln + 1 >= n || p[ln + 1] != '\n'))
            return srv_fail(e, 400, "invalid_multipart", NULL, "part %d: a header line ends in CR without LF", idx);
        const char *colon = memchr(p, ':', ln);
        if (!colon || colon == p)
            return srv_fail(e, 400, "invalid_multipart", NULL, "part %d: a header line has no 'name:'", idx);
        const size_t nn = (size_t)(colon - p);
        for (size_t i = 0; i < nn; i++)
            if (!is_tchar(p[i]))
                return srv_fail(e, 400, "invalid_multipart", NULL, "part %d: a header name is not a token", idx);
        srv_str v = trim((srv_str){colon + 1, ln - nn - 1});
        if (memchr(v.p, 0, v.n)) return srv_fail(e, 400, "invalid_multipart", NULL, "part %d: a header holds NUL", idx);
        if (ieq_n(p, nn, "content-disposition")) {
            static const char fd[] = "form-data";
            if (have_cd) return srv_fail(e, 400, "invalid_multipart", NULL, "part %d: two Content-Disposition headers", idx);
            have_cd = true;
            if (v.n < sizeof fd - 1 || !ieq_n(v.p, sizeof fd - 1, fd))
                return srv_fail(e, 400, "invalid_multipart", NULL, "part %d: Content-Disposition is not form-data", idx);
            srv_str rest = {v.p + sizeof fd - 1, v.n - (sizeof fd - 1)}, pn, pv;
            while (trim(rest).n) {
                if (!next_param(&rest, &pn, &pv))
                    return srv_fail(e, 400, "invalid_multipart", NULL, "part %d: malformed Content-Disposition", idx);
                if (ieq_n(pn.p, pn.n, "name")) part->name = pv;
                else if (ieq_n(pn.p, pn.n, "filename")) part->filename = pv;
            }
        } else if (ieq_n(p, nn, "content-type")) {
            part->content_type = v;
        } /* other part headers (Content-Transfer-Encoding, RFC 7578 says none) are ignored */
        if (!cr) break;
        p += ln + 2;
        n -= ln + 2;
    }
    if (!have_cd || !part->name.p || !part->name.n)
        return srv_fail(e, 400, "invalid_multipart", NULL, "part %d has no Content-Disposition: form-data; name=\"...\"",
                        idx);
    return 0;
}

int srv_mp_parse(const char *body, size_t len, srv_str bd, srv_mp_part *parts, int max, int *n, srv_err *e) {
    *n = 0;
    if (!bd.p || bd.n < 1 || bd.n > SRV_MP_MAX_BOUNDARY) return srv_fail(e, 400, "invalid_multipart", NULL, "no boundary");
    if (!body) len = 0;
    /* The first delimiter may open the body (no CR LF before it). */
    size_t at; /* where "--boundary" starts */
    if (len >= 2 + bd.n && body[0] == '-' && body[1] == '-' && !memcmp(body + 2, bd.p, bd.n)) at = 0;
    else if ((at = find_delim(body, len, 0, bd)) < len) at += 2;
    else return srv_fail(e, 400, "invalid_multipart", NULL, "the body has no multipart delimiter of its boundary");
    for (;;) {
        size_t q = at + 2 + bd.n; /* just past the delimiter; <= len by the finds */
        if (len - q >= 2 && body[q] == '-' && body[q + 1] == '-') return 0; /* the close delimiter: the rest is epilogue */
        while (q < len && is_ows(body[q])) q++; /* transport padding */
        if (len - q < 2 || body[q] != '\r' || body[q + 1] != '\n')
            return srv_fail(e, 400, "invalid_multipart", NULL, "part %d: the delimiter line does not end in CR LF (or the "
                            "body ends without the closing delimiter)", *n);
        q += 2;
        if (*n >= max) return srv_fail(e, 400, "invalid_multipart", NULL, "the form has more than %d parts", max);
        /* The header block ends at the first blank line. */
        size_t lim = len - q < SRV_MP_MAX_HEADER + 4 ? len - q : SRV_MP_MAX_HEADER + 4, hend = 0;
        bool found = false;
        if (lim >= 2 && body[q] == '\r' && body[q + 1] == '\n') {
            found = true; /* no headers at all: refused below for lack of a name */
        } else {
            for (size_t i = 0; i + 4 <= lim; i++)
                if (!memcmp(body + q + i, "\r\n\r\n", 4)) {
                    hend = i;
                    found = true;
                    break;
                }
        }
        if (!found)
            return srv_fail(e, 400, "invalid_multipart", NULL, "part %d: its headers do not end within %d bytes", *n,
                            SRV_MP_MAX_HEADER);
        srv_mp_part *pt = &parts[*n];
        memset(pt, 0, sizeof *pt);
        if (part_headers(body + q, hend, *n, pt, e)) return -1;
        const size_t data = q + hend + (hend ? 4 : 2);
        const size_t next = find_delim(body, len, data, bd);
        if (next >= len)
            return srv_fail(e, 400, "invalid_multipart", NULL, "part %d has no end (no delimiter follows it)", *n);
        pt->data = body + data;
        pt->len = next - data;
        (*n)++;
        at = next + 2;
    }
}
