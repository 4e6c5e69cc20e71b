/* The Python methods templates call on values (str.strip, str.split,
   dict.get, dict.items, loop.cycle ...) and the global functions (range,
   namespace, raise_exception, strftime_now, dict). Mutating methods are
   undefined, as in Jinja2's ImmutableSandboxedEnvironment. */
#include <stdio.h>
#include <string.h>
#include <locale.h>
#include <time.h>
#include <utf8proc.h>
#include "core/clock.h"
#include "template/internal.h"

const tval *tpl_arg(const tval *args, size_t n, size_t i, const tval *kw_names,
                    const tval *kw_vals, size_t kw_n, const char *name) {
    for (size_t k = 0; k < kw_n && name; k++)
        if (tv_is_str(kw_names[k], name)) return &kw_vals[k];
    return i < n ? &args[i] : NULL;
}
#define ARG(i, name) tpl_arg(args, n, i, kw_names, kw_vals, kw_n, name)
#define BUILTIN(fn) static bool fn(tpl_render *r, int line, tval self, const tval *args, size_t n, \
                                   const tval *kw_names, const tval *kw_vals, size_t kw_n, tval *out)

static bool want_str(tpl_render *r, int line, const tval *v, const char *what) {
    if (v && v->k == TV_STR) return true;
    return tpl_fail(r, line, "%s must be a string, not %s", what, v ? tv_type_name(*v) : "nothing");
}

static tval list_value(tpl_list *l) {
    tval v = {.k = TV_LIST};
    v.u.l = l;
    return v;
}

/* ---- str ------------------------------------------------------------------ */

static bool in_chars(uint32_t cp, const tval *chars) {
    if (!chars) return tpl_is_space(cp);
    for (size_t i = 0; i < chars->u.s.n;) {
        if (tpl_utf8_next(chars->u.s.p, chars->u.s.n, &i) == cp) return true;
    }
    return false;
}

/* Python str.strip family: which = 1 left, 2 right, 3 both. */
tval tpl_strip(tval s, const tval *chars, int which);
tval tpl_strip(tval s, const tval *chars, int which) {
    const char *p = s.u.s.p;
    size_t b = 0, e = s.u.s.n;
    if (which & 1) {
        while (b < e) {
            size_t j = b;
            if (!in_chars(tpl_utf8_next(p, e, &j), chars)) break;
            b = j;
        }
    }
    if (which & 2) {
        while (e > b) {
            size_t st = e - 1;
            while (st > b && ((unsigned char)p[st] & 0xc0) == 0x80) st--;
            size_t j = st;
            if (!in_chars(tpl_utf8_next(p, e, &j), chars)) break;
            e = st;
        }
    }
    return tv_str(p + b, e - b);
}

static bool strip_common(tpl_render *r, int line, tval self, const tval *c, int which, tval *out) {
    if (c && c->k != TV_NONE && !want_str(r, line, c, "strip() chars")) return false;
    *out = tpl_strip(self, c && c->k == TV_STR ? c : NULL, which);
    return true;
}
BUILTIN(m_strip) { return strip_common(r, line, self, ARG(0, "chars"), 3, out); }
BUILTIN(m_lstrip) { return strip_common(r, line, self, ARG(0, "chars"), 1, out); }
BUILTIN(m_rstrip) { return strip_common(r, line, self, ARG(0, "chars"), 2, out); }

static bool find_sub(tval s, size_t from, tval sub, size_t *at) {
    for (size_t i = from; i + sub.u.s.n <= s.u.s.n; i++)
        if (!memcmp(s.u.s.p + i, sub.u.s.p, sub.u.s.n)) { *at = i; return true; }
    return false;
}

static bool split_impl(tpl_render *r, int line, tval self, const tval *sep, const tval *maxv,
                       bool from_right, tval *out) {
    int64_t maxsplit = maxv && (maxv->k == TV_INT) ? maxv->u.i : -1;
    tpl_list *l = tpl_list_new(r->a, 0);
    if (!l) return tpl_nomem(r, line);
    const char *p = self.u.s.p;
    size_t n = self.u.s.n;
    if (sep && sep->k != TV_NONE) {
        if (!want_str(r, line, sep, "split() separator")) return false;
        if (sep->u.s.n == 0) return tpl_fail(r, line, "split(): empty separator");
        if (!from_right || maxsplit < 0) {
            size_t st = 0, at;
            while ((maxsplit < 0 || (int64_t)(l->n) < maxsplit) && find_sub(self, st, *sep, &at)) {
                if (!tpl_list_push(r->a, l, tv_str(p + st, at - st))) return tpl_nomem(r, line);
                st = at + sep->u.s.n;
            }
            if (!tpl_list_push(r->a, l, tv_str(p + st, n - st))) return tpl_nomem(r, line);
        } else { /* rsplit with a limit: cut from the end, then reverse */
            size_t end = n;
            while ((int64_t)l->n < maxsplit && end >= sep->u.s.n) {
                size_t i = end - sep->u.s.n + 1, at = 0;
                bool found = false;
                while (i-- > 0) if (!memcmp(p + i, sep->u.s.p, sep->u.s.n)) { at = i; found = true; break; }
                if (!found) break;
                if (!tpl_list_push(r->a, l, tv_str(p + at + sep->u.s.n, end - at - sep->u.s.n)))
                    return tpl_nomem(r, line);
                end = at;
            }
            if (!tpl_list_push(r->a, l, tv_str(p, end))) return tpl_nomem(r, line);
            for (size_t i = 0; i < l->n / 2; i++) {
                tval t = l->v[i]; l->v[i] = l->v[l->n - 1 - i]; l->v[l->n - 1 - i] = t;
            }
        }
        *out = list_value(l);
        return true;
    }
    /* No separator: runs of whitespace split, empty pieces dropped. */
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n) { size_t k = j; if (!tpl_is_space(tpl_utf8_next(p, n, &k))) break; j = k; }
        if (j >= n) break;
        size_t st = j;
        if (maxsplit >= 0 && (int64_t)l->n >= maxsplit && !from_right) {
            tval rest = tpl_strip(tv_str(p + st, n - st), NULL, 2);
            if (!tpl_list_push(r->a, l, rest)) return tpl_nomem(r, line);
            break;
        }
        while (j < n) { size_t k = j; if (tpl_is_space(tpl_utf8_next(p, n, &k))) break; j = k; }
        if (!tpl_list_push(r->a, l, tv_str(p + st, j - st))) return tpl_nomem(r, line);
        i = j;
    }
    *out = list_value(l);
    return true;
}
BUILTIN(m_split) { return split_impl(r, line, self, ARG(0, "sep"), ARG(1, "maxsplit"), false, out); }
BUILTIN(m_rsplit) { return split_impl(r, line, self, ARG(0, "sep"), ARG(1, "maxsplit"), true, out); }

static bool affix(tpl_render *r, int line, tval self, const tval *a, bool end, tval *out) {
    if (!a) return tpl_fail(r, line, "%s() takes at least 1 argument", end ? "endswith" : "startswith");
    size_t cnt = a->k == TV_LIST ? a->u.l->n : 1;
    for (size_t i = 0; i < cnt; i++) {
        const tval *x = a->k == TV_LIST ? &a->u.l->v[i] : a;
        if (!want_str(r, line, x, end ? "endswith() argument" : "startswith() argument")) return false;
        if (x->u.s.n <= self.u.s.n &&
            !memcmp(self.u.s.p + (end ? self.u.s.n - x->u.s.n : 0), x->u.s.p, x->u.s.n)) {
            *out = tv_bool(true);
            return true;
        }
    }
    *out = tv_bool(false);
    return true;
}
BUILTIN(m_startswith) { return affix(r, line, self, ARG(0, "prefix"), false, out); }
BUILTIN(m_endswith) { return affix(r, line, self, ARG(0, "suffix"), true, out); }

bool tpl_str_replace(tpl_render *r, int line, tval s, const tval *old, const tval *nw,
                     const tval *count, tval *out);
bool tpl_str_replace(tpl_render *r, int line, tval s, const tval *old, const tval *nw,
                     const tval *count, tval *out) {
    if (!want_str(r, line, old, "replace() old") || !want_str(r, line, nw, "replace() new")) return false;
    int64_t max = count && count->k == TV_INT ? count->u.i : -1;
    tpl_buf b = {0};
    size_t st = 0, at;
    int64_t done = 0;
    if (old->u.s.n == 0) { /* Python inserts `new` between every character */
        size_t i = 0;
        while (max < 0 || done < max) {
            tpl_buf_put(&b, nw->u.s.p, nw->u.s.n);
            done++;
            if (i >= s.u.s.n) break;
            size_t j = i;
            tpl_utf8_next(s.u.s.p, s.u.s.n, &j);
            tpl_buf_put(&b, s.u.s.p + i, j - i);
            i = j;
        }
        st = i;
    } else {
        while ((max < 0 || done < max) && find_sub(s, st, *old, &at)) {
            tpl_buf_put(&b, s.u.s.p + st, at - st);
            tpl_buf_put(&b, nw->u.s.p, nw->u.s.n);
            st = at + old->u.s.n;
            done++;
        }
    }
    tpl_buf_put(&b, s.u.s.p + st, s.u.s.n - st);
    return tpl_buf_take(r, line, &b, out);
}
BUILTIN(m_replace) { return tpl_str_replace(r, line, self, ARG(0, "old"), ARG(1, "new"), ARG(2, "count"), out); }

/* mode: 'u' upper, 'l' lower, 'c' capitalize, 't' title. */
bool tpl_str_case(tpl_render *r, int line, tval s, char mode, tval *out);
bool tpl_str_case(tpl_render *r, int line, tval s, char mode, tval *out) {
    tpl_buf b = {0};
    bool word_start = true, first = true;
    for (size_t i = 0; i < s.u.s.n;) {
        uint32_t cp = tpl_utf8_next(s.u.s.p, s.u.s.n, &i);
        bool up = mode == 'u' || (mode == 'c' && first) || (mode == 't' && word_start);
        uint32_t m = (uint32_t)(up ? utf8proc_toupper((utf8proc_int32_t)cp) : utf8proc_tolower((utf8proc_int32_t)cp));
        tpl_utf8_put(&b, m);
        word_start = !utf8proc_isupper((utf8proc_int32_t)cp) && !utf8proc_islower((utf8proc_int32_t)cp) &&
                     utf8proc_category((utf8proc_int32_t)cp) != UTF8PROC_CATEGORY_LT;
        first = false;
    }
    return tpl_buf_take(r, line, &b, out);
}
BUILTIN(m_upper) { return tpl_str_case(r, line, self, 'u', out); }
BUILTIN(m_lower) { return tpl_str_case(r, line, self, 'l', out); }
BUILTIN(m_capitalize) { return tpl_str_case(r, line, self, 'c', out); }
BUILTIN(m_title) { return tpl_str_case(r, line, self, 't', out); }

BUILTIN(m_find) {
    const tval *sub = ARG(0, "sub");
    if (!want_str(r, line, sub, "find() argument")) return false;
    size_t at;
    *out = tv_int(find_sub(self, 0, *sub, &at) ? (int64_t)tpl_utf8_len(self.u.s.p, at) : -1);
    return true;
}

BUILTIN(m_count) {
    const tval *x = ARG(0, "x");
    if (!x) return tpl_fail(r, line, "count() takes exactly one argument");
    int64_t c = 0;
    if (self.k == TV_LIST) {
        for (size_t i = 0; i < self.u.l->n; i++) c += tv_equal(self.u.l->v[i], *x);
    } else {
        if (!want_str(r, line, x, "count() argument")) return false;
        if (x->u.s.n == 0) c = (int64_t)tpl_utf8_len(self.u.s.p, self.u.s.n) + 1;
        else for (size_t st = 0, at; find_sub(self, st, *x, &at); st = at + x->u.s.n) c++;
    }
    *out = tv_int(c);
    return true;
}

BUILTIN(m_join) {
    const tval *it = ARG(0, "iterable");
    tpl_list *items;
    if (!it || !tpl_iterate(r, line, *it, &items)) return it ? false : tpl_fail(r, line, "join() takes one argument");
    tpl_buf b = {0};
    for (size_t i = 0; i < items->n; i++) {
        if (items->v[i].k != TV_STR) {
            tpl_buf_free(&b);
            return tpl_fail(r, line, "sequence item %zu: expected str instance, %s found", i, tv_type_name(items->v[i]));
        }
        if (i) tpl_buf_put(&b, self.u.s.p, self.u.s.n);
        tpl_buf_put(&b, items->v[i].u.s.p, items->v[i].u.s.n);
    }
    return tpl_buf_take(r, line, &b, out);
}

/* isdigit / isalpha / isspace ...: kind picks the code point class. */
static bool str_is(tval s, char kind) {
    if (s.u.s.n == 0) return false;
    bool cased = false;
    for (size_t i = 0; i < s.u.s.n;) {
        utf8proc_int32_t cp = (utf8proc_int32_t)tpl_utf8_next(s.u.s.p, s.u.s.n, &i);
        utf8proc_category_t c = utf8proc_category(cp);
        bool alpha = c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
        bool digit = c == UTF8PROC_CATEGORY_ND;
        switch (kind) {
        case 'd': if (!digit) return false; break;
        case 'a': if (!alpha) return false; break;
        case 'n': if (!alpha && !digit && c != UTF8PROC_CATEGORY_NL && c != UTF8PROC_CATEGORY_NO) return false; break;
        case 's': if (!tpl_is_space((uint32_t)cp)) return false; break;
        case 'l': if (utf8proc_isupper(cp)) return false; cased |= utf8proc_islower(cp); break;
        case 'u': if (utf8proc_islower(cp)) return false; cased |= utf8proc_isupper(cp); break;
        }
    }
    return (kind != 'l' && kind != 'u') || cased;
}
BUILTIN(m_isdigit) { *out = tv_bool(str_is(self, 'd')); return true; }
BUILTIN(m_isalpha) { *out = tv_bool(str_is(self, 'a')); return true; }
BUILTIN(m_isalnum) { *out = tv_bool(str_is(self, 'n')); return true; }
BUILTIN(m_isspace) { *out = tv_bool(str_is(self, 's')); return true; }
BUILTIN(m_islower) { *out = tv_bool(str_is(self, 'l')); return true; }
BUILTIN(m_isupper) { *out = tv_bool(str_is(self, 'u')); return true; }

/* ---- dict, list, loop ------------------------------------------------------------ */

BUILTIN(m_get) {
    const tval *k = ARG(0, "key"), *d = ARG(1, "default");
    if (!k) return tpl_fail(r, line, "get() takes at least 1 argument");
    tval *v = k->k == TV_STR ? tpl_dict_get(self.u.d, k->u.s.p, k->u.s.n) : NULL;
    *out = v ? *v : d ? *d : tv_none();
    return true;
}

BUILTIN(m_items) {
    tpl_list *l = tpl_list_new(r->a, self.u.d->n);
    if (!l) return tpl_nomem(r, line);
    for (size_t i = 0; i < self.u.d->n; i++) {
        tpl_list *pair = tpl_list_new(r->a, 2);
        if (!pair) return tpl_nomem(r, line);
        pair->v[0] = self.u.d->keys[i];
        pair->v[1] = self.u.d->vals[i];
        pair->n = 2;
        pair->tuple = true;
        l->v[l->n++] = list_value(pair);
    }
    *out = list_value(l);
    return true;
}

static bool dict_column(tpl_render *r, int line, tval self, bool keys, tval *out) {
    tpl_list *l = tpl_list_new(r->a, self.u.d->n);
    if (!l) return tpl_nomem(r, line);
    for (size_t i = 0; i < self.u.d->n; i++) l->v[l->n++] = keys ? self.u.d->keys[i] : self.u.d->vals[i];
    *out = list_value(l);
    return true;
}
BUILTIN(m_keys) { return dict_column(r, line, self, true, out); }
BUILTIN(m_values) { return dict_column(r, line, self, false, out); }
BUILTIN(m_copy) { *out = self; return true; }

BUILTIN(m_index) {
    const tval *x = ARG(0, "x");
    for (size_t i = 0; x && i < self.u.l->n; i++)
        if (tv_equal(self.u.l->v[i], *x)) { *out = tv_int((int64_t)i); return true; }
    return tpl_fail(r, line, "list.index(x): x not in list");
}

BUILTIN(m_cycle) {
    if (n == 0) return tpl_fail(r, line, "loop.cycle() needs at least one argument");
    *out = args[self.u.loop->index0 % n];
    return true;
}

typedef struct { const char *name; tpl_builtin fn; } method_row;

static const method_row STR_METHODS[] = {
    {"strip", m_strip}, {"lstrip", m_lstrip}, {"rstrip", m_rstrip}, {"split", m_split},
    {"rsplit", m_rsplit}, {"startswith", m_startswith}, {"endswith", m_endswith},
    {"replace", m_replace}, {"upper", m_upper}, {"lower", m_lower}, {"title", m_title},
    {"capitalize", m_capitalize}, {"find", m_find}, {"count", m_count}, {"join", m_join},
    {"isdigit", m_isdigit}, {"isalpha", m_isalpha}, {"isalnum", m_isalnum},
    {"isspace", m_isspace}, {"islower", m_islower}, {"isupper", m_isupper}, {NULL, NULL},
};
static const method_row DICT_METHODS[] = {
    {"get", m_get}, {"items", m_items}, {"keys", m_keys}, {"values", m_values},
    {"copy", m_copy}, {NULL, NULL},
};
static const method_row LIST_METHODS[] = {
    {"count", m_count}, {"index", m_index}, {"copy", m_copy}, {NULL, NULL},
};
static const method_row LOOP_METHODS[] = {{"cycle", m_cycle}, {NULL, NULL}};
/* Methods that would mutate: the immutable sandbox makes them undefined. */
static const char *const UNSAFE[] = {"append", "extend", "insert", "pop", "remove", "reverse",
                                     "sort", "clear", "popitem", "setdefault", "update", NULL};

static bool name_is(const char *name, size_t nn, const char *w) {
    return strlen(w) == nn && !memcmp(name, w, nn);
}

bool tpl_method_find(tpl_render *r, tval obj, const char *name, size_t nn, tval *out) {
    const method_row *t = obj.k == TV_STR ? STR_METHODS : obj.k == TV_DICT ? DICT_METHODS
                        : obj.k == TV_LIST ? LIST_METHODS : obj.k == TV_LOOP ? LOOP_METHODS : NULL;
    if (!t) return false;
    for (; t->name; t++) {
        if (!name_is(name, nn, t->name)) continue;
        tpl_func *f = tpl_alloc(r->a, sizeof *f);
        if (!f) { *out = tv_undef(t->name); return true; }
        f->name = t->name;
        f->call = t->fn;
        f->self = obj;
        *out = (tval){.k = TV_FUNC};
        out->u.fn = f;
        return true;
    }
    if (obj.k == TV_DICT || obj.k == TV_LIST)
        for (int k = 0; UNSAFE[k]; k++)
            if (name_is(name, nn, UNSAFE[k])) { *out = tv_undef(UNSAFE[k]); return true; }
    return false;
}

/* ---- globals ------------------------------------------------------------------------- */

BUILTIN(g_range) {
    int64_t a[3] = {0, 0, 1};
    if (n < 1 || n > 3 || kw_n) return tpl_fail(r, line, "range() takes 1 to 3 integer arguments");
    for (size_t i = 0; i < n; i++) {
        if (args[i].k != TV_INT && args[i].k != TV_BOOL)
            return tpl_fail(r, line, "range() arguments must be integers, not %s", tv_type_name(args[i]));
        a[n == 1 ? 1 : i] = args[i].k == TV_BOOL ? args[i].u.b : args[i].u.i;
    }
    if (a[2] == 0) return tpl_fail(r, line, "range() arg 3 must not be zero");
    tpl_list *l = tpl_list_new(r->a, 0);
    if (!l) return tpl_nomem(r, line);
    for (int64_t v = a[0]; a[2] > 0 ? v < a[1] : v > a[1]; v += a[2]) {
        if (l->n >= TPL_MAX_RANGE)
            return tpl_fail(r, line, "range() too big (more than %d items)", TPL_MAX_RANGE);
        if (!tpl_list_push(r->a, l, tv_int(v))) return tpl_nomem(r, line);
        if ((a[2] > 0 && v > INT64_MAX - a[2]) || (a[2] < 0 && v < INT64_MIN - a[2])) break;
    }
    *out = list_value(l);
    return true;
}

static bool make_dict(tpl_render *r, int line, const tval *args, size_t n, const tval *kw_names,
                      const tval *kw_vals, size_t kw_n, tv_kind kind, tval *out) {
    tpl_dict *d = tpl_dict_new(r->a, kw_n);
    if (!d) return tpl_nomem(r, line);
    for (size_t i = 0; i < n; i++) {
        if (args[i].k != TV_DICT)
            return tpl_fail(r, line, "%s() positional arguments must be dicts", kind == TV_NS ? "namespace" : "dict");
        for (size_t k = 0; k < args[i].u.d->n; k++)
            if (!tpl_dict_set(r->a, d, args[i].u.d->keys[k].u.s.p, args[i].u.d->keys[k].u.s.n, args[i].u.d->vals[k]))
                return tpl_nomem(r, line);
    }
    for (size_t k = 0; k < kw_n; k++)
        if (!tpl_dict_set(r->a, d, kw_names[k].u.s.p, kw_names[k].u.s.n, kw_vals[k])) return tpl_nomem(r, line);
    *out = (tval){.k = kind};
    out->u.d = d;
    return true;
}
BUILTIN(g_namespace) { return make_dict(r, line, args, n, kw_names, kw_vals, kw_n, TV_NS, out); }
BUILTIN(g_dict) { return make_dict(r, line, args, n, kw_names, kw_vals, kw_n, TV_DICT, out); }

BUILTIN(g_raise_exception) {
    tpl_buf b = {0};
    if (n > 0) tv_str_append(&b, args[0]);
    tpl_fail(r, line, "raise_exception: %s", b.p ? b.p : "");
    tpl_buf_free(&b);
    return false;
}

/* datetime.now().strftime(fmt) as transformers calls it, at the instant
   core/clock.h gives (SOURCE_DATE_EPOCH, broken down in UTC, when set). The
   C locale's names whatever locale the embedding program chose (Python never
   sets LC_TIME), and Python's own directives on a naive datetime: %z and %Z
   print nothing, %f the microseconds (0: the clock is read in whole
   seconds). Everything else is the C library's strftime, as in CPython. */
BUILTIN(g_strftime_now) {
    const tval *f = ARG(0, "format");
    if (!want_str(r, line, f, "strftime_now() format")) return false;
    /* Every directive prints at most ~40 bytes, so 8 KiB holds any result of
       a 255-byte format, and strftime's 0 can only mean an empty one. */
    char fmt[256], buf[8192];
    size_t k = 0;
    for (size_t i = 0; i < f->u.s.n; i++) {
        char c = f->u.s.p[i];
        if (c == '\0') return tpl_fail(r, line, "strftime_now() format holds a NUL byte");
        if (c == '%' && i + 1 < f->u.s.n) {
            char d = f->u.s.p[i + 1];
            const char *rep = d == 'z' || d == 'Z' ? "" : d == 'f' ? "000000" : NULL;
            if (rep || d == '%') {
                if (!rep) rep = "%%";
                size_t rn = strlen(rep);
                if (k + rn >= sizeof fmt) return tpl_fail(r, line, "strftime_now() format too long");
                memcpy(fmt + k, rep, rn);
                k += rn;
                i++;
                continue;
            }
        }
        if (k + 1 >= sizeof fmt) return tpl_fail(r, line, "strftime_now() format too long");
        fmt[k++] = c;
    }
    fmt[k] = 0;
    struct tm tm;
    if (mllm_clock_now_tm(&tm) != MLLM_OK) return tpl_fail(r, line, "strftime_now(): %s", mllm_last_error());
    locale_t c_loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (!c_loc) return tpl_nomem(r, line);
    size_t len = k ? strftime_l(buf, sizeof buf, fmt, &tm, c_loc) : 0;
    freelocale(c_loc);
    char *p = tpl_alloc(r->a, len + 1);
    if (!p) return tpl_nomem(r, line);
    memcpy(p, buf, len);
    *out = tv_str(p, len);
    return true;
}

bool tpl_globals_init(tpl_render *r, tpl_scope *g) {
    static const method_row G[] = {
        {"range", g_range}, {"namespace", g_namespace}, {"dict", g_dict},
        {"raise_exception", g_raise_exception}, {"strftime_now", g_strftime_now}, {NULL, NULL},
    };
    for (const method_row *t = G; t->name; t++) {
        tpl_func *f = tpl_alloc(r->a, sizeof *f);
        if (!f) return false;
        f->name = t->name;
        f->call = t->fn;
        tval v = {.k = TV_FUNC};
        v.u.fn = f;
        if (!tpl_dict_set(r->a, &g->vars, t->name, strlen(t->name), v)) return false;
    }
    return true;
}
