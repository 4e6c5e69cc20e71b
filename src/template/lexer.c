/* Template lexer: splits the source into data and tag tokens with Jinja2's
   whitespace rules as transformers configures them (trim_blocks: the first
   newline after a block or comment tag goes; lstrip_blocks: spaces before a
   block or comment tag on its own line go; {%- / -%} strip all whitespace;
   {%+ / +%} keep it), then the expression tokens inside each tag. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "template/internal.h"

typedef struct {
    tpl_arena *a;
    const char *s;
    size_t n, i;
    int line;          /* line of s[i] */
    size_t line_pos;   /* position `line` was counted up to */
    tpl_tokens *out;
    char *err;
    size_t errcap;
} lexer;

static int line_at(lexer *L, size_t pos) {
    while (L->line_pos < pos && L->line_pos < L->n) {
        if (L->s[L->line_pos] == '\n') L->line++;
        L->line_pos++;
    }
    return L->line;
}

static bool lfail(lexer *L, int line, const char *fmt, const char *arg) {
    char msg[256];
    snprintf(msg, sizeof msg, fmt, arg ? arg : "");
    snprintf(L->err, L->errcap, "line %d: %s", line, msg);
    return false;
}

static tpl_token *emit(lexer *L, tk_kind k, int line) {
    if (L->out->n == L->out->cap) {
        size_t cap = L->out->cap ? L->out->cap * 2 : 256;
        tpl_token *nt = tpl_alloc(L->a, cap * sizeof *nt);
        if (!nt) { snprintf(L->err, L->errcap, "out of memory"); return NULL; }
        if (L->out->n) memcpy(nt, L->out->t, L->out->n * sizeof *nt);
        L->out->t = nt;
        L->out->cap = cap;
    }
    tpl_token *t = &L->out->t[L->out->n++];
    memset(t, 0, sizeof *t);
    t->k = k;
    t->line = line;
    return t;
}

/* Length of the Unicode whitespace character at s[i] (0 if none). */
static size_t space_at(const char *s, size_t n, size_t i) {
    size_t j = i;
    uint32_t cp = tpl_utf8_next(s, n, &j);
    return tpl_is_space(cp) ? j - i : 0;
}

static size_t skip_space(const char *s, size_t n, size_t i) {
    size_t k;
    while (i < n && (k = space_at(s, n, i)) > 0) i += k;
    return i;
}

/* End of the text with trailing whitespace removed (Python's rstrip()). */
static size_t rstrip_end(const char *s, size_t st, size_t end) {
    size_t e = end;
    while (e > st) {
        size_t b = e - 1;
        while (b > st && ((unsigned char)s[b] & 0xc0) == 0x80) b--;
        if (!space_at(s, end, b)) break;
        e = b;
    }
    return e;
}

/* Emits data s[st..end) after applying the strip rules of the tag that
   follows (sign '-', '+' or 0; is_var: the tag is {{). */
static bool emit_data(lexer *L, size_t st, size_t end, char sign, bool is_var, bool line_starting) {
    if (sign == '-') end = rstrip_end(L->s, st, end);
    else if (sign != '+' && !is_var) {
        size_t l_pos = end;
        while (l_pos > st && L->s[l_pos - 1] != '\n') l_pos--;
        if ((l_pos > st || line_starting) && l_pos < end && skip_space(L->s, end, l_pos) == end)
            end = l_pos;
    }
    if (end <= st) return true;
    tpl_token *t = emit(L, TK_DATA, line_at(L, st));
    if (!t) return false;
    t->p = L->s + st;
    t->n = end - st;
    return true;
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Python "unicode-escape" decoding of a string literal's body, as Jinja2
   does: \n \t \\ \' \xhh \uhhhh \Uhhhhhhhh \ooo ...; unknown escapes stay. */
static bool unescape(lexer *L, int line, const char *s, size_t n, tpl_token *t) {
    if (!memchr(s, '\\', n)) { t->p = s; t->n = n; return true; }
    tpl_buf b = {0};
    for (size_t i = 0; i < n;) {
        if (s[i] != '\\' || i + 1 >= n) { tpl_buf_putc(&b, s[i++]); continue; }
        char e = s[i + 1];
        i += 2;
        switch (e) {
        case '\n': break;
        case '\\': tpl_buf_putc(&b, '\\'); break;
        case '\'': tpl_buf_putc(&b, '\''); break;
        case '"': tpl_buf_putc(&b, '"'); break;
        case 'a': tpl_buf_putc(&b, '\a'); break;
        case 'b': tpl_buf_putc(&b, '\b'); break;
        case 'f': tpl_buf_putc(&b, '\f'); break;
        case 'n': tpl_buf_putc(&b, '\n'); break;
        case 'r': tpl_buf_putc(&b, '\r'); break;
        case 't': tpl_buf_putc(&b, '\t'); break;
        case 'v': tpl_buf_putc(&b, '\v'); break;
        case 'x': case 'u': case 'U': {
            int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int k = 0; k < digits; k++) {
                int h = i + (size_t)k < n ? hexval(s[i + k]) : -1;
                if (h < 0) {
                    tpl_buf_free(&b);
                    return lfail(L, line, "truncated \\%s escape in a string literal",
                                 e == 'x' ? "x" : e == 'u' ? "u" : "U");
                }
                cp = cp * 16 + (uint32_t)h;
            }
            i += (size_t)digits;
            if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
                tpl_buf_free(&b);
                return lfail(L, line, "invalid code point in a string literal escape%s", NULL);
            }
            tpl_utf8_put(&b, cp);
            break;
        }
        default:
            if (e >= '0' && e <= '7') {
                uint32_t cp = (uint32_t)(e - '0');
                for (int k = 0; k < 2 && i < n && s[i] >= '0' && s[i] <= '7'; k++)
                    cp = cp * 8 + (uint32_t)(s[i++] - '0');
                tpl_utf8_put(&b, cp);
            } else {
                tpl_buf_putc(&b, '\\');
                tpl_buf_putc(&b, e);
            }
        }
    }
    char *p = b.failed ? NULL : tpl_alloc(L->a, b.n + 1);
    if (!p) { tpl_buf_free(&b); snprintf(L->err, L->errcap, "out of memory"); return false; }
    if (b.n) memcpy(p, b.p, b.n);
    t->p = p;
    t->n = b.n;
    tpl_buf_free(&b);
    return true;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_name0(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

/* Digits with single underscores between them; returns the end. */
static size_t digits_end(const char *s, size_t n, size_t i) {
    while (i < n && is_digit(s[i])) {
        i++;
        if (i + 1 < n && s[i] == '_' && is_digit(s[i + 1])) i++;
    }
    return i;
}

static bool lex_number(lexer *L, int line) {
    const char *s = L->s;
    size_t st = L->i, e = digits_end(s, L->n, st);
    bool is_float = false;
    if (e + 1 < L->n && s[e] == '.' && is_digit(s[e + 1])) {
        is_float = true;
        e = digits_end(s, L->n, e + 1);
    }
    if (e < L->n && (s[e] == 'e' || s[e] == 'E')) {
        size_t k = e + 1;
        if (k < L->n && (s[k] == '+' || s[k] == '-')) k++;
        if (k < L->n && is_digit(s[k])) { is_float = true; e = digits_end(s, L->n, k); }
    }
    char tmp[128];
    size_t m = 0;
    for (size_t k = st; k < e && m < sizeof tmp - 1; k++)
        if (s[k] != '_') tmp[m++] = s[k];
    tmp[m] = 0;
    if (e - st >= sizeof tmp) return lfail(L, line, "number literal too long%s", NULL);
    tpl_token *t = emit(L, is_float ? TK_FLOAT : TK_INT, line);
    if (!t) return false;
    if (is_float) t->f = strtod(tmp, NULL);
    else {
        char *endp;
        unsigned long long v = strtoull(tmp, &endp, 10);
        if (v > INT64_MAX) return lfail(L, line, "integer literal too large%s", NULL);
        t->i = (int64_t)v;
    }
    L->i = e;
    return true;
}

static const struct { const char *s; int op; } OPS[] = {
    {"//", OP_FLOORDIV}, {"**", OP_POW}, {"==", OP_EQ}, {"!=", OP_NE}, {"<=", OP_LE},
    {">=", OP_GE}, {"+", OP_ADD}, {"-", OP_SUB}, {"*", OP_MUL}, {"/", OP_DIV},
    {"%", OP_MOD}, {"~", OP_TILDE}, {"<", OP_LT}, {">", OP_GT}, {"=", OP_ASSIGN},
    {".", OP_DOT}, {",", OP_COMMA}, {":", OP_COLON}, {"|", OP_PIPE}, {"(", OP_LPAREN},
    {")", OP_RPAREN}, {"[", OP_LBRACKET}, {"]", OP_RBRACKET}, {"{", OP_LBRACE},
    {"}", OP_RBRACE}, {";", OP_SEMICOLON},
};

/* Lexes the inside of a {{ }} or {% %} tag up to its end marker; sets
   *strip_after ('-', '+' or 0) from the end marker. */
static bool lex_tag(lexer *L, bool is_var, int open_line, char *end_sign) {
    const char *s = L->s;
    char stack[TPL_MAX_DEPTH];
    int depth = 0;
    for (;;) {
        L->i = skip_space(s, L->n, L->i);
        if (L->i >= L->n)
            return lfail(L, open_line, "tag '%s' opened here is never closed", is_var ? "{{" : "{%");
        int line = line_at(L, L->i);
        const char *c = s + L->i;
        size_t left = L->n - L->i;
        if (depth == 0) {
            char close = is_var ? '}' : '%';
            if (left >= 3 && (c[0] == '-' || (c[0] == '+' && !is_var)) && c[1] == close && c[2] == '}') {
                *end_sign = c[0];
                L->i += 3;
                break;
            }
            if (left >= 2 && c[0] == close && c[1] == '}') {
                *end_sign = 0;
                L->i += 2;
                break;
            }
        }
        if (is_digit(c[0])) {
            if (!lex_number(L, line)) return false;
            continue;
        }
        if (is_name0(c[0])) {
            size_t e = L->i + 1;
            while (e < L->n && (is_name0(s[e]) || is_digit(s[e]))) e++;
            tpl_token *t = emit(L, TK_NAME, line);
            if (!t) return false;
            t->p = c;
            t->n = e - L->i;
            L->i = e;
            continue;
        }
        if (c[0] == '\'' || c[0] == '"') {
            size_t e = L->i + 1;
            while (e < L->n && s[e] != c[0]) e += s[e] == '\\' ? 2 : 1;
            if (e >= L->n) return lfail(L, line, "unterminated string literal%s", NULL);
            tpl_token *t = emit(L, TK_STRING, line);
            if (!t || !unescape(L, line, c + 1, e - L->i - 1, t)) return false;
            L->i = e + 1;
            continue;
        }
        int op = 0;
        size_t oplen = 0;
        for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++) {
            size_t m = strlen(OPS[k].s);
            if (left >= m && !memcmp(c, OPS[k].s, m)) { op = OPS[k].op; oplen = m; break; }
        }
        if (!op) {
            char ch[8];
            snprintf(ch, sizeof ch, "%c", c[0]);
            return lfail(L, line, "unexpected character '%s' in a tag", ch);
        }
        if (op == OP_LPAREN || op == OP_LBRACKET || op == OP_LBRACE) {
            if (depth == TPL_MAX_DEPTH) return lfail(L, line, "brackets nested too deeply%s", NULL);
            stack[depth++] = op == OP_LPAREN ? ')' : op == OP_LBRACKET ? ']' : '}';
        } else if (op == OP_RPAREN || op == OP_RBRACKET || op == OP_RBRACE) {
            char ch[2] = {c[0], 0};
            if (depth == 0) return lfail(L, line, "unexpected '%s'", ch);
            if (stack[--depth] != c[0]) return lfail(L, line, "unexpected '%s' (brackets do not match)", ch);
        }
        tpl_token *t = emit(L, TK_OP, line);
        if (!t) return false;
        t->op = op;
        L->i += oplen;
    }
    return true;
}

/* After an end marker: '-' eats all whitespace; a block or comment end
   (trim_blocks) eats one newline unless it was '+'. Returns line_starting. */
static bool after_end(lexer *L, char sign, bool is_block) {
    if (sign == '-') L->i = skip_space(L->s, L->n, L->i);
    else if (sign != '+' && is_block && L->i < L->n && L->s[L->i] == '\n') L->i++;
    return L->i > 0 && L->s[L->i - 1] == '\n';
}

/* {% raw %} at L->i (just after "{%" and its sign)? Then returns the end. */
static size_t raw_begin(lexer *L) {
    size_t k = skip_space(L->s, L->n, L->i);
    if (L->n - k < 3 || memcmp(L->s + k, "raw", 3)) return 0;
    k = skip_space(L->s, L->n, k + 3);
    if (k < L->n && L->s[k] == '-') {
        if (L->n - k >= 3 && !memcmp(L->s + k + 1, "%}", 2)) return skip_space(L->s, L->n, k + 3);
        return 0;
    }
    return L->n - k >= 2 && !memcmp(L->s + k, "%}", 2) ? k + 2 : 0;
}

static bool lex_raw(lexer *L, int line) {
    for (size_t k = L->i; k + 1 < L->n; k++) {
        if (L->s[k] != '{' || L->s[k + 1] != '%') continue;
        size_t j = k + 2;
        char sign = j < L->n && (L->s[j] == '-' || L->s[j] == '+') ? L->s[j++] : 0;
        j = skip_space(L->s, L->n, j);
        if (L->n - j < 6 || memcmp(L->s + j, "endraw", 6)) continue;
        j = skip_space(L->s, L->n, j + 6);
        char esign = j < L->n && (L->s[j] == '-' || L->s[j] == '+') ? L->s[j++] : 0;
        if (L->n - j < 2 || memcmp(L->s + j, "%}", 2)) continue;
        if (!emit_data(L, L->i, k, sign, false, false)) return false;
        L->i = j + 2;
        after_end(L, esign, true);
        return true;
    }
    return lfail(L, line, "'raw' block opened here has no 'endraw'%s", NULL);
}

bool tpl_lex(tpl_arena *a, const char *src, size_t n, tpl_tokens *out, char *err, size_t errcap) {
    /* Jinja2 reads "\r\n" and "\r" as "\n" and drops one trailing newline. */
    char *s = tpl_alloc(a, n + 1);
    if (!s) { snprintf(err, errcap, "out of memory"); return false; }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (src[i] == '\r') { s[m++] = '\n'; if (i + 1 < n && src[i + 1] == '\n') i++; }
        else s[m++] = src[i];
    }
    if (m > 0 && s[m - 1] == '\n') m--;
    lexer L = {.a = a, .s = s, .n = m, .line = 1, .out = out, .err = err, .errcap = errcap};
    bool line_starting = true;
    while (L.i < L.n) {
        size_t st = L.i, k = st;
        while (k + 1 < L.n && !(s[k] == '{' && (s[k + 1] == '{' || s[k + 1] == '%' || s[k + 1] == '#'))) k++;
        if (k + 1 >= L.n) { /* no more tags */
            if (!emit_data(&L, st, L.n, '+', true, false)) return false;
            break;
        }
        char kind = s[k + 1];
        size_t after = k + 2;
        char sign = after < L.n && (s[after] == '-' || s[after] == '+') ? s[after] : 0;
        if (!emit_data(&L, st, k, sign, kind == '{', line_starting)) return false;
        int line = line_at(&L, k);
        L.i = after + (sign ? 1 : 0);
        if (kind == '#') {
            size_t e = L.i;
            while (e + 1 < L.n && !(s[e] == '#' && s[e + 1] == '}')) e++;
            if (e + 1 >= L.n) return lfail(&L, line, "comment opened here is never closed%s", NULL);
            char esign = e > L.i && (s[e - 1] == '-' || s[e - 1] == '+') ? s[e - 1] : 0;
            L.i = e + 2;
            line_starting = after_end(&L, esign, true);
            continue;
        }
        if (kind == '%') {
            size_t raw_end = raw_begin(&L);
            if (raw_end) {
                L.i = raw_end;
                if (!lex_raw(&L, line)) return false;
                line_starting = L.i > 0 && s[L.i - 1] == '\n';
                continue;
            }
        }
        if (!emit(&L, kind == '{' ? TK_VAR_BEGIN : TK_BLOCK_BEGIN, line)) return false;
        char esign = 0;
        if (!lex_tag(&L, kind == '{', line, &esign)) return false;
        if (!emit(&L, kind == '{' ? TK_VAR_END : TK_BLOCK_END, line_at(&L, L.i))) return false;
        line_starting = after_end(&L, esign, kind == '%');
    }
    return emit(&L, TK_EOF, line_at(&L, L.n)) != NULL;
}
