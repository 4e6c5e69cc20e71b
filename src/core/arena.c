#include "core/arena.h"
#include "core/alloc.h"
#include <string.h>

struct mllm_arena_chunk {
    mllm_arena_chunk *next;
    size_t size, used;
    unsigned char *mem;
};

void mllm_arena_init(mllm_arena *a, size_t chunk_size) {
    memset(a, 0, sizeof *a);
    a->chunk_size = chunk_size ? chunk_size : (1u << 20);
}

static mllm_arena_chunk *chunk_new(size_t size) {
    mllm_arena_chunk *c = mllm_calloc(1, sizeof *c);
    if (!c) return NULL;
    c->mem = mllm_malloc_aligned(size);
    if (!c->mem) { mllm_free(c); return NULL; }
    c->size = size;
    return c;
}

void *mllm_arena_alloc(mllm_arena *a, size_t n) {
    size_t need = (n + 63) & ~(size_t)63;
    if (need < n) return NULL;
    /* Walk the existing chunks (kept across resets) before making a new one. */
    mllm_arena_chunk *c = a->head ? a->head : a->first;
    while (c && c->size - c->used < need) {
        if (!c->next) break;
        c = c->next;
    }
    if (!c || c->size - c->used < need) {
        size_t sz = need > a->chunk_size ? need : a->chunk_size;
        mllm_arena_chunk *nc = chunk_new(sz);
        if (!nc) return NULL;
        if (c) {
            nc->next = c->next;
            c->next = nc;
        } else {
            a->first = nc;
        }
        c = nc;
    }
    a->head = c;
    void *p = c->mem + c->used;
    c->used += need;
    a->used_total += need;
    if (a->used_total > a->peak) a->peak = a->used_total;
    return p;
}

void *mllm_arena_calloc(mllm_arena *a, size_t n) {
    void *p = mllm_arena_alloc(a, n);
    if (p) memset(p, 0, n);
    return p;
}

void mllm_arena_reset(mllm_arena *a) {
    for (mllm_arena_chunk *c = a->first; c; c = c->next) c->used = 0;
    a->head = a->first;
    a->used_total = 0;
}

void mllm_arena_free(mllm_arena *a) {
    mllm_arena_chunk *c = a->first;
    while (c) {
        mllm_arena_chunk *n = c->next;
        mllm_free_aligned(c->mem);
        mllm_free(c);
        c = n;
    }
    memset(a, 0, sizeof *a);
}
