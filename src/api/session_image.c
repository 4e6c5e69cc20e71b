/* A prompt with images for an M-RoPE model, or one of plain RoPE
   (consecutive positions, image tokens included): the
   token rows looked up here, each image token's row taken from the vision
   tower's output instead, M-RoPE's three position rows, and the rotation
   offset the text after the images keeps (mllm_session_eval_image,
   internal.h). Prefill in chunks like mllm_session_eval. */
#include <string.h>
#include "api/internal.h"
#include "core/alloc.h"
#include "core/error.h"
#include "models/decoder/mrope.h"

#define IMAGE_CHUNK 512

/* The token rows of ids[0..T) (scaled as the decoder scales its own
   lookups), looked up by the graph at once (eager mode) on pool. */
static const float *token_rows(mllm_graph *e, mllm_pool *pool, const mllm_decoder *d, const int32_t *ids, int T) {
    mllm_graph_init(e, MLLM_MODE_EAGER, pool, 64 * 1024);
    mllm_tensor *in = mllm_graph_input_i32(e, T, "ids");
    if (!in) return NULL;
    memcpy(mllm_tensor_i32(in), ids, (size_t)T * sizeof(int32_t));
    mllm_tensor *rows = mllm_op_get_rows(e, d->tok_embd, in);
    if (rows && d->cfg.embd_scale != 1.0f) rows = mllm_op_scale(e, rows, d->cfg.embd_scale);
    return rows && !e->failed ? rows->data : NULL;
}

mllm_status mllm_session_eval_image(mllm_session *s, const int32_t *ids, size_t n, int32_t image_token,
                                    const float *img_emb, int64_t n_img_rows, const int *grids_thw, int n_grids,
                                    int merge) {
    return mllm_session_eval_image_ids(s, ids, n, image_token, img_emb, n_img_rows, grids_thw, n_grids, merge, NULL);
}

mllm_status mllm_session_eval_image_ids(mllm_session *s, const int32_t *ids, size_t n, int32_t image_token,
                                        const float *img_emb, int64_t n_img_rows, const int *grids_thw, int n_grids,
                                        int merge, const uint64_t *img_ids) {
    if (!s || !ids || !n || !img_emb || !grids_thw || n_grids < 1 || n_grids > MLLM_SESSION_MAX_IMAGES)
        return mllm_err(MLLM_ERR_INVALID_ARG, "eval_image: bad arguments");
    if (s->n_imgs + n_grids > MLLM_SESSION_MAX_IMAGES)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "more than %d images in one session (reset it)",
                        MLLM_SESSION_MAX_IMAGES);
    const mllm_decoder *d = &s->m->dec;
    const mllm_hparams *c = &d->cfg;
    if (s->kvp)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "images with a paged KV cache (kv_type) are not supported yet; "
                                              "use the contiguous cache");
    /* M-RoPE: three position rows; otherwise the image tokens take plain
       consecutive positions and need not be contiguous (a tiled tower's
       markers sit between an image's tiles) */
    const bool mrope = c->mrope[0] || c->mrope[1] || c->mrope[2];
    if ((size_t)s->n_past + n > (size_t)s->n_ctx)
        return mllm_err(MLLM_ERR_CONTEXT_FULL, "context full: %d cached + %zu new tokens > n_ctx %d", s->n_past, n,
                        s->n_ctx);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= c->n_vocab)
            return mllm_err(MLLM_ERR_INVALID_ARG, "token id %d out of range [0, %d)", ids[i], c->n_vocab);
    mllm_image_grid grids[64];
    for (int k = 0; k < n_grids; k++) grids[k] = (mllm_image_grid){grids_thw[3 * k], grids_thw[3 * k + 1], grids_thw[3 * k + 2]};
    const int64_t E = c->n_embd;
    int32_t *pos3 = mllm_malloc(3 * n * sizeof(int32_t));
    if (!pos3) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    int64_t next = 0;
    mllm_status st = MLLM_OK;
    if (mrope) {
        st = mllm_mrope_positions(ids, (int64_t)n, image_token, grids, n_grids, merge, pos3, &next);
    } else {
        for (size_t i = 0; i < n; i++) pos3[i] = pos3[n + i] = pos3[2 * n + i] = (int32_t)i;
        next = (int64_t)n;
    }
    int64_t n_img = 0, last_img = -1;
    for (size_t i = 0; i < n; i++)
        if (ids[i] == image_token) n_img++, last_img = (int64_t)i;
    if (!st && n_img != n_img_rows)
        st = mllm_err(MLLM_ERR_INVALID_ARG, "%lld image tokens for %lld embedding rows", (long long)n_img,
                      (long long)n_img_rows);
    const int base = s->n_past + s->rope_delta; /* where the rotation stands */
    const int past0 = s->n_past;
    int64_t img_row = 0;
    for (size_t done = 0; !st && done < n;) {
        const int T = (int)(n - done > IMAGE_CHUNK ? IMAGE_CHUNK : n - done);
        mllm_graph g;
        mllm_graph_init(&g, MLLM_MODE_TRACE, s->pool, 256 * 1024);
        g.exact = s->m->exact;
        mllm_decoder_inputs in = {0};
        in.ids = mllm_graph_input_i32(&g, T, "ids");
        in.pos = mllm_graph_input_i32(&g, T, "pos");
        in.rope_pos = mrope ? mllm_graph_input_i32(&g, 3 * (int64_t)T, "rope_pos") : NULL;
        in.embd = mllm_graph_input_f32(&g, E, T, "embd");
        mllm_tensor *logits = in.embd ? mllm_decoder_forward(&g, d, s->kv, &in, T - 1) : NULL;
        mllm_graph e;
        const float *rows = token_rows(&e, s->pool, d, ids + done, T);
        if (!logits || !rows || !mllm_graph_plan(&g, &logits, 1))
            st = mllm_err(MLLM_ERR_NOMEM, "could not build the graph");
        for (int i = 0; !st && i < T; i++) {
            const size_t t = done + (size_t)i;
            mllm_tensor_i32(in.ids)[i] = ids[t];
            mllm_tensor_i32(in.pos)[i] = s->n_past + i;
            for (int r = 0; mrope && r < 3; r++) mllm_tensor_i32(in.rope_pos)[r * T + i] = base + pos3[(size_t)r * n + t];
            float *row = (float *)in.embd->data + (size_t)i * E;
            const float *src = ids[t] == image_token ? img_emb + (size_t)img_row++ * E : rows + (size_t)i * E;
            memcpy(row, src, (size_t)E * sizeof(float));
        }
        if (!st) {
            mllm_graph_execute(&g);
            if (g.failed) st = mllm_err(MLLM_ERR_NOMEM, "out of memory while computing");
        }
        if (!st) st = mllm_model_file_check_intact(s->m->file);
        if (!st) {
            memcpy(s->tokens + s->n_past, ids + done, (size_t)T * sizeof(int32_t));
            s->n_past += T;
            memcpy(s->logits, logits->data, (size_t)c->n_vocab * sizeof(float));
        }
        mllm_graph_free(&g);
        mllm_graph_free(&e);
        done += (size_t)T;
    }
    if (!st) {
        /* text after these tokens turns from base + next on */
        s->rope_delta = (int)(base + next - s->n_past);
        if (last_img >= 0) s->image_end = s->n_past - (int)(n - 1 - (size_t)last_img);
        /* each image's slots and the rotation offset of the text after it */
        size_t t = 0;
        for (int k = 0; k < n_grids; k++) {
            const int64_t rows = (int64_t)grids[k].t * grids[k].h * grids[k].w / ((int64_t)merge * merge);
            while (t < n && ids[t] != image_token) t++;
            const size_t start = t;
            /* the next rows image tokens (a run under M-RoPE, which
               mllm_mrope_positions checked; counted above) */
            for (int64_t r = 0; r < rows && t < n; t++) r += ids[t] == image_token;
            const int64_t after = t < n ? pos3[t] : next; /* text: the three rows are equal */
            s->imgs[s->n_imgs].start = past0 + (int)start;
            s->imgs[s->n_imgs].end = past0 + (int)t;
            s->imgs[s->n_imgs].delta_after = (int)(base + after - (past0 + (int64_t)t));
            s->imgs[s->n_imgs].id = img_ids ? img_ids[k] : 0;
            s->n_imgs++;
        }
    }
    /* a part-evaluated image is not recorded: its tokens must not be
       reused as text */
    if (st) s->n_past = past0;
    mllm_free(pos3);
    return st;
}

mllm_status mllm_session_sync_images(mllm_session *s, const int32_t *ids, size_t n, int32_t image_token,
                                     const mllm_vision_embedding *imgs, int n_imgs, size_t *n_reused) {
    if (!s || !ids || !n || (n_imgs && !imgs) || n_imgs < 0 || n_imgs > MLLM_SESSION_MAX_IMAGES)
        return mllm_err(MLLM_ERR_INVALID_ARG, "sync_images: bad arguments");
    if (n > (size_t)s->n_ctx) return mllm_err(MLLM_ERR_CONTEXT_FULL, "context full: %zu tokens > n_ctx %d", n, s->n_ctx);
    /* where each new image starts and ends: its n_rows pads, in order */
    int start[MLLM_SESSION_MAX_IMAGES], end[MLLM_SESSION_MAX_IMAGES];
    size_t t = 0;
    for (int k = 0; k < n_imgs; k++) {
        while (t < n && ids[t] != image_token) t++;
        start[k] = (int)t;
        /* its n_rows image tokens: one run, or interleaved with the tile
           markers of a tiled tower */
        for (int64_t r = 0; r < imgs[k].n_rows; t++) {
            if (t >= n)
                return mllm_err(MLLM_ERR_INVALID_ARG, "image %d: fewer than its %lld tokens in the prompt", k,
                                (long long)imgs[k].n_rows);
            r += ids[t] == image_token;
        }
        end[k] = (int)t;
    }
    for (; t < n; t++)
        if (ids[t] == image_token) return mllm_err(MLLM_ERR_INVALID_ARG, "more image tokens than images");
    size_t k = 0;
    while (k < n && k < (size_t)s->n_past && s->tokens[k] == ids[k]) k++;
    if (k == n) k = n - 1; /* the last token is evaluated again: its logits */
    /* Held images before k stay only when the same image sits at the same
       slots; the cut goes to the first one that differs (or is cut). */
    int keep = 0;
    for (; keep < s->n_imgs && (size_t)s->imgs[keep].start < k; keep++) {
        const bool same = keep < n_imgs && s->imgs[keep].id && s->imgs[keep].id == imgs[keep].id &&
                          s->imgs[keep].start == start[keep] && s->imgs[keep].end == end[keep];
        if (!same || (size_t)s->imgs[keep].end > k) {
            k = (size_t)s->imgs[keep].start;
            break;
        }
    }
    /* a cut inside a new image (held as text before) goes to its start */
    for (int j = keep; j < n_imgs; j++)
        if ((size_t)start[j] < k) k = (size_t)start[j];
    s->n_imgs = keep;
    s->n_past = (int)k;
    s->rope_delta = keep ? s->imgs[keep - 1].delta_after : 0;
    s->image_end = keep ? s->imgs[keep - 1].end : 0;
    if (n_reused) *n_reused = k;
    const int n_new = n_imgs - keep;
    const double t0 = mllm_clock_mono_ms();
    mllm_status st = MLLM_OK;
    if (n_new == 0) {
        st = mllm_session_eval_internal(s, ids + k, n - k);
    } else {
        int64_t rows = 0;
        for (int j = keep; j < n_imgs; j++) rows += imgs[j].n_rows;
        const int64_t E = s->m->dec.cfg.n_embd;
        float *emb = mllm_malloc((size_t)rows * (size_t)E * sizeof(float));
        int thw[3 * MLLM_SESSION_MAX_IMAGES];
        uint64_t idv[MLLM_SESSION_MAX_IMAGES];
        if (!emb) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
        int64_t r = 0;
        for (int j = keep; j < n_imgs; j++) {
            if (imgs[j].merge != imgs[keep].merge) {
                mllm_free(emb);
                return mllm_err(MLLM_ERR_INVALID_ARG, "images with different merge sizes");
            }
            memcpy(emb + (size_t)r * (size_t)E, imgs[j].emb, (size_t)imgs[j].n_rows * (size_t)E * sizeof(float));
            r += imgs[j].n_rows;
            memcpy(thw + 3 * (j - keep), imgs[j].grid, sizeof imgs[j].grid);
            idv[j - keep] = imgs[j].id;
        }
        st = mllm_session_eval_image_ids(s, ids + k, n - k, image_token, emb, rows, thw, n_new, imgs[keep].merge,
                                         idv);
        mllm_free(emb);
    }
    s->timings.n_prompt += (int)(n - k);
    s->timings.prompt_ms += mllm_clock_mono_ms() - t0;
    return st;
}
