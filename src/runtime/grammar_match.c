/* The matcher's stacks live in one node array: a node is (position of a
   character class or of a rule reference's continuation, parent node).
   Parents are always older than their children, so after each accepted
   token the live nodes are compacted in place (mark, then slide down). A
   mask walk appends the nodes of each trie depth and drops them when it
   backs up: a stack discipline over the same array. */
#include "runtime/grammar_match.h"
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"

#define NONE UINT32_MAX
#define ACCEPT (UINT32_MAX - 1) /* a top meaning "every rule finished": the text may end here */

typedef struct {
    uint32_t pos, parent;
} gnode;

/* A matcher state: its tops, and the UTF-8 character in progress. */
typedef struct {
    uint32_t off, n;        /* tops = m->tops[off .. off + n) */
    uint32_t val;           /* bits of the partial code point so far */
    uint8_t need;           /* continuation bytes still to come; 0: none in progress */
    uint8_t len, lead, got; /* its length, first byte and bytes so far */
    uint32_t nodes_end, tops_end; /* buffer lengths once this state was made (mask walk) */
} frame;

struct mllm_gmatch {
    const mllm_gram *g;
    gnode *nodes;       /* (cap_nodes) [0, n_nodes) in use */
    uint32_t n_nodes, cap_nodes;
    uint32_t *tops;     /* (cap_tops) [0, n_tops) in use: the state's, then a walk's */
    uint32_t n_tops, cap_tops;
    frame cur;          /* the state: its tops are tops[0 .. cur.n) */
    uint32_t *work;     /* (cap_work, 2) expansion worklist: (position, continuation) */
    uint32_t cap_work;
    uint32_t *remap;    /* (cap_remap) compaction: new index of each live node */
    uint32_t cap_remap;
    frame *frames;      /* (cap_frames) mask walk: the state at each trie depth */
    uint32_t cap_frames;
    uint32_t (*sorted)[3]; /* (cap_sorted) dedup of many tops: (position, parent, top) */
    uint32_t cap_sorted;
    uint32_t char_steps;   /* expansion steps for the current character */
    uint64_t mask_work;    /* steps and comparisons of the current mask walk */
};

static int limit(const char *what, unsigned n) {
    mllm_err(MLLM_ERR_UNSUPPORTED, "grammar: more than %s (%u) %s; the grammar is too ambiguous to follow",
             what, n, strcmp(what, "MLLM_GRAMMAR_MAX_STACKS") == 0 ? "parses alive at once"
                      : strcmp(what, "MLLM_GRAMMAR_MAX_EXPAND") == 0 ? "expansion steps for one character"
                      : strcmp(what, "MLLM_GRAMMAR_MAX_MASK_WORK") == 0 ? "steps for one token mask"
                                                                        : "stack nodes");
    return -1;
}

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return 0;
    uint32_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = mllm_realloc(*p, (size_t)c * elem);
    if (!q) {
        mllm_err(MLLM_ERR_NOMEM, "grammar: out of memory");
        return -1;
    }
    *p = q;
    *cap = c;
    return 0;
}

static int64_t new_node(mllm_gmatch *m, uint32_t pos, uint32_t parent) {
    if (m->n_nodes >= MLLM_GRAMMAR_MAX_NODES) return limit("MLLM_GRAMMAR_MAX_NODES", MLLM_GRAMMAR_MAX_NODES);
    if (grow((void **)&m->nodes, &m->cap_nodes, m->n_nodes + 1, sizeof *m->nodes)) return -1;
    m->nodes[m->n_nodes] = (gnode){pos, parent};
    return m->n_nodes++;
}

static int push_top(mllm_gmatch *m, const frame *f, uint32_t t) {
    if (m->n_tops - f->off >= MLLM_GRAMMAR_MAX_STACKS) return limit("MLLM_GRAMMAR_MAX_STACKS", MLLM_GRAMMAR_MAX_STACKS);
    if (grow((void **)&m->tops, &m->cap_tops, m->n_tops + 1, sizeof *m->tops)) return -1;
    m->tops[m->n_tops++] = t;
    return 0;
}

static bool is_end(const mllm_gelem *e) { return e->kind == MLLM_GE_END || e->kind == MLLM_GE_ALT; }

/* Every stack that continues at position pos with continuation cont, down
   to character classes (and ACCEPT), appended to f's tops. */
static int expand(mllm_gmatch *m, const frame *f, uint32_t pos, uint32_t cont) {
    const mllm_gram *g = m->g;
    uint32_t n = 0;
    if (grow((void **)&m->work, &m->cap_work, 2, 2 * sizeof *m->work)) return -1;
    m->work[0] = pos;
    m->work[1] = cont;
    n = 1;
    while (n > 0) {
        if (++m->char_steps > MLLM_GRAMMAR_MAX_EXPAND) return limit("MLLM_GRAMMAR_MAX_EXPAND", MLLM_GRAMMAR_MAX_EXPAND);
        m->mask_work++;
        n--;
        uint32_t p = m->work[2 * n], c = m->work[2 * n + 1];
        const mllm_gelem *e = &g->elems[p];
        if (e->kind == MLLM_GE_CHARS) {
            int64_t t = new_node(m, p, c);
            if (t < 0 || push_top(m, f, (uint32_t)t)) return -1;
        } else if (is_end(e)) {
            if (c == NONE) {
                if (push_top(m, f, ACCEPT)) return -1;
            } else if (g->elems[m->nodes[c].pos].kind == MLLM_GE_CHARS) {
                if (push_top(m, f, c)) return -1; /* the parent is itself a stack top: shared, not copied */
            } else {
                m->work[2 * n] = m->nodes[c].pos;
                m->work[2 * n + 1] = m->nodes[c].parent;
                n++;
            }
        } else { /* REF: a continuation unless the reference ends its sequence (tail call) */
            uint32_t c2 = c;
            if (!is_end(&g->elems[p + 1])) {
                int64_t k = new_node(m, p + 1, c);
                if (k < 0) return -1;
                c2 = (uint32_t)k;
            }
            uint32_t a0 = g->alt_off[e->a], a1 = g->alt_off[e->a + 1];
            if (grow((void **)&m->work, &m->cap_work, n + (a1 - a0), 2 * sizeof *m->work)) return -1;
            for (uint32_t a = a0; a < a1; a++) {
                m->work[2 * n] = g->alt_pos[a];
                m->work[2 * n + 1] = c2;
                n++;
            }
        }
    }
    return 0;
}

static bool same_stack(const mllm_gmatch *m, uint32_t a, uint32_t b) {
    while (a != b) {
        if (a >= ACCEPT || b >= ACCEPT || m->nodes[a].pos != m->nodes[b].pos) return false;
        a = m->nodes[a].parent;
        b = m->nodes[b].parent;
    }
    return true;
}

static int by_pos_parent(const void *a, const void *b) {
    const uint32_t *x = a, *y = b;
    for (int i = 0; i < 3; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}

/* Drops tops that repeat an earlier one (an ambiguous grammar would
   otherwise double its stacks at every character). Only tops at the same
   position can be equal: many tops are sorted by position first. */
static int dedup(mllm_gmatch *m, frame *f) {
    uint32_t *t = m->tops + f->off, k = 0;
    if (f->n <= 16) {
        for (uint32_t i = 0; i < f->n; i++) {
            bool dup = false;
            for (uint32_t j = 0; j < k && !dup; j++)
                dup = t[j] == t[i] || (t[j] < ACCEPT && t[i] < ACCEPT && m->nodes[t[j]].pos == m->nodes[t[i]].pos &&
                                       same_stack(m, t[j], t[i]));
            if (!dup) t[k++] = t[i];
        }
        m->mask_work += (uint64_t)f->n * f->n;
    } else {
        if (grow((void **)&m->sorted, &m->cap_sorted, f->n, sizeof *m->sorted)) return -1;
        uint32_t (*s)[3] = m->sorted;
        for (uint32_t i = 0; i < f->n; i++) {
            bool acc = t[i] == ACCEPT;
            s[i][0] = acc ? UINT32_MAX : m->nodes[t[i]].pos;
            s[i][1] = acc ? UINT32_MAX : m->nodes[t[i]].parent;
            s[i][2] = t[i];
        }
        qsort(s, f->n, sizeof *s, by_pos_parent);
        for (uint32_t i = 0, run = 0; i < f->n; i++) {
            if (i == 0 || s[i][0] != s[i - 1][0]) run = k; /* the kept tops at this position start here */
            bool dup = false;
            for (uint32_t j = run; j < k && !dup; j++)
                dup = t[j] == s[i][2] || (s[i][2] < ACCEPT && same_stack(m, t[j], s[i][2]));
            m->mask_work += k - run + 1;
            if (!dup) t[k++] = s[i][2];
        }
        m->mask_work += (uint64_t)f->n * 16;
    }
    f->n = k;
    m->n_tops = f->off + k;
    return 0;
}

/* Code point c on every stack of in -> out. 1: some stack survives, 0:
   none, -1: a limit. */
static int advance_cp(mllm_gmatch *m, const frame *in, uint32_t c, frame *out) {
    const mllm_gram *g = m->g;
    memset(out, 0, sizeof *out);
    out->off = m->n_tops;
    m->char_steps = 0;
    for (uint32_t i = 0; i < in->n; i++) {
        uint32_t t = m->tops[in->off + i];
        if (t == ACCEPT) continue;
        const gnode nd = m->nodes[t];
        if (!mllm_gram_chars_match(g, &g->elems[nd.pos], c)) continue;
        if (expand(m, out, nd.pos + 1, nd.parent)) return -1;
    }
    out->n = m->n_tops - out->off;
    if (dedup(m, out)) return -1;
    return out->n > 0;
}

/* Whether the class of element e holds a code point in [lo, hi]. */
static bool chars_overlap(const mllm_gram *g, const mllm_gelem *e, uint32_t lo, uint32_t hi) {
    const uint32_t *r = g->ranges + 2 * (size_t)e->a;
    uint32_t a = 0, b = e->b;
    while (a < b) {
        uint32_t mid = (a + b) / 2;
        if (r[2 * mid + 1] < lo) a = mid + 1;
        else b = mid;
    }
    return a < e->b && r[2 * a] <= hi;
}

/* One byte on state in -> out. 1 / 0 / -1 as advance_cp. */
static int advance_byte(mllm_gmatch *m, const frame *in, uint8_t b, frame *out) {
    frame f = *in;
    if (in->need == 0) {
        if (b < 0x80) return advance_cp(m, in, b, out);
        f.len = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
        if (!f.len) return 0;
        f.val = b & (f.len == 2 ? 0x1F : f.len == 3 ? 0x0F : 0x07);
        f.need = f.len - 1;
        f.lead = b;
        f.got = 1;
    } else {
        if ((b & 0xC0) != 0x80) return 0;
        /* The second byte rules out overlong forms, surrogates and code points past U+10FFFF. */
        if (in->got == 1 && ((in->lead == 0xE0 && b < 0xA0) || (in->lead == 0xED && b > 0x9F) ||
                             (in->lead == 0xF0 && b < 0x90) || (in->lead == 0xF4 && b > 0x8F)))
            return 0;
        f.val = in->val << 6 | (b & 0x3F);
        f.need = in->need - 1;
        f.got = in->got + 1;
        if (f.need == 0) return advance_cp(m, in, f.val, out);
    }
    /* Still partial: keep the stacks whose class holds a completion. */
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    uint32_t lo = f.val << (6 * f.need), hi = lo | ((1u << (6 * f.need)) - 1);
    if (lo < min_cp[f.len]) lo = min_cp[f.len];
    if (hi > 0x10FFFF) hi = 0x10FFFF;
    if (hi >= 0xD800 && hi <= 0xDFFF) hi = 0xD7FF; /* a lone 0xED lead */
    const mllm_gram *g = m->g;
    uint32_t keep = 0;
    for (uint32_t i = 0; i < in->n; i++) {
        uint32_t t = m->tops[in->off + i];
        keep += t != ACCEPT && chars_overlap(g, &g->elems[m->nodes[t].pos], lo, hi);
    }
    *out = f;
    if (keep == in->n) return keep > 0; /* all survive: share in's tops */
    out->off = m->n_tops;
    out->n = 0;
    for (uint32_t i = 0; i < in->n; i++) {
        uint32_t t = m->tops[in->off + i];
        if (t != ACCEPT && chars_overlap(g, &g->elems[m->nodes[t].pos], lo, hi)) {
            if (push_top(m, out, t)) return -1;
            out->n++;
        }
    }
    return out->n > 0;
}

/* Makes st the matcher's state: keeps only the nodes its stacks use. */
static int commit(mllm_gmatch *m, const frame *st) {
    if (grow((void **)&m->remap, &m->cap_remap, m->n_nodes + 1, sizeof *m->remap)) return -1;
    uint32_t *r = m->remap;
    for (uint32_t i = 0; i < m->n_nodes; i++) r[i] = NONE;
    for (uint32_t i = 0; i < st->n; i++)
        for (uint32_t t = m->tops[st->off + i]; t < ACCEPT && r[t] == NONE; t = m->nodes[t].parent) r[t] = 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < m->n_nodes; i++) {
        if (r[i] == NONE) continue;
        gnode nd = m->nodes[i];
        if (nd.parent < ACCEPT) nd.parent = r[nd.parent]; /* parents are older: already moved */
        m->nodes[k] = nd;
        r[i] = k++;
    }
    m->n_nodes = k;
    for (uint32_t i = 0; i < st->n; i++) {
        uint32_t t = m->tops[st->off + i];
        m->tops[i] = t < ACCEPT ? r[t] : t;
    }
    m->cur = *st;
    m->cur.off = 0;
    m->n_tops = st->n;
    return 0;
}

mllm_status mllm_gmatch_reset(mllm_gmatch *m) {
    const mllm_gram *g = m->g;
    m->n_nodes = 0;
    m->n_tops = 0;
    frame f = {0};
    m->char_steps = 0;
    for (uint32_t a = g->alt_off[g->root]; a < g->alt_off[g->root + 1]; a++)
        if (expand(m, &f, g->alt_pos[a], NONE)) return MLLM_ERR_UNSUPPORTED;
    f.n = m->n_tops;
    if (dedup(m, &f)) return MLLM_ERR_NOMEM;
    return commit(m, &f) ? MLLM_ERR_NOMEM : MLLM_OK;
}

mllm_status mllm_gmatch_new(const mllm_gram *g, mllm_gmatch **out) {
    *out = NULL;
    mllm_gmatch *m = mllm_calloc(1, sizeof *m);
    if (!m) return mllm_err(MLLM_ERR_NOMEM, "grammar: out of memory");
    m->g = g;
    mllm_status st = mllm_gmatch_reset(m);
    if (st != MLLM_OK) {
        mllm_gmatch_free(m);
        return st;
    }
    *out = m;
    return MLLM_OK;
}

void mllm_gmatch_free(mllm_gmatch *m) {
    if (!m) return;
    mllm_free(m->nodes);
    mllm_free(m->tops);
    mllm_free(m->work);
    mllm_free(m->remap);
    mllm_free(m->frames);
    mllm_free(m->sorted);
    mllm_free(m);
}

/* Runs the bytes on the state into *f; the buffers then hold the
   result, to be committed or dropped. */
static mllm_status run_bytes(mllm_gmatch *m, const char *bytes, size_t n, frame *f) {
    frame next;
    *f = m->cur;
    for (size_t i = 0; i < n; i++) {
        int r = advance_byte(m, f, (uint8_t)bytes[i], &next);
        if (r <= 0) return r < 0 ? MLLM_ERR_UNSUPPORTED : MLLM_ERR_INVALID_ARG;
        *f = next;
    }
    return MLLM_OK;
}

mllm_status mllm_gmatch_accept(mllm_gmatch *m, const char *bytes, size_t n) {
    uint32_t nodes0 = m->n_nodes, tops0 = m->n_tops;
    frame f;
    mllm_status st = run_bytes(m, bytes, n, &f);
    if (st == MLLM_OK) return commit(m, &f) ? MLLM_ERR_NOMEM : MLLM_OK;
    m->n_nodes = nodes0;
    m->n_tops = tops0;
    return st;
}

mllm_status mllm_gmatch_try(mllm_gmatch *m, const char *bytes, size_t n) {
    uint32_t nodes0 = m->n_nodes, tops0 = m->n_tops;
    frame f;
    mllm_status st = run_bytes(m, bytes, n, &f);
    m->n_nodes = nodes0;
    m->n_tops = tops0;
    return st;
}

bool mllm_gmatch_can_end(const mllm_gmatch *m) {
    if (m->cur.need) return false;
    for (uint32_t i = 0; i < m->cur.n; i++)
        if (m->tops[m->cur.off + i] == ACCEPT) return true;
    return false;
}

bool mllm_gmatch_done(const mllm_gmatch *m) {
    if (m->cur.need || m->cur.n == 0) return false;
    for (uint32_t i = 0; i < m->cur.n; i++)
        if (m->tops[m->cur.off + i] != ACCEPT) return false;
    return true;
}

mllm_status mllm_gmatch_mask(mllm_gmatch *m, const mllm_vocab_trie *t, uint8_t *allow, size_t *n_allowed) {
    memset(allow, 0, (size_t)t->n_vocab);
    *n_allowed = 0;
    if (grow((void **)&m->frames, &m->cap_frames, t->max_depth + 1, sizeof *m->frames))
        return MLLM_ERR_NOMEM;
    uint32_t nodes0 = m->n_nodes, tops0 = m->n_tops;
    frame *F = m->frames;
    F[0] = m->cur;
    F[0].nodes_end = nodes0;
    F[0].tops_end = tops0;
    size_t count = 0;
    mllm_status st = MLLM_OK;
    m->mask_work = 0;
    /* The hot loop: one byte of one trie edge per step. */
    for (uint32_t i = 0; i < t->n_nodes;) {
        uint32_t d = t->depth[i];
        m->n_nodes = F[d - 1].nodes_end;
        m->n_tops = F[d - 1].tops_end;
        int r = advance_byte(m, &F[d - 1], t->byte[i], &F[d]);
        if (r < 0) { st = MLLM_ERR_UNSUPPORTED; break; }
        if (m->mask_work > MLLM_GRAMMAR_MAX_MASK_WORK) {
            st = MLLM_ERR_UNSUPPORTED;
            limit("MLLM_GRAMMAR_MAX_MASK_WORK", MLLM_GRAMMAR_MAX_MASK_WORK);
            break;
        }
        if (r == 0) { i = t->skip[i]; continue; }
        F[d].nodes_end = m->n_nodes;
        F[d].tops_end = m->n_tops;
        for (uint32_t k = t->tok_off[i]; k < t->tok_off[i + 1]; k++) allow[t->tok_ids[k]] = 1;
        count += t->tok_off[i + 1] - t->tok_off[i];
        i++;
    }
    m->n_nodes = nodes0;
    m->n_tops = tops0;
    *n_allowed = count;
    return st;
}
