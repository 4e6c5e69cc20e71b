/* The Qwen2.5-VL vision tower (a ViT encoder family): 14 x 14 patches (a
   Conv3d over 2 frames, run as a matmul on the flat patches of
   image/qwen2vl_pre.h), 2-D rotary embeddings (half the rotated pairs
   turn with the patch's row, half with its column), window attention
   (windows of window_size pixels, 112: 8 x 8 patches) with full attention
   at fullatt_block_indexes, RMSNorm + SwiGLU blocks with biases, and the
   2 x 2 patch merger (RMSNorm, Linear, GELU, Linear) into the LLM's width.
   As transformers' Qwen2_5_VisionTransformerPretrainedModel (its
   pooler_output): tests/unit/test_qwen2vl_vision.c.

   Loaded from a Hugging Face folder: config.json's vision_config and the
   visual.* (or model.visual.*) tensors of model.safetensors, f32, f16 or
   bf16, used in place from the mapping; or from an mmproj GGUF
   (qwen2vl_vision_gguf.c). Not yet: sharded checkpoints, videos (grid_t > 1), Qwen2-VL (LayerNorm + GELU
   blocks) -- each refused with a message. */
#ifndef MLLM_MODELS_QWEN2VL_VISION_H
#define MLLM_MODELS_QWEN2VL_VISION_H
#include <mllm/mllm.h>
#include <stdint.h>
#include "core/threadpool.h"
#include "backends/backend.h"
#include "image/qwen2vl_pre.h"

#define MLLM_QWEN2VL_MAX_DEPTH 256
/* Longest side in patches (a 65535-pixel image is 4681). */
#define MLLM_QWEN2VL_MAX_GRID 8192

typedef struct {
    int depth, hidden, intermediate, heads, out_hidden;
    int patch, merge, temporal, window;
    int n_fullatt;
    int fullatt[MLLM_QWEN2VL_MAX_DEPTH];
    float rope_theta;
} mllm_qwen2vl_vision_config;

typedef struct mllm_qwen2vl_vision mllm_qwen2vl_vision;

/* Opens the folder dir (config.json + model.safetensors); n_threads >= 1. */
mllm_status mllm_qwen2vl_vision_open(const char *dir, int n_threads, mllm_qwen2vl_vision **out);
/* Opens an mmproj GGUF (llama.cpp's clip.* keys, projector qwen2.5vl_merger). */
mllm_status mllm_qwen2vl_vision_open_gguf(const char *path, int n_threads, mllm_qwen2vl_vision **out);
/* The same from a GGUF image in memory (not copied: it must outlive v). */
mllm_status mllm_qwen2vl_vision_open_gguf_memory(const void *buf, size_t len, const char *label, int n_threads,
                                                 mllm_qwen2vl_vision **out);
void mllm_qwen2vl_vision_free(mllm_qwen2vl_vision *v);
const mllm_qwen2vl_vision_config *mllm_qwen2vl_vision_config_of(const mllm_qwen2vl_vision *v);
/* The preprocessing parameters the tower expects: patch / merge / temporal
   sizes from its config, pixel limits and normalisation from the folder's
   preprocessor_config.json, the defaults of qwen2vl_pre.h otherwise. */
void mllm_qwen2vl_vision_pre_params(const mllm_qwen2vl_vision *v, mllm_qwen2vl_pre_params *p);
/* The backends its graphs run on, in order of preference (the CPU, last,
   takes the ops they cannot compute); the weights each can use are copied
   there now. n == 0: the CPU alone (as opened). Not while encoding. */
mllm_status mllm_qwen2vl_vision_use_backends(mllm_qwen2vl_vision *v, mllm_backend *const *be, int n);
/* Embeds one image: *emb gets grid_h * grid_w / merge^2 rows of out_hidden
   floats (mllm_malloc'd), in the order of the image's merged 2 x 2 blocks,
   row-major, the order the LLM reads its <|image_pad|> tokens in. */
mllm_status mllm_qwen2vl_vision_encode(mllm_qwen2vl_vision *v, const mllm_qwen2vl_pixels *px, float **emb,
                                       int64_t *n_tokens);

/* Runs its graphs on pool from now on, lent (it must outlive v; NULL: the
   caller only), instead of a pool of its own: a model's towers share the
   model's. Not while encoding. */
void mllm_qwen2vl_vision_lend_pool(mllm_qwen2vl_vision *v, mllm_pool *pool);

#endif
