/* The prefix index of the KV pool (kv_pool.h): full blocks keyed by a hash
   chain of all tokens up to their end, found again by any later sequence
   that starts with the same tokens. */
#include <string.h>
#include "kv/kv_pool.h"
#include "core/alloc.h"

/* FNV-1a over 32-bit tokens from the parent's key, then a splitmix64
   finaliser: cheap, and a collision only costs a failed comparison. */
uint64_t mllm_kv_chain_key(uint64_t parent_key, const int32_t *tok, int n) {
    uint64_t h = parent_key ^ 0xcbf29ce484222325ull;
    for (int i = 0; i < n; i++) h = (h ^ (uint32_t)tok[i]) * 0x100000001b3ull;
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

uint64_t mllm_kv_block_key(uint64_t parent_key, const int32_t *tok, int n, uint64_t salt) {
    const uint64_t h = mllm_kv_chain_key(parent_key, tok, n);
    if (!salt) return h; /* a text block's key is its chain key alone (stored files keep theirs) */
    return mllm_kv_chain_key(h, (const int32_t[2]){(int32_t)(uint32_t)salt, (int32_t)(uint32_t)(salt >> 32)}, 2);
}

static int bucket_of(const mllm_kv_pool *kp, uint64_t key) { return (int)(key & (uint64_t)(kp->n_buckets - 1)); }

/* The registered block with this key, parent serial and tokens, or -1. */
static int32_t find(const mllm_kv_pool *kp, uint64_t key, uint64_t parent, const int32_t *tok) {
    const int bs = kp->p.block_size;
    for (int32_t id = kp->buckets[bucket_of(kp, key)]; id >= 0; id = kp->hnext[id])
        if (kp->key[id] == key && kp->parent[id] == parent &&
            !memcmp(kp->tokens + (size_t)id * (size_t)bs, tok, (size_t)bs * sizeof *tok))
            return id;
    return -1;
}

void mllm_kv_index_remove(mllm_kv_pool *kp, int32_t id) {
    if (!kp->indexed[id]) return;
    int32_t *at = &kp->buckets[bucket_of(kp, kp->key[id])];
    while (*at >= 0 && *at != id) at = &kp->hnext[*at];
    if (*at == id) *at = kp->hnext[id];
    kp->indexed[id] = false;
    kp->serial[id] = 0; /* children keyed to this serial can never match again */
}

int mllm_kv_prefix_lookup(mllm_kv_pool *kp, mllm_kv_seq *s, const int32_t *tokens, const uint64_t *salt, int n) {
    const int bs = kp->p.block_size;
    if (s->n_blocks != 0 || !tokens || n < bs) return 0;
    kp->st.lookups++;
    const int full = n / bs;
    if (s->cap < full) {
        int32_t *nb = mllm_realloc(s->blocks, (size_t)full * sizeof *nb);
        if (!nb) return 0;
        s->blocks = nb;
        s->cap = full;
    }
    uint64_t key = 0, parent = 0;
    int i = 0;
    for (; i < full; i++) {
        const int32_t *tok = tokens + (size_t)i * (size_t)bs;
        key = mllm_kv_block_key(key, tok, bs, salt ? salt[i] : 0);
        const int32_t id = find(kp, key, parent, tok);
        if (id < 0) break;
        mllm_kv_block_ref(kp, id);
        s->blocks[i] = id;
        parent = kp->serial[id];
    }
    s->n_blocks = s->n_indexed = i;
    s->n_tokens = i * bs;
    kp->st.hit_blocks += (uint64_t)i;
    return i * bs;
}

void mllm_kv_prefix_commit(mllm_kv_pool *kp, mllm_kv_seq *s, const int32_t *tokens, const uint64_t *salt) {
    const int bs = kp->p.block_size, full = s->n_tokens / bs;
    for (int i = s->n_indexed; i < full; i++) {
        const int32_t *tok = tokens + (size_t)i * (size_t)bs;
        const int32_t prev = i > 0 ? s->blocks[i - 1] : -1;
        const uint64_t pkey = prev >= 0 ? kp->key[prev] : 0, parent = prev >= 0 ? kp->serial[prev] : 0;
        const uint64_t key = mllm_kv_block_key(pkey, tok, bs, salt ? salt[i] : 0);
        const int32_t have = find(kp, key, parent, tok), id = s->blocks[i];
        if (have >= 0 && have != id) { /* the same prefix is cached already: share it */
            mllm_kv_block_ref(kp, have);
            s->blocks[i] = have;
            mllm_kv_block_unref(kp, id);
        } else if (have < 0) {
            if (kp->indexed[id]) mllm_kv_index_remove(kp, id); /* registered under another chain */
            kp->key[id] = key;
            kp->parent[id] = parent;
            kp->serial[id] = kp->next_serial++;
            memcpy(kp->tokens + (size_t)id * (size_t)bs, tok, (size_t)bs * sizeof *tok);
            const int b = bucket_of(kp, key);
            kp->hnext[id] = kp->buckets[b];
            kp->buckets[b] = id;
            kp->indexed[id] = true;
        }
        s->n_indexed = i + 1;
    }
}

int mllm_kv_prefix_extend(mllm_kv_pool *kp, mllm_kv_seq *s, const int32_t *tokens, int n) {
    const int bs = kp->p.block_size, k = s->n_tokens;
    if (!tokens || k % bs != 0 || s->n_blocks != k / bs || n <= k) return 0;
    /* The chain so far: a candidate must continue it (its parent's serial). */
    const uint64_t parent = s->n_blocks > 0 ? kp->serial[s->blocks[s->n_blocks - 1]] : 0;
    const int room = n - k < bs ? n - k : bs;
    int32_t best = -1;
    int best_m = 0;
    /* A linear scan of the registered blocks: the index is keyed by whole
       blocks, and this runs once per admitted sequence. */
    for (int32_t id = 0; id < kp->p.n_blocks; id++) {
        if (!kp->indexed[id] || kp->parent[id] != parent) continue;
        const int32_t *bt = kp->tokens + (size_t)id * (size_t)bs;
        int m = 0;
        while (m < room && bt[m] == tokens[k + m] && bt[m] >= 0) m++; /* (a key's salt is the whole block's) */
        if (m > best_m) { best_m = m; best = id; }
    }
    if (best < 0) return 0;
    if (s->cap < s->n_blocks + 1) {
        int32_t *nb = mllm_realloc(s->blocks, (size_t)(s->n_blocks + 1) * sizeof *nb);
        if (!nb) return 0;
        s->blocks = nb;
        s->cap = s->n_blocks + 1;
    }
    mllm_kv_block_ref(kp, best);
    s->blocks[s->n_blocks++] = best; /* registered: the first write copies it */
    s->n_tokens = k + best_m;
    return best_m;
}
