/* Builds the trie from the pieces sorted bytewise: each piece shares its
   longest common prefix with the one before, so nodes come out in
   depth-first order in one pass. */
#include "runtime/vocab_trie.h"
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"

typedef struct {
    const char *s;
    size_t n;
    int32_t id;
} piece_ref;

static int by_bytes(const void *a, const void *b) {
    const piece_ref *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->s, y->s, n);
    if (c) return c;
    if (x->n != y->n) return x->n < y->n ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

mllm_status mllm_vocab_trie_build(int32_t n_vocab, mllm_piece_fn piece, const void *user, mllm_vocab_trie **out) {
    *out = NULL;
    piece_ref *p = mllm_malloc((size_t)(n_vocab > 0 ? n_vocab : 1) * sizeof *p);
    mllm_vocab_trie *t = mllm_calloc(1, sizeof *t);
    if (!p || !t) { mllm_free(p); mllm_free(t); return mllm_err(MLLM_ERR_NOMEM, "out of memory for the vocabulary trie"); }
    size_t n = 0, bytes = 0, max = 0;
    for (int32_t id = 0; id < n_vocab; id++) {
        size_t len = 0;
        const char *s = piece(user, id, &len);
        if (!s || !len) continue;
        p[n++] = (piece_ref){s, len, id};
        bytes += len;
        if (len > max) max = len;
    }
    qsort(p, n, sizeof *p, by_bytes);
    t->n_vocab = n_vocab;
    t->max_depth = (uint32_t)max;
    size_t cap = bytes ? bytes : 1;
    t->byte = mllm_malloc(cap);
    t->depth = mllm_malloc(cap * sizeof *t->depth);
    t->skip = mllm_malloc(cap * sizeof *t->skip);
    t->tok_off = mllm_malloc((cap + 1) * sizeof *t->tok_off);
    t->tok_ids = mllm_malloc((n ? n : 1) * sizeof *t->tok_ids);
    uint32_t *path = mllm_malloc((max ? max : 1) * sizeof *path); /* node at each depth on the current path */
    if (!t->byte || !t->depth || !t->skip || !t->tok_off || !t->tok_ids || !path) {
        mllm_free(p);
        mllm_free(path);
        mllm_vocab_trie_free(t);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory for the vocabulary trie");
    }
    uint32_t nn = 0, nt = 0;
    size_t open = 0; /* depth of the current path */
    for (size_t i = 0; i < n; i++) {
        size_t l = 0;
        if (i > 0) {
            size_t m = p[i - 1].n < p[i].n ? p[i - 1].n : p[i].n;
            while (l < m && p[i - 1].s[l] == p[i].s[l]) l++;
        }
        while (open > l) t->skip[path[--open]] = nn; /* those subtrees are complete */
        for (size_t k = l; k < p[i].n; k++) {
            t->byte[nn] = (uint8_t)p[i].s[k];
            t->depth[nn] = (uint32_t)k + 1;
            t->tok_off[nn] = nt;
            path[open++] = nn++;
        }
        t->tok_ids[nt++] = p[i].id; /* at path[n - 1]: the tokens of a node come before any later node's */
    }
    while (open > 0) t->skip[path[--open]] = nn;
    t->tok_off[nn] = nt;
    t->n_nodes = nn;
    mllm_free(p);
    mllm_free(path);
    *out = t;
    return MLLM_OK;
}

void mllm_vocab_trie_free(mllm_vocab_trie *t) {
    if (!t) return;
    mllm_free(t->byte);
    mllm_free(t->depth);
    mllm_free(t->skip);
    mllm_free(t->tok_off);
    mllm_free(t->tok_ids);
    mllm_free(t);
}
