/* The fixed GBNF of JSON Schema's compiler: primitives after llama.cpp's
   json-schema-to-grammar (same digit and whitespace limits), the string
   formats we can promise (each date one that Python's
   date.fromisoformat accepts: February stops at 28), and integer ranges
   as digit-by-digit alternatives. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "runtime/json_schema_internal.h"

void jsg_putn(jsg_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *t = mllm_realloc(b->s, cap);
        if (!t) { b->oom = true; return; }
        b->s = t;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

void jsg_puts(jsg_buf *b, const char *s) { jsg_putn(b, s, strlen(s)); }

void jsg_printf(jsg_buf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) { jsg_putn(b, tmp, (size_t)n); return; }
    char *big = mllm_malloc((size_t)n + 1);
    if (!big) { b->oom = true; return; }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    jsg_putn(b, big, (size_t)n);
    mllm_free(big);
}

void jsg_literal(jsg_buf *b, const char *s, size_t n) {
    jsg_puts(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { char e[3] = {'\\', (char)c, 0}; jsg_puts(b, e); }
        else if (c < 0x20 || c == 0x7F) jsg_printf(b, "\\x%02X", c);
        else jsg_putn(b, (const char *)&c, 1);
    }
    jsg_puts(b, "\"");
}

typedef struct {
    unsigned bit;
    const char *name, *body;
    unsigned uses;
} prim;

static const prim PRIMS[] = {
    {JSG_WS, "ws", "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}", 0},
    {JSG_CHAR, "char",
     "[^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-cA-CeEfF] [0-9a-fA-F]{3} | \"u\" [dD] "
     "[0-7] [0-9a-fA-F]{2})",
     0},
    {JSG_STRING, "string", "\"\\\"\" char* \"\\\"\"", JSG_CHAR},
    {JSG_INTEGER, "integer", "\"-\"? ([0-9] | [1-9] [0-9]{1,15})", 0},
    {JSG_NUMBER, "number", "\"-\"? ([0-9] | [1-9] [0-9]{1,15}) (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?", 0},
    {JSG_NONNEG_NUMBER, "nonneg-number", "([0-9] | [1-9] [0-9]{1,15}) (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?", 0},
    {JSG_BOOLEAN, "boolean", "\"true\" | \"false\"", 0},
    {JSG_NULL, "null", "\"null\"", 0},
    {JSG_VALUE, "value", "object | array | string | number | boolean | null",
     JSG_OBJECT | JSG_ARRAY | JSG_STRING | JSG_NUMBER | JSG_BOOLEAN | JSG_NULL},
    {JSG_OBJECT, "object",
     "\"{\" ws ( string ws \":\" ws value ws ( \",\" ws string ws \":\" ws value ws )* )? \"}\"",
     JSG_WS | JSG_STRING | JSG_VALUE},
    {JSG_ARRAY, "array", "\"[\" ws ( value ws ( \",\" ws value ws )* )? \"]\"", JSG_WS | JSG_VALUE},
    {JSG_DATE, "date",
     "[1-9] [0-9]{3} \"-\" ( (\"0\" [13578] | \"1\" [02]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01]) | "
     "(\"0\" [469] | \"11\") \"-\" (\"0\" [1-9] | [12] [0-9] | \"30\") | \"02-\" (\"0\" [1-9] | \"1\" [0-9] | "
     "\"2\" [0-8]) )",
     0},
    {JSG_TIME, "time",
     "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,6})? (\"Z\" | [+-] ([01] [0-9] "
     "| \"2\" [0-3]) \":\" [0-5] [0-9])",
     0},
    {JSG_DATE_TIME, "date-time", "date \"T\" time", JSG_DATE | JSG_TIME},
    {JSG_UUID, "uuid",
     "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}", 0},
};
#define N_PRIMS (sizeof PRIMS / sizeof PRIMS[0])

const char *jsg_prim_name(unsigned bit, unsigned *need) {
    for (size_t i = 0; i < N_PRIMS; i++) {
        if (PRIMS[i].bit != bit) continue;
        if (!(*need & bit)) {
            *need |= bit;
            for (unsigned u = PRIMS[i].uses; u; u &= u - 1) jsg_prim_name(u & -u, need);
        }
        return PRIMS[i].name;
    }
    return "value";
}

void jsg_prim_rules(jsg_buf *b, unsigned need) {
    for (size_t i = 0; i < N_PRIMS; i++)
        if (need & PRIMS[i].bit) jsg_printf(b, "%s ::= %s\n", PRIMS[i].name, PRIMS[i].body);
}

/* ---- integer ranges --------------------------------------------------- */
static const int64_t POW10[17] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
                                  10000000000LL, 100000000000LL, 1000000000000LL, 10000000000000LL,
                                  100000000000000LL, 1000000000000000LL, 10000000000000000LL};
#define MAX_DIGITS 16

static int n_digits(int64_t v) {
    int n = 1;
    while (n < MAX_DIGITS && v >= POW10[n]) n++;
    return n;
}

/* Digit strings lo[0..n) .. hi[0..n) (same length, lo <= hi, leading
   zeros allowed) as alternatives. */
static void same_len(jsg_buf *b, const char *lo, const char *hi, int n) {
    int i = 0;
    while (i < n && lo[i] == hi[i]) i++;
    if (i > 0) {
        jsg_putn(b, "\"", 1);
        jsg_putn(b, lo, (size_t)i);
        jsg_putn(b, "\" ", 2);
    }
    if (i == n) return;
    int m = n - i - 1;
    bool lo_zeros = true, hi_nines = true;
    for (int k = i + 1; k < n; k++) {
        lo_zeros &= lo[k] == '0';
        hi_nines &= hi[k] == '9';
    }
    int a = lo[i] - '0', z = hi[i] - '0';
    int mid_a = lo_zeros ? a : a + 1, mid_z = hi_nines ? z : z - 1;
    jsg_puts(b, "(");
    bool first = true;
    if (!lo_zeros) {
        char nines[MAX_DIGITS];
        memset(nines, '9', sizeof nines);
        jsg_printf(b, "\"%c\" ", lo[i]);
        same_len(b, lo + i + 1, nines, m);
        first = false;
    }
    if (mid_a <= mid_z) {
        jsg_printf(b, "%s[%d-%d]", first ? "" : " | ", mid_a, mid_z);
        if (m > 0) jsg_printf(b, " [0-9]{%d}", m);
        first = false;
    }
    if (!hi_nines) {
        char zeros[MAX_DIGITS];
        memset(zeros, '0', sizeof zeros);
        jsg_printf(b, "%s\"%c\" ", first ? "" : " | ", hi[i]);
        same_len(b, zeros, hi + i + 1, m);
    }
    jsg_puts(b, ")");
}

/* [lo, hi], 0 <= lo <= hi, no leading zeros: one alternative per digit count. */
static void uint_range(jsg_buf *b, int64_t lo, int64_t hi) {
    jsg_puts(b, "(");
    for (int n = n_digits(lo); n <= n_digits(hi); n++) {
        int64_t a = n == 1 ? 0 : POW10[n - 1], z = POW10[n] - 1;
        if (a < lo) a = lo;
        if (z > hi) z = hi;
        char sa[24], sz[24];
        snprintf(sa, sizeof sa, "%0*lld", n, (long long)a);
        snprintf(sz, sizeof sz, "%0*lld", n, (long long)z);
        if (n > n_digits(lo)) jsg_puts(b, " | ");
        same_len(b, sa, sz, n);
    }
    jsg_puts(b, ")");
}

/* [lo, 16 digits], lo >= 0. */
static void uint_from(jsg_buf *b, int64_t lo) {
    int n = n_digits(lo);
    jsg_puts(b, "(");
    uint_range(b, lo, POW10[n] - 1);
    if (n < MAX_DIGITS) jsg_printf(b, " | [1-9] [0-9]{%d,%d}", n, MAX_DIGITS - 1);
    jsg_puts(b, ")");
}

void jsg_int_range(jsg_buf *b, bool has_lo, int64_t lo, bool has_hi, int64_t hi) {
    jsg_puts(b, "(");
    if (!has_lo && !has_hi) {
        jsg_puts(b, "\"-\"? ([0-9] | [1-9] [0-9]{1,15})");
    } else if (!has_hi) {
        if (lo >= 0) uint_from(b, lo);
        else { jsg_puts(b, "\"-\" "); uint_range(b, 1, -lo); jsg_puts(b, " | "); uint_from(b, 0); }
    } else if (!has_lo) {
        if (hi >= 0) { jsg_puts(b, "\"-\" "); uint_from(b, 1); jsg_puts(b, " | "); uint_range(b, 0, hi); }
        else { jsg_puts(b, "\"-\" "); uint_from(b, -hi); }
    } else if (lo >= 0) {
        uint_range(b, lo, hi);
    } else if (hi < 0) {
        jsg_puts(b, "\"-\" ");
        uint_range(b, -hi, -lo);
    } else {
        jsg_puts(b, "\"-\" ");
        uint_range(b, 1, -lo);
        jsg_puts(b, " | ");
        uint_range(b, 0, hi);
    }
    jsg_puts(b, ")");
}
