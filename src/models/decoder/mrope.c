/* M-RoPE positions and angles, and the image pad expansion
   (mrope.h), as transformers' Qwen2.5-VL processor and
   get_rope_index compute them. */
#include <math.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "models/decoder/mrope.h"

static mllm_status grid_tokens(const mllm_image_grid *g, int merge, int64_t *n) {
    *n = 0;
    if (merge < 1 || g->t != 1 || g->h < merge || g->w < merge || g->h % merge || g->w % merge)
        return mllm_err(MLLM_ERR_INVALID_ARG, "image grid %d x %d x %d does not split into %d x %d blocks", g->t, g->h,
                        g->w, merge, merge);
    *n = (int64_t)g->h * g->w / ((int64_t)merge * merge);
    return MLLM_OK;
}

mllm_status mllm_mrope_expand_pads(const int32_t *ids, int64_t n, int32_t pad_id, const mllm_image_grid *grids,
                                     int n_grids, int merge, int64_t max_tokens, int32_t **out, int64_t *n_out) {
    *out = NULL;
    *n_out = 0;
    int64_t total = 0, pads = 0;
    for (int64_t i = 0; i < n; i++) pads += ids[i] == pad_id;
    if (pads != n_grids)
        return mllm_err(MLLM_ERR_INVALID_ARG, "the prompt has %lld image placeholders for %d images", (long long)pads,
                        n_grids);
    for (int k = 0; k < n_grids; k++) {
        int64_t t = 0;
        mllm_status st = grid_tokens(&grids[k], merge, &t);
        if (st) return st;
        total += t;
    }
    total += n - pads;
    if (total > max_tokens)
        return mllm_err(MLLM_ERR_CONTEXT_FULL, "the prompt with its images is %lld tokens, over the %lld allowed",
                        (long long)total, (long long)max_tokens);
    int32_t *o = mllm_malloc((size_t)(total ? total : 1) * sizeof(int32_t));
    if (!o) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    int64_t j = 0;
    int k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] != pad_id) {
            o[j++] = ids[i];
            continue;
        }
        int64_t t = 0;
        grid_tokens(&grids[k++], merge, &t);
        for (int64_t r = 0; r < t; r++) o[j++] = pad_id;
    }
    *out = o;
    *n_out = j;
    return MLLM_OK;
}

mllm_status mllm_mrope_positions(const int32_t *ids, int64_t n, int32_t pad_id, const mllm_image_grid *grids,
                                         int n_grids, int merge, int32_t *pos, int64_t *next) {
    int32_t *pt = pos, *ph = pos + n, *pw = pos + 2 * n;
    int64_t cur = 0, i = 0;
    int k = 0;
    while (i < n) {
        if (ids[i] != pad_id) {
            if (cur > INT32_MAX) return mllm_err(MLLM_ERR_INVALID_ARG, "M-RoPE position over int32");
            pt[i] = ph[i] = pw[i] = (int32_t)cur++;
            i++;
            continue;
        }
        int64_t run = 0;
        while (i + run < n && ids[i + run] == pad_id) run++;
        if (k >= n_grids) return mllm_err(MLLM_ERR_INVALID_ARG, "more image token runs than the %d images", n_grids);
        int64_t want = 0;
        mllm_status st = grid_tokens(&grids[k], merge, &want);
        if (st) return st;
        if (run != want)
            return mllm_err(MLLM_ERR_INVALID_ARG, "image %d: a run of %lld image tokens for a grid of %lld", k,
                            (long long)run, (long long)want);
        const int lh = grids[k].h / merge, lw = grids[k].w / merge;
        for (int64_t r = 0; r < run; r++) {
            pt[i + r] = (int32_t)cur;
            ph[i + r] = (int32_t)(cur + r / lw);
            pw[i + r] = (int32_t)(cur + r % lw);
        }
        cur += lh > lw ? lh : lw;
        i += run;
        k++;
    }
    if (k != n_grids) return mllm_err(MLLM_ERR_INVALID_ARG, "%d image token runs for %d images", k, n_grids);
    if (next) *next = cur;
    return MLLM_OK;
}

void mllm_mrope_angles(const int32_t p[3], int head_dim, const int sections[3], float theta, float *cos_out,
                               float *sin_out) {
    const int half = head_dim / 2;
    for (int i = 0, axis = 0, end = sections[0]; i < half; i++) {
        while (i >= end && axis < 2) end += sections[++axis];
        /* as torch: inv_freq in float32, position x inv_freq in float32 */
        float inv = 1.0f / powf(theta, (float)(2 * i) / (float)head_dim);
        float a = (float)p[axis] * inv;
        cos_out[i] = cosf(a);
        sin_out[i] = sinf(a);
    }
}
