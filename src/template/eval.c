/* Statement execution: output, if, for (with loop.*, break, continue, the
   loop filter and else), set (names, tuples, namespace attributes, blocks),
   macros and their calls, filter blocks. Scopes follow Jinja2: a for body
   and a macro body get their own; if does not. */
#include <string.h>
#include "template/internal.h"

bool tpl_apply_filters(tpl_render *r, tpl_scope *s, const tpl_node *chain, tval input, tval *out);

static tpl_scope *scope_new(tpl_render *r, tpl_scope *parent) {
    tpl_scope *s = tpl_alloc(r->a, sizeof *s);
    if (s) s->parent = parent;
    return s;
}

static bool bind(tpl_render *r, int line, tpl_scope *s, const char *name, tval v) {
    if (!tpl_dict_set(r->a, &s->vars, name, strlen(name), v)) return tpl_nomem(r, line);
    return true;
}

/* Assigns v to one name, or unpacks it over several (for a, b in ...). */
static bool assign(tpl_render *r, int line, tpl_scope *s, const tpl_node *n, tval v) {
    if (!n->target_tuple) return bind(r, line, s, n->targets[0], v);
    tpl_list *items;
    if (v.k == TV_UNDEF || !tpl_iterate(r, line, v, &items))
        return tpl_fail(r, line, "cannot unpack a non-iterable %s", tv_type_name(v));
    if (items->n != n->n_targets)
        return tpl_fail(r, line, "cannot unpack %zu values into %zu names", items->n, n->n_targets);
    for (size_t i = 0; i < n->n_targets; i++)
        if (!bind(r, line, s, n->targets[i], items->v[i])) return false;
    return true;
}

/* Renders body into a fresh buffer and returns it as an arena string. */
static bool capture(tpl_render *r, tpl_scope *s, const tpl_nodes *body, int line, tval *out) {
    tpl_buf buf = {0}, *saved = r->out;
    r->out = &buf;
    bool ok = tpl_render_body(r, s, body);
    r->out = saved;
    if (ok && buf.failed) ok = tpl_nomem(r, line);
    char *p = ok ? tpl_alloc(r->a, buf.n + 1) : NULL;
    if (ok && !p) ok = tpl_nomem(r, line);
    if (ok) {
        if (buf.n) memcpy(p, buf.p, buf.n);
        *out = tv_str(p, buf.n);
    }
    tpl_buf_free(&buf);
    return ok;
}

static bool call_macro(tpl_render *r, int line, const tpl_macro *m, const tval *args, size_t n,
                       const tval *kw_names, const tval *kw_vals, size_t kw_n, tval *out) {
    const tpl_node *def = m->def;
    if (r->depth >= TPL_MAX_DEPTH)
        return tpl_fail(r, line, "macro '%s' calls nested too deeply (recursion?)", def->name);
    tpl_scope *s = scope_new(r, m->closure);
    tpl_list *varargs = tpl_list_new(r->a, 0);
    tpl_dict *kwargs = tpl_dict_new(r->a, 0);
    if (!s || !varargs || !kwargs) return tpl_nomem(r, line);
    size_t np = def->kw.n;
    for (size_t i = np; i < n; i++) /* extra positional arguments */
        if (!tpl_list_push(r->a, varargs, args[i])) return tpl_nomem(r, line);
    for (size_t k = 0; k < kw_n; k++) {
        size_t i = 0;
        while (i < np && !tv_is_str(kw_names[k], def->kw_names[i])) i++;
        if (i < np && i < n)
            return tpl_fail(r, line, "macro '%s' got multiple values for argument '%s'", def->name,
                            def->kw_names[i]);
        if (i == np && !tpl_dict_set(r->a, kwargs, kw_names[k].u.s.p, kw_names[k].u.s.n, kw_vals[k]))
            return tpl_nomem(r, line);
    }
    for (size_t i = 0; i < np; i++) {
        tval v = tv_undef(def->kw_names[i]);
        bool given = false;
        if (i < n) { v = args[i]; given = true; }
        for (size_t k = 0; k < kw_n && !given; k++)
            if (tv_is_str(kw_names[k], def->kw_names[i])) { v = kw_vals[k]; given = true; }
        if (!given && def->kw.v[i] && !tpl_eval(r, s, def->kw.v[i], &v)) return false;
        if (!bind(r, line, s, def->kw_names[i], v)) return false;
    }
    tval vv = {.k = TV_LIST}, kv = {.k = TV_DICT};
    vv.u.l = varargs;
    kv.u.d = kwargs;
    if (!bind(r, line, s, "varargs", vv) || !bind(r, line, s, "kwargs", kv)) return false;
    r->depth++;
    int saved_ctl = r->loop_ctl;
    bool ok = capture(r, s, &def->body, line, out);
    r->loop_ctl = saved_ctl;
    r->depth--;
    return ok;
}

bool tpl_call_value(tpl_render *r, int line, tval fn, const tval *args, size_t n,
                    const tval *kw_names, const tval *kw_vals, size_t kw_n, tval *out) {
    if (fn.k == TV_MACRO) return call_macro(r, line, fn.u.m, args, n, kw_names, kw_vals, kw_n, out);
    if (fn.k == TV_FUNC) {
        if (r->depth >= TPL_MAX_DEPTH) return tpl_fail(r, line, "calls nested too deeply");
        r->depth++;
        bool ok = fn.u.fn->call(r, line, fn.u.fn->self, args, n, kw_names, kw_vals, kw_n, out);
        r->depth--;
        return ok;
    }
    if (fn.k == TV_UNDEF) {
        if (fn.undef_name) return tpl_fail(r, line, "'%s' is undefined (called as a function)", fn.undef_name);
        return tpl_fail(r, line, "called an undefined value");
    }
    return tpl_fail(r, line, "'%s' object is not callable", tv_type_name(fn));
}

static bool exec_for(tpl_render *r, tpl_scope *s, const tpl_node *n) {
    tval it;
    tpl_list *items;
    if (!tpl_eval(r, s, n->a, &it) || !tpl_iterate(r, n->line, it, &items)) return false;
    if (n->b) { /* {% for x in xs if cond %}: loop.* counts the kept items */
        tpl_list *kept = tpl_list_new(r->a, items->n);
        if (!kept) return tpl_nomem(r, n->line);
        for (size_t i = 0; i < items->n; i++) {
            tpl_scope *fs = scope_new(r, s);
            tval c;
            if (!fs) return tpl_nomem(r, n->line);
            if (!assign(r, n->line, fs, n, items->v[i]) || !tpl_eval(r, fs, n->b, &c)) return false;
            if (tv_truthy(c)) kept->v[kept->n++] = items->v[i];
        }
        items = kept;
    }
    if (items->n == 0) return tpl_render_body(r, s, &n->orelse);
    tpl_loop *lp = tpl_alloc(r->a, sizeof *lp);
    if (!lp) return tpl_nomem(r, n->line);
    lp->items = items;
    /* depth0 stays 0: only recursive loops (not supported) go deeper. */
    tval lv = {.k = TV_LOOP};
    lv.u.loop = lp;
    for (size_t i = 0; i < items->n; i++) {
        tpl_scope *is = scope_new(r, s);
        if (!is) return tpl_nomem(r, n->line);
        lp->index0 = i;
        if (!assign(r, n->line, is, n, items->v[i]) || !bind(r, n->line, is, "loop", lv) ||
            !tpl_render_body(r, is, &n->body))
            return false;
        int ctl = r->loop_ctl;
        r->loop_ctl = 0;
        if (ctl == 1) break;
    }
    return true;
}

static bool exec_set(tpl_render *r, tpl_scope *s, const tpl_node *n) {
    tval v;
    if (n->kind == N_SET_BLOCK) {
        if (!capture(r, s, &n->body, n->line, &v)) return false;
        if (n->b && !tpl_apply_filters(r, s, n->b, v, &v)) return false;
        return bind(r, n->line, s, n->targets[0], v);
    }
    if (!tpl_eval(r, s, n->a, &v)) return false;
    if (!n->name) return assign(r, n->line, s, n, v);
    tval ns;
    tpl_node name_node = {.kind = N_NAME, .line = n->line, .name = n->targets[0]};
    if (!tpl_eval(r, s, &name_node, &ns)) return false;
    if (ns.k != TV_NS)
        return tpl_fail(r, n->line, "cannot assign attribute '%s' on '%s' (a %s, not a namespace)",
                        n->name, n->targets[0], tv_type_name(ns));
    if (!tpl_dict_set(r->a, ns.u.d, n->name, strlen(n->name), v)) return tpl_nomem(r, n->line);
    return true;
}

static bool exec(tpl_render *r, tpl_scope *s, const tpl_node *n) {
    tval v;
    switch (n->kind) {
    case N_TEXT: tpl_buf_put(r->out, n->val.u.s.p, n->val.u.s.n); return true;
    case N_OUTPUT:
        if (!tpl_eval(r, s, n->a, &v)) return false;
        tv_str_append(r->out, v);
        return true;
    case N_IF:
        if (!tpl_eval(r, s, n->a, &v)) return false;
        return tpl_render_body(r, s, tv_truthy(v) ? &n->body : &n->orelse);
    case N_FOR: return exec_for(r, s, n);
    case N_SET: case N_SET_BLOCK: return exec_set(r, s, n);
    case N_MACRO: {
        tpl_macro *m = tpl_alloc(r->a, sizeof *m);
        if (!m) return tpl_nomem(r, n->line);
        m->def = n;
        m->closure = s;
        v = (tval){.k = TV_MACRO};
        v.u.m = m;
        return bind(r, n->line, s, n->name, v);
    }
    case N_BREAK: r->loop_ctl = 1; return true;
    case N_CONTINUE: r->loop_ctl = 2; return true;
    case N_FILTER_BLOCK:
        if (!capture(r, s, &n->body, n->line, &v) || !tpl_apply_filters(r, s, n->b, v, &v)) return false;
        tv_str_append(r->out, v);
        return true;
    case N_BLOCK: return tpl_render_body(r, s, &n->body);
    default: return tpl_fail(r, n->line, "internal error: expression used as a statement");
    }
}

bool tpl_render_body(tpl_render *r, tpl_scope *s, const tpl_nodes *body) {
    for (size_t i = 0; i < body->n; i++) {
        if (!exec(r, s, body->v[i])) return false;
        if (r->out->failed || r->a->failed) return tpl_nomem(r, body->v[i]->line);
        if (r->loop_ctl) return true;
    }
    return true;
}
