/* Template statements -> AST: if/elif/else, for (targets, loop filter,
   else), set (names, tuples, ns.attr, blocks), macro, break/continue,
   filter and generation blocks; then the unknown filter/test check. */
#include "template/parse_internal.h"

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
    if (!(n->a = tpl_parse_tuple(P, false)) || !expect_end(P, kw)) return false;
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
    if (!(n->a = tpl_parse_tuple(P, false))) return false;
    if (is_name(cur(P), "if")) {
        P->i++;
        if (!(n->b = tpl_parse_expr(P, true))) return false;
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
        return (n->a = tpl_parse_tuple(P, true)) != NULL && expect_end(P, "set");
    }
    if (n->target_tuple || n->name)
        return pfail(P, cur(P)->line, "expected '=' in the 'set' tag");
    n->kind = N_SET_BLOCK;
    while (is_op(cur(P), OP_PIPE)) { /* {% set x | filter %}: filters on the body */
        tpl_node *f = tpl_parse_filter(P, n->b);
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
            if (!(def = tpl_parse_expr(P, true))) return false;
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
        if (!(n->b = tpl_parse_filter(P, NULL))) return false;
        while (is_op(cur(P), OP_PIPE)) if (!(n->b = tpl_parse_filter(P, n->b))) return false;
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
            if (!n || !(n->a = tpl_parse_tuple(P, true))) return false;
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
