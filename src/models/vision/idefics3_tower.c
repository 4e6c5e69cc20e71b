/* The Idefics3 / SmolVLM tower behind the vision contract
   (models/vision_tower.h): opened from the text model's Hugging Face
   folder (no mmproj of this family yet), its images split into tiles by
   image/idefics3_pre.h, and each <image> of the prompt replaced by its
   tiles' markers and <image> tokens (plain consecutive positions). */
#include <string.h>
#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "image/idefics3_pre.h"
#include "models/vision/idefics3_vision.h"
#include "models/registry.h"
#include "models/vision_tower.h"

typedef struct {
    mllm_idefics3_vision *v;
    mllm_idefics3_pre_params ip;
} tower;

static mllm_status tower_open(const char *model_path, bool hf, const char *mmproj, mllm_pool *pool, void **out) {
    *out = NULL;
    if (mmproj || !hf)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: Idefics3 / SmolVLM vision is read from a Hugging Face folder "
                                              "only (no mmproj GGUF of this family yet)", mmproj ? mmproj : model_path);
    tower *t = mllm_calloc(1, sizeof *t);
    if (!t) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    mllm_status st = mllm_idefics3_vision_open(model_path, 1, &t->v); /* 1: no pool of its own */
    if (st) {
        mllm_free(t);
        return st;
    }
    mllm_idefics3_vision_lend_pool(t->v, pool);
    mllm_idefics3_vision_pre_params(t->v, &t->ip);
    *out = t;
    return MLLM_OK;
}

static void tower_free(void *p) {
    tower *t = p;
    if (!t) return;
    mllm_idefics3_vision_free(t->v);
    mllm_free(t);
}

static mllm_status tower_use_backends(void *p, mllm_backend *const *be, int n) {
    return mllm_idefics3_vision_use_backends(((tower *)p)->v, be, n);
}

static int tower_out_width(const void *p) { return mllm_idefics3_vision_config_of(((const tower *)p)->v)->out_hidden; }

static uint64_t tower_params_hash(const void *p) {
    const mllm_idefics3_pre_params *ip = &((const tower *)p)->ip;
    const int64_t ints[4] = {ip->longest_edge, ip->tile, ip->do_resize, ip->do_split};
    return mllm_vision_params_hash(ints, 4, ip->mean, ip->std);
}

/* The grid is written so grid h * w / merge^2 is the row count: 1 x
   (tiles * side) x side patches, merge = scale_factor; tile_rows /
   tile_cols place the tiles. */
static mllm_status tower_embed(void *p, const mllm_image *im, mllm_vision_embedding *out) {
    tower *t = p;
    mllm_idefics3_pixels px = {0};
    const double t0 = mllm_clock_mono_seconds();
    mllm_status st = mllm_idefics3_preprocess(im, &t->ip, &px);
    const double t1 = mllm_clock_mono_seconds();
    if (!st) st = mllm_idefics3_vision_encode(t->v, &px, &out->emb, &out->n_rows);
    if (!st) {
        const mllm_idefics3_vision_config *c = mllm_idefics3_vision_config_of(t->v);
        const int side = c->image_size / c->patch;
        out->grid[0] = 1;
        out->grid[1] = px.n_tiles * side;
        out->grid[2] = side;
        out->merge = c->scale;
        out->resized_w = px.resized_w;
        out->resized_h = px.resized_h;
        out->tile_rows = px.rows;
        out->tile_cols = px.cols;
        out->tile_tokens = c->image_seq_len;
        out->decode_ms += (t1 - t0) * 1e3;
        out->encode_ms += (mllm_clock_mono_seconds() - t1) * 1e3;
    }
    mllm_idefics3_pixels_free(&px);
    return st;
}

/* The k-th <image> of ids becomes the k-th image's prompt text (tile
   markers, its <image> tokens; idefics3_pre.h), tokenized as transformers
   tokenizes the expanded text: the replacement starts and ends with a
   special token, so it tokenizes on its own. */
static mllm_status tower_expand(const mllm_tokenizer *tok, const int32_t *ids, size_t n, int32_t pad,
                                const mllm_vision_embedding *emb, int n_images, int64_t max_tokens, int32_t **out,
                                int64_t *n_out) {
    size_t cap = n, len = 0, k = 0;
    for (int i = 0; i < n_images; i++)
        cap += (size_t)(emb[i].tile_rows * emb[i].tile_cols + 1) * ((size_t)emb[i].tile_tokens + 4) +
               (size_t)emb[i].tile_rows + 2;
    int32_t *o = mllm_malloc(cap * sizeof(int32_t));
    if (!o) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    mllm_status st = MLLM_OK;
    for (size_t i = 0; !st && i < n; i++) {
        if (ids[i] != pad) {
            o[len++] = ids[i];
            continue;
        }
        if (k >= (size_t)n_images) {
            st = mllm_err(MLLM_ERR_INVALID_ARG, "the prompt has more image tokens than the %d images", n_images);
            break;
        }
        const mllm_vision_embedding *e = &emb[k++];
        char *text = mllm_idefics3_image_prompt(e->tile_rows, e->tile_cols, e->tile_tokens);
        size_t got = 0;
        if (!text) st = mllm_err(MLLM_ERR_INVALID_ARG, "image %zu: %d x %d tiles of %d tokens", k - 1, e->tile_rows,
                                 e->tile_cols, e->tile_tokens);
        if (!st) st = mllm_tokenizer_encode(tok, text, strlen(text), false, true, o + len, cap - len, &got);
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
    if (!st && (int64_t)len > max_tokens)
        st = mllm_err(MLLM_ERR_CONTEXT_FULL, "the prompt with its images is %zu tokens, n_ctx %lld", len,
                      (long long)max_tokens);
    if (st) {
        mllm_free(o);
        return st;
    }
    *out = o;
    *n_out = (int64_t)len;
    return MLLM_OK;
}

const mllm_vision_family mllm_vision_idefics3 = {
    .image_token = "<image>",
    .mrope = false,
    .open = tower_open,
    .free = tower_free,
    .use_backends = tower_use_backends,
    .out_width = tower_out_width,
    .params_hash = tower_params_hash,
    .embed = tower_embed,
    .expand = tower_expand,
};

const mllm_arch mllm_arch_idefics3_vision = {
    .name = "idefics3_vision",
    .kind = MLLM_KIND_VISION,
    .about = "Idefics3 / SmolVLM's SigLIP tower and pixel-shuffle connector: the model.vision_model.* and "
             "model.connector.* tensors of an idefics3 / smolvlm folder",
    .family = "idefics3",
    .vision = &mllm_vision_idefics3,
};
