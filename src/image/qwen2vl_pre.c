/* Qwen2-VL preprocessing (qwen2vl_pre.h): the steps of transformers'
   image_processing_pil_qwen2_vl.py in its order and arithmetic. */
#include "image/qwen2vl_pre.h"
#include "core/alloc.h"
#include "core/error.h"
#include "image/resample.h"
#include <math.h>
#include <string.h>

void mllm_qwen2vl_pre_defaults(mllm_qwen2vl_pre_params *p) {
    *p = (mllm_qwen2vl_pre_params){
        .patch_size = 14,
        .temporal_patch_size = 2,
        .merge_size = 2,
        .min_pixels = 56 * 56,
        .max_pixels = 28 * 28 * 1280,
        .mean = {0.48145466f, 0.4578275f, 0.40821073f},
        .std = {0.26862954f, 0.26130258f, 0.27577711f},
    };
}

mllm_status mllm_qwen2vl_smart_resize(int height, int width, int factor, int64_t min_pixels, int64_t max_pixels,
                                      int *out_h, int *out_w) {
    if (height < 1 || width < 1 || factor < 1 || min_pixels < 0 || max_pixels < 1)
        return mllm_err(MLLM_ERR_INVALID_ARG, "smart_resize: bad arguments (%d x %d, factor %d)", width, height, factor);
    double hi = height > width ? height : width, lo = height > width ? width : height;
    if (hi / lo > 200)
        return mllm_err(MLLM_ERR_INVALID_ARG, "image of %d x %d: aspect ratio %.1f is over 200 (Qwen2-VL's limit)",
                        width, height, hi / lo);
    /* Python's round() is half-to-even, as nearbyint in the default mode */
    double h_bar = nearbyint((double)height / factor) * factor, w_bar = nearbyint((double)width / factor) * factor;
    if (h_bar * w_bar > (double)max_pixels) {
        double beta = sqrt((double)height * width / (double)max_pixels);
        h_bar = fmax(factor, floor(height / beta / factor) * factor);
        w_bar = fmax(factor, floor(width / beta / factor) * factor);
    } else if (h_bar * w_bar < (double)min_pixels) {
        double beta = sqrt((double)min_pixels / ((double)height * width));
        h_bar = ceil(height * beta / factor) * factor;
        w_bar = ceil(width * beta / factor) * factor;
    }
    if (h_bar < factor || w_bar < factor || h_bar > MLLM_IMAGE_MAX_SIDE || w_bar > MLLM_IMAGE_MAX_SIDE)
        return mllm_err(MLLM_ERR_INVALID_ARG, "smart_resize: %d x %d resizes to %.0f x %.0f, out of range", width,
                        height, w_bar, h_bar);
    *out_h = (int)h_bar;
    *out_w = (int)w_bar;
    return MLLM_OK;
}

mllm_status mllm_qwen2vl_preprocess(const mllm_image *img, const mllm_qwen2vl_pre_params *p,
                                    mllm_qwen2vl_pixels *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!img || !img->rgb || !p || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "qwen2vl preprocess: NULL argument");
    const int ps = p->patch_size, tp = p->temporal_patch_size, ms = p->merge_size;
    if (ps < 1 || ps > 64 || tp < 1 || tp > 8 || ms < 1 || ms > 8)
        return mllm_err(MLLM_ERR_INVALID_ARG, "qwen2vl preprocess: patch %d, temporal %d, merge %d out of range", ps,
                        tp, ms);
    int rh = 0, rw = 0;
    mllm_status st = mllm_qwen2vl_smart_resize(img->height, img->width, ps * ms, p->min_pixels, p->max_pixels, &rh, &rw);
    if (st) return st;
    mllm_image r;
    if ((st = mllm_image_resize_bicubic(img, rw, rh, &r))) return st;
    /* rescale (float64 multiply, then float32) and normalise in float32 */
    const int64_t plane = (int64_t)rw * rh;
    float *chw = mllm_malloc((size_t)plane * 3 * sizeof(float));
    const int gh = rh / ps, gw = rw / ps;
    const int64_t n = (int64_t)gh * gw, dim = (int64_t)3 * tp * ps * ps;
    float *pat = chw ? mllm_malloc((size_t)n * (size_t)dim * sizeof(float)) : NULL;
    if (!pat) {
        mllm_free(chw);
        mllm_image_free(&r);
        return mllm_err(MLLM_ERR_NOMEM, "qwen2vl preprocess: out of memory for %d x %d", rw, rh);
    }
    for (int c = 0; c < 3; c++)
        for (int64_t i = 0; i < plane; i++) {
            float v = (float)((double)r.rgb[3 * i + c] * (1.0 / 255.0));
            chw[c * plane + i] = (v - p->mean[c]) / p->std[c];
        }
    mllm_image_free(&r);
    /* rows in (block_y, block_x, merge_y, merge_x) order; columns
       (channel, temporal copy, y, x) */
    int64_t row = 0;
    for (int by = 0; by < gh / ms; by++)
        for (int bx = 0; bx < gw / ms; bx++)
            for (int my = 0; my < ms; my++)
                for (int mx = 0; mx < ms; mx++, row++) {
                    float *o = pat + row * dim;
                    int y0 = (by * ms + my) * ps, x0 = (bx * ms + mx) * ps;
                    for (int c = 0; c < 3; c++)
                        for (int t = 0; t < tp; t++)
                            for (int y = 0; y < ps; y++) {
                                memcpy(o, chw + c * plane + (int64_t)(y0 + y) * rw + x0, (size_t)ps * sizeof(float));
                                o += ps;
                            }
                }
    mllm_free(chw);
    out->patches = pat;
    out->n_patches = n;
    out->patch_dim = dim;
    out->grid_t = 1;
    out->grid_h = gh;
    out->grid_w = gw;
    out->resized_w = rw;
    out->resized_h = rh;
    return MLLM_OK;
}

void mllm_qwen2vl_pixels_free(mllm_qwen2vl_pixels *px) {
    if (!px) return;
    mllm_free(px->patches);
    memset(px, 0, sizeof *px);
}
