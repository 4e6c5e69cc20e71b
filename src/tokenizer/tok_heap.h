/* A binary min-heap of merge candidates, ordered by (key, left): BPE uses
   the merge rank as key, SentencePiece an order-reversed score, so both pop
   the best candidate and, among equals, the leftmost (as llama.cpp and HF). */
#ifndef MLLM_TOKENIZER_TOK_HEAP_H
#define MLLM_TOKENIZER_TOK_HEAP_H
#include "core/alloc.h"
#include "core/error.h"
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint64_t key;
    int32_t left, right;  /* symbol indices */
    int32_t a, b;         /* BPE: left/right ids at push time; SPM: byte size */
    int32_t merged;       /* BPE: resulting id */
} tok_cand;

typedef struct {
    tok_cand *v;
    size_t n, cap;
} tok_heap;

static inline bool tok_cand_less(const tok_cand *x, const tok_cand *y) {
    return x->key < y->key || (x->key == y->key && x->left < y->left);
}

static inline mllm_status tok_heap_push(tok_heap *h, const tok_cand *c) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        tok_cand *p = (tok_cand *)mllm_realloc(h->v, cap * sizeof(tok_cand));
        if (!p) return mllm_err(MLLM_ERR_NOMEM, "tokenizer: out of memory (merge queue)");
        h->v = p;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!tok_cand_less(c, &h->v[parent])) break;
        h->v[i] = h->v[parent];
        i = parent;
    }
    h->v[i] = *c;
    return MLLM_OK;
}

static inline tok_cand tok_heap_pop(tok_heap *h) {
    tok_cand top = h->v[0];
    tok_cand last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const tok_cand *best = &last;
        if (l < h->n && tok_cand_less(&h->v[l], best)) { m = l; best = &h->v[l]; }
        if (r < h->n && tok_cand_less(&h->v[r], best)) { m = r; }
        if (m == i) break;
        h->v[i] = h->v[m];
        i = m;
    }
    if (h->n > 0) h->v[i] = last;
    return top;
}

#endif
