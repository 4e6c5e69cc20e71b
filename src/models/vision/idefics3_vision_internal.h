/* Inside the Idefics3 / SmolVLM vision side: the weights
   (idefics3_vision_load.c) and the forward pass (idefics3_vision.c). */
#ifndef MLLM_MODELS_IDEFICS3_VISION_INTERNAL_H
#define MLLM_MODELS_IDEFICS3_VISION_INTERNAL_H
#include "core/threadpool.h"
#include "formats/safetensors.h"
#include "models/vision/idefics3_vision.h"
#include "models/vision/vit_ops.h"

typedef struct {
    float *ln1_w, *ln1_b, *ln2_w, *ln2_b; /* hidden floats each (owned) */
    qv_linear q, k, v, o, fc1, fc2;
} i3_block;

/* The same weights as graph tensors (in mllm_idefics3_vision.w). */
typedef struct {
    mllm_tensor *ln1_w, *ln1_b, *ln2_w, *ln2_b;
    qv_lin q, k, v, o, fc1, fc2;
} i3_block_t;

struct mllm_idefics3_vision {
    mllm_idefics3_vision_config c;
    mllm_safetensors *st;
    qv_linear patch;  /* hidden x (3 * patch^2), with bias */
    float *pos;       /* (image_size / patch)^2 x hidden (owned) */
    i3_block *blocks;
    float *post_w, *post_b;
    qv_linear proj;   /* hidden * scale^2 -> out_hidden, no bias */
    mllm_pool *pool;
    bool pool_lent;       /* mllm_*_vision_lend_pool's: not freed here */
    mllm_idefics3_pre_params pre;
    qv_weights w;
    i3_block_t *tb;       /* depth */
    qv_lin tpatch, tproj;
    mllm_tensor *tpos, *tpost_w, *tpost_b;
};

/* The graph tensors of v's weights (idefics3_vision_load.c). */
mllm_status i3_make_tensors(mllm_idefics3_vision *v);

#endif
