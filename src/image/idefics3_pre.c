/* Idefics3 / SmolVLM preprocessing (idefics3_pre.h). The sizes follow
   transformers' Python arithmetic: aspect ratios are doubles, int() truncates,
   math.ceil of a float division of integers is an integer ceiling. */
#include "image/idefics3_pre.h"
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "image/resample.h"

void mllm_idefics3_pre_defaults(mllm_idefics3_pre_params *p) {
    *p = (mllm_idefics3_pre_params){.longest_edge = 4 * 364, .tile = 364, .do_resize = true, .do_split = true,
                                    .mean = {0.5f, 0.5f, 0.5f}, .std = {0.5f, 0.5f, 0.5f}};
}

void mllm_idefics3_resize_size(int height, int width, int longest_edge, int *out_h, int *out_w) {
    /* _resize_output_size_rescale_to_max_len */
    double aspect = (double)width / height;
    int h = height, w = width;
    if (w >= h) {
        w = longest_edge;
        h = (int)(w / aspect);
        if (h % 2) h++;
    } else {
        h = longest_edge;
        w = (int)(h * aspect);
        if (w % 2) w++;
    }
    if (h < 1) h = 1;
    if (w < 1) w = 1;
    /* _resize_output_size_scale_below_upper_bound */
    aspect = (double)w / h;
    if (w >= h && w > MLLM_IDEFICS3_MAX_SIDE) {
        w = MLLM_IDEFICS3_MAX_SIDE;
        h = (int)(w / aspect);
    } else if (h > w && h > MLLM_IDEFICS3_MAX_SIDE) {
        h = MLLM_IDEFICS3_MAX_SIDE;
        w = (int)(h * aspect);
    }
    *out_h = h < 1 ? 1 : h;
    *out_w = w < 1 ? 1 : w;
}

static int ceil_to(int v, int t) { return (v + t - 1) / t * t; }

/* Copies the t x t crop at (x0, y0) of img, channels first. */
static void crop_chw(const mllm_image *img, int x0, int y0, int t, uint8_t *o) {
    const size_t plane = (size_t)t * t;
    for (int y = 0; y < t; y++)
        for (int x = 0; x < t; x++) {
            const uint8_t *p = img->rgb + ((size_t)(y0 + y) * img->width + (size_t)(x0 + x)) * 3;
            for (int c = 0; c < 3; c++) o[c * plane + (size_t)y * t + x] = p[c];
        }
}

mllm_status mllm_idefics3_preprocess(const mllm_image *img, const mllm_idefics3_pre_params *p,
                                     mllm_idefics3_pixels *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!img || !img->rgb || !p || !out || img->width < 1 || img->height < 1)
        return mllm_err(MLLM_ERR_INVALID_ARG, "idefics3 preprocess: bad arguments");
    const int T = p->tile;
    if (T < 1 || T > MLLM_IDEFICS3_MAX_SIDE || p->longest_edge < 1 || p->longest_edge > MLLM_IDEFICS3_MAX_SIDE)
        return mllm_err(MLLM_ERR_INVALID_ARG, "idefics3 preprocess: tile %d, longest edge %d out of range", T,
                        p->longest_edge);
    mllm_image a = {0}, b = {0}, g = {0};
    mllm_status st = MLLM_OK;
    int h = img->height, w = img->width;
    const mllm_image *cur = img;
    if (p->do_resize) {
        mllm_idefics3_resize_size(h, w, p->longest_edge, &h, &w);
        if ((st = mllm_image_resize_lanczos(img, w, h, &a))) return st;
        cur = &a;
    }
    out->resized_w = w, out->resized_h = h;
    int rows = 0, cols = 0;
    if (p->do_split) {
        /* resize_for_vision_encoder: both sides up to multiples of the tile */
        const double aspect = (double)w / h;
        if (w >= h) {
            w = ceil_to(w, T);
            h = ceil_to((int)(w / aspect), T);
        } else {
            h = ceil_to(h, T);
            w = ceil_to((int)(h * aspect), T);
        }
        if (h > MLLM_IDEFICS3_MAX_SIDE + T || w > MLLM_IDEFICS3_MAX_SIDE + T || h < T || w < T)
            st = mllm_err(MLLM_ERR_INVALID_ARG, "idefics3 preprocess: %d x %d tiles of %d", w, h, T);
        if (!st) st = mllm_image_resize_lanczos(cur, w, h, &b);
        if (!st && (h > T || w > T)) {
            rows = (h - T) / T + 1;
            cols = (w - T) / T + 1;
            if ((int64_t)rows * cols + 1 > MLLM_IDEFICS3_MAX_TILES)
                st = mllm_err(MLLM_ERR_INVALID_ARG, "idefics3 preprocess: %d x %d tiles (at most %d)", rows, cols,
                              MLLM_IDEFICS3_MAX_TILES);
            if (!st) st = mllm_image_resize_lanczos(&b, T, T, &g); /* the global image */
        }
    } else {
        st = mllm_image_resize_lanczos(cur, T, T, &g);
    }
    const int n = rows ? rows * cols + 1 : 1;
    const size_t per = (size_t)3 * T * T;
    if (!st) {
        out->tiles = mllm_malloc((size_t)n * per);
        out->pixels = mllm_malloc((size_t)n * per * sizeof(float));
        if (!out->tiles || !out->pixels) st = mllm_err(MLLM_ERR_NOMEM, "idefics3 preprocess: out of memory");
    }
    if (!st) {
        int k = 0;
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++, k++) crop_chw(&b, c * T, r * T, T, out->tiles + (size_t)k * per);
        /* no split, or an image of one tile: that tile (transformers keeps
           the resized image itself, already T x T) */
        const mllm_image *last = g.rgb ? &g : &b;
        crop_chw(last, 0, 0, T, out->tiles + (size_t)k * per);
        const size_t plane = (size_t)T * T;
        for (size_t i = 0; i < (size_t)n * per; i++) {
            const int c = (int)(i / plane % 3);
            float v = (float)((double)out->tiles[i] * (1.0 / 255.0));
            out->pixels[i] = (v - p->mean[c]) / p->std[c];
        }
        out->n_tiles = n, out->rows = rows, out->cols = cols, out->tile = T;
    }
    mllm_image_free(&a);
    mllm_image_free(&b);
    mllm_image_free(&g);
    if (st) mllm_idefics3_pixels_free(out);
    return st;
}

void mllm_idefics3_pixels_free(mllm_idefics3_pixels *px) {
    if (!px) return;
    mllm_free(px->tiles);
    mllm_free(px->pixels);
    memset(px, 0, sizeof *px);
}

char *mllm_idefics3_image_prompt(int rows, int cols, int seq_len) {
    if (rows < 0 || cols < 0 || rows > 64 || cols > 64 || (rows == 0) != (cols == 0) || seq_len < 1 || seq_len > 65536)
        return NULL;
    static const char fake[] = "<fake_token_around_image>", img[] = "<image>", glob[] = "<global-img>";
    const size_t tile = sizeof fake + 16 + (size_t)seq_len * (sizeof img - 1);
    const size_t cap = (size_t)(rows * cols + 1) * tile + (size_t)rows + 2 * sizeof fake + sizeof glob + 8;
    char *o = mllm_malloc(cap);
    if (!o) return NULL;
    size_t n = 0;
#define PUT(str, len) (memcpy(o + n, (str), (len)), n += (len))
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) {
            PUT(fake, sizeof fake - 1);
            n += (size_t)snprintf(o + n, cap - n, "<row_%d_col_%d>", r + 1, c + 1);
            for (int i = 0; i < seq_len; i++) PUT(img, sizeof img - 1);
        }
        PUT("\n", 1);
    }
    if (rows) PUT("\n", 1);
    PUT(fake, sizeof fake - 1);
    PUT(glob, sizeof glob - 1);
    for (int i = 0; i < seq_len; i++) PUT(img, sizeof img - 1);
    PUT(fake, sizeof fake - 1);
#undef PUT
    o[n] = 0;
    return o;
}
