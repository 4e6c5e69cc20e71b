/* Template expressions -> AST, with Jinja2's grammar and precedence
   (condexpr < or < and < not < compare < +,- < ~ < *,/,//,% < ** < unary,
   and filters / tests / calls binding to the unary operand). */
#include "template/parse_internal.h"

/* ---- expressions --------------------------------------------------------- */

static tpl_node *parse_unary(parser *P, bool with_filter);
static tpl_node *parse_primary(parser *P);
static tpl_node *parse_postfix(parser *P, tpl_node *n);

/* expr, expr, ... (a tuple when there is a comma; one expr otherwise). */
tpl_node *tpl_parse_tuple(parser *P, bool condexpr) {
    int line = cur(P)->line;
    tpl_node *first = tpl_parse_expr(P, condexpr);
    if (!first || !is_op(cur(P), OP_COMMA)) return first;
    tpl_node *t = node(P, N_TUPLE, line);
    if (!t || !push(P, &t->args, first)) return NULL;
    while (is_op(cur(P), OP_COMMA)) {
        P->i++;
        const tpl_token *c = cur(P);
        if (c->k == TK_VAR_END || c->k == TK_BLOCK_END || is_op(c, OP_RPAREN) || is_op(c, OP_ASSIGN))
            break;
        tpl_node *x = tpl_parse_expr(P, condexpr);
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
            tpl_node *v = tpl_parse_expr(P, true);
            if (!k || !v || !push(P, &n->kw, v)) return false;
            const char **nk = tpl_alloc(P->a, n->kw.n * sizeof *nk);
            if (!nk) return NOMEM(P, n->line);
            if (n->kw.n > 1) memcpy(nk, n->kw_names, (n->kw.n - 1) * sizeof *nk);
            nk[n->kw.n - 1] = k;
            n->kw_names = nk;
        } else {
            if (n->kw.n) return pfail(P, cur(P)->line, "positional argument after a keyword argument");
            tpl_node *v = tpl_parse_expr(P, true);
            if (!v || !push(P, &n->args, v)) return false;
        }
        if (is_op(cur(P), OP_COMMA)) { P->i++; continue; }
        if (!is_op(cur(P), OP_RPAREN))
            return pfail(P, cur(P)->line, "expected ',' or ')' in the argument list, got %s", tok_desc(cur(P)));
    }
    P->i++;
    return true;
}

tpl_node *tpl_parse_filter(parser *P, tpl_node *obj) {
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
    if (!is_op(cur(P), OP_COLON) && !(start = tpl_parse_expr(P, true))) return NULL;
    if (!is_op(cur(P), OP_COLON)) {
        if (!expect_op(P, OP_RBRACKET, "]")) return NULL;
        tpl_node *g = node(P, N_GETITEM, line);
        if (!g) return NULL;
        g->a = obj;
        g->b = start;
        return g;
    }
    P->i++; /* : */
    if (!is_op(cur(P), OP_RBRACKET) && !is_op(cur(P), OP_COLON) && !(stop = tpl_parse_expr(P, true)))
        return NULL;
    if (is_op(cur(P), OP_COLON)) {
        P->i++;
        if (!is_op(cur(P), OP_RBRACKET) && !(step = tpl_parse_expr(P, true))) return NULL;
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
        if (is_op(c, OP_PIPE)) n = tpl_parse_filter(P, n);
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
            n = tpl_parse_tuple(P, true);
            if (!n || !expect_op(P, OP_RPAREN, ")")) return NULL;
            break;
        }
        if (t->op == OP_LBRACKET || t->op == OP_LBRACE) {
            bool dict = t->op == OP_LBRACE;
            int close = dict ? OP_RBRACE : OP_RBRACKET;
            P->i++;
            if (!(n = node(P, dict ? N_DICT : N_LIST, t->line))) return NULL;
            while (!is_op(cur(P), close)) {
                tpl_node *k = tpl_parse_expr(P, true);
                if (!k || !push(P, &n->args, k)) return NULL;
                if (dict) {
                    tpl_node *v;
                    if (!expect_op(P, OP_COLON, ":") || !(v = tpl_parse_expr(P, true)) || !push(P, &n->kw, v))
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

/* `a and b` (below `or`) and `a or b`: left-associative chains of one
   keyword over the next tighter level. */
static tpl_node *parse_bool_chain(parser *P, const char *kw, int kind, tpl_node *(*next)(parser *)) {
    tpl_node *n = next(P);
    while (n && is_name(cur(P), kw)) {
        int line = cur(P)->line;
        P->i++;
        tpl_node *b = next(P), *x = node(P, kind, line);
        if (!b || !x) return NULL;
        x->a = n;
        x->b = b;
        n = x;
    }
    return n;
}

static tpl_node *parse_and(parser *P) { return parse_bool_chain(P, "and", N_AND, parse_not); }
static tpl_node *parse_or(parser *P) { return parse_bool_chain(P, "or", N_OR, parse_and); }

/* condexpr: `a if c else b` (false inside a for's iterable, where `if`
   starts the loop filter). */
tpl_node *tpl_parse_expr(parser *P, bool condexpr) {
    if (++P->depth > TPL_MAX_DEPTH) { pfail(P, cur(P)->line, "expression nested too deeply"); return NULL; }
    tpl_node *n = parse_or(P);
    while (condexpr && n && is_name(cur(P), "if")) {
        tpl_node *c = node(P, N_COND, cur(P)->line);
        P->i++;
        if (!c || !(c->b = parse_or(P))) return NULL;
        c->a = n;
        if (is_name(cur(P), "else")) {
            P->i++;
            if (!(c->c = tpl_parse_expr(P, true))) return NULL;
        }
        n = c;
    }
    P->depth--;
    return n;
}
