/* JSON in (as Python's json.loads reads it: int and float kept apart, key
   order kept, last duplicate wins) and out (as json.dumps writes it with
   ensure_ascii=False: ", " and ": " separators, or "," and newlines with
   an indent). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"
#include "template/internal.h"

typedef struct {
    tpl_arena *a;
    const char *s;
    size_t n, i;
    int depth;
    char *err;
    size_t errcap;
} jparser;

static bool jfail(jparser *p, const char *what) {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < p->i && k < p->n; k++) {
        if (p->s[k] == '\n') { line++; col = 1; } else col++;
    }
    snprintf(p->err, p->errcap, "%s at line %zu column %zu (byte %zu)", what, line, col, p->i);
    return false;
}

static void jws(jparser *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' ||
                           p->s[p->i] == '\r'))
        p->i++;
}

static int hex4(const char *s) {
    int v = 0;
    for (int k = 0; k < 4; k++) {
        char c = s[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static bool jstring(jparser *p, tval *out) {
    p->i++; /* opening quote */
    size_t start = p->i;
    bool plain = true;
    while (p->i < p->n && p->s[p->i] != '"') {
        unsigned char c = (unsigned char)p->s[p->i];
        if (c < 0x20) return jfail(p, "invalid control character in a string");
        if (c == '\\') { plain = false; p->i += 2; continue; }
        if (c >= 0x80) {
            size_t j = p->i;
            uint32_t cp = tpl_utf8_next(p->s, p->n, &j);
            if (j == p->i + 1 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
                (j - p->i == 2 && cp < 0x80) || (j - p->i == 3 && cp < 0x800) ||
                (j - p->i == 4 && cp < 0x10000))
                return jfail(p, "invalid UTF-8 in a string");
            p->i = j;
            continue;
        }
        p->i++;
    }
    if (p->i >= p->n) return jfail(p, "unterminated string");
    size_t end = p->i++;
    if (plain) { *out = tv_str(p->s + start, end - start); return true; }
    tpl_buf b = {0};
    for (size_t k = start; k < end;) {
        if (p->s[k] != '\\') {
            size_t run = k;
            while (run < end && p->s[run] != '\\') run++;
            tpl_buf_put(&b, p->s + k, run - k);
            k = run;
            continue;
        }
        char e = k + 1 < end ? p->s[k + 1] : 0;
        k += 2;
        switch (e) {
        case '"': tpl_buf_putc(&b, '"'); break;
        case '\\': tpl_buf_putc(&b, '\\'); break;
        case '/': tpl_buf_putc(&b, '/'); break;
        case 'b': tpl_buf_putc(&b, '\b'); break;
        case 'f': tpl_buf_putc(&b, '\f'); break;
        case 'n': tpl_buf_putc(&b, '\n'); break;
        case 'r': tpl_buf_putc(&b, '\r'); break;
        case 't': tpl_buf_putc(&b, '\t'); break;
        case 'u': {
            int cp = k + 4 <= end ? hex4(p->s + k) : -1;
            if (cp < 0) { tpl_buf_free(&b); p->i = k; return jfail(p, "invalid \\u escape"); }
            k += 4;
            if (cp >= 0xd800 && cp <= 0xdbff && k + 6 <= end && p->s[k] == '\\' &&
                p->s[k + 1] == 'u') {
                int lo = hex4(p->s + k + 2);
                if (lo >= 0xdc00 && lo <= 0xdfff) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    k += 6;
                }
            }
            if (cp >= 0xd800 && cp <= 0xdfff) {
                tpl_buf_free(&b);
                p->i = k;
                return jfail(p, "lone UTF-16 surrogate in a \\u escape");
            }
            tpl_utf8_put(&b, (uint32_t)cp);
            break;
        }
        default: tpl_buf_free(&b); p->i = k - 1; return jfail(p, "invalid escape in a string");
        }
    }
    char *s = b.failed ? NULL : tpl_alloc(p->a, b.n + 1);
    if (!s) { tpl_buf_free(&b); return jfail(p, "out of memory"); }
    if (b.n) memcpy(s, b.p, b.n);
    *out = tv_str(s, b.n);
    tpl_buf_free(&b);
    return true;
}

static bool jnumber(jparser *p, tval *out) {
    size_t st = p->i;
    if (p->s[p->i] == '-') p->i++;
    if (p->i + 8 <= p->n && !memcmp(p->s + p->i, "Infinity", 8)) {
        p->i += 8;
        *out = tv_float(p->s[st] == '-' ? -INFINITY : INFINITY);
        return true;
    }
    if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') return jfail(p, "invalid number");
    if (p->s[p->i] == '0') p->i++;
    else while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    bool is_float = false;
    if (p->i + 1 < p->n && p->s[p->i] == '.' && p->s[p->i + 1] >= '0' && p->s[p->i + 1] <= '9') {
        is_float = true;
        p->i++;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        size_t save = p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        if (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
            is_float = true;
            while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
        } else p->i = save;
    }
    char tmp[400];
    size_t len = p->i - st;
    if (len >= sizeof tmp) return jfail(p, "number too long");
    memcpy(tmp, p->s + st, len);
    tmp[len] = 0;
    errno = 0;
    if (is_float) { *out = tv_float(strtod(tmp, NULL)); return true; }
    long long v = strtoll(tmp, NULL, 10);
    if (errno == ERANGE) return jfail(p, "integer too large (more than 64 bits)");
    *out = tv_int(v);
    return true;
}

static bool jvalue(jparser *p, tval *out);

static bool jcontainer(jparser *p, tval *out) {
    bool obj = p->s[p->i] == '{';
    if (++p->depth > TPL_MAX_DEPTH) return jfail(p, "nested too deeply");
    p->i++;
    tpl_list *l = obj ? NULL : tpl_list_new(p->a, 0);
    tpl_dict *d = obj ? tpl_dict_new(p->a, 0) : NULL;
    if (!l && !d) return jfail(p, "out of memory");
    jws(p);
    char close = obj ? '}' : ']';
    if (p->i < p->n && p->s[p->i] == close) p->i++;
    else for (;;) {
        tval k = {0}, v;
        if (obj) {
            jws(p);
            if (p->i >= p->n || p->s[p->i] != '"') return jfail(p, "expected a string key");
            if (!jstring(p, &k)) return false;
            jws(p);
            if (p->i >= p->n || p->s[p->i] != ':') return jfail(p, "expected ':'");
            p->i++;
        }
        if (!jvalue(p, &v)) return false;
        if (obj ? !tpl_dict_set(p->a, d, k.u.s.p, k.u.s.n, v) : !tpl_list_push(p->a, l, v))
            return jfail(p, "out of memory");
        jws(p);
        if (p->i < p->n && p->s[p->i] == ',') { p->i++; continue; }
        if (p->i < p->n && p->s[p->i] == close) { p->i++; break; }
        return jfail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
    p->depth--;
    if (obj) { out->k = TV_DICT; out->u.d = d; }
    else { out->k = TV_LIST; out->u.l = l; }
    out->undef_name = NULL;
    return true;
}

static bool jword(jparser *p, const char *w) {
    size_t n = strlen(w);
    if (p->n - p->i >= n && !memcmp(p->s + p->i, w, n)) { p->i += n; return true; }
    return false;
}

static bool jvalue(jparser *p, tval *out) {
    jws(p);
    if (p->i >= p->n) return jfail(p, "unexpected end of JSON");
    char c = p->s[p->i];
    if (c == '{' || c == '[') return jcontainer(p, out);
    if (c == '"') return jstring(p, out);
    if (c == '-' || (c >= '0' && c <= '9')) return jnumber(p, out);
    if (jword(p, "true")) { *out = tv_bool(true); return true; }
    if (jword(p, "false")) { *out = tv_bool(false); return true; }
    if (jword(p, "null")) { *out = tv_none(); return true; }
    if (jword(p, "NaN")) { *out = tv_float(NAN); return true; }
    if (jword(p, "Infinity")) { *out = tv_float(INFINITY); return true; }
    return jfail(p, "unexpected character");
}

bool tpl_json_parse(tpl_arena *a, const char *s, size_t n, tval *out, char *err, size_t errcap) {
    jparser p = {.a = a, .s = s, .n = n, .err = err, .errcap = errcap};
    if (!jvalue(&p, out)) return false;
    jws(&p);
    if (p.i != p.n) return jfail(&p, "extra data after the JSON value");
    return true;
}

/* ---- dumps ---------------------------------------------------------------- */

static void dump_str(tpl_buf *b, const char *s, size_t n) {
    tpl_buf_putc(b, '"');
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        tpl_buf_put(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"': tpl_buf_put(b, "\\\"", 2); break;
        case '\\': tpl_buf_put(b, "\\\\", 2); break;
        case '\n': tpl_buf_put(b, "\\n", 2); break;
        case '\r': tpl_buf_put(b, "\\r", 2); break;
        case '\t': tpl_buf_put(b, "\\t", 2); break;
        case '\b': tpl_buf_put(b, "\\b", 2); break;
        case '\f': tpl_buf_put(b, "\\f", 2); break;
        default: tpl_buf_printf(b, "\\u%04x", c);
        }
    }
    tpl_buf_put(b, s + run, n - run);
    tpl_buf_putc(b, '"');
}

static void newline_indent(tpl_buf *b, const char *indent, int level) {
    tpl_buf_putc(b, '\n');
    for (int k = 0; k < level; k++) tpl_buf_put(b, indent, strlen(indent));
}

static int key_cmp(const void *x, const void *y) {
    const tval *a = *(const tval *const *)x, *b = *(const tval *const *)y;
    int c;
    tv_compare(*a, *b, &c);
    return c;
}

static bool dump(tpl_buf *b, tval v, const char *indent, bool sort_keys, int level, char *err,
                 size_t errcap) {
    char num[64];
    if (level > TPL_MAX_DEPTH) { snprintf(err, errcap, "tojson: value nested too deeply"); return false; }
    switch (v.k) {
    case TV_NONE: tpl_buf_put(b, "null", 4); return true;
    case TV_BOOL: tpl_buf_put(b, v.u.b ? "true" : "false", v.u.b ? 4 : 5); return true;
    case TV_INT: tpl_buf_printf(b, "%" PRId64, v.u.i); return true;
    case TV_FLOAT:
        if (isnan(v.u.f)) tpl_buf_put(b, "NaN", 3);
        else if (isinf(v.u.f)) tpl_buf_put(b, v.u.f < 0 ? "-Infinity" : "Infinity", v.u.f < 0 ? 9 : 8);
        else { tpl_float_repr(v.u.f, num, sizeof num); tpl_buf_put(b, num, strlen(num)); }
        return true;
    case TV_STR: dump_str(b, v.u.s.p, v.u.s.n); return true;
    case TV_LIST: {
        const tpl_list *l = v.u.l;
        if (l->n == 0) { tpl_buf_put(b, "[]", 2); return true; }
        tpl_buf_putc(b, '[');
        for (size_t i = 0; i < l->n; i++) {
            if (i) tpl_buf_put(b, indent ? "," : ", ", indent ? 1 : 2);
            if (indent) newline_indent(b, indent, level + 1);
            if (!dump(b, l->v[i], indent, sort_keys, level + 1, err, errcap)) return false;
        }
        if (indent) newline_indent(b, indent, level);
        tpl_buf_putc(b, ']');
        return true;
    }
    case TV_DICT: {
        const tpl_dict *d = v.u.d;
        if (d->n == 0) { tpl_buf_put(b, "{}", 2); return true; }
        size_t *order = NULL;
        const tval **keys = NULL;
        if (sort_keys) {
            /* Sort pointers to the keys; their offsets give the value index. */
            keys = mllm_malloc(d->n * sizeof *keys);
            order = mllm_malloc(d->n * sizeof *order);
            if (!keys || !order) {
                mllm_free(keys); mllm_free(order);
                snprintf(err, errcap, "out of memory");
                return false;
            }
            for (size_t i = 0; i < d->n; i++) keys[i] = &d->keys[i];
            qsort(keys, d->n, sizeof *keys, key_cmp);
            for (size_t i = 0; i < d->n; i++) order[i] = (size_t)(keys[i] - d->keys);
        }
        tpl_buf_putc(b, '{');
        bool ok = true;
        for (size_t j = 0; j < d->n && ok; j++) {
            size_t i = order ? order[j] : j;
            if (j) tpl_buf_put(b, indent ? "," : ", ", indent ? 1 : 2);
            if (indent) newline_indent(b, indent, level + 1);
            dump_str(b, d->keys[i].u.s.p, d->keys[i].u.s.n);
            tpl_buf_put(b, ": ", 2);
            ok = dump(b, d->vals[i], indent, sort_keys, level + 1, err, errcap);
        }
        mllm_free(keys);
        mllm_free(order);
        if (!ok) return false;
        if (indent) newline_indent(b, indent, level);
        tpl_buf_putc(b, '}');
        return true;
    }
    default:
        snprintf(err, errcap, "tojson: Object of type %s is not JSON serializable", tv_type_name(v));
        return false;
    }
}

bool tpl_json_dump(tpl_buf *b, tval v, const char *indent, bool sort_keys, char *err,
                   size_t errcap) {
    if (!dump(b, v, indent, sort_keys, 0, err, errcap)) return false;
    if (b->failed) { snprintf(err, errcap, "out of memory"); return false; }
    return true;
}
