/* The embedding cache of a vision tower (vision_cache.h). */
#include "models/vision_cache.h"
#include <pthread.h>
#include <string.h>
#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "formats/mllmfile.h"
#include "image/image.h"

typedef struct {
    uint64_t hash, id, last_use;
    void *bytes; /* the encoded file: compared on a hit */
    size_t len, cost;
    mllm_vision_embedding e; /* emb owned here; decode/encode times of the first encode */
} cache_entry;

struct mllm_vision_cache {
    pthread_mutex_t mu;     /* the entries */
    pthread_mutex_t enc_mu; /* one encode at a time: the tower's scratch is its own */
    const mllm_vision_family *fam;
    void *tower;
    uint64_t tower_id;      /* the tower's preprocessing, weights and backends: part of every key */
    int n_embd;
    cache_entry ent[MLLM_VISION_CACHE_MAX_ENTRIES];
    int n;
    size_t bytes;
    uint64_t clock;
};

uint64_t mllm_vision_params_hash(const int64_t *ints, int n_ints, const float mean[3], const float std[3]) {
    mllm_xxh64_state h;
    mllm_xxh64_init(&h);
    mllm_xxh64_update(&h, ints, (size_t)n_ints * sizeof *ints);
    mllm_xxh64_update(&h, mean, 3 * sizeof *mean);
    mllm_xxh64_update(&h, std, 3 * sizeof *std);
    return mllm_xxh64_digest(&h);
}

mllm_status mllm_vision_cache_new(const mllm_vision_family *fam, void *tower, int n_embd, uint64_t weights_id,
                                  mllm_vision_cache **out) {
    *out = NULL;
    mllm_vision_cache *v = mllm_calloc(1, sizeof *v);
    if (!v) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    if (pthread_mutex_init(&v->mu, NULL) != 0) {
        mllm_free(v);
        return mllm_err(MLLM_ERR_NOMEM, "cannot create a mutex");
    }
    if (pthread_mutex_init(&v->enc_mu, NULL) != 0) {
        pthread_mutex_destroy(&v->mu);
        mllm_free(v);
        return mllm_err(MLLM_ERR_NOMEM, "cannot create a mutex");
    }
    v->fam = fam;
    v->tower = tower;
    const uint64_t ids[2] = {fam->params_hash(tower), weights_id};
    v->tower_id = mllm_xxh64(ids, sizeof ids);
    v->n_embd = n_embd;
    *out = v;
    return MLLM_OK;
}

static uint64_t key_of(const void *data, size_t len, const mllm_vision_cache *v) {
    mllm_xxh64_state h;
    mllm_xxh64_init(&h);
    mllm_xxh64_update(&h, &len, sizeof len);
    mllm_xxh64_update(&h, data, len);
    mllm_xxh64_update(&h, &v->tower_id, sizeof v->tower_id);
    return mllm_xxh64_digest(&h);
}

/* A copy of a cached entry's embedding into out (v->mu held), or false. */
static bool cache_get(mllm_vision_cache *v, uint64_t key, const void *data, size_t len, mllm_vision_embedding *out) {
    for (int i = 0; i < v->n; i++) {
        cache_entry *c = &v->ent[i];
        if (c->hash != key || c->len != len || memcmp(c->bytes, data, len)) continue;
        const size_t sz = (size_t)c->e.n_rows * (size_t)v->n_embd * sizeof(float);
        float *emb = mllm_malloc(sz ? sz : 1);
        if (!emb) return false; /* encode it again rather than fail */
        memcpy(emb, c->e.emb, sz);
        *out = c->e;
        out->emb = emb;
        out->cached = true;
        out->decode_ms = out->encode_ms = 0;
        c->last_use = ++v->clock;
        return true;
    }
    return false;
}

static void drop(mllm_vision_cache *v, int i) {
    v->bytes -= v->ent[i].cost;
    mllm_free(v->ent[i].bytes);
    mllm_free(v->ent[i].e.emb);
    v->ent[i] = v->ent[--v->n];
}

/* Keeps a copy of e (v->mu held); out of memory or too large: not kept. */
static void cache_put(mllm_vision_cache *v, uint64_t key, const void *data, size_t len, mllm_vision_embedding *e) {
    const size_t emb_sz = (size_t)e->n_rows * (size_t)v->n_embd * sizeof(float);
    const size_t cost = emb_sz + len;
    if (cost > MLLM_VISION_CACHE_MAX_BYTES) return;
    while (v->n && (v->n == MLLM_VISION_CACHE_MAX_ENTRIES || v->bytes + cost > MLLM_VISION_CACHE_MAX_BYTES)) {
        int old = 0;
        for (int i = 1; i < v->n; i++)
            if (v->ent[i].last_use < v->ent[old].last_use) old = i;
        drop(v, old);
    }
    cache_entry c = {.hash = key, .id = e->id, .last_use = ++v->clock, .len = len, .cost = cost, .e = *e};
    c.bytes = mllm_malloc(len ? len : 1);
    c.e.emb = mllm_malloc(emb_sz ? emb_sz : 1);
    if (!c.bytes || !c.e.emb) {
        mllm_free(c.bytes);
        mllm_free(c.e.emb);
        return;
    }
    memcpy(c.bytes, data, len);
    memcpy(c.e.emb, e->emb, emb_sz);
    v->ent[v->n++] = c;
    v->bytes += cost;
}

/* The cache's new entry for out (an encode just done). */
static void keep(mllm_vision_cache *v, uint64_t key, const void *data, size_t len, mllm_vision_embedding *out) {
    pthread_mutex_lock(&v->mu);
    cache_put(v, key, data, len, out);
    pthread_mutex_unlock(&v->mu);
}

mllm_status mllm_vision_cache_embed(mllm_vision_cache *v, const void *data, size_t len, const char *label,
                                    mllm_vision_embedding *out) {
    memset(out, 0, sizeof *out);
    if (!label) label = "image";
    pthread_mutex_lock(&v->mu);
    const uint64_t key = key_of(data, len, v);
    const bool hit = cache_get(v, key, data, len, out);
    pthread_mutex_unlock(&v->mu);
    if (hit) return MLLM_OK;
    mllm_image im = {0};
    const double t0 = mllm_clock_mono_ms();
    mllm_status st = mllm_image_load_memory(data, len, label, 0, &im, NULL);
    out->decode_ms = mllm_clock_mono_ms() - t0;
    if (st == MLLM_OK) {
        out->width = im.width;
        out->height = im.height;
        pthread_mutex_lock(&v->enc_mu);
        st = v->fam->embed(v->tower, &im, out);
        pthread_mutex_unlock(&v->enc_mu);
    }
    if (st == MLLM_OK) {
        out->id = key ? key : 1; /* (0 means none) */
        keep(v, key, data, len, out);
    }
    else mllm_vision_embedding_free(out);
    mllm_image_free(&im);
    return st;
}

void mllm_vision_cache_free(mllm_vision_cache *v) {
    if (!v) return;
    while (v->n) drop(v, 0);
    pthread_mutex_destroy(&v->mu);
    pthread_mutex_destroy(&v->enc_mu);
    mllm_free(v);
}
