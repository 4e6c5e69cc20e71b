/* The model's vision tower, opened on first use from its registry row,
   and its embedding cache (models/vision_cache.h) (api/vision.h). */
#include "api/vision.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "api/internal.h"
#include "core/alloc.h"
#include "core/error.h"
#include "formats/mllmfile.h"
#include "formats/model_file.h"
#include "models/vision_cache.h"
#include "models/vision_tower.h"

struct mllm_vision {
    pthread_mutex_t mu;    /* the state */
    int state;             /* 0: not tried, 1: open, -1: failed (err says why) */
    mllm_status err_st;
    char err[512];
    const mllm_vision_family *fam; /* the decoder row's tower */
    void *tower;
    int32_t pad;
    mllm_vision_cache *cache; /* its embeddings (models/vision_cache.h) */
};

static pthread_mutex_t g_create_mu = PTHREAD_MUTEX_INITIALIZER;

/* The model's vision state, created once (the model is shared by threads). */
static struct mllm_vision *vision_of(mllm_model *m) {
    pthread_mutex_lock(&g_create_mu);
    if (!m->vision) {
        struct mllm_vision *v = mllm_calloc(1, sizeof *v);
        if (v && pthread_mutex_init(&v->mu, NULL) != 0) { mllm_free(v); v = NULL; }
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

/* The file's metadata (its hyper-parameters: GGUF keys, or config.json's
   fields) into h: keys, numbers and strings; a string array (a
   vocabulary) by its length. */
static void hash_meta(const mllm_meta *m, mllm_xxh64_state *h) {
    for (size_t i = 0; i < m->n; i++) {
        const mllm_meta_entry *e = &m->e[i];
        const int64_t v[3] = {e->type, e->i, (int64_t)e->len};
        mllm_xxh64_update(h, e->key, strlen(e->key) + 1);
        mllm_xxh64_update(h, v, sizeof v);
        mllm_xxh64_update(h, &e->f, sizeof e->f);
        if (e->type == MLLM_META_STR) mllm_xxh64_update(h, e->s, e->len);
        if (e->type == MLLM_META_ARR_NUM) mllm_xxh64_update(h, e->num, e->len * sizeof *e->num);
    }
}

/* What the tower's rows depend on besides the image and its
   preprocessing: the file it was read from (the mmproj, else the model
   file: its weights' fingerprint, mllm_model_file_fingerprint, and its
   hyper-parameters) and the backends its graphs run on. Part of an
   image's key (vision_cache.h), so the prefix store never gives one
   tower's K/V to another's image. */
static mllm_status tower_identity(const mllm_model *m, uint64_t *out) {
    mllm_model_file *own = NULL;
    if (m->mmproj) {
        mllm_status st = mllm_model_file_open(m->mmproj, &own);
        if (st) return st;
    }
    const mllm_model_file *f = own ? own : m->file;
    mllm_xxh64_state h;
    mllm_xxh64_init(&h);
    mllm_model_file_fingerprint(f, &h);
    hash_meta(&f->meta, &h);
    mllm_model_file_close(own);
    for (int i = 0; i < m->dec.n_backends; i++)
        mllm_xxh64_update(&h, m->dec.backends[i]->name, strlen(m->dec.backends[i]->name) + 1);
    *out = mllm_xxh64_digest(&h);
    return MLLM_OK;
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
    uint64_t weights_id = 0;
    if ((st = tower_identity(m, &weights_id))) return fail(v, st);
    if ((st = mllm_vision_cache_new(fam, v->tower, (int)c->n_embd, weights_id, &v->cache))) return fail(v, st);
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

mllm_status mllm_model_vision_embed(mllm_model *m, const void *data, size_t len, const char *label,
                                    mllm_vision_embedding *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!m || !data || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "vision: NULL argument");
    struct mllm_vision *v = vision_of(m);
    if (!v) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    pthread_mutex_lock(&v->mu);
    mllm_status st = open_tower(m, v);
    pthread_mutex_unlock(&v->mu);
    return st ? st : mllm_vision_cache_embed(v->cache, data, len, label, out);
}

void mllm_model_free_vision(mllm_model *m) {
    struct mllm_vision *v = m ? m->vision : NULL;
    if (!v) return;
    mllm_vision_cache_free(v->cache);
    if (v->tower) v->fam->free(v->tower);
    pthread_mutex_destroy(&v->mu);
    mllm_free(v);
    m->vision = NULL;
}
