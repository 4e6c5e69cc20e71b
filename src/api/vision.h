/* A model's vision side (api/vision.c): the vision tower, opened on the
   first image (a text-only use of a vision-language checkpoint never maps
   it), and the cache of image embeddings, keyed by the encoded file's bytes
   and the preprocessing parameters, so a later turn (or another session of
   the same model) about the same image does not decode or encode it again.
   Shared by every session of the model: a mutex guards both. */
#ifndef MLLM_API_VISION_H
#define MLLM_API_VISION_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "models/vision_tower.h"

/* The cache's bounds: the embeddings plus a copy of each file's bytes
   (kept to compare on a hit, so two files whose hashes collide are never
   confused), least recently used first out. An image larger than the
   whole budget is encoded and not kept. */
#define MLLM_VISION_CACHE_MAX_ENTRIES 32
#define MLLM_VISION_CACHE_MAX_BYTES ((size_t)256 << 20)
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
