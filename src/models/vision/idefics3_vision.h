/* The Idefics3 / SmolVLM vision side: a SigLIP tower (a conv patch
   embedding, learned position embeddings, pre-LN blocks of multi-head
   attention and a GELU(tanh) MLP, all with biases, a post-layernorm) run
   on each tile of image/idefics3_pre.h, then the Idefics3 connector: a
   pixel shuffle by scale_factor (each s x s block of patches becomes one
   row of s^2 * hidden values) and a bias-free linear projection into the
   text model's width. As transformers' SmolVLMModel / Idefics3Model
   get_image_features: tests/unit/test_smolvlm.c.

   Loaded from a Hugging Face folder: config.json's vision_config and
   scale_factor, model.safetensors' model.vision_model.* and
   model.connector.* tensors (f32, f16 or bf16, used in place), and
   preprocessor_config.json. Not yet: sharded checkpoints, GGUF mmproj
   files of this family (both refused with a message). */
#ifndef MLLM_MODELS_IDEFICS3_VISION_H
#define MLLM_MODELS_IDEFICS3_VISION_H
#include <mllm/mllm.h>
#include <stdint.h>
#include "core/threadpool.h"
#include "backends/backend.h"
#include "image/idefics3_pre.h"

#define MLLM_IDEFICS3_MAX_DEPTH 256

typedef struct {
    int depth, hidden, intermediate, heads, image_size, patch, scale, out_hidden;
    float eps;
    int image_seq_len; /* tokens a tile: (image_size / patch)^2 / scale^2 */
} mllm_idefics3_vision_config;

typedef struct mllm_idefics3_vision mllm_idefics3_vision;

/* Opens the folder dir (config.json + model.safetensors); n_threads >= 1. */
mllm_status mllm_idefics3_vision_open(const char *dir, int n_threads, mllm_idefics3_vision **out);
void mllm_idefics3_vision_free(mllm_idefics3_vision *v);
const mllm_idefics3_vision_config *mllm_idefics3_vision_config_of(const mllm_idefics3_vision *v);
/* preprocessor_config.json's sizes and normalisation (defaults otherwise). */
void mllm_idefics3_vision_pre_params(const mllm_idefics3_vision *v, mllm_idefics3_pre_params *p);
/* The backends its graphs run on, in order of preference (the CPU, last,
   takes the ops they cannot compute); the weights each can use are copied
   there now. n == 0: the CPU alone (as opened). Not while encoding. */
mllm_status mllm_idefics3_vision_use_backends(mllm_idefics3_vision *v, mllm_backend *const *be, int n);
/* *emb gets n_tiles * image_seq_len rows of out_hidden floats
   (mllm_malloc'd): tile by tile in the order of px, each tile's rows in
   row-major order of its shuffled blocks, the order the prompt's <image>
   tokens take them in. */
mllm_status mllm_idefics3_vision_encode(mllm_idefics3_vision *v, const mllm_idefics3_pixels *px, float **emb,
                                        int64_t *n_tokens);

/* Runs its graphs on pool from now on, lent (it must outlive v; NULL: the
   caller only), instead of a pool of its own: a model's towers share the
   model's. Not while encoding. */
void mllm_idefics3_vision_lend_pool(mllm_idefics3_vision *v, mllm_pool *pool);

#endif
