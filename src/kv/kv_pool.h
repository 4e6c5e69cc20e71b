/* The KV block pool: every layer's K/V in blocks of block_size token
   positions, one id per block shared by all layers (block b of layer l is
   layers[l].base + b * block_bytes). A sequence is a block table (the ids
   of its positions [0, bs), [bs, 2 bs), ...); blocks are refcounted, so
   sequences share them, and a block about to be written while shared (or
   while the prefix index describes it) is copied first (copy on write).

   The prefix index (kv_prefix.c) keys every registered full block by a
   hash chain of all tokens up to its end: key = hash(parent block's key,
   this block's tokens). A lookup compares the tokens and the parent's
   registration serial too, so a hash collision never serves a wrong block.
   A block may also hold what its tokens do not name: an image's rows,
   whose tokens are short (31-bit) stand-ins for the image (engine.h). The
   caller then gives each block a salt (a 64-bit hash of that content, 0
   for none), mixed into the block's key (mllm_kv_block_key), so such a
   block is found only by the same content at the same place, to the
   strength of a 64-bit hash; and a block shared part way
   (mllm_kv_prefix_extend) shares none of those positions.
   Unreferenced registered blocks stay cached, least recently used first out
   when a block is needed.

   Block states: FREE (in the free list), CACHED (ref 0, indexed, in the LRU
   list), USED (ref > 0). Every failure is a status, never a crash. One
   pool is used by one thread at a time (the caller serialises). */
#ifndef MLLM_KV_KV_POOL_H
#define MLLM_KV_KV_POOL_H
#include <stdbool.h>
#include <stdint.h>
#include <mllm/mllm.h>
#include "kv/kv_layout.h"

#define MLLM_KV_MAX_BLOCK_SIZE 4096

typedef struct {
    int n_layer, n_head_kv, head_dim;
    int dtype;      /* mllm_kv_dtype */
    int block_size; /* token positions per block, [1, MLLM_KV_MAX_BLOCK_SIZE] */
    int n_blocks;
    int ordered;    /* attention order of the layers (mllm_kv_paged.ordered) */
} mllm_kv_pool_params;

typedef struct {
    int n_blocks, n_free, n_cached, n_used;
    uint64_t lookups, hit_blocks, evictions, cow_copies;
} mllm_kv_pool_stats;

typedef struct {
    mllm_kv_pool_params p;
    uint8_t *mem;
    size_t mem_size;
    mllm_kv_paged *layers;  /* (n_layer) the kernels' view of each layer */
    int32_t *ref;           /* (n_blocks) */
    uint8_t *state;         /* (n_blocks) FREE / CACHED / USED */
    int32_t *next, *prev;   /* (n_blocks) free list (next) and LRU list links */
    int32_t free_head, lru_head, lru_tail;
    /* prefix index */
    bool *indexed;          /* (n_blocks) */
    uint64_t *key, *serial, *parent; /* (n_blocks) chain key, registration serial, parent's serial (0: root) */
    int32_t *tokens;        /* (n_blocks * block_size) the tokens of a registered block */
    int32_t *hnext, *buckets;
    int n_buckets;          /* a power of 2 */
    uint64_t next_serial;
    mllm_kv_pool_stats st;
} mllm_kv_pool;

/* A sequence: its block table and how many positions hold K/V. */
typedef struct {
    int32_t *blocks;
    int n_blocks, cap;
    int n_tokens;
    int n_indexed; /* leading blocks known registered in the prefix index */
} mllm_kv_seq;

mllm_status mllm_kv_pool_init(mllm_kv_pool *kp, const mllm_kv_pool_params *p);
void mllm_kv_pool_free(mllm_kv_pool *kp);
void mllm_kv_pool_get_stats(const mllm_kv_pool *kp, mllm_kv_pool_stats *out);
/* Frees every cached (unreferenced, indexed) block. */
void mllm_kv_pool_drop_cache(mllm_kv_pool *kp);

void mllm_kv_seq_init(mllm_kv_seq *s);
/* Drops the sequence's references (its blocks go back to the pool or its
   cache) and frees its table. */
void mllm_kv_seq_release(mllm_kv_pool *kp, mllm_kv_seq *s);
/* Keeps positions [0, n) (n <= n_tokens); blocks past them are released. */
void mllm_kv_seq_truncate(mllm_kv_pool *kp, mllm_kv_seq *s, int n);
/* Makes room for n more positions after n_tokens: new blocks where the
   table ends, a private copy of any block among them that is shared or
   registered. On success n_tokens grows by n; MLLM_ERR_NOMEM (pool full,
   nothing to evict) leaves n_tokens as it was. */
mllm_status mllm_kv_seq_grow(mllm_kv_pool *kp, mllm_kv_seq *s, int n);
/* dst (empty) shares every block of src, partial last block included. */
mllm_status mllm_kv_seq_fork(mllm_kv_pool *kp, mllm_kv_seq *dst, const mllm_kv_seq *src);
/* The id of the block holding position pos, or -1. */
static inline int32_t mllm_kv_seq_block(const mllm_kv_seq *s, int pos, int block_size) {
    int b = pos / block_size;
    return pos >= 0 && b < s->n_blocks ? s->blocks[b] : -1;
}

/* ---- prefix index (kv_prefix.c) ---- */
/* s must be empty. Attaches the longest run of registered full blocks that
   hold tokens[0, k) (block i with salt[i]; salt NULL: all 0) and returns
   k (a multiple of block_size, <= n; with k == n the caller still evaluates the last token again for its logits,
   which copies that block on write). */
int mllm_kv_prefix_lookup(mllm_kv_pool *kp, mllm_kv_seq *s, const int32_t *tokens, const uint64_t *salt, int n);
/* After mllm_kv_prefix_lookup: the registered block continuing s's chain
   whose first tokens match tokens[s->n_tokens, n) longest (a block another
   sequence filled, sharing this one's prefix up to inside it; the match
   stops before a negative token, a salted position whose salt covers the
   whole block) is
   referenced too; returns the m positions of it that s now holds (0: none;
   then s is unchanged). The block is shared and registered, so writing
   position n_tokens copies it first (copy on write); its K/V at those m
   positions are what s would compute (same tokens at the same positions
   after the same prefix). */
int mllm_kv_prefix_extend(mllm_kv_pool *kp, mllm_kv_seq *s, const int32_t *tokens, int n);
/* Registers the sequence's full blocks not yet registered; tokens are its
   n_tokens tokens, salt its blocks' salts (NULL: all 0). A block whose
   content is already registered in another block is swapped for that one (the duplicate goes back to the pool). */
void mllm_kv_prefix_commit(mllm_kv_pool *kp, mllm_kv_seq *s, const int32_t *tokens, const uint64_t *salt);

/* The chain key of a block: of its n tokens after the block whose key is
   parent_key (0 for a sequence's first block). The prefix store
   (kv_store.h) keys its entries the same way (mllm_kv_block_key). */
uint64_t mllm_kv_chain_key(uint64_t parent_key, const int32_t *tok, int n);
/* The key of a block with a salt (see above): its chain key when salt is
   0, else that mixed with salt. */
uint64_t mllm_kv_block_key(uint64_t parent_key, const int32_t *tok, int n, uint64_t salt);

/* Internal to src/kv: unlinks a cached block from the index. */
void mllm_kv_index_remove(mllm_kv_pool *kp, int32_t id);
/* Internal to src/kv: one more reference (a cached block leaves the LRU list). */
void mllm_kv_block_ref(mllm_kv_pool *kp, int32_t id);
void mllm_kv_block_unref(mllm_kv_pool *kp, int32_t id);

#endif
