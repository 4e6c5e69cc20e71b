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

/* The cache's bounds: the embeddings plus a copy of each file's bytes
   (kept to compare on a hit, so two files whose hashes collide are never
   confused), least recently used first out. An image larger than the
   whole budget is encoded and not kept. */
#define MLLM_VISION_CACHE_MAX_ENTRIES 32
#define MLLM_VISION_CACHE_MAX_BYTES ((size_t)256 << 20)
/* Images in one prompt. */
#define MLLM_VISION_MAX_IMAGES 64

struct mllm_vision;

/* One image's embeddings, ready for mllm_session_eval_image. */
typedef struct {
    uint64_t id;      /* the cache entry's id: equal ids, equal embeddings (never 0) */
    int grid[3];      /* t, h, w in patches */
    int merge;        /* the merger's block side (2) */
    int64_t n_rows;   /* LLM tokens: grid h * w / merge^2 */
    float *emb;       /* n_rows x n_embd, mllm_malloc'd */
    int width, height, resized_w, resized_h;
    bool cached;      /* came from the cache (decode_ms and encode_ms are 0) */
    double decode_ms; /* decode + preprocess */
    double encode_ms; /* the vision tower */
    /* Idefics3 / SmolVLM: the tiles' rows and columns (0, 0: one tile, no
       splitting) and tokens a tile, for the prompt's markers; 0 for Qwen */
    int tile_rows, tile_cols, tile_tokens;
} mllm_vision_embedding;

void mllm_vision_embedding_free(mllm_vision_embedding *e);

/* The tokenizer's image token (<|image_pad|>; Idefics3 / SmolVLM: <image>),
   or -1. */
int32_t mllm_model_image_pad_token(const mllm_model *m);
/* The <|image_pad|> token id of the model's vision tower (opening it on
   first use). Errors: the model has no vision tower (the message says why). */
mllm_status mllm_model_vision_pad(mllm_model *m, int32_t *pad);

/* Embeds the encoded image (PNG, JPEG, BMP, GIF, WebP) of len bytes through the
   cache; label names it in errors. */
mllm_status mllm_model_vision_embed(mllm_model *m, const void *data, size_t len, const char *label,
                                    mllm_vision_embedding *out);

/* The model's vision state, freed with it (model.c). */
void mllm_model_free_vision(mllm_model *m);

#endif
