/* Inside the Qwen2.5-VL vision tower: the weights (qwen2vl_vision_load.c)
   and the forward pass (qwen2vl_vision.c). */
#ifndef MLLM_MODELS_QWEN2VL_VISION_INTERNAL_H
#define MLLM_MODELS_QWEN2VL_VISION_INTERNAL_H
#include "core/threadpool.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "models/vision/qwen2vl_vision.h"
#include "models/vision/vit_ops.h"

typedef struct {
    float *norm1, *norm2; /* hidden floats each (owned) */
    qv_linear qkv, proj, gate, up, down;
} qv_block;

/* The same weights as graph tensors (in mllm_qwen2vl_vision.w). */
typedef struct {
    mllm_tensor *norm1, *norm2;
    qv_lin q, k, v, proj, gate, up, down;
    bool full; /* full attention (fullatt_block_indexes), else per window */
} qv_block_t;

struct mllm_qwen2vl_vision {
    mllm_qwen2vl_vision_config c;
    mllm_safetensors *st;     /* a Hugging Face folder's weights, or */
    struct mllm_gguf *gg;     /* an mmproj GGUF's (qwen2vl_vision_gguf.c) */
    qv_linear patch;      /* hidden x (3 * temporal * patch^2), no bias */
    qv_block *blocks;
    float *merge_norm;    /* hidden */
    qv_linear mlp0, mlp2; /* 4 hidden -> 4 hidden -> out_hidden */
    mllm_pool *pool;
    bool pool_lent;       /* mllm_*_vision_lend_pool's: not freed here */
    mllm_qwen2vl_pre_params pre; /* preprocessor_config.json's, else the defaults */
    qv_weights w;
    qv_block_t *tb;       /* depth */
    qv_lin tpatch, tmlp0, tmlp2;
    mllm_tensor *tmerge_norm;
};

/* The graph tensors of v's weights, once both loaders have bound them
   (qwen2vl_vision_load.c). */
mllm_status qv_make_tensors(mllm_qwen2vl_vision *v);

/* The check both loaders share: the sizes. */
mllm_status qv_check_config(const mllm_qwen2vl_vision_config *c, const char *path);

#endif
