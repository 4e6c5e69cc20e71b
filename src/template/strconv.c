/* Python's str() and repr() of template values, and UTF-8 helpers: what a
   template prints must be byte-identical to what Jinja2 prints. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include "template/internal.h"

uint32_t tpl_utf8_next(const char *s, size_t n, size_t *i) {
    const unsigned char *u = (const unsigned char *)s;
    unsigned c = u[*i];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || *i + (size_t)len > n) { (*i)++; return c; }
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (int k = 1; k < len; k++) {
        if ((u[*i + k] & 0xc0) != 0x80) { (*i)++; return c; }
        cp = (cp << 6) | (u[*i + k] & 0x3f);
    }
    *i += len;
    return cp;
}

size_t tpl_utf8_len(const char *s, size_t n) {
    size_t i = 0, k = 0;
    while (i < n) { tpl_utf8_next(s, n, &i); k++; }
    return k;
}

size_t tpl_utf8_offset(const char *s, size_t n, size_t cp_index) {
    size_t i = 0;
    while (i < n && cp_index-- > 0) tpl_utf8_next(s, n, &i);
    return i;
}

void tpl_utf8_put(tpl_buf *b, uint32_t cp) {
    char t[4];
    if (cp < 0x80) { t[0] = (char)cp; tpl_buf_put(b, t, 1); }
    else if (cp < 0x800) {
        t[0] = (char)(0xc0 | (cp >> 6)); t[1] = (char)(0x80 | (cp & 0x3f));
        tpl_buf_put(b, t, 2);
    } else if (cp < 0x10000) {
        t[0] = (char)(0xe0 | (cp >> 12)); t[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        t[2] = (char)(0x80 | (cp & 0x3f));
        tpl_buf_put(b, t, 3);
    } else {
        t[0] = (char)(0xf0 | (cp >> 18)); t[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        t[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); t[3] = (char)(0x80 | (cp & 0x3f));
        tpl_buf_put(b, t, 4);
    }
}

bool tpl_is_space(uint32_t cp) {
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x1f)) return true;
    if (cp < 0x85) return false;
    return cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/* repr(float) in Python: the shortest digits that read back to the same
   double, fixed notation for exponents -4..15, else d.ddde+XX. */
void tpl_float_repr(double f, char *out, size_t cap) {
    if (isnan(f)) { snprintf(out, cap, "nan"); return; }
    if (isinf(f)) { snprintf(out, cap, f < 0 ? "-inf" : "inf"); return; }
    if (f == 0) { snprintf(out, cap, signbit(f) ? "-0.0" : "0.0"); return; }
    char tmp[64];
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, f);
        if (strtod(tmp, NULL) == f) break;
    }
    char digits[32];
    size_t nd = 0;
    const char *q = tmp;
    bool neg = *q == '-';
    if (neg) q++;
    for (; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9' && nd < sizeof digits - 1) digits[nd++] = *q;
    int exp = *q == 'e' ? atoi(q + 1) : 0;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = 0;
    char *o = out;
    size_t left = cap;
#define PUT(...) do { int w_ = snprintf(o, left, __VA_ARGS__); if (w_ < 0 || (size_t)w_ >= left) return; o += w_; left -= (size_t)w_; } while (0)
    if (neg) PUT("-");
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            PUT("0.");
            for (int k = 0; k < -exp - 1; k++) PUT("0");
            PUT("%s", digits);
        } else {
            for (int k = 0; k <= exp; k++) PUT("%c", (size_t)k < nd ? digits[k] : '0');
            PUT(".");
            if ((size_t)exp + 1 < nd) PUT("%s", digits + exp + 1);
            else PUT("0");
        }
    } else {
        PUT("%c", digits[0]);
        if (nd > 1) PUT(".%s", digits + 1);
        PUT("e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
#undef PUT
}

/* Python's str.isprintable() per code point, from the Unicode category. */
static bool printable(uint32_t cp) {
    if (cp == ' ') return true;
    if (cp < 0x20 || cp == 0x7f) return false;
    if (cp < 0x7f) return true;
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS:
        return false;
    default: return true;
    }
}

static bool container_items(tpl_buf *b, tval v);

static void repr_str(tpl_buf *b, const char *s, size_t n) {
    bool has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char quote = has_sq && !has_dq ? '"' : '\'';
    tpl_buf_putc(b, quote);
    size_t i = 0;
    while (i < n) {
        size_t at = i;
        uint32_t cp = tpl_utf8_next(s, n, &i);
        if (cp == (uint32_t)quote || cp == '\\') { tpl_buf_putc(b, '\\'); tpl_buf_putc(b, (char)cp); }
        else if (cp == '\n') tpl_buf_put(b, "\\n", 2);
        else if (cp == '\r') tpl_buf_put(b, "\\r", 2);
        else if (cp == '\t') tpl_buf_put(b, "\\t", 2);
        else if (printable(cp)) tpl_buf_put(b, s + at, i - at);
        else if (cp < 0x100) tpl_buf_printf(b, "\\x%02x", cp);
        else if (cp < 0x10000) tpl_buf_printf(b, "\\u%04x", cp);
        else tpl_buf_printf(b, "\\U%08x", cp);
    }
    tpl_buf_putc(b, quote);
}

/* Nesting of the value being printed: a template can build lists nested
   deeper than the C stack allows (ns.x = [ns.x] in a loop). */
static _Thread_local int g_print_depth;

static bool container_append(tpl_buf *b, tval v) {
    if (g_print_depth >= TPL_MAX_DEPTH) {
        tpl_buf_put(b, "...", 3);
        return !b->failed;
    }
    g_print_depth++;
    bool ok = container_items(b, v);
    g_print_depth--;
    return ok;
}

static bool container_items(tpl_buf *b, tval v) {
    if (v.k == TV_LIST) {
        const tpl_list *l = v.u.l;
        tpl_buf_putc(b, l->tuple ? '(' : '[');
        for (size_t i = 0; i < l->n; i++) {
            if (i) tpl_buf_put(b, ", ", 2);
            tv_repr_append(b, l->v[i]);
        }
        if (l->tuple && l->n == 1) tpl_buf_putc(b, ',');
        tpl_buf_putc(b, l->tuple ? ')' : ']');
    } else {
        const tpl_dict *d = v.u.d;
        if (v.k == TV_NS) tpl_buf_put(b, "<Namespace ", 11);
        tpl_buf_putc(b, '{');
        for (size_t i = 0; i < d->n; i++) {
            if (i) tpl_buf_put(b, ", ", 2);
            tv_repr_append(b, d->keys[i]);
            tpl_buf_put(b, ": ", 2);
            tv_repr_append(b, d->vals[i]);
        }
        tpl_buf_putc(b, '}');
        if (v.k == TV_NS) tpl_buf_putc(b, '>');
    }
    return !b->failed;
}

bool tv_str_append(tpl_buf *b, tval v) {
    char num[64];
    switch (v.k) {
    case TV_UNDEF: break;
    case TV_NONE: tpl_buf_put(b, "None", 4); break;
    case TV_BOOL: tpl_buf_put(b, v.u.b ? "True" : "False", v.u.b ? 4 : 5); break;
    case TV_INT: tpl_buf_printf(b, "%" PRId64, v.u.i); break;
    case TV_FLOAT: tpl_float_repr(v.u.f, num, sizeof num); tpl_buf_put(b, num, strlen(num)); break;
    case TV_STR: tpl_buf_put(b, v.u.s.p, v.u.s.n); break;
    case TV_LIST: case TV_DICT: case TV_NS: return container_append(b, v);
    case TV_LOOP: tpl_buf_printf(b, "<LoopContext %zu/%zu>", v.u.loop->index0 + 1, v.u.loop->items->n); break;
    case TV_FUNC: tpl_buf_printf(b, "<built-in function %s>", v.u.fn->name); break;
    case TV_MACRO: tpl_buf_printf(b, "<Macro '%s'>", v.u.m->def->name); break;
    }
    return !b->failed;
}

bool tv_repr_append(tpl_buf *b, tval v) {
    if (v.k == TV_STR) { repr_str(b, v.u.s.p, v.u.s.n); return !b->failed; }
    if (v.k == TV_UNDEF) { tpl_buf_put(b, "Undefined", 9); return !b->failed; }
    return tv_str_append(b, v);
}

bool tv_to_str(tpl_render *r, int line, tval v, tval *out) {
    if (v.k == TV_STR) { *out = v; return true; }
    if (v.k == TV_UNDEF) { *out = tv_str("", 0); return true; }
    tpl_buf b = {0};
    tv_str_append(&b, v);
    return tpl_buf_take(r, line, &b, out);
}

bool tpl_buf_take(tpl_render *r, int line, tpl_buf *b, tval *out) {
    size_t n = b->n;
    char *p = b->failed ? NULL : tpl_alloc(r->a, n + 1);
    if (p && n) memcpy(p, b->p, n);
    tpl_buf_free(b);
    if (!p) return tpl_nomem(r, line);
    *out = tv_str(p, n);
    return true;
}
