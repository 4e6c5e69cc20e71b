/* GBNF grammars as llama.cpp writes them (grammars/README.md there):

       root  ::= "{" ws pair ("," ws pair)* "}"
       pair  ::= [a-z]+ ":" ws [0-9]{1,3}   # a comment
       ws    ::= [ \t\n]*

   Rules of alternatives (|) of sequences; "literals", [character classes]
   with ranges and ^negation, . (any character), (groups), the repetitions
   * + ? {m} {m,} {m,n}; escapes \xHH \uHHHH \UHHHHHHHH \t \r \n \\ \" \[ \].
   A rule continues on the next line only after | or inside parentheses,
   as in llama.cpp. A later definition of a name replaces the earlier one.

   grammar_parse.c reads the text into rules; grammar_build.c checks them
   (undefined names, no root, left recursion), drops the alternatives that
   can never finish and flattens what is left into an mllm_gram, which is
   immutable and may be shared by any number of matchers and threads. */
#ifndef MLLM_RUNTIME_GRAMMAR_H
#define MLLM_RUNTIME_GRAMMAR_H
#include <mllm/mllm.h>
#include <stddef.h>
#include <stdint.h>

/* Hard limits: a grammar past one fails to compile with a message that
   names it (grammars come from HTTP clients). */
#define MLLM_GRAMMAR_MAX_TEXT (1u << 20)      /* bytes of GBNF text */
#define MLLM_GRAMMAR_MAX_RULES (1u << 16)     /* rules, the generated ones included */
#define MLLM_GRAMMAR_MAX_ELEMENTS (1u << 20)  /* elements after repetitions are expanded */
#define MLLM_GRAMMAR_MAX_NESTING 64           /* depth of nested ( ) groups */
#define MLLM_GRAMMAR_MAX_REPEAT 4096          /* m and n of x{m,n} */
#define MLLM_GRAMMAR_MAX_RANGES (1u << 20)    /* character ranges of all classes */

typedef enum {
    MLLM_GE_END = 0, /* end of the rule's last alternative */
    MLLM_GE_ALT,     /* end of an alternative; the next one follows */
    MLLM_GE_REF,     /* a = rule index */
    MLLM_GE_CHARS,   /* one code point out of ranges[a .. a + b) */
} mllm_gelem_kind;

typedef struct {
    uint32_t kind;
    uint32_t a, b;
} mllm_gelem;

typedef struct {
    mllm_gelem *elems;     /* (n_elems) every rule's alternatives, each rule ended by END */
    uint32_t n_elems;
    uint32_t *rule_start;  /* (n_rules) index of each rule's first element */
    uint32_t n_rules;
    uint32_t *ranges;      /* (n_ranges, 2) inclusive [lo, hi] code points; sorted, disjoint within a class */
    uint32_t n_ranges;
    uint32_t *alt_off;     /* (n_rules + 1) rule r's alternatives are alt_pos[alt_off[r] .. alt_off[r + 1]) */
    uint32_t *alt_pos;     /* the first element of every alternative */
    uint32_t root;
} mllm_gram;

/* ---- the parser's output (grammar_parse.c -> grammar_build.c) -------- */
typedef struct {
    mllm_gelem *v;
    uint32_t n, cap;
} mllm_gvec;

typedef struct {
    char *name;
    size_t name_len;
    mllm_gvec body;    /* alternatives split by ALT, ended by END; REF's b = source offset */
    int defined;
    size_t ref_off;    /* where it was first referenced (for "undefined rule") */
} mllm_grule;

typedef struct {
    const char *src;   /* the text, for line:column in messages */
    size_t src_len;
    mllm_grule *rules; /* (n_rules) */
    uint32_t n_rules, cap_rules;
    uint32_t *ranges;  /* (n_ranges, 2) */
    uint32_t n_ranges, cap_ranges;
    size_t n_elems;    /* over all rules, against MLLM_GRAMMAR_MAX_ELEMENTS */
} mllm_gparsed;

/* Parses GBNF text (len bytes, UTF-8) and builds the grammar rooted at
   rule `root` (NULL: "root"). MLLM_ERR_INVALID_ARG with mllm_last_error()
   = "grammar: line L, column C: what" for a bad grammar or a limit. */
mllm_status mllm_gram_compile(const char *text, size_t len, const char *root, mllm_gram **out);
void mllm_gram_free(mllm_gram *g);

/* grammar_parse.c: text -> rules (p zeroed by the caller; freed with
   mllm_gparsed_free, also after an error). */
mllm_status mllm_gram_parse(const char *text, size_t len, mllm_gparsed *p);
void mllm_gparsed_free(mllm_gparsed *p);
/* grammar_build.c: checks the rules and flattens them. */
mllm_status mllm_gram_build(const mllm_gparsed *p, const char *root, mllm_gram **out);
/* "line L, column C" of byte offset off of the source, into buf. */
void mllm_gram_where(const char *src, size_t len, size_t off, char *buf, size_t cap);

/* Whether code point c is in the class of a CHARS element. */
static inline int mllm_gram_chars_match(const mllm_gram *g, const mllm_gelem *e, uint32_t c) {
    const uint32_t *r = g->ranges + 2 * (size_t)e->a;
    uint32_t lo = 0, hi = e->b;
    while (lo < hi) { /* the first range whose upper end is >= c */
        uint32_t mid = (lo + hi) / 2;
        if (r[2 * mid + 1] < c) lo = mid + 1;
        else hi = mid;
    }
    return lo < e->b && r[2 * lo] <= c;
}

#endif
