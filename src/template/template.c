/* The template API: compile once (lex + parse into an arena owned by the
   template), render many times (each render has its own arena, freed at
   the end, so a render never changes the template). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "template/internal.h"

struct mllm_template {
    tpl_arena arena;
    tpl_nodes body;
    char name[64];
};

mllm_status mllm_template_compile(const char *src, size_t len, const char *name,
                                  mllm_template **out) {
    *out = NULL;
    if (!src) return mllm_err(MLLM_ERR_INVALID_ARG, "template: no source");
    mllm_template *t = mllm_calloc(1, sizeof *t);
    if (!t) return mllm_err(MLLM_ERR_NOMEM, "template: out of memory");
    snprintf(t->name, sizeof t->name, "%s", name ? name : "chat template");
    char err[TPL_ERR_CAP] = "";
    tpl_tokens toks = {0};
    if (!tpl_lex(&t->arena, src, len, &toks, err, sizeof err) ||
        !tpl_parse(&t->arena, &toks, &t->body, err, sizeof err)) {
        mllm_status st = t->arena.failed || strstr(err, "out of memory") ? MLLM_ERR_NOMEM : MLLM_ERR_FORMAT;
        st = mllm_err(st, "%s: %s", t->name, err[0] ? err : "out of memory");
        mllm_template_free(t);
        return st;
    }
    *out = t;
    return MLLM_OK;
}

void mllm_template_free(mllm_template *t) {
    if (!t) return;
    tpl_arena_free(&t->arena);
    mllm_free(t);
}

static mllm_status parse_object(tpl_arena *a, const char *json, size_t len, const char *what,
                                const char *tname, tpl_dict **out) {
    char err[256];
    tval v;
    if (!tpl_json_parse(a, json, len, &v, err, sizeof err))
        return mllm_err(a->failed || strstr(err, "out of memory") ? MLLM_ERR_NOMEM : MLLM_ERR_INVALID_ARG,
                        "%s: %s JSON: %s", tname, what, err);
    if (v.k != TV_DICT)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: %s JSON must be an object, not %s", tname, what,
                        tv_type_name(v));
    *out = v.u.d;
    return MLLM_OK;
}

/* Applies rewrite to every string under v (in the arena); false on out of
   memory. */
static bool rewrite_value(tpl_arena *a, tval *v, mllm_template_str_fn rewrite, void *user, int depth) {
    if (depth > 512) return true; /* the JSON reader bounds nesting far below this */
    if (v->k == TV_STR) {
        char *o = NULL;
        size_t on = 0;
        int r = rewrite(user, v->u.s.p, v->u.s.n, &o, &on);
        if (r <= 0) return r == 0;
        char *p = tpl_alloc(a, on ? on : 1);
        if (p) memcpy(p, o, on);
        mllm_free(o);
        if (!p) return false;
        v->u.s.p = p;
        v->u.s.n = on;
        return true;
    }
    if (v->k == TV_LIST)
        for (size_t i = 0; i < v->u.l->n; i++)
            if (!rewrite_value(a, &v->u.l->v[i], rewrite, user, depth + 1)) return false;
    if (v->k == TV_DICT)
        for (size_t i = 0; i < v->u.d->n; i++)
            if (!rewrite_value(a, &v->u.d->keys[i], rewrite, user, depth + 1) ||
                !rewrite_value(a, &v->u.d->vals[i], rewrite, user, depth + 1))
                return false;
    return true;
}

mllm_status mllm_template_render_json(const mllm_template *t, const char *ctx_json,
                                      size_t ctx_len, const char *defaults_json, char **out,
                                      size_t *out_len) {
    return mllm_template_render_json_rewrite(t, ctx_json, ctx_len, defaults_json, NULL, NULL, out, out_len);
}

mllm_status mllm_template_render_json_rewrite(const mllm_template *t, const char *ctx_json, size_t ctx_len,
                                              const char *defaults_json, mllm_template_str_fn rewrite,
                                              void *user, char **out, size_t *out_len) {
    *out = NULL;
    if (out_len) *out_len = 0;
    if (!t || !ctx_json) return mllm_err(MLLM_ERR_INVALID_ARG, "template render: no template or context");
    if (ctx_len == SIZE_MAX) ctx_len = strlen(ctx_json);
    tpl_arena a = {0};
    tpl_buf buf = {0};
    tpl_render r = {.a = &a, .out = &buf};
    mllm_status st = MLLM_OK;
    tpl_dict *ctx = NULL, *defaults = NULL;
    tpl_scope *g = tpl_alloc(&a, sizeof *g), *cs = tpl_alloc(&a, sizeof *cs), *root = tpl_alloc(&a, sizeof *root);
    if (!g || !cs || !root || !tpl_globals_init(&r, g)) { st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", t->name); goto done; }
    if ((st = parse_object(&a, ctx_json, ctx_len, "context", t->name, &ctx)) != MLLM_OK) goto done;
    if (rewrite) {
        tval cv = {.k = TV_DICT};
        cv.u.d = ctx;
        if (!rewrite_value(&a, &cv, rewrite, user, 0)) { st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", t->name); goto done; }
    }
    if (defaults_json &&
        (st = parse_object(&a, defaults_json, strlen(defaults_json), "defaults", t->name, &defaults)) != MLLM_OK)
        goto done;
    cs->parent = g;
    cs->vars = *ctx;
    for (size_t i = 0; defaults && i < defaults->n; i++) {
        const tval *k = &defaults->keys[i];
        if (!tpl_dict_get(&cs->vars, k->u.s.p, k->u.s.n) &&
            !tpl_dict_set(&a, &cs->vars, k->u.s.p, k->u.s.n, defaults->vals[i])) {
            st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", t->name);
            goto done;
        }
    }
    root->parent = cs;
    if (!tpl_render_body(&r, root, &t->body) || buf.failed) {
        if (!r.failed) tpl_nomem(&r, 0);
        st = mllm_err(r.oom || a.failed || buf.failed ? MLLM_ERR_NOMEM : MLLM_ERR_INVALID_ARG, "%s: %s", t->name, r.err);
        goto done;
    }
    *out = mllm_strndup(buf.p ? buf.p : "", buf.n);
    if (!*out) { st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", t->name); goto done; }
    if (out_len) *out_len = buf.n;
done:
    tpl_buf_free(&buf);
    tpl_arena_free(&a);
    return st;
}

mllm_status mllm_template_render(const char *tmpl, const char *context_json, char **out,
                                 char *errbuf, size_t errcap) {
    mllm_template *t = NULL;
    *out = NULL;
    mllm_status st = tmpl ? mllm_template_compile(tmpl, strlen(tmpl), NULL, &t)
                          : mllm_err(MLLM_ERR_INVALID_ARG, "template: no source");
    if (st == MLLM_OK) st = mllm_template_render_json(t, context_json, SIZE_MAX, NULL, out, NULL);
    mllm_template_free(t);
    if (st != MLLM_OK && errbuf && errcap) snprintf(errbuf, errcap, "%s", mllm_last_error());
    return st;
}
