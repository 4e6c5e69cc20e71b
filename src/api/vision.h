/* A model's vision side (api/vision.c): the vision tower of its registry
   row, opened on the first image (a text-only use of a vision-language
   checkpoint never maps it), and the tower's embedding cache
   (models/vision_cache.h). Shared by every session of the model. */
#ifndef MLLM_API_VISION_H
#define MLLM_API_VISION_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "models/vision_tower.h"

/* Images in one prompt. */
#define MLLM_VISION_MAX_IMAGES 64

struct mllm_vision;

/* The tokenizer's image token (the model's tower names it: <|image_pad|>,
   <image>), or -1 (no tower, or the tokenizer lacks it). */
int32_t mllm_model_image_pad_token(const mllm_model *m);
/* The image token id of the model's vision tower (opening it on
   first use). Errors: the model has no vision tower (the message says why). */
mllm_status mllm_model_vision_pad(mllm_model *m, int32_t *pad);

/* Embeds the encoded image (PNG, JPEG, BMP, GIF, WebP) of len bytes through the
   cache; label names it in errors. */
mllm_status mllm_model_vision_embed(mllm_model *m, const void *data, size_t len, const char *label,
                                    mllm_vision_embedding *out);

/* The model's vision state, freed with it (model.c). */
void mllm_model_free_vision(mllm_model *m);

#endif
