/* Open-addressing hash maps of the tokenizer: token text -> id, and
   (left id, right id) -> (merge rank, merged id). Both are sized once at
   load (load factor <= 1/2) and are read-only afterwards. */
#ifndef MLLM_TOKENIZER_TOK_MAPS_H
#define MLLM_TOKENIZER_TOK_MAPS_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the texts of the ids stored in a tok_strmap live. */
typedef struct {
    const char *pool;
    const uint64_t *off;
    const uint32_t *len;
} tok_texts;

typedef struct {
    uint64_t *slots; /* (hash high 32 bits << 32) | (id + 1); 0 = empty */
    size_t mask;
} tok_strmap;

typedef struct {
    uint64_t *keys;  /* (left << 32) | right; UINT64_MAX = empty */
    uint64_t *vals;  /* (rank << 32) | merged id */
    size_t mask;
} tok_pairmap;

uint64_t tok_hash(const char *s, size_t n);

mllm_status tok_strmap_init(tok_strmap *m, size_t n_items);
void tok_strmap_free(tok_strmap *m);
/* An id whose text equals an id already stored replaces it. */
void tok_strmap_put(tok_strmap *m, const tok_texts *tx, int32_t id);
int32_t tok_strmap_get(const tok_strmap *m, const tok_texts *tx, const char *s, size_t n);

mllm_status tok_pairmap_init(tok_pairmap *m, size_t n_items);
void tok_pairmap_free(tok_pairmap *m);
/* Keeps the first rank given for a pair (the lowest, as merges come in order). */
void tok_pairmap_put(tok_pairmap *m, int32_t left, int32_t right, uint32_t rank, int32_t merged);
bool tok_pairmap_get(const tok_pairmap *m, int32_t left, int32_t right, uint32_t *rank,
                     int32_t *merged);

#endif
