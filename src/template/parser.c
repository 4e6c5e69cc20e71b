/* Template parser: tokens -> AST, with Jinja2's grammar and precedence
   (condexpr < or < and < not < compare < +,- < ~ < *,/,//,% < ** < unary,
   and filters / tests / calls binding to the unary operand). */
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

static bool pfail(parser *P, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool pfail(parser *P, int line, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!P->err[0]) snprintf(P->err, P->errcap, "line %d: %s", line, msg);
    return false;
}
#define NOMEM(P, line) pfail(P, line, "out of memory")

static const tpl_token *cur(parser *P) { return &P->t[P->i < P->n ? P->i : P->n - 1]; }
static const tpl_token *peek(parser *P, size_t k) {
    return &P->t[P->i + k < P->n ? P->i + k : P->n - 1];
}
static bool is_op(const tpl_token *t, int op) { return t->k == TK_OP && t->op == op; }
static bool is_name(const tpl_token *t, const char *w) {
    return t->k == TK_NAME && t->n == strlen(w) && !memcmp(t->p, w, t->n);
}

static const char *tok_desc(const tpl_token *t) {
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

static bool expect_op(parser *P, int op, const char *what) {
    if (!is_op(cur(P), op)) return pfail(P, cur(P)->line, "expected '%s', got %s", what, tok_desc(cur(P)));
    P->i++;
    return true;
}

static bool expect_end(parser *P, const char *tag) {
    if (cur(P)->k != TK_BLOCK_END)
        return pfail(P, cur(P)->line, "expected '%%}' to end the '%s' tag, got %s", tag, tok_desc(cur(P)));
    P->i++;
    return true;
}

static tpl_node *node(parser *P, tpl_node_kind k, int line) {
    tpl_node *n = tpl_alloc(P->a, sizeof *n);
    if (!n) { NOMEM(P, line); return NULL; }
    n->kind = k;
    n->line = line;
    return n;
}

static bool push(parser *P, tpl_nodes *l, tpl_node *x) {
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

static const char *name_dup(parser *P, const tpl_token *t) {
    char *s = tpl_alloc(P->a, t->n + 1);
    if (!s) { NOMEM(P, t->line); return NULL; }
    memcpy(s, t->p, t->n);
    return s;
}

static const char *expect_name(parser *P, const char *what) {
    if (cur(P)->k != TK_NAME) {
        pfail(P, cur(P)->line, "expected %s, got %s", what, tok_desc(cur(P)));
        return NULL;
    }
    return name_dup(P, &P->t[P->i++]);
}

/* ---- expressions --------------------------------------------------------- */

static tpl_node *parse_expr(parser *P, bool condexpr);
static tpl_node *parse_unary(parser *P, bool with_filter);
static tpl_node *parse_primary(parser *P);
static tpl_node *parse_postfix(parser *P, tpl_node *n);

/* expr, expr, ... (a tuple when there is a comma; one expr otherwise). */
static tpl_node *parse_tuple(parser *P, bool condexpr) {
    int line = cur(P)->line;
    tpl_node *first = parse_expr(P, condexpr);
    if (!first || !is_op(cur(P), OP_COMMA)) return first;
    tpl_node *t = node(P, N_TUPLE, line);
    if (!t || !push(P, &t->args, first)) return NULL;
    while (is_op(cur(P), OP_COMMA)) {
        P->i++;
        const tpl_token *c = cur(P);
        if (c->k == TK_VAR_END || c->k == TK_BLOCK_END || is_op(c, OP_RPAREN) || is_op(c, OP_ASSIGN))
            break;
        tpl_node *x = parse_expr(P, condexpr);
        if (!x || !push(P, &t->args, x)) return NULL;
    }
    return t;
}

/* (args, name=value, ...) after the '(' has been seen. */
static bool parse_call_args(parser *P, tpl_node *n) {
    P->i++; /* ( */
    while (!is_op(cur(P), OP_RPAREN)) {
        if (is_op(cur(P), OP_MUL) || is_op(cur(P), OP_POW))
            return pfail(P, cur(P)->line, "*args / **kwargs in calls are not supported");
        if (cur(P)->k == TK_NAME && is_op(peek(P, 1), OP_ASSIGN)) {
            const char *k = name_dup(P, cur(P));
            P->i += 2;
            tpl_node *v = parse_expr(P, true);
            if (!k || !v || !push(P, &n->kw, v)) return false;
            const char **nk = tpl_alloc(P->a, n->kw.n * sizeof *nk);
            if (!nk) return NOMEM(P, n->line);
            if (n->kw.n > 1) memcpy(nk, n->kw_names, (n->kw.n - 1) * sizeof *nk);
            nk[n->kw.n - 1] = k;
            n->kw_names = nk;
        } else {
            if (n->kw.n) return pfail(P, cur(P)->line, "positional argument after a keyword argument");
            tpl_node *v = parse_expr(P, true);
            if (!v || !push(P, &n->args, v)) return false;
        }
        if (is_op(cur(P), OP_COMMA)) { P->i++; continue; }
        if (!is_op(cur(P), OP_RPAREN))
            return pfail(P, cur(P)->line, "expected ',' or ')' in the argument list, got %s", tok_desc(cur(P)));
    }
    P->i++;
    return true;
}

static tpl_node *parse_filter(parser *P, tpl_node *obj) {
    int line = cur(P)->line;
    P->i++; /* | */
    tpl_node *f = node(P, N_FILTER, line);
    if (!f || !(f->name = expect_name(P, "a filter name after '|'"))) return NULL;
    f->a = obj;
    if (is_op(cur(P), OP_LPAREN) && !parse_call_args(P, f)) return NULL;
    return f;
}

static tpl_node *parse_test(parser *P, tpl_node *obj) {
    int line = cur(P)->line;
    P->i++; /* is */
    tpl_node *t = node(P, N_TEST, line);
    if (!t) return NULL;
    if (is_name(cur(P), "not")) { t->op = 1; P->i++; }
    if (!(t->name = expect_name(P, "a test name after 'is'"))) return NULL;
    t->a = obj;
    const tpl_token *c = cur(P);
    if (is_op(c, OP_LPAREN)) {
        if (!parse_call_args(P, t)) return NULL;
    } else if ((c->k == TK_NAME || c->k == TK_STRING || c->k == TK_INT || c->k == TK_FLOAT ||
                is_op(c, OP_LBRACKET) || is_op(c, OP_LBRACE)) &&
               !is_name(c, "else") && !is_name(c, "or") && !is_name(c, "and")) {
        if (is_name(c, "is")) { pfail(P, c->line, "tests cannot be chained with 'is'"); return NULL; }
        tpl_node *arg = parse_primary(P);
        if (!arg || !(arg = parse_postfix(P, arg)) || !push(P, &t->args, arg)) return NULL;
    }
    return t;
}

static tpl_node *parse_subscript(parser *P, tpl_node *obj) {
    int line = cur(P)->line;
    P->i++; /* [ */
    tpl_node *start = NULL, *stop = NULL, *step = NULL;
    if (!is_op(cur(P), OP_COLON) && !(start = parse_expr(P, true))) return NULL;
    if (!is_op(cur(P), OP_COLON)) {
        if (!expect_op(P, OP_RBRACKET, "]")) return NULL;
        tpl_node *g = node(P, N_GETITEM, line);
        if (!g) return NULL;
        g->a = obj;
        g->b = start;
        return g;
    }
    P->i++; /* : */
    if (!is_op(cur(P), OP_RBRACKET) && !is_op(cur(P), OP_COLON) && !(stop = parse_expr(P, true)))
        return NULL;
    if (is_op(cur(P), OP_COLON)) {
        P->i++;
        if (!is_op(cur(P), OP_RBRACKET) && !(step = parse_expr(P, true))) return NULL;
    }
    if (!expect_op(P, OP_RBRACKET, "]")) return NULL;
    tpl_node *s = node(P, N_SLICE, line);
    if (!s) return NULL;
    s->a = obj;
    s->b = start;
    s->c = stop;
    if (step && !push(P, &s->args, step)) return NULL;
    return s;
}

static tpl_node *parse_postfix(parser *P, tpl_node *n) {
    for (;;) {
        const tpl_token *c = cur(P);
        if (is_op(c, OP_DOT)) {
            P->i++;
            tpl_node *g;
            if (cur(P)->k == TK_INT) {
                if (!(g = node(P, N_GETITEM, c->line)) || !(g->b = node(P, N_CONST, c->line))) return NULL;
                g->b->val = tv_int(cur(P)->i);
                P->i++;
            } else {
                if (!(g = node(P, N_GETATTR, c->line)) ||
                    !(g->name = expect_name(P, "an attribute name after '.'")))
                    return NULL;
            }
            g->a = n;
            n = g;
        } else if (is_op(c, OP_LBRACKET)) {
            if (!(n = parse_subscript(P, n))) return NULL;
        } else if (is_op(c, OP_LPAREN)) {
            tpl_node *call = node(P, N_CALL, c->line);
            if (!call) return NULL;
            call->a = n;
            if (!parse_call_args(P, call)) return NULL;
            n = call;
        } else return n;
    }
}

static tpl_node *parse_filter_expr(parser *P, tpl_node *n) {
    for (;;) {
        const tpl_token *c = cur(P);
        if (is_op(c, OP_PIPE)) n = parse_filter(P, n);
        else if (is_name(c, "is")) n = parse_test(P, n);
        else if (is_op(c, OP_LPAREN)) {
            tpl_node *call = node(P, N_CALL, c->line);
            if (!call) return NULL;
            call->a = n;
            if (!parse_call_args(P, call)) return NULL;
            n = call;
        } else return n;
        if (!n) return NULL;
    }
}

static tpl_node *parse_primary(parser *P) {
    const tpl_token *t = cur(P);
    tpl_node *n;
    if (++P->depth > TPL_MAX_DEPTH) { pfail(P, t->line, "expression nested too deeply"); return NULL; }
    switch (t->k) {
    case TK_NAME:
        if (!(n = node(P, N_CONST, t->line))) return NULL;
        if (is_name(t, "true") || is_name(t, "True")) n->val = tv_bool(true);
        else if (is_name(t, "false") || is_name(t, "False")) n->val = tv_bool(false);
        else if (is_name(t, "none") || is_name(t, "None")) n->val = tv_none();
        else {
            n->kind = N_NAME;
            if (!(n->name = name_dup(P, t))) return NULL;
        }
        P->i++;
        break;
    case TK_STRING: {
        if (!(n = node(P, N_CONST, t->line))) return NULL;
        size_t total = 0, k = P->i;
        for (; P->t[k].k == TK_STRING; k++) total += P->t[k].n;
        if (k == P->i + 1) n->val = tv_str(t->p, t->n);
        else { /* adjacent literals concatenate: "a" "b" */
            char *s = tpl_alloc(P->a, total + 1);
            if (!s) { NOMEM(P, t->line); return NULL; }
            size_t o = 0;
            for (size_t j = P->i; j < k; j++) { memcpy(s + o, P->t[j].p, P->t[j].n); o += P->t[j].n; }
            n->val = tv_str(s, total);
        }
        P->i = k;
        break;
    }
    case TK_INT: case TK_FLOAT:
        if (!(n = node(P, N_CONST, t->line))) return NULL;
        n->val = t->k == TK_INT ? tv_int(t->i) : tv_float(t->f);
        P->i++;
        break;
    case TK_OP:
        if (t->op == OP_LPAREN) {
            P->i++;
            if (is_op(cur(P), OP_RPAREN)) {
                P->i++;
                n = node(P, N_TUPLE, t->line);
                break;
            }
            n = parse_tuple(P, true);
            if (!n || !expect_op(P, OP_RPAREN, ")")) return NULL;
            break;
        }
        if (t->op == OP_LBRACKET || t->op == OP_LBRACE) {
            bool dict = t->op == OP_LBRACE;
            int close = dict ? OP_RBRACE : OP_RBRACKET;
            P->i++;
            if (!(n = node(P, dict ? N_DICT : N_LIST, t->line))) return NULL;
            while (!is_op(cur(P), close)) {
                tpl_node *k = parse_expr(P, true);
                if (!k || !push(P, &n->args, k)) return NULL;
                if (dict) {
                    tpl_node *v;
                    if (!expect_op(P, OP_COLON, ":") || !(v = parse_expr(P, true)) || !push(P, &n->kw, v))
                        return NULL;
                }
                if (is_op(cur(P), OP_COMMA)) { P->i++; continue; }
                if (!is_op(cur(P), close)) {
                    pfail(P, cur(P)->line, "expected ',' or '%s', got %s", dict ? "}" : "]", tok_desc(cur(P)));
                    return NULL;
                }
            }
            P->i++;
            break;
        }
        /* fallthrough */
    default:
        pfail(P, t->line, "unexpected %s in an expression", tok_desc(t));
        return NULL;
    }
    P->depth--;
    return n;
}

static tpl_node *parse_unary(parser *P, bool with_filter) {
    const tpl_token *t = cur(P);
    tpl_node *n;
    if (++P->depth > TPL_MAX_DEPTH) { pfail(P, t->line, "expression nested too deeply"); return NULL; }
    if (is_op(t, OP_SUB) || is_op(t, OP_ADD)) {
        P->i++;
        if (!(n = node(P, N_UNARY, t->line))) return NULL;
        n->op = t->op == OP_SUB ? OP_NEG : OP_POS;
        if (!(n->a = parse_unary(P, false))) return NULL;
    } else if (!(n = parse_primary(P))) return NULL;
    if (!(n = parse_postfix(P, n))) return NULL;
    if (with_filter && !(n = parse_filter_expr(P, n))) return NULL;
    P->depth--;
    return n;
}

static tpl_node *binary(parser *P, int op, int line, tpl_node *a, tpl_node *b) {
    if (!a || !b) return NULL;
    tpl_node *n = node(P, N_BINARY, line);
    if (!n) return NULL;
    n->op = op;
    n->a = a;
    n->b = b;
    return n;
}

static tpl_node *parse_pow(parser *P) {
    tpl_node *n = parse_unary(P, true);
    while (n && is_op(cur(P), OP_POW)) {
        int line = cur(P)->line;
        P->i++;
        n = binary(P, OP_POW, line, n, parse_unary(P, true));
    }
    return n;
}

static tpl_node *parse_math2(parser *P) {
    tpl_node *n = parse_pow(P);
    while (n && (is_op(cur(P), OP_MUL) || is_op(cur(P), OP_DIV) || is_op(cur(P), OP_FLOORDIV) ||
                 is_op(cur(P), OP_MOD))) {
        const tpl_token *t = &P->t[P->i++];
        n = binary(P, t->op, t->line, n, parse_pow(P));
    }
    return n;
}

static tpl_node *parse_concat(parser *P) {
    tpl_node *n = parse_math2(P);
    if (!n || !is_op(cur(P), OP_TILDE)) return n;
    tpl_node *c = node(P, N_CONCAT, n->line);
    if (!c || !push(P, &c->args, n)) return NULL;
    while (is_op(cur(P), OP_TILDE)) {
        P->i++;
        tpl_node *x = parse_math2(P);
        if (!x || !push(P, &c->args, x)) return NULL;
    }
    return c;
}

static tpl_node *parse_math1(parser *P) {
    tpl_node *n = parse_concat(P);
    while (n && (is_op(cur(P), OP_ADD) || is_op(cur(P), OP_SUB))) {
        const tpl_token *t = &P->t[P->i++];
        n = binary(P, t->op, t->line, n, parse_concat(P));
    }
    return n;
}

static tpl_node *parse_compare(parser *P) {
    int line = cur(P)->line;
    tpl_node *n = parse_math1(P);
    tpl_node *c = NULL;
    int ops[64];
    size_t nops = 0;
    while (n) {
        const tpl_token *t = cur(P);
        int op = 0;
        if (t->k == TK_OP && t->op >= OP_EQ && t->op <= OP_GE) { op = t->op; P->i++; }
        else if (is_name(t, "in")) { op = OP_IN; P->i++; }
        else if (is_name(t, "not") && is_name(peek(P, 1), "in")) { op = OP_NOT_IN; P->i += 2; }
        else break;
        if (nops == 64) { pfail(P, t->line, "comparison chain too long"); return NULL; }
        if (!c) {
            if (!(c = node(P, N_COMPARE, line)) || !push(P, &c->args, n)) return NULL;
        }
        ops[nops++] = op;
        tpl_node *x = parse_math1(P);
        if (!x || !push(P, &c->args, x)) return NULL;
    }
    if (!n || !c) return n;
    if (!(c->cmp_ops = tpl_alloc(P->a, nops * sizeof *c->cmp_ops))) { NOMEM(P, line); return NULL; }
    memcpy(c->cmp_ops, ops, nops * sizeof *ops);
    return c;
}

static tpl_node *parse_not(parser *P) {
    if (is_name(cur(P), "not")) {
        tpl_node *n = node(P, N_NOT, cur(P)->line);
        if (++P->depth > TPL_MAX_DEPTH) { pfail(P, cur(P)->line, "expression nested too deeply"); return NULL; }
        P->i++;
        if (!n || !(n->a = parse_not(P))) return NULL;
        P->depth--;
        return n;
    }
    return parse_compare(P);
}

static tpl_node *parse_and(parser *P) {
    tpl_node *n = parse_not(P);
    while (n && is_name(cur(P), "and")) {
        int line = cur(P)->line;
        P->i++;
        tpl_node *b = parse_not(P), *x = node(P, N_AND, line);
        if (!b || !x) return NULL;
        x->a = n;
        x->b = b;
        n = x;
    }
    return n;
}

static tpl_node *parse_or(parser *P) {
    tpl_node *n = parse_and(P);
    while (n && is_name(cur(P), "or")) {
        int line = cur(P)->line;
        P->i++;
        tpl_node *b = parse_and(P), *x = node(P, N_OR, line);
        if (!b || !x) return NULL;
        x->a = n;
        x->b = b;
        n = x;
    }
    return n;
}

/* condexpr: `a if c else b` (false inside a for's iterable, where `if`
   starts the loop filter). */
static tpl_node *parse_expr(parser *P, bool condexpr) {
    if (++P->depth > TPL_MAX_DEPTH) { pfail(P, cur(P)->line, "expression nested too deeply"); return NULL; }
    tpl_node *n = parse_or(P);
    while (condexpr && n && is_name(cur(P), "if")) {
        tpl_node *c = node(P, N_COND, cur(P)->line);
        P->i++;
        if (!c || !(c->b = parse_or(P))) return NULL;
        c->a = n;
        if (is_name(cur(P), "else")) {
            P->i++;
            if (!(c->c = parse_expr(P, true))) return NULL;
        }
        n = c;
    }
    P->depth--;
    return n;
}

/* ---- statements ------------------------------------------------------------ */

static bool parse_body(parser *P, tpl_nodes *out, const char *const *ends, const char *open_kw,
                       int open_line);

static bool parse_targets(parser *P, tpl_node *n, const char *what) {
    for (;;) {
        const char *name = expect_name(P, what);
        if (!name) return false;
        const char **nt = tpl_alloc(P->a, (n->n_targets + 1) * sizeof *nt);
        if (!nt) return NOMEM(P, n->line);
        if (n->n_targets) memcpy(nt, n->targets, n->n_targets * sizeof *nt);
        nt[n->n_targets++] = name;
        n->targets = nt;
        if (!is_op(cur(P), OP_COMMA)) return true;
        n->target_tuple = true;
        P->i++;
    }
}

static const char *const END_IF[] = {"elif", "else", "endif", NULL};
static const char *const END_FOR[] = {"else", "endfor", NULL};

static bool parse_if(parser *P, tpl_node *n, const char *kw) {
    if (!(n->a = parse_tuple(P, false)) || !expect_end(P, kw)) return false;
    if (!parse_body(P, &n->body, END_IF, "if", n->line)) return false;
    const tpl_token *t = &P->t[P->i + 1]; /* BLOCK_BEGIN, then the keyword */
    P->i += 2;
    if (is_name(t, "elif")) {
        tpl_node *e = node(P, N_IF, t->line);
        return e && push(P, &n->orelse, e) && parse_if(P, e, "elif");
    }
    if (is_name(t, "else")) {
        static const char *const end[] = {"endif", NULL};
        if (!expect_end(P, "else") || !parse_body(P, &n->orelse, end, "if", n->line)) return false;
        P->i += 2;
    }
    return expect_end(P, "endif");
}

static bool parse_for(parser *P, tpl_node *n) {
    if (!parse_targets(P, n, "a loop variable name")) return false;
    if (!is_name(cur(P), "in")) return pfail(P, cur(P)->line, "expected 'in' in the 'for' tag");
    P->i++;
    if (!(n->a = parse_tuple(P, false))) return false;
    if (is_name(cur(P), "if")) {
        P->i++;
        if (!(n->b = parse_expr(P, true))) return false;
    }
    if (is_name(cur(P), "recursive")) return pfail(P, cur(P)->line, "recursive loops are not supported");
    if (!expect_end(P, "for")) return false;
    P->loops++;
    bool ok = parse_body(P, &n->body, END_FOR, "for", n->line);
    P->loops--;
    if (!ok) return false;
    bool has_else = is_name(&P->t[P->i + 1], "else");
    P->i += 2;
    if (has_else) {
        static const char *const end[] = {"endfor", NULL};
        if (!expect_end(P, "else") || !parse_body(P, &n->orelse, end, "for", n->line)) return false;
        P->i += 2;
    }
    return expect_end(P, "endfor");
}

static bool parse_set(parser *P, tpl_node *n) {
    if (cur(P)->k == TK_NAME && is_op(peek(P, 1), OP_DOT)) { /* ns.attr = value */
        if (!parse_targets(P, n, "a variable name")) return false;
        P->i++;
        if (!(n->name = expect_name(P, "an attribute name"))) return false;
    } else if (!parse_targets(P, n, "a variable name")) return false;
    if (is_op(cur(P), OP_ASSIGN)) {
        P->i++;
        return (n->a = parse_tuple(P, true)) != NULL && expect_end(P, "set");
    }
    if (n->target_tuple || n->name)
        return pfail(P, cur(P)->line, "expected '=' in the 'set' tag");
    n->kind = N_SET_BLOCK;
    while (is_op(cur(P), OP_PIPE)) { /* {% set x | filter %}: filters on the body */
        tpl_node *f = parse_filter(P, n->b);
        if (!f) return false;
        n->b = f;
    }
    static const char *const end[] = {"endset", NULL};
    if (!expect_end(P, "set") || !parse_body(P, &n->body, end, "set", n->line)) return false;
    P->i += 2;
    return expect_end(P, "endset");
}

static bool parse_macro(parser *P, tpl_node *n) {
    if (!(n->name = expect_name(P, "a macro name")) || !expect_op(P, OP_LPAREN, "(")) return false;
    size_t cap = 0;
    while (!is_op(cur(P), OP_RPAREN)) {
        const char *pn = expect_name(P, "a parameter name");
        if (!pn) return false;
        tpl_node *def = NULL;
        if (is_op(cur(P), OP_ASSIGN)) {
            P->i++;
            if (!(def = parse_expr(P, true))) return false;
        } else if (n->kw.n && n->kw.v[n->kw.n - 1])
            return pfail(P, cur(P)->line, "macro parameter '%s' without a default follows one with a default", pn);
        if (n->kw.n == cap) {
            cap = cap ? cap * 2 : 4;
            const char **nn = tpl_alloc(P->a, cap * sizeof *nn);
            if (!nn) return NOMEM(P, n->line);
            if (n->kw.n) memcpy(nn, n->kw_names, n->kw.n * sizeof *nn);
            n->kw_names = nn;
        }
        n->kw_names[n->kw.n] = pn;
        if (!push(P, &n->kw, def)) return false;
        if (is_op(cur(P), OP_COMMA)) { P->i++; continue; }
        if (!is_op(cur(P), OP_RPAREN))
            return pfail(P, cur(P)->line, "expected ',' or ')' in the macro parameters");
    }
    P->i++;
    if (!expect_end(P, "macro")) return false;
    static const char *const end[] = {"endmacro", NULL};
    int loops = P->loops;
    P->loops = 0;
    bool ok = parse_body(P, &n->body, end, "macro", n->line);
    P->loops = loops;
    if (!ok) return false;
    P->i += 2;
    if (cur(P)->k == TK_NAME) P->i++; /* {% endmacro name %} */
    return expect_end(P, "endmacro");
}

static bool parse_statement(parser *P, tpl_nodes *out) {
    const tpl_token *kw = cur(P);
    int line = kw->line;
    if (kw->k != TK_NAME) return pfail(P, line, "expected a tag name after '{%%', got %s", tok_desc(kw));
    P->i++;
    tpl_node *n = node(P, N_TEXT, line);
    if (!n) return false;
    if (is_name(kw, "if")) { n->kind = N_IF; if (!parse_if(P, n, "if")) return false; }
    else if (is_name(kw, "for")) { n->kind = N_FOR; if (!parse_for(P, n)) return false; }
    else if (is_name(kw, "set")) { n->kind = N_SET; if (!parse_set(P, n)) return false; }
    else if (is_name(kw, "macro")) { n->kind = N_MACRO; if (!parse_macro(P, n)) return false; }
    else if (is_name(kw, "break") || is_name(kw, "continue")) {
        bool brk = is_name(kw, "break");
        if (!P->loops) return pfail(P, line, "'%s' outside of a for loop", brk ? "break" : "continue");
        n->kind = brk ? N_BREAK : N_CONTINUE;
        if (!expect_end(P, brk ? "break" : "continue")) return false;
    } else if (is_name(kw, "filter")) {
        n->kind = N_FILTER_BLOCK;
        P->i--; /* parse_filter skips one token (normally the '|') */
        if (!(n->b = parse_filter(P, NULL))) return false;
        while (is_op(cur(P), OP_PIPE)) if (!(n->b = parse_filter(P, n->b))) return false;
        static const char *const end[] = {"endfilter", NULL};
        if (!expect_end(P, "filter") || !parse_body(P, &n->body, end, "filter", line)) return false;
        P->i += 2;
        if (!expect_end(P, "endfilter")) return false;
    } else if (is_name(kw, "generation")) { /* transformers' assistant-mask tag: renders its body */
        n->kind = N_BLOCK;
        static const char *const end[] = {"endgeneration", NULL};
        if (!expect_end(P, "generation") || !parse_body(P, &n->body, end, "generation", line)) return false;
        P->i += 2;
        if (!expect_end(P, "endgeneration")) return false;
    } else {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(kw->n < 60 ? kw->n : 60), kw->p);
        static const char *const known[] = {"call", "include", "import", "from", "extends", "block",
                                            "with", "autoescape", "do", "trans", NULL};
        for (int k = 0; known[k]; k++)
            if (!strcmp(name, known[k])) return pfail(P, line, "the '%s' tag is not supported", name);
        if (P->open_kw && (!strncmp(name, "end", 3) || !strcmp(name, "elif") || !strcmp(name, "else")))
            return pfail(P, line, "unexpected '%s': the innermost open block is '%s' (line %d)", name,
                         P->open_kw, P->open_line);
        return pfail(P, line, "unknown tag '%s'", name);
    }
    return push(P, out, n);
}

/* Statements until a {% name %} with name in `ends` (left unconsumed: the
   caller reads it at P->i + 1) or the end of the template (ends == NULL). */
static bool parse_body(parser *P, tpl_nodes *out, const char *const *ends, const char *open_kw,
                       int open_line) {
    const char *save_kw = P->open_kw;
    int save_line = P->open_line;
    P->open_kw = open_kw;
    P->open_line = open_line;
    if (++P->depth > TPL_MAX_DEPTH) return pfail(P, cur(P)->line, "blocks nested too deeply");
    for (;;) {
        const tpl_token *t = cur(P);
        if (t->k == TK_EOF) {
            if (!ends) break;
            char want[128] = "";
            for (int k = 0; ends[k]; k++)
                snprintf(want + strlen(want), sizeof want - strlen(want), "%s'%s'", k ? " or " : "", ends[k]);
            return pfail(P, open_line, "'%s' block opened here is never closed (expected %s)", open_kw, want);
        }
        if (t->k == TK_DATA) {
            tpl_node *n = node(P, N_TEXT, t->line);
            if (!n) return false;
            n->val = tv_str(t->p, t->n);
            if (!push(P, out, n)) return false;
            P->i++;
        } else if (t->k == TK_VAR_BEGIN) {
            P->i++;
            tpl_node *n = node(P, N_OUTPUT, t->line);
            if (!n || !(n->a = parse_tuple(P, true))) return false;
            if (cur(P)->k != TK_VAR_END)
                return pfail(P, cur(P)->line, "expected '}}', got %s", tok_desc(cur(P)));
            P->i++;
            if (!push(P, out, n)) return false;
        } else if (t->k == TK_BLOCK_BEGIN) {
            const tpl_token *kw = peek(P, 1);
            for (int k = 0; ends && ends[k]; k++)
                if (is_name(kw, ends[k])) goto done;
            P->i++;
            if (!parse_statement(P, out)) return false;
        } else return pfail(P, t->line, "unexpected %s", tok_desc(t));
    }
done:
    P->depth--;
    P->open_kw = save_kw;
    P->open_line = save_line;
    return true;
}

/* Unknown filters and tests are compile errors, except inside an if or a
   conditional expression (Jinja2's "soft" frames), where they fail only if
   reached at render time; a for or macro body is a new, hard frame. */
static bool check_names(parser *P, const tpl_node *n, bool soft);

static bool check_list(parser *P, const tpl_nodes *l, bool soft) {
    for (size_t i = 0; i < l->n; i++)
        if (!check_names(P, l->v[i], soft)) return false;
    return true;
}

static bool check_names(parser *P, const tpl_node *n, bool soft) {
    if (!n) return true;
    if (!soft && n->kind == N_FILTER && !tpl_filter_find(n->name))
        return pfail(P, n->line, "unknown filter '%s'", n->name);
    if (!soft && n->kind == N_TEST && !tpl_test_find(n->name))
        return pfail(P, n->line, "unknown test '%s'", n->name);
    bool inner = soft || n->kind == N_IF || n->kind == N_COND;
    bool body_soft = (n->kind == N_FOR || n->kind == N_MACRO) ? false : inner;
    return check_names(P, n->a, n->kind == N_FOR ? soft : inner) &&
           check_names(P, n->b, n->kind == N_FOR ? false : inner) && check_names(P, n->c, inner) &&
           check_list(P, &n->args, inner) && check_list(P, &n->kw, n->kind == N_MACRO ? soft : inner) &&
           check_list(P, &n->body, body_soft) && check_list(P, &n->orelse, n->kind == N_FOR ? soft : inner);
}

bool tpl_parse(tpl_arena *a, const tpl_tokens *toks, tpl_nodes *out, char *err, size_t errcap) {
    parser P = {.a = a, .t = toks->t, .n = toks->n, .err = err, .errcap = errcap};
    err[0] = 0;
    return parse_body(&P, out, NULL, NULL, 0) && check_list(&P, out, false);
}
