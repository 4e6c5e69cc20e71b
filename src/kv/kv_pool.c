/* The KV block pool: memory, refcounts, the free and LRU lists, block
   tables and copy on write (kv_pool.h). */
#include "kv/kv_pool.h"
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"

enum { BLOCK_FREE = 0, BLOCK_CACHED = 1, BLOCK_USED = 2 };

mllm_status mllm_kv_pool_init(mllm_kv_pool *kp, const mllm_kv_pool_params *p) {
    memset(kp, 0, sizeof *kp);
    if (p->n_layer < 1 || p->n_head_kv < 1 || p->head_dim < 1 || p->n_blocks < 1 || p->block_size < 1 ||
        p->block_size > MLLM_KV_MAX_BLOCK_SIZE || p->dtype < MLLM_KV_DTYPE_F32 || p->dtype > MLLM_KV_DTYPE_Q8 ||
        p->n_head_kv > (1 << 16) || p->head_dim > (1 << 16) || p->n_blocks > (1 << 28) || p->ordered < 0 || p->ordered > 1)
        return mllm_err(MLLM_ERR_INVALID_ARG, "KV pool: invalid parameters (%d layers, %d x %d heads, block %d, %d blocks)",
                        p->n_layer, p->n_head_kv, p->head_dim, p->block_size, p->n_blocks);
    kp->p = *p;
    mllm_kv_paged lay;
    const size_t bb = mllm_kv_paged_layout(&lay, p->dtype, p->block_size, p->n_head_kv, p->head_dim);
    const size_t per_layer = bb * (size_t)p->n_blocks;
    if (per_layer / (size_t)p->n_blocks != bb || per_layer > SIZE_MAX / (size_t)p->n_layer)
        return mllm_err(MLLM_ERR_NOMEM, "KV pool: size overflows");
    kp->mem_size = per_layer * (size_t)p->n_layer;
    const size_t nb = (size_t)p->n_blocks;
    int nbk = 1;
    while (nbk < p->n_blocks) nbk <<= 1;
    kp->n_buckets = nbk;
    kp->mem = mllm_malloc_aligned(kp->mem_size);
    kp->layers = mllm_calloc((size_t)p->n_layer, sizeof *kp->layers);
    kp->ref = mllm_calloc(nb, sizeof *kp->ref);
    kp->state = mllm_calloc(nb, 1);
    kp->next = mllm_calloc(nb, sizeof *kp->next);
    kp->prev = mllm_calloc(nb, sizeof *kp->prev);
    kp->indexed = mllm_calloc(nb, sizeof *kp->indexed);
    kp->key = mllm_calloc(nb, sizeof *kp->key);
    kp->serial = mllm_calloc(nb, sizeof *kp->serial);
    kp->parent = mllm_calloc(nb, sizeof *kp->parent);
    kp->tokens = mllm_calloc(nb * (size_t)p->block_size, sizeof *kp->tokens);
    kp->hnext = mllm_calloc(nb, sizeof *kp->hnext);
    kp->buckets = mllm_malloc((size_t)nbk * sizeof *kp->buckets);
    if (!kp->mem || !kp->layers || !kp->ref || !kp->state || !kp->next || !kp->prev || !kp->indexed || !kp->key ||
        !kp->serial || !kp->parent || !kp->tokens || !kp->hnext || !kp->buckets) {
        mllm_kv_pool_free(kp);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory for a KV pool of %d blocks (%zu bytes)", p->n_blocks,
                        (size_t)(per_layer * (size_t)p->n_layer));
    }
    /* Not zeroed: attention reads only positions a sequence wrote (and
       blocks stay unresident until first written, as the contiguous cache's
       pages do). */
    for (int l = 0; l < p->n_layer; l++) {
        kp->layers[l] = lay;
        kp->layers[l].base = kp->mem + (size_t)l * per_layer;
        kp->layers[l].n_blocks = p->n_blocks;
        kp->layers[l].ordered = p->ordered;
        kp->layers[l].head_major = p->ordered && p->dtype == MLLM_KV_DTYPE_F32;
    }
    for (int i = 0; i < nbk; i++) kp->buckets[i] = -1;
    for (int i = 0; i < p->n_blocks; i++) kp->next[i] = i + 1 < p->n_blocks ? i + 1 : -1;
    kp->free_head = 0;
    kp->lru_head = kp->lru_tail = -1;
    kp->next_serial = 1;
    kp->st.n_blocks = kp->st.n_free = p->n_blocks;
    return MLLM_OK;
}

void mllm_kv_pool_free(mllm_kv_pool *kp) {
    if (!kp) return;
    mllm_free_aligned(kp->mem);
    mllm_free(kp->layers);
    mllm_free(kp->ref);
    mllm_free(kp->state);
    mllm_free(kp->next);
    mllm_free(kp->prev);
    mllm_free(kp->indexed);
    mllm_free(kp->key);
    mllm_free(kp->serial);
    mllm_free(kp->parent);
    mllm_free(kp->tokens);
    mllm_free(kp->hnext);
    mllm_free(kp->buckets);
    memset(kp, 0, sizeof *kp);
}

void mllm_kv_pool_get_stats(const mllm_kv_pool *kp, mllm_kv_pool_stats *out) { *out = kp->st; }

static void lru_unlink(mllm_kv_pool *kp, int32_t id) {
    if (kp->prev[id] >= 0) kp->next[kp->prev[id]] = kp->next[id];
    else kp->lru_head = kp->next[id];
    if (kp->next[id] >= 0) kp->prev[kp->next[id]] = kp->prev[id];
    else kp->lru_tail = kp->prev[id];
}

static void lru_push(mllm_kv_pool *kp, int32_t id) {
    kp->prev[id] = kp->lru_tail;
    kp->next[id] = -1;
    if (kp->lru_tail >= 0) kp->next[kp->lru_tail] = id;
    else kp->lru_head = id;
    kp->lru_tail = id;
}

static void free_push(mllm_kv_pool *kp, int32_t id) {
    kp->state[id] = BLOCK_FREE;
    kp->next[id] = kp->free_head;
    kp->free_head = id;
    kp->st.n_free++;
}

void mllm_kv_block_ref(mllm_kv_pool *kp, int32_t id) {
    if (kp->state[id] == BLOCK_CACHED) {
        lru_unlink(kp, id);
        kp->st.n_cached--;
        kp->st.n_used++;
        kp->state[id] = BLOCK_USED;
    }
    kp->ref[id]++;
}

void mllm_kv_block_unref(mllm_kv_pool *kp, int32_t id) {
    if (--kp->ref[id] > 0) return;
    kp->st.n_used--;
    if (kp->indexed[id]) { /* kept for a later prefix hit, most recent last */
        kp->state[id] = BLOCK_CACHED;
        lru_push(kp, id);
        kp->st.n_cached++;
    } else {
        free_push(kp, id);
    }
}

/* A block with one reference: a free one, else the least recently used
   cached one (evicted from the index); -1 when every block is in use. */
static int32_t block_alloc(mllm_kv_pool *kp) {
    int32_t id = kp->free_head;
    if (id >= 0) {
        kp->free_head = kp->next[id];
        kp->st.n_free--;
    } else if ((id = kp->lru_head) >= 0) {
        lru_unlink(kp, id);
        mllm_kv_index_remove(kp, id);
        kp->st.n_cached--;
        kp->st.evictions++;
    } else {
        return -1;
    }
    kp->state[id] = BLOCK_USED;
    kp->ref[id] = 1;
    kp->st.n_used++;
    return id;
}

void mllm_kv_pool_drop_cache(mllm_kv_pool *kp) {
    while (kp->lru_head >= 0) {
        int32_t id = kp->lru_head;
        lru_unlink(kp, id);
        mllm_kv_index_remove(kp, id);
        kp->st.n_cached--;
        free_push(kp, id);
    }
}

void mllm_kv_seq_init(mllm_kv_seq *s) { memset(s, 0, sizeof *s); }

void mllm_kv_seq_release(mllm_kv_pool *kp, mllm_kv_seq *s) {
    /* Last block first: parents become the more recently used, so the LRU
       evicts a chain from its end and a cached child never outlives its
       parent (it could not be found without it). */
    for (int i = s->n_blocks - 1; i >= 0; i--) mllm_kv_block_unref(kp, s->blocks[i]);
    mllm_free(s->blocks);
    memset(s, 0, sizeof *s);
}

void mllm_kv_seq_truncate(mllm_kv_pool *kp, mllm_kv_seq *s, int n) {
    if (n < 0) n = 0;
    if (n >= s->n_tokens) return;
    const int bs = kp->p.block_size, keep = (n + bs - 1) / bs;
    for (int i = s->n_blocks - 1; i >= keep; i--) mllm_kv_block_unref(kp, s->blocks[i]);
    s->n_blocks = keep;
    s->n_tokens = n;
    if (s->n_indexed > n / bs) s->n_indexed = n / bs;
}

static bool table_reserve(mllm_kv_seq *s, int n) {
    if (n <= s->cap) return true;
    int nc = s->cap ? s->cap * 2 : 16;
    while (nc < n) nc *= 2;
    int32_t *nb = mllm_realloc(s->blocks, (size_t)nc * sizeof *nb);
    if (!nb) return false;
    s->blocks = nb;
    s->cap = nc;
    return true;
}

/* Gives the sequence a private copy of its block i (every layer's bytes). */
static mllm_status cow(mllm_kv_pool *kp, mllm_kv_seq *s, int i) {
    const int32_t old = s->blocks[i], id = block_alloc(kp);
    if (id < 0) return mllm_err(MLLM_ERR_NOMEM, "KV pool full: no block for a copy on write (%d blocks)", kp->p.n_blocks);
    const size_t bb = kp->layers[0].block_bytes;
    for (int l = 0; l < kp->p.n_layer; l++)
        memcpy(kp->layers[l].base + (size_t)id * bb, kp->layers[l].base + (size_t)old * bb, bb);
    s->blocks[i] = id;
    mllm_kv_block_unref(kp, old);
    kp->st.cow_copies++;
    if (s->n_indexed > i) s->n_indexed = i;
    return MLLM_OK;
}

mllm_status mllm_kv_seq_grow(mllm_kv_pool *kp, mllm_kv_seq *s, int n) {
    if (n <= 0) return MLLM_OK;
    const int bs = kp->p.block_size;
    if (s->n_tokens > INT32_MAX - n) return mllm_err(MLLM_ERR_INVALID_ARG, "KV sequence too long");
    const int end = s->n_tokens + n, need = (end + bs - 1) / bs;
    if (!table_reserve(s, need)) return mllm_err(MLLM_ERR_NOMEM, "out of memory for a block table");
    /* Blocks the new positions land in that others see: copied first. */
    for (int i = s->n_tokens / bs; i < s->n_blocks && i < need; i++) {
        const int32_t id = s->blocks[i];
        if (kp->ref[id] > 1 || kp->indexed[id]) {
            mllm_status st = cow(kp, s, i);
            if (st != MLLM_OK) return st;
        }
    }
    while (s->n_blocks < need) {
        const int32_t id = block_alloc(kp);
        if (id < 0)
            return mllm_err(MLLM_ERR_NOMEM, "KV pool full: %d blocks of %d tokens all in use", kp->p.n_blocks, bs);
        s->blocks[s->n_blocks++] = id;
    }
    s->n_tokens = end;
    return MLLM_OK;
}

mllm_status mllm_kv_seq_fork(mllm_kv_pool *kp, mllm_kv_seq *dst, const mllm_kv_seq *src) {
    mllm_kv_seq_init(dst);
    if (!table_reserve(dst, src->n_blocks ? src->n_blocks : 1))
        return mllm_err(MLLM_ERR_NOMEM, "out of memory for a block table");
    for (int i = 0; i < src->n_blocks; i++) {
        dst->blocks[i] = src->blocks[i];
        mllm_kv_block_ref(kp, src->blocks[i]);
    }
    dst->n_blocks = src->n_blocks;
    dst->n_tokens = src->n_tokens;
    dst->n_indexed = src->n_indexed;
    return MLLM_OK;
}
