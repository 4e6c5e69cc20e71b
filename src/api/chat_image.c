/* mllm_chat_prefill (mllm.h): a conversation with images, as transformers'
   processor does it: the chat template places each image's token (the
   tower's image_token, models/vision_tower.h), the tower expands the k-th
   of them into the k-th image's tokens (pad runs, or tile markers around
   them), and those tokens are the vision tower's rows (through the model's
   embedding cache, api/vision.c). */
#include <stdio.h>
#include <string.h>
#include "api/engine_api.h"
#include "api/internal.h"
#include "api/vision.h"
#include "core/alloc.h"
#include "core/error.h"
#include "models/decoder/mrope.h"

static int count_pads(const int32_t *ids, size_t n, int32_t pad) {
    int c = 0;
    for (size_t i = 0; i < n; i++) c += ids[i] == pad;
    return c;
}

/* The images' embeddings (emb[0..n_images), through the model's cache;
   freed here on an error) and ids with the tower's expansion of each image
   token (*ex, *n_ex, at most max_tokens). */
static mllm_status embed_expand(mllm_model *m, const int32_t *ids, size_t n, int32_t pad, const void *const *images,
                                const size_t *image_lens, int n_images, int64_t max_tokens,
                                mllm_vision_embedding *emb, int32_t **ex, int64_t *n_ex) {
    memset(emb, 0, (size_t)n_images * sizeof *emb);
    *ex = NULL;
    mllm_status st = MLLM_OK;
    for (int k = 0; !st && k < n_images; k++) {
        char label[32];
        snprintf(label, sizeof label, "image %d", k);
        st = mllm_model_vision_embed(m, images[k], image_lens[k], label, &emb[k]);
    }
    if (!st) st = m->row->vision->expand(m->tok, ids, n, pad, emb, n_images, max_tokens, ex, n_ex);
    if (st)
        for (int k = 0; k < n_images; k++) mllm_vision_embedding_free(&emb[k]);
    return st;
}

MLLM_API int mllm_model_takes_images(mllm_model *m) {
    int32_t pad;
    return m && mllm_model_vision_pad(m, &pad) == MLLM_OK;
}

MLLM_API mllm_status mllm_chat_prefill(mllm_session *s, const char *conversation, const void *const *images,
                                       const size_t *image_lens, int n_images, size_t *n_reused) {
    if (n_reused) *n_reused = 0;
    if (!s || !conversation || n_images < 0 || (n_images && (!images || !image_lens)))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_chat_prefill: NULL argument");
    if (n_images > MLLM_VISION_MAX_IMAGES)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_chat_prefill: %d images, at most %d", n_images,
                        MLLM_VISION_MAX_IMAGES);
    for (int k = 0; k < n_images; k++)
        if (!images[k] || !image_lens[k]) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_chat_prefill: image %d is empty", k);
    int32_t *ids = NULL, *ex = NULL;
    size_t n = 0;
    int32_t pad = -1;
    /* a text-only model may still be chatted with through this call; with
       images, say first that it takes none */
    mllm_status st = MLLM_OK;
    if (n_images > 0 || s->n_imgs > 0) st = mllm_model_vision_pad(s->m, &pad);
    else pad = mllm_model_image_pad_token(s->m); /* a placed image without its file is an error */
    if (!st) st = mllm_chat_ids(s->m, conversation, &ids, &n);
    if (st) return st;
    int pads = pad >= 0 ? count_pads(ids, n, pad) : 0;
    if (!st && pads != n_images)
        st = mllm_err(MLLM_ERR_INVALID_ARG, "the rendered conversation places %d images, %d given (an image "
                                            "goes in a user message's content as {\"type\": \"image\"})",
                      pads, n_images);
    if (!st && n_images > 0 && s->kvp)
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "images with a paged KV cache (kv_type) are not supported yet; "
                                            "use the contiguous cache");
    if (st || n_images == 0) {
        if (!st) st = mllm_session_sync(s, ids, n, n_reused); /* text only: held images before the cut stay */
        mllm_free(ids);
        return st;
    }
    mllm_vision_embedding emb[MLLM_VISION_MAX_IMAGES];
    int64_t n_ex = 0;
    st = embed_expand(s->m, ids, n, pad, images, image_lens, n_images, s->n_ctx, emb, &ex, &n_ex);
    int64_t n_tok = 0;
    int cached = 0;
    double dec_ms = 0, enc_ms = 0;
    for (int k = 0; !st && k < n_images; k++) {
        n_tok += emb[k].n_rows;
        cached += emb[k].cached;
        dec_ms += emb[k].decode_ms;
        enc_ms += emb[k].encode_ms;
    }
    if (!st) st = mllm_session_sync_images(s, ex, (size_t)n_ex, pad, emb, n_images, n_reused);
    if (!st) {
        s->timings.n_images += n_images;
        s->timings.n_images_cached += cached;
        s->timings.n_image_tokens += (int)n_tok;
        s->timings.image_decode_ms += dec_ms;
        s->timings.vision_ms += enc_ms;
    }
    for (int k = 0; k < n_images; k++) mllm_vision_embedding_free(&emb[k]);
    mllm_free(ex);
    mllm_free(ids);
    return st;
}

void mllm_engine_image_prompt_free(mllm_engine_image_prompt *p) {
    if (!p) return;
    mllm_free(p->ids);
    mllm_free(p->id);
    mllm_free(p->n_rows);
    mllm_free(p->emb);
    mllm_free(p->rope_pos);
    mllm_free(p);
}

/* p's image rows (one array, in prompt order), identities and, with
   M-RoPE, positions, from the embeddings of its expanded ids. */
static mllm_status engine_rows(mllm_model *m, mllm_engine_image_prompt *p, const mllm_vision_embedding *emb,
                               int n_images, int32_t pad) {
    const mllm_hparams *c = &m->dec.cfg;
    const size_t E = (size_t)c->n_embd;
    int64_t rows = 0;
    for (int k = 0; k < n_images; k++) rows += emb[k].n_rows;
    const bool mrope = c->mrope[0] || c->mrope[1] || c->mrope[2];
    p->id = mllm_malloc((size_t)n_images * sizeof *p->id);
    p->n_rows = mllm_malloc((size_t)n_images * sizeof *p->n_rows);
    p->emb = mllm_malloc((size_t)rows * E * sizeof(float));
    p->rope_pos = mrope ? mllm_malloc(3 * (size_t)p->n * sizeof(int32_t)) : NULL;
    if (!p->id || !p->n_rows || !p->emb || (mrope && !p->rope_pos)) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    mllm_image_grid grids[MLLM_MROPE_MAX_GRIDS];
    int64_t r = 0;
    for (int k = 0; k < n_images; k++) {
        if (emb[k].merge != emb[0].merge) return mllm_err(MLLM_ERR_INVALID_ARG, "images with different merge sizes");
        p->id[k] = emb[k].id;
        p->n_rows[k] = emb[k].n_rows;
        memcpy(p->emb + (size_t)r * E, emb[k].emb, (size_t)emb[k].n_rows * E * sizeof(float));
        r += emb[k].n_rows;
        if (k < MLLM_MROPE_MAX_GRIDS) grids[k] = (mllm_image_grid){emb[k].grid[0], emb[k].grid[1], emb[k].grid[2]};
        p->n_cached += emb[k].cached;
    }
    int64_t next = p->n;
    if (mrope) {
        if (n_images > MLLM_MROPE_MAX_GRIDS)
            return mllm_err(MLLM_ERR_INVALID_ARG, "%d images, at most %d", n_images, MLLM_MROPE_MAX_GRIDS);
        mllm_status st = mllm_mrope_positions(p->ids, p->n, pad, grids, n_images, emb[0].merge, p->rope_pos, &next);
        if (st) return st;
    }
    p->image = (mllm_engine_image){.n_images = n_images, .id = p->id, .n_rows = p->n_rows, .emb = p->emb,
                                   .image_token = pad, .rope_pos = p->rope_pos, .rope_delta = (int)(next - p->n)};
    return MLLM_OK;
}

mllm_status mllm_engine_image_prompt_new(mllm_model *m, const char *conversation, const void *const *images,
                                         const size_t *image_lens, int n_images, int max_tokens,
                                         mllm_engine_image_prompt **out) {
    *out = NULL;
    if (!m || !conversation || n_images < 1 || n_images > MLLM_VISION_MAX_IMAGES || !images || !image_lens)
        return mllm_err(MLLM_ERR_INVALID_ARG, "engine images: 1 to %d images", MLLM_VISION_MAX_IMAGES);
    for (int k = 0; k < n_images; k++)
        if (!images[k] || !image_lens[k]) return mllm_err(MLLM_ERR_INVALID_ARG, "image %d is empty", k);
    int32_t pad = -1, *ids = NULL;
    size_t n = 0;
    mllm_status st = mllm_model_vision_pad(m, &pad);
    if (!st) st = mllm_chat_ids(m, conversation, &ids, &n);
    if (st) return st;
    const int pads = count_pads(ids, n, pad);
    if (pads != n_images) {
        mllm_free(ids);
        return mllm_err(MLLM_ERR_INVALID_ARG, "the rendered conversation places %d images, %d given", pads, n_images);
    }
    mllm_engine_image_prompt *p = mllm_calloc(1, sizeof *p);
    mllm_vision_embedding emb[MLLM_VISION_MAX_IMAGES];
    int64_t n_ex = 0;
    st = p ? embed_expand(m, ids, n, pad, images, image_lens, n_images, max_tokens, emb, &p->ids, &n_ex)
           : mllm_err(MLLM_ERR_NOMEM, "out of memory");
    mllm_free(ids);
    if (st) {
        mllm_engine_image_prompt_free(p);
        return st;
    }
    p->n = (int)n_ex;
    st = engine_rows(m, p, emb, n_images, pad);
    for (int k = 0; k < n_images; k++) mllm_vision_embedding_free(&emb[k]);
    if (st) {
        mllm_engine_image_prompt_free(p);
        return st;
    }
    *out = p;
    return MLLM_OK;
}
