/* The Qwen2.5-VL tower behind the vision contract (models/vision_tower.h):
   opened from the text model's Hugging Face folder or an mmproj GGUF, its
   images preprocessed by image/qwen2vl_pre.h and each <|image_pad|> of the
   prompt expanded to one pad per merged 2 x 2 block (M-RoPE positions). */
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "image/qwen2vl_pre.h"
#include "models/decoder/mrope.h"
#include "models/vision/qwen2vl_vision.h"
#include "models/registry.h"
#include "models/vision_tower.h"

typedef struct {
    mllm_qwen2vl_vision *v;
    mllm_qwen2vl_pre_params pp;
} tower;

static mllm_status tower_open(const char *model_path, bool hf, const char *mmproj, mllm_pool *pool, void **out) {
    *out = NULL;
    tower *t = mllm_calloc(1, sizeof *t);
    if (!t) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    mllm_status st;
    if (mmproj) st = mllm_qwen2vl_vision_open_gguf(mmproj, 1, &t->v); /* 1: no pool of its own */
    else if (hf) st = mllm_qwen2vl_vision_open(model_path, 1, &t->v);
    else st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s holds no vision tower: give the mmproj GGUF (--mmproj, "
                                             "mllm_load_params.mmproj) or a Hugging Face folder", model_path);
    if (st) {
        mllm_free(t);
        return st;
    }
    mllm_qwen2vl_vision_lend_pool(t->v, pool);
    mllm_qwen2vl_vision_pre_params(t->v, &t->pp);
    *out = t;
    return MLLM_OK;
}

static void tower_free(void *p) {
    tower *t = p;
    if (!t) return;
    mllm_qwen2vl_vision_free(t->v);
    mllm_free(t);
}

static mllm_status tower_use_backends(void *p, mllm_backend *const *be, int n) {
    return mllm_qwen2vl_vision_use_backends(((tower *)p)->v, be, n);
}

static int tower_out_width(const void *p) { return mllm_qwen2vl_vision_config_of(((const tower *)p)->v)->out_hidden; }

static uint64_t tower_params_hash(const void *p) {
    const mllm_qwen2vl_pre_params *pp = &((const tower *)p)->pp;
    const int64_t ints[5] = {pp->patch_size, pp->temporal_patch_size, pp->merge_size, pp->min_pixels, pp->max_pixels};
    return mllm_vision_params_hash(ints, 5, pp->mean, pp->std);
}

static mllm_status tower_embed(void *p, const mllm_image *im, mllm_vision_embedding *out) {
    tower *t = p;
    mllm_qwen2vl_pixels px = {0};
    const double t0 = mllm_clock_mono_seconds();
    mllm_status st = mllm_qwen2vl_preprocess(im, &t->pp, &px);
    const double t1 = mllm_clock_mono_seconds();
    if (!st) st = mllm_qwen2vl_vision_encode(t->v, &px, &out->emb, &out->n_rows);
    if (!st) {
        out->grid[0] = px.grid_t;
        out->grid[1] = px.grid_h;
        out->grid[2] = px.grid_w;
        out->merge = t->pp.merge_size;
        out->resized_w = px.resized_w;
        out->resized_h = px.resized_h;
        out->decode_ms += (t1 - t0) * 1e3;
        out->encode_ms += (mllm_clock_mono_seconds() - t1) * 1e3;
    }
    mllm_qwen2vl_pixels_free(&px);
    return st;
}

static mllm_status tower_expand(const mllm_tokenizer *tok, const int32_t *ids, size_t n, int32_t pad,
                                const mllm_vision_embedding *emb, int n_images, int64_t max_tokens, int32_t **out,
                                int64_t *n_out) {
    (void)tok;
    mllm_image_grid grids[MLLM_MROPE_MAX_GRIDS];
    if (n_images < 0 || n_images > MLLM_MROPE_MAX_GRIDS)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%d images in one prompt, at most %d", n_images, MLLM_MROPE_MAX_GRIDS);
    for (int k = 0; k < n_images; k++) grids[k] = (mllm_image_grid){emb[k].grid[0], emb[k].grid[1], emb[k].grid[2]};
    return mllm_mrope_expand_pads(ids, (int64_t)n, pad, grids, n_images, n_images ? emb[0].merge : 1, max_tokens, out,
                                  n_out);
}

const mllm_vision_family mllm_vision_qwen2vl = {
    .image_token = "<|image_pad|>",
    .mrope = true,
    .open = tower_open,
    .free = tower_free,
    .use_backends = tower_use_backends,
    .out_width = tower_out_width,
    .params_hash = tower_params_hash,
    .embed = tower_embed,
    .expand = tower_expand,
};

const mllm_arch mllm_arch_qwen2vl_vision = {
    .name = "qwen2vl_vision",
    .kind = MLLM_KIND_VISION,
    .gguf_arch = "clip", /* llama.cpp's mmproj files; the projector type is checked at open */
    .about = "Qwen2.5-VL's vision tower: the visual.* tensors of a qwen2_5_vl folder, or an mmproj GGUF "
             "(clip, projector qwen2.5vl_merger) given with --mmproj",
    .family = "qwen2vl",
    .vision = &mllm_vision_qwen2vl,
};
