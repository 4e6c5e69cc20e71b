/* Template values: arena, constructors, lists, dicts, and Python's rules
   for truth, equality and ordering. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "template/internal.h"

struct tpl_chunk {
    tpl_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

enum { CHUNK_SIZE = 64 << 10 };

void *tpl_alloc(tpl_arena *a, size_t n) {
    if (a->failed) return NULL;
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    tpl_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_SIZE / 4 ? n : CHUNK_SIZE;
        if (a->total + cap > TPL_MAX_ARENA) { a->failed = true; return NULL; }
        tpl_chunk *nc = mllm_malloc(sizeof *nc + cap);
        if (!nc) { a->failed = true; return NULL; }
        nc->used = 0;
        nc->cap = cap;
        a->total += cap;
        if (cap == n && c) { /* a big one-off: keep the current chunk in front */
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            a->head = nc;
        }
        c = nc;
    }
    void *p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

void tpl_arena_free(tpl_arena *a) {
    tpl_chunk *c = a->head;
    while (c) {
        tpl_chunk *n = c->next;
        mllm_free(c);
        c = n;
    }
    a->head = NULL;
    a->total = 0;
}

tval tv_undef(const char *name) { tval v = {.k = TV_UNDEF}; v.undef_name = name; return v; }
tval tv_none(void) { return (tval){.k = TV_NONE}; }
tval tv_bool(bool b) { tval v = {.k = TV_BOOL}; v.u.b = b; return v; }
tval tv_int(int64_t i) { tval v = {.k = TV_INT}; v.u.i = i; return v; }
tval tv_float(double f) { tval v = {.k = TV_FLOAT}; v.u.f = f; return v; }
tval tv_str(const char *p, size_t n) {
    tval v = {.k = TV_STR};
    v.u.s.p = p;
    v.u.s.n = n;
    return v;
}
tval tv_cstr(const char *p) { return tv_str(p, strlen(p)); }
bool tv_is_str(tval v, const char *lit) {
    return v.k == TV_STR && v.u.s.n == strlen(lit) && !memcmp(v.u.s.p, lit, v.u.s.n);
}

tpl_list *tpl_list_new(tpl_arena *a, size_t cap) {
    tpl_list *l = tpl_alloc(a, sizeof *l);
    if (!l) return NULL;
    if (cap) {
        l->v = tpl_alloc(a, cap * sizeof *l->v);
        if (!l->v) return NULL;
        l->cap = cap;
    }
    return l;
}

bool tpl_list_push(tpl_arena *a, tpl_list *l, tval v) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        tval *nv = tpl_alloc(a, cap * sizeof *nv);
        if (!nv) return false;
        if (l->n) memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return true;
}

tpl_dict *tpl_dict_new(tpl_arena *a, size_t cap) {
    tpl_dict *d = tpl_alloc(a, sizeof *d);
    if (!d) return NULL;
    if (cap) {
        d->keys = tpl_alloc(a, cap * sizeof *d->keys);
        d->vals = tpl_alloc(a, cap * sizeof *d->vals);
        if (!d->keys || !d->vals) return NULL;
        d->cap = cap;
    }
    return d;
}

tval *tpl_dict_get(const tpl_dict *d, const char *k, size_t kn) {
    for (size_t i = d->n; i-- > 0;) /* recent first: scopes are read right after a set */
        if (d->keys[i].u.s.n == kn && !memcmp(d->keys[i].u.s.p, k, kn)) return &d->vals[i];
    return NULL;
}

bool tpl_dict_set(tpl_arena *a, tpl_dict *d, const char *k, size_t kn, tval v) {
    tval *old = tpl_dict_get(d, k, kn);
    if (old) { *old = v; return true; }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        tval *nk = tpl_alloc(a, cap * sizeof *nk), *nv = tpl_alloc(a, cap * sizeof *nv);
        if (!nk || !nv) return false;
        if (d->n) {
            memcpy(nk, d->keys, d->n * sizeof *nk);
            memcpy(nv, d->vals, d->n * sizeof *nv);
        }
        d->keys = nk;
        d->vals = nv;
        d->cap = cap;
    }
    d->keys[d->n] = tv_str(k, kn);
    d->vals[d->n] = v;
    d->n++;
    return true;
}

const char *tv_type_name(tval v) {
    switch (v.k) {
    case TV_UNDEF: return "Undefined";
    case TV_NONE: return "NoneType";
    case TV_BOOL: return "bool";
    case TV_INT: return "int";
    case TV_FLOAT: return "float";
    case TV_STR: return "str";
    case TV_LIST: return v.u.l->tuple ? "tuple" : "list";
    case TV_DICT: return "dict";
    case TV_NS: return "Namespace";
    case TV_LOOP: return "LoopContext";
    case TV_FUNC: return "function";
    case TV_MACRO: return "Macro";
    }
    return "?";
}

bool tv_truthy(tval v) {
    switch (v.k) {
    case TV_UNDEF: case TV_NONE: return false;
    case TV_BOOL: return v.u.b;
    case TV_INT: return v.u.i != 0;
    case TV_FLOAT: return v.u.f != 0.0;
    case TV_STR: return v.u.s.n != 0;
    case TV_LIST: return v.u.l->n != 0;
    case TV_DICT: return v.u.d->n != 0;
    default: return true;
    }
}

/* bool is an int in Python: True == 1, True + 1 == 2. */
static bool as_number(tval v, bool *is_float, int64_t *i, double *f) {
    if (v.k == TV_BOOL) { *is_float = false; *i = v.u.b; return true; }
    if (v.k == TV_INT) { *is_float = false; *i = v.u.i; return true; }
    if (v.k == TV_FLOAT) { *is_float = true; *f = v.u.f; return true; }
    return false;
}

static int cmp_num(bool af, int64_t ai, double ad, bool bf, int64_t bi, double bd) {
    if (!af && !bf) return ai < bi ? -1 : ai > bi;
    double x = af ? ad : (double)ai, y = bf ? bd : (double)bi;
    if (isnan(x) || isnan(y)) return 2; /* unordered */
    return x < y ? -1 : x > y;
}

static _Thread_local int g_cmp_depth; /* see tv_equal */

static bool equal_items(tval a, tval b);

/* Deeper than TPL_MAX_DEPTH counts as unequal: a template can build values
   nested deeper than the C stack allows. */
bool tv_equal(tval a, tval b) {
    if ((a.k != TV_LIST && a.k != TV_DICT) || a.k != b.k) return equal_items(a, b);
    if (g_cmp_depth >= TPL_MAX_DEPTH) return false;
    g_cmp_depth++;
    bool r = equal_items(a, b);
    g_cmp_depth--;
    return r;
}

static bool equal_items(tval a, tval b) {
    bool af, bf;
    int64_t ai, bi;
    double ad, bd;
    if (as_number(a, &af, &ai, &ad) && as_number(b, &bf, &bi, &bd))
        return cmp_num(af, ai, ad, bf, bi, bd) == 0;
    if (a.k != b.k) return false;
    switch (a.k) {
    case TV_UNDEF: case TV_NONE: return true;
    case TV_STR: return a.u.s.n == b.u.s.n && !memcmp(a.u.s.p, b.u.s.p, a.u.s.n);
    case TV_LIST:
        if (a.u.l->n != b.u.l->n || a.u.l->tuple != b.u.l->tuple) return false;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!tv_equal(a.u.l->v[i], b.u.l->v[i])) return false;
        return true;
    case TV_DICT:
        if (a.u.d->n != b.u.d->n) return false;
        for (size_t i = 0; i < a.u.d->n; i++) {
            tval *o = tpl_dict_get(b.u.d, a.u.d->keys[i].u.s.p, a.u.d->keys[i].u.s.n);
            if (!o || !tv_equal(a.u.d->vals[i], *o)) return false;
        }
        return true;
    case TV_NS: return a.u.d == b.u.d;
    case TV_LOOP: return a.u.loop == b.u.loop;
    case TV_FUNC: return a.u.fn == b.u.fn;
    case TV_MACRO: return a.u.m == b.u.m;
    default: return false;
    }
}

bool tv_compare(tval a, tval b, int *cmp) {
    bool af, bf;
    int64_t ai, bi;
    double ad, bd;
    if (as_number(a, &af, &ai, &ad) && as_number(b, &bf, &bi, &bd)) {
        int c = cmp_num(af, ai, ad, bf, bi, bd);
        *cmp = c == 2 ? 2 : c;
        return true;
    }
    if (a.k == TV_STR && b.k == TV_STR) {
        /* UTF-8 byte order is code point order, as Python compares str. */
        size_t n = a.u.s.n < b.u.s.n ? a.u.s.n : b.u.s.n;
        int c = memcmp(a.u.s.p, b.u.s.p, n);
        *cmp = c ? (c < 0 ? -1 : 1) : (a.u.s.n < b.u.s.n ? -1 : a.u.s.n > b.u.s.n);
        return true;
    }
    if (a.k == TV_LIST && b.k == TV_LIST && a.u.l->tuple == b.u.l->tuple) {
        if (g_cmp_depth >= TPL_MAX_DEPTH) return false;
        size_t n = a.u.l->n < b.u.l->n ? a.u.l->n : b.u.l->n;
        for (size_t i = 0; i < n; i++) {
            if (tv_equal(a.u.l->v[i], b.u.l->v[i])) continue;
            g_cmp_depth++;
            bool r = tv_compare(a.u.l->v[i], b.u.l->v[i], cmp);
            g_cmp_depth--;
            return r;
        }
        *cmp = a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n;
        return true;
    }
    return false;
}

void tpl_buf_put(tpl_buf *b, const char *s, size_t n) {
    if (b->failed || n == 0) return;
    if (b->cap - b->n <= n) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->n <= n) {
            if (cap > TPL_MAX_ARENA) { b->failed = true; return; }
            cap *= 2;
        }
        char *np = mllm_realloc(b->p, cap);
        if (!np) { b->failed = true; return; }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void tpl_buf_putc(tpl_buf *b, char c) { tpl_buf_put(b, &c, 1); }

void tpl_buf_printf(tpl_buf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) { b->failed = true; return; }
    tpl_buf_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void tpl_buf_free(tpl_buf *b) {
    mllm_free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}
