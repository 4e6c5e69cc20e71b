#include "tokenizer/tok_maps.h"
#include "core/alloc.h"
#include "core/error.h"
#include <string.h>

/* A fast non-cryptographic hash (64-bit multiply-mix over 8-byte words):
   the maps are built from vocabularies of up to a few hundred thousand
   tokens at every load, so this is on the load-time hot path. */
uint64_t tok_hash(const char *s, size_t n) {
    const uint64_t k = 0x9E3779B97F4A7C15ull;
    uint64_t h = 0x243F6A8885A308D3ull ^ (n * k);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * k;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * k;
    h ^= h >> 32;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    return h;
}

static size_t table_size(size_t n_items) {
    size_t cap = 16;
    while (cap < n_items * 2) cap <<= 1;
    return cap;
}

mllm_status tok_strmap_init(tok_strmap *m, size_t n_items) {
    size_t cap = table_size(n_items);
    m->slots = mllm_calloc(cap, sizeof(uint64_t));
    if (!m->slots) return mllm_err(MLLM_ERR_NOMEM, "tokenizer: out of memory (text map)");
    m->mask = cap - 1;
    return MLLM_OK;
}

void tok_strmap_free(tok_strmap *m) {
    mllm_free(m->slots);
    m->slots = NULL;
}

static bool text_eq(const tok_texts *tx, int32_t id, const char *s, size_t n) {
    return tx->len[id] == n && memcmp(tx->pool + tx->off[id], s, n) == 0;
}

void tok_strmap_put(tok_strmap *m, const tok_texts *tx, int32_t id) {
    const char *s = tx->pool + tx->off[id];
    size_t n = tx->len[id];
    uint64_t h = tok_hash(s, n);
    uint64_t tag = h >> 32;
    for (size_t i = (size_t)h & m->mask;; i = (i + 1) & m->mask) {
        uint64_t v = m->slots[i];
        if (v == 0 || ((v >> 32) == tag && text_eq(tx, (int32_t)(v & 0xffffffffu) - 1, s, n))) {
            m->slots[i] = (tag << 32) | (uint64_t)(id + 1);
            return;
        }
    }
}

int32_t tok_strmap_get(const tok_strmap *m, const tok_texts *tx, const char *s, size_t n) {
    if (!m->slots) return -1;
    uint64_t h = tok_hash(s, n);
    uint64_t tag = h >> 32;
    for (size_t i = (size_t)h & m->mask;; i = (i + 1) & m->mask) {
        uint64_t v = m->slots[i];
        if (v == 0) return -1;
        if ((v >> 32) == tag) {
            int32_t id = (int32_t)(v & 0xffffffffu) - 1;
            if (text_eq(tx, id, s, n)) return id;
        }
    }
}

mllm_status tok_pairmap_init(tok_pairmap *m, size_t n_items) {
    size_t cap = table_size(n_items);
    m->keys = mllm_malloc(cap * sizeof(uint64_t));
    m->vals = mllm_malloc(cap * sizeof(uint64_t));
    if (!m->keys || !m->vals) {
        tok_pairmap_free(m);
        return mllm_err(MLLM_ERR_NOMEM, "tokenizer: out of memory (merge map)");
    }
    memset(m->keys, 0xff, cap * sizeof(uint64_t));
    m->mask = cap - 1;
    return MLLM_OK;
}

void tok_pairmap_free(tok_pairmap *m) {
    mllm_free(m->keys);
    mllm_free(m->vals);
    m->keys = m->vals = NULL;
}

static uint64_t pair_hash(uint64_t key) {
    key ^= key >> 33;
    key *= 0xFF51AFD7ED558CCDull;
    key ^= key >> 33;
    return key;
}

void tok_pairmap_put(tok_pairmap *m, int32_t left, int32_t right, uint32_t rank, int32_t merged) {
    uint64_t key = ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
    for (size_t i = (size_t)pair_hash(key) & m->mask;; i = (i + 1) & m->mask) {
        if (m->keys[i] == key) return;
        if (m->keys[i] == UINT64_MAX) {
            m->keys[i] = key;
            m->vals[i] = ((uint64_t)rank << 32) | (uint32_t)merged;
            return;
        }
    }
}

bool tok_pairmap_get(const tok_pairmap *m, int32_t left, int32_t right, uint32_t *rank,
                     int32_t *merged) {
    if (!m->keys) return false;
    uint64_t key = ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
    for (size_t i = (size_t)pair_hash(key) & m->mask;; i = (i + 1) & m->mask) {
        uint64_t k = m->keys[i];
        if (k == UINT64_MAX) return false;
        if (k == key) {
            *rank = (uint32_t)(m->vals[i] >> 32);
            *merged = (int32_t)(m->vals[i] & 0xffffffffu);
            return true;
        }
    }
}
