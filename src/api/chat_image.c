/* mllm_chat_prefill (mllm.h): a conversation with images, as transformers'
   processor does it: the chat template places each image's token (the
   tower's image_token, models/vision_tower.h), the tower expands the k-th
   of them into the k-th image's tokens (pad runs, or tile markers around
   them), and those tokens are the vision tower's rows (through the model's
   embedding cache, api/vision.c). */
#include <stdio.h>
#include <string.h>
#include "api/internal.h"
#include "api/vision.h"
#include "core/alloc.h"
#include "core/error.h"

static int count_pads(const int32_t *ids, size_t n, int32_t pad) {
    int c = 0;
    for (size_t i = 0; i < n; i++) c += ids[i] == pad;
    return c;
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
    memset(emb, 0, sizeof emb);
    int64_t n_ex = 0, n_tok = 0;
    int cached = 0;
    double dec_ms = 0, enc_ms = 0;
    for (int k = 0; !st && k < n_images; k++) {
        char label[32];
        snprintf(label, sizeof label, "image %d", k);
        st = mllm_model_vision_embed(s->m, images[k], image_lens[k], label, &emb[k]);
        if (st) break;
        n_tok += emb[k].n_rows;
        cached += emb[k].cached;
        dec_ms += emb[k].decode_ms;
        enc_ms += emb[k].encode_ms;
    }
    if (!st) st = s->m->row->vision->expand(s->m->tok, ids, n, pad, emb, n_images, s->n_ctx, &ex, &n_ex);
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
