/* `--image` for Qwen2-VL / Qwen2.5-VL folders: the image decoded and
   preprocessed, the folder's vision tower run, the prompt's one
   <|image_pad|> expanded to the image's token count, and the prompt
   evaluated with the image's rows (docs/vision.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "api/internal.h"
#include "cli.h"
#include "core/alloc.h"
#include "image/image.h"
#include "image/qwen2vl_pre.h"
#include "models/qwen2vl_mrope.h"
#include "models/qwen2vl_vision.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int cli_image_eval(mllm_model *m, mllm_session *s, const char *model_dir, const char *image, int threads,
                   const int32_t *ids, size_t n, size_t *n_eval) {
    int32_t pad = -1;
    size_t np = 0;
    int32_t one[4];
    if (mllm_tokenize(m, "<|image_pad|>", strlen("<|image_pad|>"), false, one, 4, &np) != MLLM_OK || np != 1) {
        fprintf(stderr, "mllm run: --image: this model's tokenizer has no <|image_pad|> token\n");
        return 1;
    }
    pad = one[0];
    mllm_qwen2vl_vision *v = NULL;
    mllm_status st = mllm_qwen2vl_vision_open(model_dir, threads > 0 ? threads : 1, &v);
    if (st) {
        fprintf(stderr, "mllm run: --image: no Qwen2.5-VL vision tower in '%s': %s\n", model_dir, mllm_last_error());
        return 1;
    }
    int rc = 1;
    mllm_image im = {0};
    mllm_qwen2vl_pixels px = {0};
    float *emb = NULL;
    int32_t *ex = NULL;
    int64_t n_rows = 0, n_ex = 0;
    const double t0 = now_ms();
    mllm_qwen2vl_pre_params pp;
    mllm_qwen2vl_vision_pre_params(v, &pp);
    if ((st = mllm_image_load(image, 0, &im, NULL)) || (st = mllm_qwen2vl_preprocess(&im, &pp, &px))) {
        fprintf(stderr, "mllm run: --image: %s\n", mllm_last_error());
        goto done;
    }
    const double t1 = now_ms();
    if ((st = mllm_qwen2vl_vision_encode(v, &px, &emb, &n_rows))) {
        fprintf(stderr, "mllm run: --image: vision tower: %s\n", mllm_last_error());
        goto done;
    }
    const double t2 = now_ms();
    const mllm_qwen2vl_grid g = {px.grid_t, px.grid_h, px.grid_w};
    if ((st = mllm_qwen2vl_expand_pads(ids, (int64_t)n, pad, &g, 1, pp.merge_size, mllm_session_n_ctx(s), &ex, &n_ex))) {
        fprintf(stderr, "mllm run: --image: %s\n", mllm_last_error());
        goto done;
    }
    const int thw[3] = {g.t, g.h, g.w};
    if ((st = mllm_session_eval_image(s, ex, (size_t)n_ex, pad, emb, n_rows, thw, 1, pp.merge_size))) {
        cli_fail("prompt evaluation failed", st);
        goto done;
    }
    fprintf(stderr, "mllm run: image %d x %d -> %d x %d, %lld tokens; decode + preprocess %.1f ms, vision tower %.1f ms\n",
            im.width, im.height, px.resized_w, px.resized_h, (long long)n_rows, t1 - t0, t2 - t1);
    *n_eval = (size_t)n_ex;
    rc = 0;
done:
    mllm_free(ex);
    mllm_free(emb);
    mllm_qwen2vl_pixels_free(&px);
    mllm_image_free(&im);
    mllm_qwen2vl_vision_free(v);
    return rc;
}
