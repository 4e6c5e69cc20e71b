/* GBNF text -> rules: a recursive-descent parser that follows llama.cpp's
   (src/llama-grammar.cpp, parse_sequence / handle_repetitions), so a
   grammar written for llama.cpp means the same here. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "runtime/grammar.h"

#define MAX_CP 0x10FFFFu

typedef struct {
    mllm_gparsed *g;
    const char *s;      /* the text */
    size_t n, pos;
    int depth;          /* nested groups */
    mllm_status st;     /* the first error; everything after it unwinds */
    uint32_t *hash;     /* (hash_cap) rule index + 1, 0 = empty: name lookup */
    uint32_t hash_cap;
} parser;

static int fail_at(parser *P, size_t off, const char *fmt, const char *arg) {
    if (P->st != MLLM_OK) return -1;
    char where[64], what[160];
    mllm_gram_where(P->s, P->n, off, where, sizeof where);
    snprintf(what, sizeof what, fmt, arg);
    P->st = mllm_err(MLLM_ERR_INVALID_ARG, "grammar: %s: %s", where, what);
    return -1;
}
static int fail(parser *P, const char *fmt, const char *arg) { return fail_at(P, P->pos, fmt, arg); }
static int oom(parser *P) {
    if (P->st == MLLM_OK) P->st = mllm_err(MLLM_ERR_NOMEM, "grammar: out of memory");
    return -1;
}

void mllm_gram_where(const char *src, size_t len, size_t off, char *buf, size_t cap) {
    int line = 1, col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (src[i] == '\n') { line++; col = 1; }
        else if (((unsigned char)src[i] & 0xC0) != 0x80) col++; /* columns count characters */
    }
    snprintf(buf, cap, "line %d, column %d", line, col);
}

static int cur(const parser *P) { return P->pos < P->n ? (unsigned char)P->s[P->pos] : -1; }
static int at(const parser *P, size_t k) { return P->pos + k < P->n ? (unsigned char)P->s[P->pos + k] : -1; }
static bool is_word(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

/* Spaces, tabs and # comments; newlines too when newline_ok. */
static void skip_space(parser *P, bool newline_ok) {
    for (;;) {
        int c = cur(P);
        if (c == ' ' || c == '\t') P->pos++;
        else if (c == '#') { while (cur(P) != -1 && cur(P) != '\n' && cur(P) != '\r') P->pos++; }
        else if (newline_ok && (c == '\n' || c == '\r')) P->pos++;
        else return;
    }
}

/* ---- rules and elements ---------------------------------------------- */
static uint64_t name_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static int rehash(parser *P) {
    uint32_t cap = P->hash_cap ? P->hash_cap * 2 : 256;
    uint32_t *h = mllm_calloc(cap, sizeof *h);
    if (!h) return oom(P);
    for (uint32_t i = 0; i < P->g->n_rules; i++) {
        const mllm_grule *r = &P->g->rules[i];
        if (!r->name) continue; /* generated rules are never looked up */
        uint32_t k = (uint32_t)name_hash(r->name, r->name_len) & (cap - 1);
        while (h[k]) k = (k + 1) & (cap - 1);
        h[k] = i + 1;
    }
    mllm_free(P->hash);
    P->hash = h;
    P->hash_cap = cap;
    return 0;
}

/* A new rule (name NULL: a generated one); its index, or -1. */
static int64_t new_rule(parser *P, const char *name, size_t n) {
    mllm_gparsed *g = P->g;
    if (g->n_rules >= MLLM_GRAMMAR_MAX_RULES) {
        char lim[32];
        snprintf(lim, sizeof lim, "%u", MLLM_GRAMMAR_MAX_RULES);
        return fail(P, "more than MLLM_GRAMMAR_MAX_RULES (%s) rules, counting those that groups and "
                       "repetitions make", lim);
    }
    if (g->n_rules == g->cap_rules) {
        uint32_t cap = g->cap_rules ? 2 * g->cap_rules : 32;
        mllm_grule *r = mllm_realloc(g->rules, cap * sizeof *r);
        if (!r) return oom(P);
        g->rules = r;
        g->cap_rules = cap;
    }
    mllm_grule *r = &g->rules[g->n_rules];
    memset(r, 0, sizeof *r);
    if (name && !(r->name = mllm_strndup(name, n))) return oom(P);
    r->name_len = n;
    g->n_rules++;
    if (name && (2 * g->n_rules > P->hash_cap ? rehash(P) : 0)) return -1;
    if (name && P->hash_cap) {
        uint32_t k = (uint32_t)name_hash(name, n) & (P->hash_cap - 1);
        while (P->hash[k]) k = (k + 1) & (P->hash_cap - 1);
        P->hash[k] = g->n_rules;
    }
    return g->n_rules - 1;
}

static int64_t find_rule(parser *P, const char *name, size_t n) {
    if (P->hash_cap) {
        uint32_t k = (uint32_t)name_hash(name, n) & (P->hash_cap - 1);
        for (; P->hash[k]; k = (k + 1) & (P->hash_cap - 1)) {
            const mllm_grule *r = &P->g->rules[P->hash[k] - 1];
            if (r->name_len == n && !memcmp(r->name, name, n)) return P->hash[k] - 1;
        }
    }
    return new_rule(P, name, n);
}

static int push(parser *P, mllm_gvec *v, uint32_t kind, uint32_t a, uint32_t b) {
    if (P->g->n_elems >= MLLM_GRAMMAR_MAX_ELEMENTS) {
        char lim[32];
        snprintf(lim, sizeof lim, "%u", MLLM_GRAMMAR_MAX_ELEMENTS);
        return fail(P, "more than MLLM_GRAMMAR_MAX_ELEMENTS (%s) elements once repetitions are expanded", lim);
    }
    if (v->n == v->cap) {
        uint32_t cap = v->cap ? 2 * v->cap : 16;
        mllm_gelem *e = mllm_realloc(v->v, cap * sizeof *e);
        if (!e) return oom(P);
        v->v = e;
        v->cap = cap;
    }
    v->v[v->n++] = (mllm_gelem){kind, a, b};
    P->g->n_elems++;
    return 0;
}

/* Appends ranges (pairs) as one class; its first index, or -1. */
static int64_t add_ranges(parser *P, const uint32_t *r, uint32_t n) {
    mllm_gparsed *g = P->g;
    if (g->n_ranges + n > MLLM_GRAMMAR_MAX_RANGES) {
        char lim[32];
        snprintf(lim, sizeof lim, "%u", MLLM_GRAMMAR_MAX_RANGES);
        return fail(P, "more than MLLM_GRAMMAR_MAX_RANGES (%s) character ranges", lim);
    }
    if (n && g->n_ranges + n > g->cap_ranges) {
        uint32_t cap = g->cap_ranges ? g->cap_ranges : 64;
        while (cap < g->n_ranges + n) cap *= 2;
        uint32_t *nr = mllm_realloc(g->ranges, (size_t)cap * 2 * sizeof *nr);
        if (!nr) return oom(P);
        g->ranges = nr;
        g->cap_ranges = cap;
    }
    if (n) memcpy(g->ranges + 2 * (size_t)g->n_ranges, r, (size_t)n * 2 * sizeof *r);
    g->n_ranges += n;
    return g->n_ranges - n;
}

static int push_char(parser *P, mllm_gvec *v, uint32_t c) {
    uint32_t r[2] = {c, c};
    int64_t at = add_ranges(P, r, 1);
    return at < 0 ? -1 : push(P, v, MLLM_GE_CHARS, (uint32_t)at, 1);
}

/* ---- characters ------------------------------------------------------ */
static int hex_val(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One UTF-8 character of the text (strict: no overlongs, surrogates or
   values past U+10FFFF); -1 if invalid. */
static int64_t utf8_char(parser *P) {
    int c = cur(P), n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!n || P->pos + (size_t)n > P->n) return -1;
    uint32_t v = n == 1 ? (uint32_t)c : n == 2 ? (uint32_t)c & 0x1F : n == 3 ? (uint32_t)c & 0x0F : (uint32_t)c & 7;
    for (int k = 1; k < n; k++) {
        int b = at(P, (size_t)k);
        if ((b & 0xC0) != 0x80) return -1;
        v = v << 6 | (uint32_t)(b & 0x3F);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min[n] || v > MAX_CP || (v >= 0xD800 && v <= 0xDFFF)) return -1;
    P->pos += (size_t)n;
    return v;
}

/* One character of a literal or class, escapes decoded; -1 on error. */
static int64_t parse_char(parser *P) {
    int c = cur(P);
    if (c < 0) return fail(P, "unexpected end of input%s", "");
    if (c == 0) return fail(P, "NUL byte in the grammar%s", "");
    if (c != '\\') {
        int64_t v = utf8_char(P);
        return v < 0 ? fail(P, "invalid UTF-8%s", "") : v;
    }
    size_t start = P->pos;
    int e = at(P, 1);
    int nhex = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (nhex) {
        uint32_t v = 0;
        for (int k = 0; k < nhex; k++) {
            int h = hex_val(at(P, 2 + (size_t)k));
            if (h < 0) return fail_at(P, start, "expecting %s hex digits after the escape", e == 'x' ? "2" : e == 'u' ? "4" : "8");
            v = v << 4 | (uint32_t)h;
        }
        if (v > MAX_CP) return fail_at(P, start, "escape past U+10FFFF%s", "");
        /* UTF-8 text never holds a surrogate: a literal with one matches
           nothing, and generation would fail only when it got there. */
        if (v >= 0xD800 && v <= 0xDFFF)
            return fail_at(P, start, "escape of a UTF-16 surrogate (U+D800..U+DFFF): not a character%s", "");
        P->pos += 2 + (size_t)nhex;
        return v;
    }
    static const char from[] = "trn\\\"[]", to[] = "\t\r\n\\\"[]";
    const char *k = e > 0 ? strchr(from, e) : NULL;
    if (!k || !e) {
        char esc[8];
        snprintf(esc, sizeof esc, "\\%c", e > 32 && e < 127 ? e : '?');
        return fail_at(P, start, "unknown escape '%s'", esc);
    }
    P->pos += 2;
    return (unsigned char)to[k - from];
}

static int cmp_range(const void *a, const void *b) {
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* [...] with ranges and ^: sorted, merged, complemented when negated. */
static int parse_class(parser *P, mllm_gvec *v) {
    size_t start = P->pos;
    P->pos++; /* [ */
    bool neg = cur(P) == '^';
    if (neg) P->pos++;
    uint32_t *r = NULL, n = 0, cap = 0;
    int rc = 0;
    while (cur(P) != ']') {
        if (cur(P) < 0) { rc = fail_at(P, start, "unterminated character class%s", ""); break; }
        int64_t lo = parse_char(P), hi = lo;
        if (lo < 0) { rc = -1; break; }
        if (cur(P) == '-' && at(P, 1) != ']' && at(P, 1) >= 0) {
            P->pos++;
            size_t hpos = P->pos;
            if ((hi = parse_char(P)) < 0) { rc = -1; break; }
            if (hi < lo) { rc = fail_at(P, hpos, "range end before its start%s", ""); break; }
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            if (cap > MLLM_GRAMMAR_MAX_RANGES) { rc = fail(P, "character class too large%s", ""); break; }
            uint32_t *t = mllm_realloc(r, (size_t)cap * 2 * sizeof *t);
            if (!t) { rc = oom(P); break; }
            r = t;
        }
        r[2 * n] = (uint32_t)lo;
        r[2 * n + 1] = (uint32_t)hi;
        n++;
    }
    if (rc == 0) {
        P->pos++; /* ] */
        if (n) qsort(r, n, 2 * sizeof *r, cmp_range);
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (m && r[2 * i] <= r[2 * (m - 1) + 1] + 1) {
                if (r[2 * i + 1] > r[2 * (m - 1) + 1]) r[2 * (m - 1) + 1] = r[2 * i + 1];
            } else {
                r[2 * m] = r[2 * i];
                r[2 * m + 1] = r[2 * i + 1];
                m++;
            }
        }
        if (neg) { /* the complement has at most m + 1 ranges */
            uint32_t *c = mllm_malloc((size_t)(m + 1) * 2 * sizeof *c), k = 0, next = 0;
            if (!c) rc = oom(P);
            for (uint32_t i = 0; c && i < m; i++) {
                if (r[2 * i] > next) { c[2 * k] = next; c[2 * k + 1] = r[2 * i] - 1; k++; }
                next = r[2 * i + 1] + 1;
            }
            if (c && next <= MAX_CP) { c[2 * k] = next; c[2 * k + 1] = MAX_CP; k++; }
            mllm_free(r);
            r = c;
            m = k;
        }
        int64_t off = rc == 0 ? add_ranges(P, r, m) : -1;
        rc = off < 0 ? -1 : push(P, v, MLLM_GE_CHARS, (uint32_t)off, m);
    }
    mllm_free(r);
    return rc;
}

/* ---- sequences, alternatives, repetitions ----------------------------- */
static int parse_alternates(parser *P, mllm_gvec *out, bool nested);

/* x{min,max} (max < 0: unbounded) on out[last..): llama.cpp's rewrite
   S{m,n} -> S..S (m times) S'(n-m), S'(k) ::= S S'(k-1) | "" ; S{m,} ->
   S..S S', S' ::= S S' | "". */
static int repeat(parser *P, mllm_gvec *out, uint32_t last, long min, long max) {
    uint32_t len = out->n - last;
    mllm_gelem *sym = mllm_malloc((len ? len : 1) * sizeof *sym);
    if (!sym) return oom(P);
    memcpy(sym, out->v + last, len * sizeof *sym);
    int rc = 0;
    if (min == 0) {
        P->g->n_elems -= len;
        out->n = last;
    }
    for (long i = 1; i < min && rc == 0; i++)
        for (uint32_t k = 0; k < len && rc == 0; k++) rc = push(P, out, sym[k].kind, sym[k].a, sym[k].b);
    long n_opt = max < 0 ? 1 : max - min;
    int64_t prev = -1;
    for (long i = 0; i < n_opt && rc == 0; i++) {
        int64_t id = new_rule(P, NULL, 0);
        if (id < 0) { rc = -1; break; }
        mllm_gvec body = {0};
        for (uint32_t k = 0; k < len && rc == 0; k++) rc = push(P, &body, sym[k].kind, sym[k].a, sym[k].b);
        if (rc == 0 && (i > 0 || max < 0)) rc = push(P, &body, MLLM_GE_REF, (uint32_t)(max < 0 ? id : prev), 0);
        if (rc == 0) rc = push(P, &body, MLLM_GE_ALT, 0, 0);
        if (rc == 0) rc = push(P, &body, MLLM_GE_END, 0, 0);
        mllm_grule *r = &P->g->rules[id]; /* after push: new_rule may move the array, push does not */
        r->body = body;
        r->defined = 1;
        prev = id;
    }
    if (rc == 0 && n_opt > 0) rc = push(P, out, MLLM_GE_REF, (uint32_t)prev, 0);
    mllm_free(sym);
    return rc;
}

static int parse_count(parser *P, long *v) {
    if (cur(P) < '0' || cur(P) > '9') return fail(P, "expecting an integer%s", "");
    long x = 0;
    while (cur(P) >= '0' && cur(P) <= '9') {
        if (x > MLLM_GRAMMAR_MAX_REPEAT) {
            while (cur(P) >= '0' && cur(P) <= '9') P->pos++;
            break;
        }
        x = x * 10 + (cur(P) - '0');
        P->pos++;
    }
    *v = x;
    return 0;
}

static int parse_braces(parser *P, mllm_gvec *out, uint32_t last, bool nested) {
    size_t start = P->pos;
    P->pos++;
    skip_space(P, nested);
    long min, max = -1;
    if (parse_count(P, &min)) return -1;
    skip_space(P, nested);
    if (cur(P) == '}') {
        max = min;
    } else if (cur(P) == ',') {
        P->pos++;
        skip_space(P, nested);
        if (cur(P) >= '0' && cur(P) <= '9') {
            if (parse_count(P, &max)) return -1;
            skip_space(P, nested);
        }
        if (cur(P) != '}') return fail(P, "expecting '}'%s", "");
    } else {
        return fail(P, "expecting ',' or '}'%s", "");
    }
    P->pos++;
    if (min > MLLM_GRAMMAR_MAX_REPEAT || max > MLLM_GRAMMAR_MAX_REPEAT) {
        char lim[32];
        snprintf(lim, sizeof lim, "%d", MLLM_GRAMMAR_MAX_REPEAT);
        return fail_at(P, start, "repetition count over MLLM_GRAMMAR_MAX_REPEAT (%s)", lim);
    }
    if (max >= 0 && max < min) return fail_at(P, start, "repetition {m,n} with n < m%s", "");
    return repeat(P, out, last, min, max);
}

static int parse_sequence(parser *P, mllm_gvec *out, bool nested) {
    uint32_t last = out->n; /* where the last symbol starts (a literal's chars are one symbol) */
    for (;;) {
        int c = cur(P);
        uint32_t before = out->n;
        if (c == '"') {
            size_t start = P->pos++;
            while (cur(P) != '"') {
                if (cur(P) < 0) return fail_at(P, start, "unterminated literal%s", "");
                int64_t ch = parse_char(P);
                if (ch < 0 || push_char(P, out, (uint32_t)ch)) return -1;
            }
            P->pos++;
            last = before;
        } else if (c == '[') {
            if (parse_class(P, out)) return -1;
            last = before;
        } else if (is_word(c)) {
            size_t start = P->pos;
            while (is_word(cur(P))) P->pos++;
            int64_t id = find_rule(P, P->s + start, P->pos - start);
            if (id < 0) return -1;
            if (!P->g->rules[id].ref_off && !P->g->rules[id].defined) P->g->rules[id].ref_off = start + 1;
            if (push(P, out, MLLM_GE_REF, (uint32_t)id, (uint32_t)start)) return -1;
            last = before;
        } else if (c == '(') {
            size_t start = P->pos++;
            if (++P->depth > MLLM_GRAMMAR_MAX_NESTING) {
                char lim[32];
                snprintf(lim, sizeof lim, "%d", MLLM_GRAMMAR_MAX_NESTING);
                return fail_at(P, start, "groups nested deeper than MLLM_GRAMMAR_MAX_NESTING (%s)", lim);
            }
            skip_space(P, true);
            int64_t id = new_rule(P, NULL, 0);
            if (id < 0) return -1;
            mllm_gvec body = {0};
            int rc = parse_alternates(P, &body, true);
            P->g->rules[id].body = body;
            P->g->rules[id].defined = 1;
            if (rc) return -1;
            if (cur(P) != ')') return fail_at(P, start, "unclosed '('%s", "");
            P->pos++;
            P->depth--;
            if (push(P, out, MLLM_GE_REF, (uint32_t)id, (uint32_t)start)) return -1;
            last = before;
        } else if (c == '.') {
            uint32_t any[2] = {0, MAX_CP};
            int64_t off = add_ranges(P, any, 1);
            if (off < 0 || push(P, out, MLLM_GE_CHARS, (uint32_t)off, 1)) return -1;
            P->pos++;
            last = before;
        } else if (c == '*' || c == '+' || c == '?') {
            if (last == out->n) {
                char op[2] = {(char)c, 0};
                return fail(P, "expecting an item before '%s'", op);
            }
            P->pos++;
            if (repeat(P, out, last, c == '+', c == '?' ? 1 : -1)) return -1;
        } else if (c == '{') {
            if (last == out->n) return fail(P, "expecting an item before '{'%s", "");
            if (parse_braces(P, out, last, nested)) return -1;
        } else {
            return 0;
        }
        skip_space(P, nested);
    }
}

static int parse_alternates(parser *P, mllm_gvec *out, bool nested) {
    if (parse_sequence(P, out, nested)) return -1;
    while (cur(P) == '|') {
        if (push(P, out, MLLM_GE_ALT, 0, 0)) return -1;
        P->pos++;
        skip_space(P, true);
        if (parse_sequence(P, out, nested)) return -1;
    }
    return push(P, out, MLLM_GE_END, 0, 0);
}

static int parse_rule(parser *P) {
    size_t start = P->pos;
    if (!is_word(cur(P))) return fail(P, "expecting a rule name%s", "");
    while (is_word(cur(P))) P->pos++;
    int64_t id = find_rule(P, P->s + start, P->pos - start);
    if (id < 0) return -1;
    skip_space(P, false);
    if (!(cur(P) == ':' && at(P, 1) == ':' && at(P, 2) == '=')) return fail(P, "expecting '::='%s", "");
    P->pos += 3;
    skip_space(P, true);
    mllm_gvec body = {0};
    int rc = parse_alternates(P, &body, false);
    mllm_grule *r = &P->g->rules[id];
    /* A later definition replaces an earlier one, as in llama.cpp. */
    if (r->defined) P->g->n_elems -= r->body.n;
    mllm_free(r->body.v);
    r->body = body;
    r->defined = 1;
    if (rc) return -1;
    if (cur(P) == '\r') P->pos += at(P, 1) == '\n' ? 2 : 1;
    else if (cur(P) == '\n') P->pos++;
    else if (cur(P) == ')') return fail(P, "unmatched ')'%s", "");
    else if (cur(P) >= 0) return fail(P, "expecting a newline or the end of the grammar%s", "");
    skip_space(P, true);
    return 0;
}

mllm_status mllm_gram_parse(const char *text, size_t len, mllm_gparsed *g) {
    memset(g, 0, sizeof *g);
    g->src = text;
    g->src_len = len;
    if (len > MLLM_GRAMMAR_MAX_TEXT)
        return mllm_err(MLLM_ERR_INVALID_ARG, "grammar: %zu bytes, more than MLLM_GRAMMAR_MAX_TEXT (%u)", len,
                        MLLM_GRAMMAR_MAX_TEXT);
    parser P = {.g = g, .s = text, .n = len, .st = MLLM_OK};
    skip_space(&P, true);
    while (cur(&P) >= 0 && P.st == MLLM_OK)
        if (parse_rule(&P)) break;
    mllm_free(P.hash);
    return P.st;
}

void mllm_gparsed_free(mllm_gparsed *g) {
    if (!g) return;
    for (uint32_t i = 0; i < g->n_rules; i++) {
        mllm_free(g->rules[i].name);
        mllm_free(g->rules[i].body.v);
    }
    mllm_free(g->rules);
    mllm_free(g->ranges);
    memset(g, 0, sizeof *g);
}
