/* A bump allocator made of 64-byte aligned chunks. Reset keeps the chunks, so
   a forward pass that runs again allocates nothing from the heap. */
#ifndef MLLM_CORE_ARENA_H
#define MLLM_CORE_ARENA_H
#include <stddef.h>

typedef struct mllm_arena_chunk mllm_arena_chunk;
typedef struct {
    mllm_arena_chunk *head;   /* chunk being filled */
    mllm_arena_chunk *first;
    size_t chunk_size;        /* default size of a new chunk */
    size_t used_total;        /* bytes handed out since the last reset */
    size_t peak;
} mllm_arena;

void mllm_arena_init(mllm_arena *a, size_t chunk_size);
/* 64-byte aligned, uninitialised; NULL on out-of-memory. */
void *mllm_arena_alloc(mllm_arena *a, size_t n);
void *mllm_arena_calloc(mllm_arena *a, size_t n);
void mllm_arena_reset(mllm_arena *a);
void mllm_arena_free(mllm_arena *a);

#endif
