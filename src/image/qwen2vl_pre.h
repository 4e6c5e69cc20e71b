/* Qwen2-VL / Qwen2.5-VL image preprocessing, as transformers'
   Qwen2VLImageProcessor(Pil) does it: smart_resize (each side a multiple
   of patch_size * merge_size, the area within [min_pixels, max_pixels],
   the aspect ratio kept), Pillow's bicubic resize (bit-exact,
   resample.h), rescale by 1/255, normalise with the CLIP mean and std
   (in float32 as numpy does), then the flat patches: one row per 14 x 14
   patch, ordered so each 2 x 2 block the merger joins is 4 consecutive
   rows, and each row (channel, temporal, y, x) with the frame repeated
   temporal_patch_size times (a still image). */
#ifndef MLLM_IMAGE_QWEN2VL_PRE_H
#define MLLM_IMAGE_QWEN2VL_PRE_H
#include <mllm/mllm.h>
#include <stdint.h>
#include "image/image.h"

typedef struct {
    int patch_size;          /* 14 */
    int temporal_patch_size; /* 2 */
    int merge_size;          /* 2 */
    int64_t min_pixels;      /* 56 * 56 (preprocessor_config "min_pixels" / size.shortest_edge) */
    int64_t max_pixels;      /* 28 * 28 * 1280 (Qwen2VLImageProcessor's default) */
    float mean[3], std[3];   /* OpenAI CLIP's */
} mllm_qwen2vl_pre_params;

typedef struct {
    float *patches;      /* n_patches x patch_dim, mllm_malloc'd */
    int64_t n_patches, patch_dim;
    int grid_t, grid_h, grid_w; /* image_grid_thw: 1, height / 14, width / 14 */
    int resized_w, resized_h;
} mllm_qwen2vl_pixels;

void mllm_qwen2vl_pre_defaults(mllm_qwen2vl_pre_params *p);
/* transformers' smart_resize. Errors: MLLM_ERR_INVALID_ARG (a side under
   1, an aspect ratio over 200, a result over MLLM_IMAGE_MAX_SIDE). */
mllm_status mllm_qwen2vl_smart_resize(int height, int width, int factor, int64_t min_pixels, int64_t max_pixels,
                                      int *out_h, int *out_w);
mllm_status mllm_qwen2vl_preprocess(const mllm_image *img, const mllm_qwen2vl_pre_params *p,
                                    mllm_qwen2vl_pixels *out);
void mllm_qwen2vl_pixels_free(mllm_qwen2vl_pixels *px);

#endif
