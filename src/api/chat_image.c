/* mllm_chat_prefill (mllm.h): a conversation with images, as transformers'
   processor does it: the chat template places each image's
   <|vision_start|><|image_pad|><|vision_end|> (Idefics3 / SmolVLM: <image>),
   the k-th <|image_pad|> is expanded to the k-th image's token count
   (Idefics3: to its tiles' markers and <image> tokens), and those tokens are the
   vision tower's rows (through the model's embedding cache, api/vision.c). */
#include <stdio.h>
#include <string.h>
#include "api/internal.h"
#include "core/alloc.h"
#include "core/error.h"
#include "image/idefics3_pre.h"
#include "models/decoder/qwen2vl_mrope.h"
#include "tokenizer/tokenizer.h"

static int count_pads(const int32_t *ids, size_t n, int32_t pad) {
    int c = 0;
    for (size_t i = 0; i < n; i++) c += ids[i] == pad;
    return c;
}

/* Idefics3 / SmolVLM: the k-th <image> of ids becomes the k-th image's
   prompt text (tile markers, its <image> tokens; idefics3_pre.h),
   tokenized as transformers tokenizes the expanded text: the replacement
   starts and ends with a special token, so it tokenizes on its own. */
static mllm_status expand_idefics3(const mllm_model *m, const int32_t *ids, size_t n, int32_t pad,
                                   const mllm_vision_embedding *emb, int n_images, int n_ctx, int32_t **out,
                                   int64_t *n_out) {
    size_t cap = n, len = 0;
    for (int k = 0; k < n_images; k++)
        cap += (size_t)(emb[k].tile_rows * emb[k].tile_cols + 1) * ((size_t)emb[k].tile_tokens + 4) +
               (size_t)emb[k].tile_rows + 2;
    int32_t *o = mllm_malloc(cap * sizeof(int32_t));
    if (!o) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    mllm_status st = MLLM_OK;
    for (size_t i = 0, k = 0; !st && i < n; i++) {
        if (ids[i] != pad) {
            o[len++] = ids[i];
            continue;
        }
        const mllm_vision_embedding *e = &emb[k++];
        char *text = mllm_idefics3_image_prompt(e->tile_rows, e->tile_cols, e->tile_tokens);
        size_t got = 0;
        if (!text) st = mllm_err(MLLM_ERR_INVALID_ARG, "image %zu: %d x %d tiles of %d tokens", k - 1, e->tile_rows,
                                 e->tile_cols, e->tile_tokens);
        if (!st) st = mllm_tokenizer_encode(m->tok, text, strlen(text), false, true, o + len, cap - len, &got);
        int64_t seen = 0;
        for (size_t j = 0; !st && j < got; j++) seen += o[len + j] == pad;
        /* a tokenizer without <row_R_col_C> or <global-img> tokens would
           spell them as text: the image's token count still has to hold */
        if (!st && seen != e->n_rows)
            st = mllm_err(MLLM_ERR_FORMAT, "image %zu: its prompt text gives %lld <image> tokens for %lld rows (does "
                                           "the tokenizer have the <row_R_col_C> and <global-img> tokens?)",
                          k - 1, (long long)seen, (long long)e->n_rows);
        len += got;
        mllm_free(text);
    }
    if (!st && len > (size_t)n_ctx)
        st = mllm_err(MLLM_ERR_CONTEXT_FULL, "the prompt with its images is %zu tokens, n_ctx %d", len, n_ctx);
    if (st) {
        mllm_free(o);
        return st;
    }
    *out = o;
    *n_out = (int64_t)len;
    return MLLM_OK;
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
    mllm_qwen2vl_grid grids[MLLM_VISION_MAX_IMAGES];
    int64_t n_ex = 0, n_tok = 0;
    int cached = 0;
    double dec_ms = 0, enc_ms = 0;
    for (int k = 0; !st && k < n_images; k++) {
        char label[32];
        snprintf(label, sizeof label, "image %d", k);
        st = mllm_model_vision_embed(s->m, images[k], image_lens[k], label, &emb[k]);
        if (st) break;
        grids[k] = (mllm_qwen2vl_grid){emb[k].grid[0], emb[k].grid[1], emb[k].grid[2]};
        n_tok += emb[k].n_rows;
        cached += emb[k].cached;
        dec_ms += emb[k].decode_ms;
        enc_ms += emb[k].encode_ms;
    }
    if (!st && emb[0].tile_tokens > 0)
        st = expand_idefics3(s->m, ids, n, pad, emb, n_images, s->n_ctx, &ex, &n_ex);
    else if (!st)
        st = mllm_qwen2vl_expand_pads(ids, (int64_t)n, pad, grids, n_images, emb[0].merge, s->n_ctx, &ex, &n_ex);
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
