/* Parsed rules -> mllm_gram: every referenced rule defined, a root, no
   left recursion (the matcher would loop), and only alternatives that can
   finish (a rule that must recurse forever would trap the generation). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "runtime/grammar.h"

typedef struct {
    const mllm_gparsed *p;
    uint32_t n_alts;
    uint32_t *alt_rule;   /* (n_alts) the rule of each alternative */
    uint32_t *alt_start;  /* (n_alts) its first element in the rule's body */
    uint32_t *alt_len;    /* (n_alts) its element count (ALT/END excluded) */
} alts;

static mllm_status index_alts(const mllm_gparsed *p, alts *A) {
    memset(A, 0, sizeof *A);
    A->p = p;
    size_t n = 0;
    for (uint32_t r = 0; r < p->n_rules; r++)
        for (uint32_t i = 0; i < p->rules[r].body.n; i++)
            n += p->rules[r].body.v[i].kind == MLLM_GE_ALT || p->rules[r].body.v[i].kind == MLLM_GE_END;
    A->alt_rule = mllm_malloc((n ? n : 1) * sizeof(uint32_t));
    A->alt_start = mllm_malloc((n ? n : 1) * sizeof(uint32_t));
    A->alt_len = mllm_malloc((n ? n : 1) * sizeof(uint32_t));
    if (!A->alt_rule || !A->alt_start || !A->alt_len) return mllm_err(MLLM_ERR_NOMEM, "grammar: out of memory");
    for (uint32_t r = 0; r < p->n_rules; r++) {
        uint32_t s = 0;
        const mllm_gvec *b = &p->rules[r].body;
        for (uint32_t i = 0; i < b->n; i++) {
            if (b->v[i].kind != MLLM_GE_ALT && b->v[i].kind != MLLM_GE_END) continue;
            A->alt_rule[A->n_alts] = r;
            A->alt_start[A->n_alts] = s;
            A->alt_len[A->n_alts++] = i - s;
            s = i + 1;
        }
    }
    return MLLM_OK;
}

static void free_alts(alts *A) {
    mllm_free(A->alt_rule);
    mllm_free(A->alt_start);
    mllm_free(A->alt_len);
}

/* The least fixpoint "rule r holds if one of its alternatives has every
   element holding", where a CHARS element holds iff chars_hold (and has a
   non-empty class) and a REF holds iff its rule does. Worklist over the
   references, so a long chain costs linear time (hostile grammars). */
static mllm_status fixpoint(const alts *A, bool chars_hold, const bool *alt_ok, bool *out) {
    const mllm_gparsed *p = A->p;
    uint32_t nr = p->n_rules, na = A->n_alts;
    uint32_t *need = mllm_calloc(na ? na : 1, sizeof *need);       /* elements not yet holding */
    uint32_t *uses = mllm_calloc((size_t)nr + 1, sizeof *uses);    /* CSR: alternatives that reference each rule */
    uint32_t *queue = mllm_malloc((nr ? nr : 1) * sizeof *queue);
    size_t n_refs = 0;
    for (uint32_t a = 0; a < na; a++) n_refs += A->alt_len[a];
    uint32_t *user = mllm_malloc((n_refs ? n_refs : 1) * sizeof *user);
    mllm_status st = MLLM_OK;
    if (!need || !uses || !queue || !user) { st = mllm_err(MLLM_ERR_NOMEM, "grammar: out of memory"); goto done; }
    memset(out, 0, nr * sizeof *out);
    for (uint32_t a = 0; a < na; a++) {
        const mllm_gelem *e = p->rules[A->alt_rule[a]].body.v + A->alt_start[a];
        for (uint32_t i = 0; i < A->alt_len[a]; i++)
            if (e[i].kind == MLLM_GE_REF) uses[e[i].a + 1]++;
    }
    for (uint32_t r = 0; r < nr; r++) uses[r + 1] += uses[r];
    uint32_t *fill = mllm_malloc((nr ? nr : 1) * sizeof *fill);
    if (!fill) { st = mllm_err(MLLM_ERR_NOMEM, "grammar: out of memory"); goto done; }
    memcpy(fill, uses, nr * sizeof *fill);
    uint32_t qn = 0;
    for (uint32_t a = 0; a < na; a++) {
        const mllm_gelem *e = p->rules[A->alt_rule[a]].body.v + A->alt_start[a];
        bool dead = alt_ok && !alt_ok[a];
        for (uint32_t i = 0; i < A->alt_len[a]; i++) {
            if (e[i].kind == MLLM_GE_REF) { need[a]++; user[fill[e[i].a]++] = a; }
            else if (!chars_hold || e[i].b == 0) dead = true;
        }
        if (dead) need[a] = UINT32_MAX;
        else if (need[a] == 0 && !out[A->alt_rule[a]]) { out[A->alt_rule[a]] = true; queue[qn++] = A->alt_rule[a]; }
    }
    mllm_free(fill);
    for (uint32_t q = 0; q < qn; q++) {
        uint32_t r = queue[q];
        for (uint32_t k = uses[r]; k < uses[r + 1]; k++) {
            uint32_t a = user[k];
            if (need[a] == UINT32_MAX || --need[a] != 0) continue;
            uint32_t owner = A->alt_rule[a];
            if (!out[owner]) { out[owner] = true; queue[qn++] = owner; }
        }
    }
done:
    mllm_free(need);
    mllm_free(uses);
    mllm_free(queue);
    mllm_free(user);
    return st;
}

static const char *rule_label(const mllm_gparsed *p, uint32_t r, char *buf, size_t cap) {
    if (p->rules[r].name) snprintf(buf, cap, "'%.*s'", (int)(p->rules[r].name_len > 60 ? 60 : p->rules[r].name_len), p->rules[r].name);
    else snprintf(buf, cap, "a group or repetition");
    return buf;
}

/* Left recursion: rule A reaches itself through leftmost references whose
   preceding elements can all be empty. Iterative DFS (deep chains). */
static mllm_status check_left_recursion(const alts *A, const bool *alive, const bool *nullable) {
    const mllm_gparsed *p = A->p;
    uint32_t nr = p->n_rules;
    uint8_t *color = mllm_calloc(nr ? nr : 1, 1); /* 0 new, 1 on the path, 2 done */
    uint32_t *first = mllm_malloc(((size_t)nr + 1) * sizeof *first);
    uint32_t *stack = mllm_malloc((nr ? nr : 1) * sizeof *stack), *iter = mllm_malloc((nr ? nr : 1) * sizeof *iter);
    uint32_t *epos = mllm_malloc((nr ? nr : 1) * sizeof *epos);
    mllm_status st = MLLM_OK;
    if (!color || !first || !stack || !iter || !epos) { st = mllm_err(MLLM_ERR_NOMEM, "grammar: out of memory"); goto done; }
    /* The alternatives of each rule are contiguous in A (indexed rule by rule). */
    for (uint32_t r = 0, a = 0; r <= nr; r++) {
        while (a < A->n_alts && A->alt_rule[a] < r) a++;
        first[r] = a;
    }
    /* Each frame walks its rule's live alternatives: alternative alt[], element pos[]. */
    for (uint32_t start = 0; start < nr && st == MLLM_OK; start++) {
        if (color[start]) continue;
        uint32_t sp = 0;
        stack[sp] = start;
        iter[sp] = first[start];
        epos[sp++] = 0;
        color[start] = 1;
        while (sp && st == MLLM_OK) {
            uint32_t r = stack[sp - 1], next = UINT32_MAX;
            while (next == UINT32_MAX && iter[sp - 1] < first[r + 1]) {
                uint32_t a = iter[sp - 1], i = epos[sp - 1];
                const mllm_gelem *e = p->rules[r].body.v + A->alt_start[a];
                if (!alive[a] || i >= A->alt_len[a] || e[i].kind != MLLM_GE_REF) {
                    iter[sp - 1]++;
                    epos[sp - 1] = 0;
                    continue;
                }
                next = e[i].a;
                if (nullable[next]) epos[sp - 1]++;
                else { iter[sp - 1]++; epos[sp - 1] = 0; }
            }
            if (next == UINT32_MAX) { color[r] = 2; sp--; continue; }
            if (color[next] == 1) {
                char a[80], b[80];
                st = mllm_err(MLLM_ERR_INVALID_ARG,
                              "grammar: rule %s is left-recursive (it can reach itself, through %s, before "
                              "matching any character), which is not supported",
                              rule_label(p, next, a, sizeof a), rule_label(p, r, b, sizeof b));
            } else if (color[next] == 0) {
                color[next] = 1;
                stack[sp] = next;
                iter[sp] = first[next];
                epos[sp++] = 0;
            }
        }
    }
done:
    mllm_free(color);
    mllm_free(first);
    mllm_free(stack);
    mllm_free(iter);
    mllm_free(epos);
    return st;
}

mllm_status mllm_gram_build(const mllm_gparsed *p, const char *root_name, mllm_gram **out) {
    *out = NULL;
    if (!root_name) root_name = "root";
    for (uint32_t r = 0; r < p->n_rules; r++) {
        if (p->rules[r].defined) continue;
        char where[64];
        mllm_gram_where(p->src, p->src_len, p->rules[r].ref_off ? p->rules[r].ref_off - 1 : 0, where, sizeof where);
        return mllm_err(MLLM_ERR_INVALID_ARG, "grammar: %s: undefined rule '%.*s'", where,
                        (int)(p->rules[r].name_len > 60 ? 60 : p->rules[r].name_len), p->rules[r].name);
    }
    uint32_t root = UINT32_MAX;
    for (uint32_t r = 0; r < p->n_rules; r++)
        if (p->rules[r].name && p->rules[r].name_len == strlen(root_name) &&
            !memcmp(p->rules[r].name, root_name, p->rules[r].name_len))
            root = r;
    if (root == UINT32_MAX) return mllm_err(MLLM_ERR_INVALID_ARG, "grammar: no '%.60s' rule", root_name);

    alts A;
    bool *productive = mllm_malloc(p->n_rules * sizeof *productive);
    bool *nullable = mllm_malloc(p->n_rules * sizeof *nullable);
    mllm_status st = index_alts(p, &A);
    bool *alive = mllm_malloc((A.n_alts ? A.n_alts : 1) * sizeof *alive);
    mllm_gram *g = mllm_calloc(1, sizeof *g);
    if (st == MLLM_OK && (!productive || !nullable || !alive || !g)) st = mllm_err(MLLM_ERR_NOMEM, "grammar: out of memory");
    if (st == MLLM_OK) st = fixpoint(&A, true, NULL, productive);
    if (st == MLLM_OK && !productive[root])
        st = mllm_err(MLLM_ERR_INVALID_ARG, "grammar: rule '%.60s' matches no finite text (every alternative "
                                            "recurses forever or needs an empty character class)", root_name);
    /* Alive: every element can finish. Only those are kept. */
    for (uint32_t a = 0; st == MLLM_OK && a < A.n_alts; a++) {
        const mllm_gelem *e = p->rules[A.alt_rule[a]].body.v + A.alt_start[a];
        alive[a] = true;
        for (uint32_t i = 0; i < A.alt_len[a]; i++)
            if ((e[i].kind == MLLM_GE_REF && !productive[e[i].a]) || (e[i].kind == MLLM_GE_CHARS && e[i].b == 0))
                alive[a] = false;
    }
    if (st == MLLM_OK) st = fixpoint(&A, false, alive, nullable);
    if (st == MLLM_OK) st = check_left_recursion(&A, alive, nullable);
    size_t n_elems = 0, n_live = 0;
    for (uint32_t a = 0; st == MLLM_OK && a < A.n_alts; a++) {
        n_elems += alive[a] ? A.alt_len[a] + 1 : 0;
        n_live += alive[a];
    }
    n_elems += p->n_rules; /* a rule with no live alternative is a lone END */
    if (st == MLLM_OK) {
        g->elems = mllm_malloc(n_elems * sizeof *g->elems);
        g->rule_start = mllm_malloc((p->n_rules ? p->n_rules : 1) * sizeof *g->rule_start);
        g->ranges = mllm_malloc((p->n_ranges ? p->n_ranges : 1) * 2 * sizeof *g->ranges);
        g->alt_off = mllm_malloc(((size_t)p->n_rules + 1) * sizeof *g->alt_off);
        g->alt_pos = mllm_malloc((n_live ? n_live : 1) * sizeof *g->alt_pos);
        if (!g->elems || !g->rule_start || !g->ranges || !g->alt_off || !g->alt_pos) st = mllm_err(MLLM_ERR_NOMEM, "grammar: out of memory");
    }
    if (st == MLLM_OK) {
        if (p->n_ranges) memcpy(g->ranges, p->ranges, (size_t)p->n_ranges * 2 * sizeof *g->ranges);
        g->n_ranges = p->n_ranges;
        g->n_rules = p->n_rules;
        g->root = root;
        uint32_t n = 0, a = 0, k = 0;
        for (uint32_t r = 0; r < p->n_rules; r++) {
            g->rule_start[r] = n;
            g->alt_off[r] = k;
            uint32_t first = n;
            for (; a < A.n_alts && A.alt_rule[a] == r; a++) {
                if (!alive[a]) continue;
                if (n > first) g->elems[n - 1].kind = MLLM_GE_ALT;
                g->alt_pos[k++] = n;
                const mllm_gelem *e = p->rules[r].body.v + A.alt_start[a];
                for (uint32_t i = 0; i < A.alt_len[a]; i++) g->elems[n++] = e[i];
                g->elems[n++] = (mllm_gelem){MLLM_GE_END, 0, 0};
            }
            if (n == first) g->elems[n++] = (mllm_gelem){MLLM_GE_END, 0, 0};
        }
        g->n_elems = n;
        g->alt_off[p->n_rules] = k;
        for (uint32_t i = 0; i < n; i++)
            if (g->elems[i].kind == MLLM_GE_REF) g->elems[i].b = 0;
    }
    free_alts(&A);
    mllm_free(productive);
    mllm_free(nullable);
    mllm_free(alive);
    if (st != MLLM_OK) {
        mllm_gram_free(g);
        return st;
    }
    *out = g;
    return MLLM_OK;
}

void mllm_gram_free(mllm_gram *g) {
    if (!g) return;
    mllm_free(g->elems);
    mllm_free(g->rule_start);
    mllm_free(g->ranges);
    mllm_free(g->alt_off);
    mllm_free(g->alt_pos);
    mllm_free(g);
}

mllm_status mllm_gram_compile(const char *text, size_t len, const char *root, mllm_gram **out) {
    *out = NULL;
    mllm_gparsed p;
    mllm_status st = mllm_gram_parse(text, len, &p);
    if (st == MLLM_OK) st = mllm_gram_build(&p, root, out);
    mllm_gparsed_free(&p);
    return st;
}
