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
#include "image/idefics3_pre.h"
#include "image/qwen2vl_pre.h"
#include "models/vision/idefics3_vision.h"
#include "models/vision/qwen2vl_vision.h"

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
    mllm_qwen2vl_vision *tower;        /* Qwen2.5-VL, or */
    mllm_idefics3_vision *i3;          /* Idefics3 / SmolVLM */
    mllm_qwen2vl_pre_params pp;
    mllm_idefics3_pre_params ip;
    int32_t pad;
    int n_embd;
    cache_entry ent[MLLM_VISION_CACHE_MAX_ENTRIES];
    int n;
    size_t bytes;
    uint64_t next_id, clock;
};

static pthread_mutex_t g_create_mu = PTHREAD_MUTEX_INITIALIZER;

void mllm_vision_embedding_free(mllm_vision_embedding *e) {
    if (!e) return;
    mllm_free(e->emb);
    memset(e, 0, sizeof *e);
}

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

/* Idefics3 / SmolVLM: its registry row; its image token is <image>. */
static bool is_idefics3(const mllm_model *m) { return m && !strcmp(m->dec.cfg.arch, "idefics3"); }

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
    mllm_status st;
    const char *where = m->mmproj ? m->mmproj : m->file ? m->file->path : "?";
    if (!m->file || m->asr || m->enc) {
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "this model takes no images (not a vision-language decoder)");
    } else if (is_idefics3(m)) {
        st = m->mmproj || m->file->kind != MLLM_FILE_HF
                 ? mllm_err(MLLM_ERR_UNSUPPORTED, "%s: Idefics3 / SmolVLM vision is read from a Hugging Face folder "
                                                  "only (no mmproj GGUF of this family yet)", where)
                 : mllm_idefics3_vision_open(m->file->path, m->n_threads > 0 ? m->n_threads : 1, &v->i3);
        /* the tower's graphs run on the text model's backends */
        if (!st) st = mllm_idefics3_vision_use_backends(v->i3, m->dec.backends, m->dec.n_backends);
        if (st) return fail(v, st);
        const mllm_idefics3_vision_config *ic = mllm_idefics3_vision_config_of(v->i3);
        if (ic->out_hidden != m->dec.cfg.n_embd)
            return fail(v, mllm_err(MLLM_ERR_FORMAT, "%s: the connector's output width %d is not the text model's %d",
                                    where, ic->out_hidden, m->dec.cfg.n_embd));
        if ((v->pad = mllm_model_image_pad_token(m)) < 0)
            return fail(v, mllm_err(MLLM_ERR_FORMAT, "this model's tokenizer has no <image> token"));
        v->n_embd = (int)m->dec.cfg.n_embd;
        mllm_idefics3_vision_pre_params(v->i3, &v->ip);
        v->state = 1;
        return MLLM_OK;
    } else if (m->mmproj) {
        st = mllm_qwen2vl_vision_open_gguf(m->mmproj, m->n_threads > 0 ? m->n_threads : 1, &v->tower);
    } else if (m->file->kind == MLLM_FILE_HF) {
        st = mllm_qwen2vl_vision_open(m->file->path, m->n_threads > 0 ? m->n_threads : 1, &v->tower);
    } else {
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s holds no vision tower: give the mmproj GGUF (--mmproj, "
                                            "mllm_load_params.mmproj) or a Hugging Face folder", where);
    }
    if (!st) st = mllm_qwen2vl_vision_use_backends(v->tower, m->dec.backends, m->dec.n_backends);
    if (st) return fail(v, st);
    const mllm_qwen2vl_vision_config *vc = mllm_qwen2vl_vision_config_of(v->tower);
    const mllm_hparams *c = &m->dec.cfg;
    if (vc->out_hidden != c->n_embd)
        return fail(v, mllm_err(MLLM_ERR_FORMAT, "%s: the vision tower's output width %d is not the text model's %d",
                                where, vc->out_hidden, c->n_embd));
    if (!(c->mrope[0] || c->mrope[1] || c->mrope[2]))
        return fail(v, mllm_err(MLLM_ERR_UNSUPPORTED, "%s has no M-RoPE sections: it does not take images", c->arch));
    if ((v->pad = mllm_model_image_pad_token(m)) < 0)
        return fail(v, mllm_err(MLLM_ERR_FORMAT, "this model's tokenizer has no <|image_pad|> token"));
    v->n_embd = (int)c->n_embd;
    mllm_qwen2vl_vision_pre_params(v->tower, &v->pp);
    v->state = 1;
    return MLLM_OK;
}

int32_t mllm_model_image_pad_token(const mllm_model *m) {
    int32_t one[4];
    size_t np = 0;
    const char *t = is_idefics3(m) ? "<image>" : "<|image_pad|>";
    if (!m || !m->tok || mllm_tokenizer_encode(m->tok, t, strlen(t), false, true, one, 4, &np) != MLLM_OK || np != 1)
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
    /* field by field: no padding bytes hashed */
    const mllm_qwen2vl_pre_params *pp = &v->pp;
    const mllm_idefics3_pre_params *ip = &v->ip;
    const int64_t ints[5] = {pp->patch_size, pp->temporal_patch_size, pp->merge_size, pp->min_pixels, pp->max_pixels};
    const int64_t ints3[4] = {ip->longest_edge, ip->tile, ip->do_resize, ip->do_split};
    mllm_xxh64_update(&h, v->i3 ? (const void *)ints3 : (const void *)ints, v->i3 ? sizeof ints3 : sizeof ints);
    mllm_xxh64_update(&h, v->i3 ? ip->mean : pp->mean, sizeof pp->mean);
    mllm_xxh64_update(&h, v->i3 ? ip->std : pp->std, sizeof pp->std);
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

/* Idefics3 / SmolVLM: tiles (idefics3_pre.h), the tower per tile. The grid
   is written so grid h * w / merge^2 is the row count: 1 x (tiles * side)
   x side patches, merge = scale_factor; tile_rows / tile_cols place them. */
static mllm_status embed_idefics3(struct mllm_vision *v, uint64_t key, const void *data, size_t len, const char *label,
                                  mllm_vision_embedding *out) {
    mllm_image im = {0};
    mllm_idefics3_pixels px = {0};
    const double t0 = mllm_now_ms();
    mllm_status st = mllm_image_load_memory(data, len, label, 0, &im, NULL);
    if (!st) st = mllm_idefics3_preprocess(&im, &v->ip, &px);
    const double t1 = mllm_now_ms();
    if (!st) {
        pthread_mutex_lock(&v->enc_mu);
        st = mllm_idefics3_vision_encode(v->i3, &px, &out->emb, &out->n_rows);
        pthread_mutex_unlock(&v->enc_mu);
    }
    if (!st) {
        const mllm_idefics3_vision_config *c = mllm_idefics3_vision_config_of(v->i3);
        const int side = c->image_size / c->patch;
        *out = (mllm_vision_embedding){.grid = {1, px.n_tiles * side, side}, .merge = c->scale,
                                       .n_rows = out->n_rows, .emb = out->emb, .width = im.width,
                                       .height = im.height, .resized_w = px.resized_w, .resized_h = px.resized_h,
                                       .decode_ms = t1 - t0, .encode_ms = mllm_now_ms() - t1,
                                       .tile_rows = px.rows, .tile_cols = px.cols, .tile_tokens = c->image_seq_len};
        keep(v, key, data, len, out);
    } else {
        mllm_vision_embedding_free(out);
    }
    mllm_idefics3_pixels_free(&px);
    mllm_image_free(&im);
    return st;
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
    const mllm_qwen2vl_pre_params pp = v->pp;
    pthread_mutex_unlock(&v->mu);
    if (st || hit) return st;
    if (v->i3) return embed_idefics3(v, key, data, len, label, out);

    mllm_image im = {0};
    mllm_qwen2vl_pixels px = {0};
    const double t0 = mllm_now_ms();
    if ((st = mllm_image_load_memory(data, len, label, 0, &im, NULL)) == MLLM_OK)
        st = mllm_qwen2vl_preprocess(&im, &pp, &px);
    const double t1 = mllm_now_ms();
    if (st == MLLM_OK) {
        pthread_mutex_lock(&v->enc_mu);
        st = mllm_qwen2vl_vision_encode(v->tower, &px, &out->emb, &out->n_rows);
        pthread_mutex_unlock(&v->enc_mu);
    }
    if (st == MLLM_OK) {
        *out = (mllm_vision_embedding){.grid = {px.grid_t, px.grid_h, px.grid_w}, .merge = pp.merge_size,
                                       .n_rows = out->n_rows, .emb = out->emb, .width = im.width,
                                       .height = im.height, .resized_w = px.resized_w, .resized_h = px.resized_h,
                                       .decode_ms = t1 - t0, .encode_ms = mllm_now_ms() - t1};
        keep(v, key, data, len, out);
    } else {
        mllm_vision_embedding_free(out);
    }
    mllm_qwen2vl_pixels_free(&px);
    mllm_image_free(&im);
    return st;
}

void mllm_model_free_vision(mllm_model *m) {
    struct mllm_vision *v = m ? m->vision : NULL;
    if (!v) return;
    while (v->n) drop(v, 0);
    mllm_qwen2vl_vision_free(v->tower);
    mllm_idefics3_vision_free(v->i3);
    pthread_mutex_destroy(&v->mu);
    pthread_mutex_destroy(&v->enc_mu);
    mllm_free(v);
    m->vision = NULL;
}
