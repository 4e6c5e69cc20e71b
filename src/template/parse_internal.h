/* Shared by the template parser's two halves (parse_expr.c: expressions,
   parser.c: statements): the parser state and token helpers. */
#ifndef MLLM_TEMPLATE_PARSE_INTERNAL_H
#define MLLM_TEMPLATE_PARSE_INTERNAL_H
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "template/internal.h"

typedef struct {
    tpl_arena *a;
    const tpl_token *t;
    size_t n, i;
    int depth;
    int loops;                 /* enclosing for loops (break/continue legal) */
    const char *open_kw;       /* innermost open block, for error messages */
    int open_line;
    char *err;
    size_t errcap;
} parser;

static inline bool pfail(parser *P, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline bool pfail(parser *P, int line, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!P->err[0]) snprintf(P->err, P->errcap, "line %d: %s", line, msg);
    return false;
}
#define NOMEM(P, line) pfail(P, line, "out of memory")

static inline const tpl_token *cur(parser *P) { return &P->t[P->i < P->n ? P->i : P->n - 1]; }
static inline const tpl_token *peek(parser *P, size_t k) {
    return &P->t[P->i + k < P->n ? P->i + k : P->n - 1];
}
static inline bool is_op(const tpl_token *t, int op) { return t->k == TK_OP && t->op == op; }
static inline bool is_name(const tpl_token *t, const char *w) {
    return t->k == TK_NAME && t->n == strlen(w) && !memcmp(t->p, w, t->n);
}

static inline const char *tok_desc(const tpl_token *t) {
    switch (t->k) {
    case TK_DATA: return "template text";
    case TK_VAR_BEGIN: return "'{{'";
    case TK_VAR_END: return "'}}'";
    case TK_BLOCK_BEGIN: return "'{%'";
    case TK_BLOCK_END: return "'%}'";
    case TK_NAME: return "a name";
    case TK_INT: case TK_FLOAT: return "a number";
    case TK_STRING: return "a string";
    case TK_OP: return "an operator";
    case TK_EOF: return "the end of the template";
    }
    return "?";
}

static inline bool expect_op(parser *P, int op, const char *what) {
    if (!is_op(cur(P), op)) return pfail(P, cur(P)->line, "expected '%s', got %s", what, tok_desc(cur(P)));
    P->i++;
    return true;
}

static inline bool expect_end(parser *P, const char *tag) {
    if (cur(P)->k != TK_BLOCK_END)
        return pfail(P, cur(P)->line, "expected '%%}' to end the '%s' tag, got %s", tag, tok_desc(cur(P)));
    P->i++;
    return true;
}

static inline tpl_node *node(parser *P, tpl_node_kind k, int line) {
    tpl_node *n = tpl_alloc(P->a, sizeof *n);
    if (!n) { NOMEM(P, line); return NULL; }
    n->kind = k;
    n->line = line;
    return n;
}

static inline bool push(parser *P, tpl_nodes *l, tpl_node *x) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        tpl_node **nv = tpl_alloc(P->a, cap * sizeof *nv);
        if (!nv) return NOMEM(P, x ? x->line : 0);
        if (l->n) memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return true;
}

static inline const char *name_dup(parser *P, const tpl_token *t) {
    char *s = tpl_alloc(P->a, t->n + 1);
    if (!s) { NOMEM(P, t->line); return NULL; }
    memcpy(s, t->p, t->n);
    return s;
}

static inline const char *expect_name(parser *P, const char *what) {
    if (cur(P)->k != TK_NAME) {
        pfail(P, cur(P)->line, "expected %s, got %s", what, tok_desc(cur(P)));
        return NULL;
    }
    return name_dup(P, &P->t[P->i++]);
}

/* parse_expr.c */
/* expr, expr, ... (a tuple when there is a comma); condexpr: allow `a if c else b`. */
tpl_node *tpl_parse_tuple(parser *P, bool condexpr);
tpl_node *tpl_parse_expr(parser *P, bool condexpr);
/* obj|name(args) at the '|' (or the keyword of a {% filter %} tag). */
tpl_node *tpl_parse_filter(parser *P, tpl_node *obj);

#endif
