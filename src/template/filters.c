/* Jinja2's filters (value|name(args)) and tests (value is name), as far as
   chat templates use them, with Jinja2's behaviour on undefined values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "template/internal.h"

tval tpl_strip(tval s, const tval *chars, int which);
bool tpl_str_replace(tpl_render *r, int line, tval s, const tval *old, const tval *nw,
                     const tval *count, tval *out);
bool tpl_str_case(tpl_render *r, int line, tval s, char mode, tval *out);

#define ARG(i, name) tpl_arg(args, n, i, kw_names, kw_vals, kw_n, name)
#define FILTER(fn) static bool fn(tpl_render *r, int line, tval v, const tval *args, size_t n, \
                                  const tval *kw_names, const tval *kw_vals, size_t kw_n, tval *out)
#define TEST(fn) static bool fn(tpl_render *r, int line, tval v, const tval *args, size_t n, bool *out)

static tval list_value(tpl_list *l) {
    tval x = {.k = TV_LIST};
    x.u.l = l;
    return x;
}

static bool to_str(tpl_render *r, int line, tval v, tval *out) { return tv_to_str(r, line, v, out); }

FILTER(f_trim) {
    const tval *c = ARG(0, "chars");
    if (!to_str(r, line, v, &v)) return false;
    *out = tpl_strip(v, c && c->k == TV_STR ? c : NULL, 3);
    return true;
}

FILTER(f_tojson) {
    const tval *ind = ARG(0, "indent"), *ea = ARG(1, "ensure_ascii"), *sk = ARG(3, "sort_keys");
    const tval *sep = ARG(2, "separators");
    if (ea && tv_truthy(*ea)) return tpl_fail(r, line, "tojson(ensure_ascii=True) is not supported");
    if (sep && sep->k != TV_NONE) return tpl_fail(r, line, "tojson(separators=...) is not supported");
    char indent[64];
    const char *ip = NULL;
    if (ind && (ind->k == TV_INT || ind->k == TV_BOOL)) {
        int64_t w = ind->k == TV_BOOL ? ind->u.b : ind->u.i;
        if (w < 0) w = 0;
        if (w >= (int64_t)sizeof indent) return tpl_fail(r, line, "tojson indent too large");
        memset(indent, ' ', (size_t)w);
        indent[w] = 0;
        ip = indent;
    } else if (ind && ind->k == TV_STR) {
        if (ind->u.s.n >= sizeof indent) return tpl_fail(r, line, "tojson indent too long");
        memcpy(indent, ind->u.s.p, ind->u.s.n);
        indent[ind->u.s.n] = 0;
        ip = indent;
    } else if (ind && ind->k != TV_NONE)
        return tpl_fail(r, line, "tojson indent must be an int or a string");
    tpl_buf b = {0};
    char err[200];
    if (!tpl_json_dump(&b, v, ip, sk && tv_truthy(*sk), err, sizeof err)) {
        tpl_buf_free(&b);
        if (strstr(err, "out of memory")) return tpl_nomem(r, line);
        return tpl_fail(r, line, "%s", err);
    }
    return tpl_buf_take(r, line, &b, out);
}

FILTER(f_length) {
    switch (v.k) {
    case TV_STR: *out = tv_int((int64_t)tpl_utf8_len(v.u.s.p, v.u.s.n)); return true;
    case TV_LIST: *out = tv_int((int64_t)v.u.l->n); return true;
    case TV_DICT: *out = tv_int((int64_t)v.u.d->n); return true;
    case TV_UNDEF: *out = tv_int(0); return true;
    default: return tpl_fail(r, line, "object of type '%s' has no len()", tv_type_name(v));
    }
}

FILTER(f_items) {
    if (v.k == TV_UNDEF) { *out = list_value(tpl_list_new(r->a, 0)); return out->u.l || tpl_nomem(r, line); }
    if (v.k != TV_DICT) return tpl_fail(r, line, "items filter: can only get item pairs from a mapping, not %s", tv_type_name(v));
    tval fn;
    if (!tpl_method_find(r, v, "items", 5, &fn) || fn.k != TV_FUNC) return tpl_nomem(r, line);
    return tpl_call_value(r, line, fn, NULL, 0, NULL, NULL, 0, out);
}

/* Attribute path "a.b.0" as Jinja2's make_attrgetter resolves it. */
static bool attr_path(tpl_render *r, int line, tval v, tval path, tval *out) {
    if (path.k == TV_INT) return tpl_getitem(r, line, v, path, out);
    if (path.k != TV_STR) return tpl_fail(r, line, "attribute must be a string");
    const char *p = path.u.s.p, *end = p + path.u.s.n;
    while (p <= end) {
        const char *dot = memchr(p, '.', (size_t)(end - p));
        if (!dot) dot = end;
        char *stop;
        char num[32];
        size_t len = (size_t)(dot - p);
        long long idx = 0;
        bool is_int = len > 0 && len < sizeof num;
        if (is_int) {
            memcpy(num, p, len);
            num[len] = 0;
            idx = strtoll(num, &stop, 10);
            is_int = *stop == 0;
        }
        if (!tpl_getitem(r, line, v, is_int ? tv_int(idx) : tv_str(p, len), &v)) return false;
        p = dot + 1;
    }
    *out = v;
    return true;
}

FILTER(f_join) {
    const tval *sep = ARG(0, "d"), *attr = ARG(1, "attribute");
    tpl_list *items;
    if (!tpl_iterate(r, line, v, &items)) return false;
    tpl_buf b = {0};
    for (size_t i = 0; i < items->n; i++) {
        tval x = items->v[i];
        if (attr && attr->k != TV_NONE && !attr_path(r, line, x, *attr, &x)) { tpl_buf_free(&b); return false; }
        if (i && sep) tv_str_append(&b, *sep);
        tv_str_append(&b, x);
    }
    return tpl_buf_take(r, line, &b, out);
}

/* select / reject / selectattr / rejectattr: attr: the first argument is an
   attribute; keep: select (true) or reject (false). */
static bool select_impl(tpl_render *r, int line, tval v, const tval *args, size_t n, bool attr,
                        bool keep, tval *out) {
    tpl_list *items, *res;
    if (!tpl_iterate(r, line, v, &items) || !(res = tpl_list_new(r->a, items->n)))
        return r->failed ? false : tpl_nomem(r, line);
    size_t k = 0;
    const tval *path = NULL;
    if (attr) {
        if (n < 1) return tpl_fail(r, line, "selectattr/rejectattr need an attribute name");
        path = &args[k++];
    }
    tpl_test_fn test = NULL;
    if (k < n) {
        if (args[k].k != TV_STR) return tpl_fail(r, line, "the test name must be a string");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(args[k].u.s.n < 60 ? args[k].u.s.n : 60), args[k].u.s.p);
        if (!(test = tpl_test_find(name))) return tpl_fail(r, line, "no test named '%s'", name);
        k++;
    }
    for (size_t i = 0; i < items->n; i++) {
        tval x = items->v[i];
        bool ok;
        if (path && !attr_path(r, line, x, *path, &x)) return false;
        if (test) { if (!test(r, line, x, args + k, n - k, &ok)) return false; }
        else ok = tv_truthy(x);
        if (ok == keep) res->v[res->n++] = items->v[i];
    }
    *out = list_value(res);
    return true;
}
FILTER(f_select) { return select_impl(r, line, v, args, n, false, true, out); }
FILTER(f_reject) { return select_impl(r, line, v, args, n, false, false, out); }
FILTER(f_selectattr) { return select_impl(r, line, v, args, n, true, true, out); }
FILTER(f_rejectattr) { return select_impl(r, line, v, args, n, true, false, out); }

FILTER(f_map) {
    tpl_list *items, *res;
    if (!tpl_iterate(r, line, v, &items) || !(res = tpl_list_new(r->a, items->n)))
        return r->failed ? false : tpl_nomem(r, line);
    const tval *attr = ARG(99, "attribute"), *dflt = ARG(99, "default");
    tpl_filter_fn f = NULL;
    if (!attr) {
        if (n < 1 || args[0].k != TV_STR) return tpl_fail(r, line, "map needs a filter name or attribute=");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(args[0].u.s.n < 60 ? args[0].u.s.n : 60), args[0].u.s.p);
        if (!(f = tpl_filter_find(name))) return tpl_fail(r, line, "no filter named '%s'", name);
    }
    for (size_t i = 0; i < items->n; i++) {
        tval x = items->v[i];
        if (attr) {
            if (!attr_path(r, line, x, *attr, &x)) return false;
            if (x.k == TV_UNDEF && dflt) x = *dflt;
        } else if (!f(r, line, x, args + 1, n - 1, kw_names, kw_vals, kw_n, &x)) return false;
        res->v[res->n++] = x;
    }
    *out = list_value(res);
    return true;
}

FILTER(f_string) { return to_str(r, line, v, out); }
FILTER(f_safe) { *out = v; return true; }

FILTER(f_first) {
    tpl_list *items;
    if (!tpl_iterate(r, line, v, &items)) return false;
    *out = items->n ? items->v[0] : tv_undef("first");
    return true;
}

FILTER(f_last) {
    tpl_list *items;
    if (!tpl_iterate(r, line, v, &items)) return false;
    *out = items->n ? items->v[items->n - 1] : tv_undef("last");
    return true;
}

FILTER(f_default) {
    const tval *d = ARG(0, "default_value"), *boolean = ARG(1, "boolean");
    bool use = v.k == TV_UNDEF || (boolean && tv_truthy(*boolean) && !tv_truthy(v));
    *out = use ? (d ? *d : tv_str("", 0)) : v;
    return true;
}

FILTER(f_upper) { return to_str(r, line, v, &v) && tpl_str_case(r, line, v, 'u', out); }
FILTER(f_lower) { return to_str(r, line, v, &v) && tpl_str_case(r, line, v, 'l', out); }
FILTER(f_capitalize) { return to_str(r, line, v, &v) && tpl_str_case(r, line, v, 'c', out); }
FILTER(f_title) { return to_str(r, line, v, &v) && tpl_str_case(r, line, v, 't', out); }

FILTER(f_replace) {
    if (!to_str(r, line, v, &v)) return false;
    return tpl_str_replace(r, line, v, ARG(0, "old"), ARG(1, "new"), ARG(2, "count"), out);
}

FILTER(f_list) {
    tpl_list *items, *l;
    if (!tpl_iterate(r, line, v, &items) || !(l = tpl_list_new(r->a, items->n)))
        return r->failed ? false : tpl_nomem(r, line);
    if (items->n) memcpy(l->v, items->v, items->n * sizeof *l->v);
    l->n = items->n;
    *out = list_value(l);
    return true;
}

FILTER(f_reverse) {
    if (v.k == TV_STR) {
        tpl_list *chars;
        if (!tpl_iterate(r, line, v, &chars)) return false;
        char *p = tpl_alloc(r->a, v.u.s.n + 1);
        if (!p) return tpl_nomem(r, line);
        size_t o = 0;
        for (size_t i = chars->n; i-- > 0;) { memcpy(p + o, chars->v[i].u.s.p, chars->v[i].u.s.n); o += chars->v[i].u.s.n; }
        *out = tv_str(p, o);
        return true;
    }
    if (!f_list(r, line, v, args, n, kw_names, kw_vals, kw_n, out)) return false;
    tpl_list *l = out->u.l;
    for (size_t i = 0; i < l->n / 2; i++) { tval t = l->v[i]; l->v[i] = l->v[l->n - 1 - i]; l->v[l->n - 1 - i] = t; }
    return true;
}

FILTER(f_int) {
    const tval *d = ARG(0, "default");
    if (v.k == TV_INT) *out = v;
    else if (v.k == TV_BOOL) *out = tv_int(v.u.b);
    else if (v.k == TV_FLOAT && isfinite(v.u.f) && fabs(v.u.f) < 9.2e18) *out = tv_int((int64_t)v.u.f);
    else if (v.k == TV_STR) {
        char tmp[64], *end;
        tval t = tpl_strip(v, NULL, 3);
        snprintf(tmp, sizeof tmp, "%.*s", (int)(t.u.s.n < 63 ? t.u.s.n : 63), t.u.s.p);
        long long x = strtoll(tmp, &end, 10);
        if (*end == 0 && end != tmp) *out = tv_int(x);
        else {
            double f = strtod(tmp, &end);
            *out = *end == 0 && end != tmp && fabs(f) < 9.2e18 ? tv_int((int64_t)f) : (d ? *d : tv_int(0));
        }
    } else *out = d ? *d : tv_int(0);
    return true;
}

FILTER(f_float) {
    const tval *d = ARG(0, "default");
    if (v.k == TV_FLOAT) *out = v;
    else if (v.k == TV_INT || v.k == TV_BOOL) *out = tv_float(v.k == TV_INT ? (double)v.u.i : v.u.b);
    else if (v.k == TV_STR) {
        char tmp[128], *end;
        tval t = tpl_strip(v, NULL, 3);
        snprintf(tmp, sizeof tmp, "%.*s", (int)(t.u.s.n < 127 ? t.u.s.n : 127), t.u.s.p);
        double f = strtod(tmp, &end);
        *out = *end == 0 && end != tmp ? tv_float(f) : (d ? *d : tv_float(0));
    } else *out = d ? *d : tv_float(0);
    return true;
}

FILTER(f_abs) {
    if (v.k == TV_INT) *out = v.u.i == INT64_MIN ? tv_float(9.223372036854775808e18) : tv_int(v.u.i < 0 ? -v.u.i : v.u.i);
    else if (v.k == TV_BOOL) *out = tv_int(v.u.b);
    else if (v.k == TV_FLOAT) *out = tv_float(fabs(v.u.f));
    else return tpl_fail(r, line, "bad operand type for abs(): '%s'", tv_type_name(v));
    return true;
}

FILTER(f_escape) {
    if (!to_str(r, line, v, &v)) return false;
    tpl_buf b = {0};
    for (size_t i = 0; i < v.u.s.n; i++) {
        char c = v.u.s.p[i];
        if (c == '&') tpl_buf_put(&b, "&amp;", 5);
        else if (c == '<') tpl_buf_put(&b, "&lt;", 4);
        else if (c == '>') tpl_buf_put(&b, "&gt;", 4);
        else if (c == '"') tpl_buf_put(&b, "&#34;", 5);
        else if (c == '\'') tpl_buf_put(&b, "&#39;", 5);
        else tpl_buf_putc(&b, c);
    }
    return tpl_buf_take(r, line, &b, out);
}

/* indent(width=4, first=False, blank=False): indents every line but the first. */
FILTER(f_indent) {
    const tval *w = ARG(0, "width"), *first = ARG(1, "first"), *blank = ARG(2, "blank");
    char pad[128];
    size_t pn = 4;
    if (w && w->k == TV_STR) { pn = w->u.s.n < sizeof pad ? w->u.s.n : sizeof pad - 1; memcpy(pad, w->u.s.p, pn); }
    else {
        int64_t k = w && w->k == TV_INT ? w->u.i : 4;
        pn = k < 0 ? 0 : k >= (int64_t)sizeof pad ? sizeof pad - 1 : (size_t)k;
        memset(pad, ' ', pn);
    }
    if (!to_str(r, line, v, &v)) return false;
    tpl_buf b = {0};
    bool at_start = true, is_first = true;
    for (size_t i = 0; i < v.u.s.n; i++) {
        if (at_start) {
            size_t e = i;
            while (e < v.u.s.n && v.u.s.p[e] != '\n') e++;
            bool empty = e == i;
            if ((!is_first || (first && tv_truthy(*first))) && (!empty || (blank && tv_truthy(*blank))))
                tpl_buf_put(&b, pad, pn);
            at_start = false;
        }
        tpl_buf_putc(&b, v.u.s.p[i]);
        if (v.u.s.p[i] == '\n') { at_start = true; is_first = false; }
    }
    return tpl_buf_take(r, line, &b, out);
}

/* ---- tests ----------------------------------------------------------------------------- */

static bool is_int_kind(tval v) { return v.k == TV_INT || v.k == TV_BOOL; }

TEST(t_defined) { *out = v.k != TV_UNDEF; return true; }
TEST(t_undefined) { *out = v.k == TV_UNDEF; return true; }
TEST(t_none) { *out = v.k == TV_NONE; return true; }
TEST(t_string) { *out = v.k == TV_STR; return true; }
TEST(t_mapping) { *out = v.k == TV_DICT; return true; }
/* Undefined has __len__ and __getitem__, so Jinja2 calls it a sequence. */
TEST(t_sequence) { *out = v.k == TV_STR || v.k == TV_LIST || v.k == TV_DICT || v.k == TV_UNDEF; return true; }
/* Undefined is iterable in Jinja2 (it iterates as empty). */
TEST(t_iterable) { *out = v.k == TV_STR || v.k == TV_LIST || v.k == TV_DICT || v.k == TV_UNDEF; return true; }
TEST(t_number) { *out = v.k == TV_INT || v.k == TV_FLOAT || v.k == TV_BOOL; return true; }
TEST(t_integer) { *out = v.k == TV_INT; return true; }
TEST(t_float) { *out = v.k == TV_FLOAT; return true; }
TEST(t_boolean) { *out = v.k == TV_BOOL; return true; }
TEST(t_true) { *out = v.k == TV_BOOL && v.u.b; return true; }
TEST(t_false) { *out = v.k == TV_BOOL && !v.u.b; return true; }
TEST(t_callable) { *out = v.k == TV_FUNC || v.k == TV_MACRO; return true; }
TEST(t_escaped) { *out = false; return true; }

static bool one_arg(tpl_render *r, int line, size_t n, const char *test) {
    return n == 1 || tpl_fail(r, line, "test '%s' takes exactly one argument", test);
}
TEST(t_eq) { if (!one_arg(r, line, n, "eq")) return false; *out = tv_equal(v, args[0]); return true; }
TEST(t_ne) { if (!one_arg(r, line, n, "ne")) return false; *out = !tv_equal(v, args[0]); return true; }

static bool order_test(tpl_render *r, int line, tval v, const tval *args, size_t n, int want, bool *out) {
    int c;
    if (!one_arg(r, line, n, "comparison")) return false;
    if (!tv_compare(v, args[0], &c))
        return tpl_fail(r, line, "cannot compare '%s' and '%s'", tv_type_name(v), tv_type_name(args[0]));
    *out = c != 2 && (want == 0 ? c < 0 : want == 1 ? c <= 0 : want == 2 ? c > 0 : c >= 0);
    return true;
}
TEST(t_lt) { return order_test(r, line, v, args, n, 0, out); }
TEST(t_le) { return order_test(r, line, v, args, n, 1, out); }
TEST(t_gt) { return order_test(r, line, v, args, n, 2, out); }
TEST(t_ge) { return order_test(r, line, v, args, n, 3, out); }

TEST(t_in) {
    if (!one_arg(r, line, n, "in")) return false;
    tval box = args[0];
    if (box.k == TV_STR) {
        if (v.k != TV_STR) return tpl_fail(r, line, "'in <string>' requires string as left operand");
        *out = v.u.s.n == 0;
        for (size_t i = 0; !*out && i + v.u.s.n <= box.u.s.n; i++) *out = !memcmp(box.u.s.p + i, v.u.s.p, v.u.s.n);
        return true;
    }
    if (box.k == TV_DICT) { *out = v.k == TV_STR && tpl_dict_get(box.u.d, v.u.s.p, v.u.s.n); return true; }
    tpl_list *items;
    if (!tpl_iterate(r, line, box, &items)) return false;
    *out = false;
    for (size_t i = 0; i < items->n && !*out; i++) *out = tv_equal(v, items->v[i]);
    return true;
}

TEST(t_sameas) {
    if (!one_arg(r, line, n, "sameas")) return false;
    tval o = args[0];
    if (v.k != o.k) *out = false;
    else if (v.k == TV_LIST) *out = v.u.l == o.u.l;
    else if (v.k == TV_DICT || v.k == TV_NS) *out = v.u.d == o.u.d;
    else *out = tv_equal(v, o);
    return true;
}

TEST(t_odd) {
    if (!is_int_kind(v)) return tpl_fail(r, line, "test 'odd' needs an integer");
    *out = ((v.k == TV_BOOL ? v.u.b : v.u.i) & 1) != 0;
    return true;
}
TEST(t_even) {
    if (!is_int_kind(v)) return tpl_fail(r, line, "test 'even' needs an integer");
    *out = ((v.k == TV_BOOL ? v.u.b : v.u.i) & 1) == 0;
    return true;
}
TEST(t_divisibleby) {
    if (!one_arg(r, line, n, "divisibleby")) return false;
    if (!is_int_kind(v) || !is_int_kind(args[0]))
        return tpl_fail(r, line, "test 'divisibleby' needs integers");
    int64_t d = args[0].k == TV_BOOL ? args[0].u.b : args[0].u.i;
    if (d == 0) return tpl_fail(r, line, "integer division or modulo by zero");
    int64_t x = v.k == TV_BOOL ? v.u.b : v.u.i;
    *out = d == -1 || x % d == 0;
    return true;
}

static bool case_test(tval v, bool upper) {
    bool cased = false;
    if (v.k != TV_STR) return false;
    for (size_t i = 0; i < v.u.s.n; i++) {
        char c = v.u.s.p[i];
        if (upper ? (c >= 'a' && c <= 'z') : (c >= 'A' && c <= 'Z')) return false;
        cased |= upper ? (c >= 'A' && c <= 'Z') : (c >= 'a' && c <= 'z');
    }
    return cased;
}
TEST(t_lower) { *out = case_test(v, false); return true; }
TEST(t_upper) { *out = case_test(v, true); return true; }

static const struct { const char *name; tpl_filter_fn fn; } FILTERS[] = {
    {"trim", f_trim}, {"tojson", f_tojson}, {"length", f_length}, {"count", f_length},
    {"items", f_items}, {"join", f_join}, {"select", f_select}, {"reject", f_reject},
    {"selectattr", f_selectattr}, {"rejectattr", f_rejectattr}, {"map", f_map},
    {"string", f_string}, {"safe", f_safe}, {"first", f_first}, {"last", f_last},
    {"default", f_default}, {"d", f_default}, {"upper", f_upper}, {"lower", f_lower},
    {"capitalize", f_capitalize}, {"title", f_title}, {"replace", f_replace},
    {"list", f_list}, {"reverse", f_reverse}, {"int", f_int}, {"float", f_float},
    {"abs", f_abs}, {"escape", f_escape}, {"e", f_escape}, {"indent", f_indent},
};

static const struct { const char *name; tpl_test_fn fn; } TESTS[] = {
    {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none},
    {"string", t_string}, {"mapping", t_mapping}, {"sequence", t_sequence},
    {"iterable", t_iterable}, {"number", t_number}, {"integer", t_integer},
    {"float", t_float}, {"boolean", t_boolean}, {"true", t_true}, {"false", t_false},
    {"callable", t_callable}, {"escaped", t_escaped}, {"eq", t_eq}, {"equalto", t_eq},
    {"==", t_eq}, {"ne", t_ne}, {"!=", t_ne}, {"lt", t_lt}, {"lessthan", t_lt}, {"<", t_lt},
    {"le", t_le}, {"<=", t_le}, {"gt", t_gt}, {"greaterthan", t_gt}, {">", t_gt},
    {"ge", t_ge}, {">=", t_ge}, {"in", t_in}, {"sameas", t_sameas}, {"odd", t_odd},
    {"even", t_even}, {"divisibleby", t_divisibleby}, {"lower", t_lower}, {"upper", t_upper},
};

tpl_filter_fn tpl_filter_find(const char *name) {
    for (size_t i = 0; i < sizeof FILTERS / sizeof FILTERS[0]; i++)
        if (!strcmp(FILTERS[i].name, name)) return FILTERS[i].fn;
    return NULL;
}

tpl_test_fn tpl_test_find(const char *name) {
    for (size_t i = 0; i < sizeof TESTS / sizeof TESTS[0]; i++)
        if (!strcmp(TESTS[i].name, name)) return TESTS[i].fn;
    return NULL;
}
