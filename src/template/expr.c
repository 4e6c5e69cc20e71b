/* Expression evaluation with Python's semantics: operators, attribute and
   item lookup (Jinja2's getattr-then-getitem fallbacks), slices,
   iteration, and Undefined that renders as "" but fails when used. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "template/internal.h"

bool tpl_fail(tpl_render *r, int line, const char *fmt, ...) {
    if (!r->failed) {
        char msg[TPL_ERR_CAP - 32];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(r->err, sizeof r->err, "line %d: %s", line, msg);
        r->failed = true;
    }
    return false;
}

bool tpl_nomem(tpl_render *r, int line) {
    if (!r->failed) r->oom = true;
    return tpl_fail(r, line, "out of memory (or over the %zu MiB limit of one render)",
                    TPL_MAX_ARENA >> 20);
}

static bool undefined_error(tpl_render *r, int line, tval v) {
    if (v.undef_name) return tpl_fail(r, line, "'%s' is undefined", v.undef_name);
    return tpl_fail(r, line, "a value is undefined");
}

static tval str_value(tpl_render *r, const char *p, size_t n) {
    char *s = tpl_alloc(r->a, n + 1);
    if (!s) return tv_undef(NULL);
    if (n) memcpy(s, p, n);
    return tv_str(s, n);
}

/* ---- lookup ------------------------------------------------------------------ */

static bool loop_attr(tpl_render *r, tpl_loop *l, const char *name, tval *out) {
    size_t i = l->index0, n = l->items->n;
    if (!strcmp(name, "index0")) *out = tv_int((int64_t)i);
    else if (!strcmp(name, "index")) *out = tv_int((int64_t)i + 1);
    else if (!strcmp(name, "revindex")) *out = tv_int((int64_t)(n - i));
    else if (!strcmp(name, "revindex0")) *out = tv_int((int64_t)(n - i - 1));
    else if (!strcmp(name, "first")) *out = tv_bool(i == 0);
    else if (!strcmp(name, "last")) *out = tv_bool(i + 1 == n);
    else if (!strcmp(name, "length")) *out = tv_int((int64_t)n);
    else if (!strcmp(name, "depth")) *out = tv_int(l->depth0 + 1);
    else if (!strcmp(name, "depth0")) *out = tv_int(l->depth0);
    else if (!strcmp(name, "previtem")) *out = i > 0 ? l->items->v[i - 1] : tv_undef("previtem");
    else if (!strcmp(name, "nextitem")) *out = i + 1 < n ? l->items->v[i + 1] : tv_undef("nextitem");
    else {
        tval self = {.k = TV_LOOP};
        self.u.loop = l;
        if (!tpl_method_find(r, self, name, strlen(name), out)) *out = tv_undef(name);
    }
    return true;
}

bool tpl_getattr(tpl_render *r, int line, tval obj, const char *name, size_t nn, tval *out) {
    switch (obj.k) {
    case TV_UNDEF: return undefined_error(r, line, obj);
    case TV_DICT:
        /* Python getattr first: d.items is the method even with an "items" key. */
        if (tpl_method_find(r, obj, name, nn, out)) return true;
        /* fallthrough */
    case TV_NS: {
        tval *v = tpl_dict_get(obj.u.d, name, nn);
        if (v) *out = *v;
        else *out = tv_undef(name);
        return true;
    }
    case TV_LOOP: return loop_attr(r, obj.u.loop, name, out);
    default:
        if (!tpl_method_find(r, obj, name, nn, out)) *out = tv_undef(name);
        return true;
    }
}

/* Python index (negative from the end) -> position, or false if outside. */
static bool norm_index(tval key, size_t n, size_t *pos) {
    int64_t i = key.k == TV_BOOL ? key.u.b : key.u.i;
    if (i < 0) i += (int64_t)n;
    if (i < 0 || (uint64_t)i >= n) return false;
    *pos = (size_t)i;
    return true;
}

bool tpl_getitem(tpl_render *r, int line, tval obj, tval key, tval *out) {
    if (obj.k == TV_UNDEF) return undefined_error(r, line, obj);
    bool int_key = key.k == TV_INT || key.k == TV_BOOL;
    size_t pos;
    if (obj.k == TV_DICT && key.k == TV_STR) {
        tval *v = tpl_dict_get(obj.u.d, key.u.s.p, key.u.s.n);
        if (v) { *out = *v; return true; }
    } else if (obj.k == TV_LIST && int_key) {
        *out = norm_index(key, obj.u.l->n, &pos) ? obj.u.l->v[pos] : tv_undef(NULL);
        return true;
    } else if (obj.k == TV_STR && int_key) {
        size_t n = tpl_utf8_len(obj.u.s.p, obj.u.s.n);
        if (!norm_index(key, n, &pos)) { *out = tv_undef(NULL); return true; }
        size_t b = tpl_utf8_offset(obj.u.s.p, obj.u.s.n, pos), e = b;
        tpl_utf8_next(obj.u.s.p, obj.u.s.n, &e);
        *out = tv_str(obj.u.s.p + b, e - b);
        return true;
    }
    if (key.k == TV_STR) { /* Jinja2 falls back to getattr(obj, key) */
        if (obj.k == TV_DICT) {
            if (!tpl_method_find(r, obj, key.u.s.p, key.u.s.n, out)) *out = tv_undef(NULL);
            return true;
        }
        return tpl_getattr(r, line, obj, key.u.s.p, key.u.s.n, out);
    }
    *out = tv_undef(NULL);
    return true;
}

bool tpl_iterate(tpl_render *r, int line, tval v, tpl_list **out) {
    switch (v.k) {
    case TV_LIST: *out = v.u.l; return true;
    case TV_UNDEF: *out = tpl_list_new(r->a, 0); return *out || tpl_nomem(r, line);
    case TV_DICT: {
        tpl_list *l = tpl_list_new(r->a, v.u.d->n);
        if (!l) return tpl_nomem(r, line);
        for (size_t i = 0; i < v.u.d->n; i++) l->v[i] = v.u.d->keys[i];
        l->n = v.u.d->n;
        *out = l;
        return true;
    }
    case TV_STR: {
        tpl_list *l = tpl_list_new(r->a, 0);
        if (!l) return tpl_nomem(r, line);
        for (size_t i = 0; i < v.u.s.n;) {
            size_t st = i;
            tpl_utf8_next(v.u.s.p, v.u.s.n, &i);
            if (!tpl_list_push(r->a, l, tv_str(v.u.s.p + st, i - st))) return tpl_nomem(r, line);
        }
        *out = l;
        return true;
    }
    default: return tpl_fail(r, line, "'%s' object is not iterable", tv_type_name(v));
    }
}

/* ---- slices ------------------------------------------------------------------ */

static bool slice_bound(tpl_render *r, int line, tval v, bool *given, int64_t *out) {
    *given = false;
    if (v.k == TV_NONE || v.k == TV_UNDEF) return true;
    if (v.k != TV_INT && v.k != TV_BOOL)
        return tpl_fail(r, line, "slice indices must be integers or None, not %s", tv_type_name(v));
    *given = true;
    *out = v.k == TV_BOOL ? v.u.b : v.u.i;
    return true;
}

/* Python's slice.indices(): fills start, stop, step for a length n. */
static void slice_indices(int64_t n, bool hs, int64_t start, bool he, int64_t stop, int64_t step,
                          int64_t *s0, int64_t *e0) {
    if (step > 0) {
        *s0 = !hs ? 0 : start < 0 ? (start + n < 0 ? 0 : start + n) : (start > n ? n : start);
        *e0 = !he ? n : stop < 0 ? (stop + n < 0 ? 0 : stop + n) : (stop > n ? n : stop);
    } else {
        *s0 = !hs ? n - 1 : start < 0 ? (start + n < 0 ? -1 : start + n) : (start >= n ? n - 1 : start);
        *e0 = !he ? -1 : stop < 0 ? (stop + n < 0 ? -1 : stop + n) : (stop >= n ? n - 1 : stop);
    }
}

static bool eval_slice(tpl_render *r, tpl_scope *s, const tpl_node *e, tval *out) {
    tval obj, a = tv_none(), b = tv_none(), c = tv_none();
    if (!tpl_eval(r, s, e->a, &obj)) return false;
    if ((e->b && !tpl_eval(r, s, e->b, &a)) || (e->c && !tpl_eval(r, s, e->c, &b)) ||
        (e->args.n && !tpl_eval(r, s, e->args.v[0], &c)))
        return false;
    bool hs, he, hst;
    int64_t start = 0, stop = 0, step = 1;
    if (!slice_bound(r, e->line, a, &hs, &start) || !slice_bound(r, e->line, b, &he, &stop) ||
        !slice_bound(r, e->line, c, &hst, &step))
        return false;
    if (step == 0) return tpl_fail(r, e->line, "slice step cannot be zero");
    if (obj.k == TV_UNDEF) return undefined_error(r, e->line, obj);
    tpl_list *src;
    bool is_str = obj.k == TV_STR;
    if (is_str) { if (!tpl_iterate(r, e->line, obj, &src)) return false; }
    else if (obj.k == TV_LIST) src = obj.u.l;
    else return tpl_fail(r, e->line, "'%s' object is not subscriptable", tv_type_name(obj));
    int64_t s0, e0, n = (int64_t)src->n;
    slice_indices(n, hs, start, he, stop, step, &s0, &e0);
    tpl_list *l = tpl_list_new(r->a, 0);
    if (!l) return tpl_nomem(r, e->line);
    l->tuple = src->tuple;
    for (int64_t i = s0; step > 0 ? i < e0 : i > e0; i += step)
        if (!tpl_list_push(r->a, l, src->v[i])) return tpl_nomem(r, e->line);
    if (!is_str) { out->k = TV_LIST; out->u.l = l; out->undef_name = NULL; return true; }
    tpl_buf buf = {0};
    for (size_t i = 0; i < l->n; i++) tpl_buf_put(&buf, l->v[i].u.s.p, l->v[i].u.s.n);
    *out = str_value(r, buf.p ? buf.p : "", buf.n);
    tpl_buf_free(&buf);
    return out->k == TV_STR || tpl_nomem(r, e->line);
}

/* ---- operators ------------------------------------------------------------------ */

static const char *op_text(int op) {
    switch (op) {
    case OP_ADD: return "+"; case OP_SUB: return "-"; case OP_MUL: return "*";
    case OP_DIV: return "/"; case OP_FLOORDIV: return "//"; case OP_MOD: return "%";
    case OP_POW: return "**"; case OP_LT: return "<"; case OP_LE: return "<=";
    case OP_GT: return ">"; case OP_GE: return ">="; default: return "?";
    }
}

static bool bad_operands(tpl_render *r, int line, int op, tval a, tval b) {
    if (a.k == TV_UNDEF) return undefined_error(r, line, a);
    if (b.k == TV_UNDEF) return undefined_error(r, line, b);
    if (op == OP_ADD && a.k == TV_STR)
        return tpl_fail(r, line, "can only concatenate str (not \"%s\") to str", tv_type_name(b));
    return tpl_fail(r, line, "unsupported operand type(s) for %s: '%s' and '%s'", op_text(op),
                    tv_type_name(a), tv_type_name(b));
}

static bool is_num(tval v) { return v.k == TV_INT || v.k == TV_BOOL || v.k == TV_FLOAT; }
static int64_t ival(tval v) { return v.k == TV_BOOL ? v.u.b : v.u.i; }
static double fval(tval v) { return v.k == TV_FLOAT ? v.u.f : (double)ival(v); }

static bool repeat(tpl_render *r, int line, tval seq, int64_t times, tval *out) {
    if (times < 0) times = 0;
    size_t unit = seq.k == TV_STR ? seq.u.s.n : seq.u.l->n;
    if (unit && (uint64_t)times > TPL_MAX_ARENA / unit) return tpl_nomem(r, line);
    if (seq.k == TV_STR) {
        char *p = tpl_alloc(r->a, unit * (size_t)times + 1);
        if (!p) return tpl_nomem(r, line);
        for (int64_t k = 0; k < times; k++) memcpy(p + unit * (size_t)k, seq.u.s.p, unit);
        *out = tv_str(p, unit * (size_t)times);
        return true;
    }
    tpl_list *l = tpl_list_new(r->a, unit * (size_t)times);
    if (!l) return tpl_nomem(r, line);
    for (int64_t k = 0; k < times; k++)
        for (size_t i = 0; i < unit; i++) l->v[l->n++] = seq.u.l->v[i];
    l->tuple = seq.u.l->tuple;
    out->k = TV_LIST;
    out->u.l = l;
    out->undef_name = NULL;
    return true;
}

static bool arith(tpl_render *r, int line, int op, tval a, tval b, tval *out) {
    if (is_num(a) && is_num(b)) {
        bool flt = a.k == TV_FLOAT || b.k == TV_FLOAT;
        int64_t x = ival(a), y = ival(b), z;
        double fx = fval(a), fy = fval(b);
        switch (op) {
        case OP_ADD:
            if (flt) { *out = tv_float(fx + fy); return true; }
            if (__builtin_add_overflow(x, y, &z)) break;
            *out = tv_int(z);
            return true;
        case OP_SUB:
            if (flt) { *out = tv_float(fx - fy); return true; }
            if (__builtin_sub_overflow(x, y, &z)) break;
            *out = tv_int(z);
            return true;
        case OP_MUL:
            if (flt) { *out = tv_float(fx * fy); return true; }
            if (__builtin_mul_overflow(x, y, &z)) break;
            *out = tv_int(z);
            return true;
        case OP_DIV:
            if (fy == 0) return tpl_fail(r, line, "division by zero");
            *out = tv_float(fx / fy);
            return true;
        case OP_FLOORDIV: case OP_MOD:
            if (flt ? fy == 0 : y == 0)
                return tpl_fail(r, line, "integer division or modulo by zero");
            if (flt) {
                double m = fmod(fx, fy);
                if (m != 0 && ((m < 0) != (fy < 0))) m += fy;
                *out = op == OP_MOD ? tv_float(m) : tv_float(floor(fx / fy));
                return true;
            }
            if (x == INT64_MIN && y == -1) break;
            z = x / y;
            int64_t m = x % y;
            if (m != 0 && ((m < 0) != (y < 0))) { z--; m += y; }
            *out = tv_int(op == OP_MOD ? m : z);
            return true;
        case OP_POW:
            if (!flt && y >= 0) {
                int64_t acc = 1;
                for (int64_t k = 0; k < y; k++) {
                    if (__builtin_mul_overflow(acc, x, &acc)) return tpl_fail(r, line, "integer overflow in **");
                    if (acc == 0 || acc == 1) break;
                }
                *out = tv_int(acc);
                return true;
            }
            *out = tv_float(pow(fx, fy));
            return true;
        }
        return tpl_fail(r, line, "integer overflow in %s", op_text(op));
    }
    if (op == OP_ADD && a.k == TV_STR && b.k == TV_STR) {
        char *p = tpl_alloc(r->a, a.u.s.n + b.u.s.n + 1);
        if (!p) return tpl_nomem(r, line);
        memcpy(p, a.u.s.p, a.u.s.n);
        memcpy(p + a.u.s.n, b.u.s.p, b.u.s.n);
        *out = tv_str(p, a.u.s.n + b.u.s.n);
        return true;
    }
    if (op == OP_ADD && a.k == TV_LIST && b.k == TV_LIST && a.u.l->tuple == b.u.l->tuple) {
        tpl_list *l = tpl_list_new(r->a, a.u.l->n + b.u.l->n);
        if (!l) return tpl_nomem(r, line);
        if (a.u.l->n) memcpy(l->v, a.u.l->v, a.u.l->n * sizeof *l->v);
        if (b.u.l->n) memcpy(l->v + a.u.l->n, b.u.l->v, b.u.l->n * sizeof *l->v);
        l->n = a.u.l->n + b.u.l->n;
        l->tuple = a.u.l->tuple;
        out->k = TV_LIST;
        out->u.l = l;
        out->undef_name = NULL;
        return true;
    }
    if (op == OP_MUL && (a.k == TV_STR || a.k == TV_LIST) && (b.k == TV_INT || b.k == TV_BOOL))
        return repeat(r, line, a, ival(b), out);
    if (op == OP_MUL && (b.k == TV_STR || b.k == TV_LIST) && (a.k == TV_INT || a.k == TV_BOOL))
        return repeat(r, line, b, ival(a), out);
    return bad_operands(r, line, op, a, b);
}

static bool contains(tpl_render *r, int line, tval item, tval box, bool *out) {
    switch (box.k) {
    case TV_STR:
        if (item.k != TV_STR)
            return tpl_fail(r, line, "'in <string>' requires string as left operand, not %s", tv_type_name(item));
        if (item.u.s.n == 0) { *out = true; return true; }
        *out = false;
        for (size_t i = 0; i + item.u.s.n <= box.u.s.n; i++)
            if (!memcmp(box.u.s.p + i, item.u.s.p, item.u.s.n)) { *out = true; break; }
        return true;
    case TV_LIST:
        *out = false;
        for (size_t i = 0; i < box.u.l->n && !*out; i++) *out = tv_equal(item, box.u.l->v[i]);
        return true;
    case TV_DICT:
        *out = item.k == TV_STR && tpl_dict_get(box.u.d, item.u.s.p, item.u.s.n) != NULL;
        return true;
    case TV_UNDEF: *out = false; return true;
    default:
        return tpl_fail(r, line, "argument of type '%s' is not iterable", tv_type_name(box));
    }
}

static bool compare(tpl_render *r, int line, int op, tval a, tval b, bool *out) {
    if (op == OP_EQ || op == OP_NE) { *out = tv_equal(a, b) == (op == OP_EQ); return true; }
    if (op == OP_IN || op == OP_NOT_IN) {
        if (!contains(r, line, a, b, out)) return false;
        if (op == OP_NOT_IN) *out = !*out;
        return true;
    }
    int c;
    if (a.k == TV_UNDEF) return undefined_error(r, line, a);
    if (b.k == TV_UNDEF) return undefined_error(r, line, b);
    if (!tv_compare(a, b, &c))
        return tpl_fail(r, line, "'%s' not supported between instances of '%s' and '%s'",
                        op_text(op), tv_type_name(a), tv_type_name(b));
    if (c == 2) { *out = false; return true; } /* NaN */
    *out = op == OP_LT ? c < 0 : op == OP_LE ? c <= 0 : op == OP_GT ? c > 0 : c >= 0;
    return true;
}

/* ---- calls, filters, tests ------------------------------------------------------------ */

typedef struct {
    tval *args, *kw_names, *kw_vals;
    size_t n, kw_n;
} evargs;

static bool eval_args(tpl_render *r, tpl_scope *s, const tpl_node *e, size_t extra, evargs *a) {
    a->n = e->args.n + extra;
    a->kw_n = e->kw.n;
    a->args = tpl_alloc(r->a, (a->n + 1) * sizeof *a->args);
    a->kw_names = tpl_alloc(r->a, (a->kw_n + 1) * sizeof *a->kw_names);
    a->kw_vals = tpl_alloc(r->a, (a->kw_n + 1) * sizeof *a->kw_vals);
    if (!a->args || !a->kw_names || !a->kw_vals) return tpl_nomem(r, e->line);
    for (size_t i = 0; i < e->args.n; i++)
        if (!tpl_eval(r, s, e->args.v[i], &a->args[i + extra])) return false;
    for (size_t i = 0; i < e->kw.n; i++) {
        a->kw_names[i] = tv_cstr(e->kw_names[i]);
        if (!tpl_eval(r, s, e->kw.v[i], &a->kw_vals[i])) return false;
    }
    return true;
}

/* obj|f(args); `input` replaces a missing operand (filter blocks). */
static bool eval_filter(tpl_render *r, tpl_scope *s, const tpl_node *e, const tval *input, tval *out) {
    tval obj;
    if (!e->a) obj = *input;
    else if (e->a->kind == N_FILTER) { if (!eval_filter(r, s, e->a, input, &obj)) return false; }
    else if (!tpl_eval(r, s, e->a, &obj)) return false;
    evargs a;
    if (!eval_args(r, s, e, 0, &a)) return false;
    tpl_filter_fn f = tpl_filter_find(e->name);
    if (!f) return tpl_fail(r, e->line, "unknown filter '%s'", e->name);
    return f(r, e->line, obj, a.args, a.n, a.kw_names, a.kw_vals, a.kw_n, out);
}

bool tpl_apply_filters(tpl_render *r, tpl_scope *s, const tpl_node *chain, tval input, tval *out);
bool tpl_apply_filters(tpl_render *r, tpl_scope *s, const tpl_node *chain, tval input, tval *out) {
    return eval_filter(r, s, chain, &input, out);
}

static bool eval_test(tpl_render *r, tpl_scope *s, const tpl_node *e, tval *out) {
    tval obj;
    if (!tpl_eval(r, s, e->a, &obj)) return false;
    evargs a;
    if (!eval_args(r, s, e, 0, &a)) return false;
    if (a.kw_n) return tpl_fail(r, e->line, "test '%s' takes no keyword arguments", e->name);
    bool res;
    tpl_test_fn t = tpl_test_find(e->name);
    if (!t) return tpl_fail(r, e->line, "unknown test '%s'", e->name);
    if (!t(r, e->line, obj, a.args, a.n, &res)) return false;
    *out = tv_bool(res != (e->op != 0));
    return true;
}

static bool build(tpl_render *r, tpl_scope *s, const tpl_node *e, tval *out) {
    if (e->kind == N_DICT) {
        tpl_dict *d = tpl_dict_new(r->a, e->args.n);
        if (!d) return tpl_nomem(r, e->line);
        for (size_t i = 0; i < e->args.n; i++) {
            tval k, v;
            if (!tpl_eval(r, s, e->args.v[i], &k) || !tpl_eval(r, s, e->kw.v[i], &v)) return false;
            if (k.k != TV_STR) return tpl_fail(r, e->line, "dict keys must be strings here, not %s", tv_type_name(k));
            if (!tpl_dict_set(r->a, d, k.u.s.p, k.u.s.n, v)) return tpl_nomem(r, e->line);
        }
        out->k = TV_DICT;
        out->u.d = d;
        out->undef_name = NULL;
        return true;
    }
    tpl_list *l = tpl_list_new(r->a, e->args.n);
    if (!l) return tpl_nomem(r, e->line);
    for (size_t i = 0; i < e->args.n; i++)
        if (!tpl_eval(r, s, e->args.v[i], &l->v[i])) return false;
    l->n = e->args.n;
    l->tuple = e->kind == N_TUPLE;
    out->k = TV_LIST;
    out->u.l = l;
    out->undef_name = NULL;
    return true;
}

static tval *lookup(tpl_scope *s, const char *name) {
    size_t n = strlen(name);
    for (; s; s = s->parent) {
        tval *v = tpl_dict_get(&s->vars, name, n);
        if (v) return v;
    }
    return NULL;
}

bool tpl_eval(tpl_render *r, tpl_scope *s, const tpl_node *e, tval *out) {
    if (r->a->failed) return tpl_nomem(r, e->line);
    tval a, b;
    bool res;
    switch (e->kind) {
    case N_CONST: *out = e->val; return true;
    case N_NAME: {
        tval *v = lookup(s, e->name);
        *out = v ? *v : tv_undef(e->name);
        return true;
    }
    case N_GETATTR:
        return tpl_eval(r, s, e->a, &a) && tpl_getattr(r, e->line, a, e->name, strlen(e->name), out);
    case N_GETITEM:
        return tpl_eval(r, s, e->a, &a) && tpl_eval(r, s, e->b, &b) && tpl_getitem(r, e->line, a, b, out);
    case N_SLICE: return eval_slice(r, s, e, out);
    case N_CALL: {
        evargs ar;
        if (!tpl_eval(r, s, e->a, &a) || !eval_args(r, s, e, 0, &ar)) return false;
        return tpl_call_value(r, e->line, a, ar.args, ar.n, ar.kw_names, ar.kw_vals, ar.kw_n, out);
    }
    case N_FILTER: return eval_filter(r, s, e, NULL, out);
    case N_TEST: return eval_test(r, s, e, out);
    case N_UNARY:
        if (!tpl_eval(r, s, e->a, &a)) return false;
        if (!is_num(a)) {
            if (a.k == TV_UNDEF) return undefined_error(r, e->line, a);
            return tpl_fail(r, e->line, "bad operand type for unary %s: '%s'",
                            e->op == OP_NEG ? "-" : "+", tv_type_name(a));
        }
        if (e->op == OP_POS) *out = a.k == TV_BOOL ? tv_int(a.u.b) : a;
        else if (a.k == TV_FLOAT) *out = tv_float(-a.u.f);
        else if (ival(a) == INT64_MIN) return tpl_fail(r, e->line, "integer overflow in unary -");
        else *out = tv_int(-ival(a));
        return true;
    case N_BINARY:
        return tpl_eval(r, s, e->a, &a) && tpl_eval(r, s, e->b, &b) && arith(r, e->line, e->op, a, b, out);
    case N_COMPARE:
        if (!tpl_eval(r, s, e->args.v[0], &a)) return false;
        for (size_t i = 1; i < e->args.n; i++) {
            if (!tpl_eval(r, s, e->args.v[i], &b) || !compare(r, e->line, e->cmp_ops[i - 1], a, b, &res))
                return false;
            if (!res) { *out = tv_bool(false); return true; }
            a = b;
        }
        *out = tv_bool(true);
        return true;
    case N_AND: /* Python returns an operand, not a bool */
        if (!tpl_eval(r, s, e->a, &a)) return false;
        if (!tv_truthy(a)) { *out = a; return true; }
        return tpl_eval(r, s, e->b, out);
    case N_OR:
        if (!tpl_eval(r, s, e->a, &a)) return false;
        if (tv_truthy(a)) { *out = a; return true; }
        return tpl_eval(r, s, e->b, out);
    case N_NOT:
        if (!tpl_eval(r, s, e->a, &a)) return false;
        *out = tv_bool(!tv_truthy(a));
        return true;
    case N_COND:
        if (!tpl_eval(r, s, e->b, &a)) return false;
        if (tv_truthy(a)) return tpl_eval(r, s, e->a, out);
        if (e->c) return tpl_eval(r, s, e->c, out);
        *out = tv_undef(NULL);
        return true;
    case N_LIST: case N_TUPLE: case N_DICT: return build(r, s, e, out);
    case N_CONCAT: {
        tpl_buf buf = {0};
        for (size_t i = 0; i < e->args.n; i++) {
            if (!tpl_eval(r, s, e->args.v[i], &a)) { tpl_buf_free(&buf); return false; }
            tv_str_append(&buf, a);
        }
        if (buf.failed) { tpl_buf_free(&buf); return tpl_nomem(r, e->line); }
        *out = str_value(r, buf.p ? buf.p : "", buf.n);
        tpl_buf_free(&buf);
        return out->k == TV_STR || tpl_nomem(r, e->line);
    }
    default: return tpl_fail(r, e->line, "internal error: statement used as an expression");
    }
}
