/* The model's vision tower, opened on first use, and its embedding cache
   (api/vision.h). */
#include "api/vision.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "api/internal.h"
#include "core/alloc.h"
#include "core/error.h"
#include "formats/mllmfile.h"
#include "image/image.h"
#include "models/vision_tower.h"

typedef struct {
    uint64_t hash, id, last_use;
    void *bytes; /* the encoded file: compared on a hit */
    size_t len, cost;
    mllm_vision_embedding e; /* emb owned here; decode/encode times of the first encode */
} cache_entry;

struct mllm_vision {
    pthread_mutex_t mu;    /* the state and the cache */
    pthread_mutex_t enc_mu; /* one encode at a time: the tower's scratch and threads are its own */
    int state;             /* 0: not tried, 1: open, -1: failed (err says why) */
    mllm_status err_st;
    char err[512];
    const mllm_vision_family *fam; /* the decoder row's tower */
    void *tower;
    uint64_t params_hash;  /* of the tower's preprocessing, part of every key */
    int32_t pad;
    int n_embd;
    cache_entry ent[MLLM_VISION_CACHE_MAX_ENTRIES];
    int n;
    size_t bytes;
    uint64_t next_id, clock;
};

static pthread_mutex_t g_create_mu = PTHREAD_MUTEX_INITIALIZER;

/* The model's vision state, created once (the model is shared by threads). */
static struct mllm_vision *vision_of(mllm_model *m) {
    pthread_mutex_lock(&g_create_mu);
    if (!m->vision) {
        struct mllm_vision *v = mllm_calloc(1, sizeof *v);
        if (v && pthread_mutex_init(&v->mu, NULL) != 0) { mllm_free(v); v = NULL; }
        if (v && pthread_mutex_init(&v->enc_mu, NULL) != 0) {
            pthread_mutex_destroy(&v->mu);
            mllm_free(v);
            v = NULL;
        }
        if (v) v->next_id = 1;
        m->vision = v;
    }
    pthread_mutex_unlock(&g_create_mu);
    return m->vision;
}

static mllm_status fail(struct mllm_vision *v, mllm_status st) {
    v->state = -1;
    v->err_st = st;
    snprintf(v->err, sizeof v->err, "%s", mllm_last_error());
    return st;
}

/* Opens the tower (v->mu held). */
static mllm_status open_tower(mllm_model *m, struct mllm_vision *v) {
    if (v->state > 0) return MLLM_OK;
    if (v->state < 0) return mllm_err(v->err_st, "%s", v->err);
    const char *where = m->mmproj ? m->mmproj : m->file ? m->file->path : "?";
    const mllm_vision_family *fam = m->row && m->row->kind == MLLM_KIND_DECODER ? m->row->vision : NULL;
    if (!m->file || !fam)
        return fail(v, mllm_err(MLLM_ERR_UNSUPPORTED, "this model takes no images (%s is not a vision-language "
                                                      "decoder)", m->row ? m->row->name : "it"));
    mllm_status st = fam->open(m->file->path, m->file->kind == MLLM_FILE_HF, m->mmproj, m->pool, &v->tower);
    if (st) return fail(v, st);
    v->fam = fam;
    /* the tower's graphs run on the text model's backends */
    if ((st = fam->use_backends(v->tower, m->dec.backends, m->dec.n_backends))) return fail(v, st);
    const mllm_hparams *c = &m->dec.cfg;
    if (fam->out_width(v->tower) != c->n_embd)
        return fail(v, mllm_err(MLLM_ERR_FORMAT, "%s: the vision tower's output width %d is not the text model's %d",
                                where, fam->out_width(v->tower), c->n_embd));
    if (fam->mrope && !(c->mrope[0] || c->mrope[1] || c->mrope[2]))
        return fail(v, mllm_err(MLLM_ERR_UNSUPPORTED, "%s has no M-RoPE sections: it does not take images", c->arch));
    if ((v->pad = mllm_model_image_pad_token(m)) < 0)
        return fail(v, mllm_err(MLLM_ERR_FORMAT, "this model's tokenizer has no %s token", fam->image_token));
    v->params_hash = fam->params_hash(v->tower);
    v->n_embd = (int)c->n_embd;
    v->state = 1;
    return MLLM_OK;
}

int32_t mllm_model_image_pad_token(const mllm_model *m) {
    int32_t one[4];
    size_t np = 0;
    const mllm_vision_family *fam = m && m->row && m->row->kind == MLLM_KIND_DECODER ? m->row->vision : NULL;
    const char *t = fam ? fam->image_token : NULL;
    if (!t || !m->tok || mllm_tokenizer_encode(m->tok, t, strlen(t), false, true, one, 4, &np) != MLLM_OK || np != 1)
        return -1;
    return one[0];
}

mllm_status mllm_model_vision_pad(mllm_model *m, int32_t *pad) {
    if (!m || !pad) return mllm_err(MLLM_ERR_INVALID_ARG, "vision: NULL argument");
    struct mllm_vision *v = vision_of(m);
    if (!v) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    pthread_mutex_lock(&v->mu);
    mllm_status st = open_tower(m, v);
    *pad = v->pad;
    pthread_mutex_unlock(&v->mu);
    return st;
}

static uint64_t key_of(const void *data, size_t len, const struct mllm_vision *v) {
    mllm_xxh64_state h;
    mllm_xxh64_init(&h);
    mllm_xxh64_update(&h, &len, sizeof len);
    mllm_xxh64_update(&h, data, len);
    mllm_xxh64_update(&h, &v->params_hash, sizeof v->params_hash);
    return mllm_xxh64_digest(&h);
}

/* A copy of a cached entry's embedding into out (v->mu held), or false. */
static bool cache_get(struct mllm_vision *v, uint64_t key, const void *data, size_t len, mllm_vision_embedding *out) {
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

static void drop(struct mllm_vision *v, int i) {
    v->bytes -= v->ent[i].cost;
    mllm_free(v->ent[i].bytes);
    mllm_free(v->ent[i].e.emb);
    v->ent[i] = v->ent[--v->n];
}

/* Keeps a copy of e (v->mu held); out of memory or too large: not kept. */
static void cache_put(struct mllm_vision *v, uint64_t key, const void *data, size_t len, mllm_vision_embedding *e) {
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
static void keep(struct mllm_vision *v, uint64_t key, const void *data, size_t len, mllm_vision_embedding *out) {
    pthread_mutex_lock(&v->mu);
    out->id = v->next_id++;
    cache_put(v, key, data, len, out);
    pthread_mutex_unlock(&v->mu);
}

mllm_status mllm_model_vision_embed(mllm_model *m, const void *data, size_t len, const char *label,
                                    mllm_vision_embedding *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!m || !data || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "vision: NULL argument");
    if (!label) label = "image";
    struct mllm_vision *v = vision_of(m);
    if (!v) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    pthread_mutex_lock(&v->mu);
    mllm_status st = open_tower(m, v);
    const uint64_t key = st ? 0 : key_of(data, len, v);
    const bool hit = !st && cache_get(v, key, data, len, out);
    pthread_mutex_unlock(&v->mu);
    if (st || hit) return st;

    mllm_image im = {0};
    const double t0 = mllm_clock_mono_ms();
    st = mllm_image_load_memory(data, len, label, 0, &im, NULL);
    out->decode_ms = mllm_clock_mono_ms() - t0;
    if (st == MLLM_OK) {
        out->width = im.width;
        out->height = im.height;
        pthread_mutex_lock(&v->enc_mu);
        st = v->fam->embed(v->tower, &im, out);
        pthread_mutex_unlock(&v->enc_mu);
    }
    if (st == MLLM_OK) keep(v, key, data, len, out);
    else mllm_vision_embedding_free(out);
    mllm_image_free(&im);
    return st;
}

void mllm_model_free_vision(mllm_model *m) {
    struct mllm_vision *v = m ? m->vision : NULL;
    if (!v) return;
    while (v->n) drop(v, 0);
    if (v->tower) v->fam->free(v->tower);
    pthread_mutex_destroy(&v->mu);
    pthread_mutex_destroy(&v->enc_mu);
    mllm_free(v);
    m->vision = NULL;
}
