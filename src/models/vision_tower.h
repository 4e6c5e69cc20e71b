/* The contract of a vision row (MLLM_KIND_VISION: the Qwen2.5-VL and
   Idefics3 / SmolVLM towers): opened from the text model's folder or an
   mmproj file, it turns a decoded image into rows of the text model's
   width and says how the prompt makes room for them. A decoder row that
   takes images points at its tower (mllm_arch.vision); src/api/vision.c
   (the embedding cache) and chat_image.c drive it without naming the
   family. */
#ifndef MLLM_MODELS_VISION_TOWER_H
#define MLLM_MODELS_VISION_TOWER_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stdint.h>
#include "backends/backend.h"
#include "core/threadpool.h"
#include "image/image.h"
#include "tokenizer/tokenizer.h"

/* One image's embeddings, ready for mllm_session_eval_image. */
typedef struct {
    uint64_t id;      /* the cache's key of the image (vision_cache.h): equal ids, equal embeddings (never 0) */
    int grid[3];      /* t, h, w in patches */
    int merge;        /* the merger's block side (2) */
    int64_t n_rows;   /* LLM tokens: grid h * w / merge^2 */
    float *emb;       /* n_rows x n_embd, mllm_malloc'd */
    int width, height, resized_w, resized_h;
    bool cached;      /* came from the cache (decode_ms and encode_ms are 0) */
    double decode_ms; /* decode + preprocess */
    double encode_ms; /* the vision tower */
    /* Tiled towers (Idefics3 / SmolVLM): the tiles' rows and columns (0, 0:
       one tile, no splitting) and tokens a tile, for the prompt's markers;
       0 for the others */
    int tile_rows, tile_cols, tile_tokens;
} mllm_vision_embedding;

void mllm_vision_embedding_free(mllm_vision_embedding *e);
/* The hash a tower's params_hash gives: its preprocessing's integers and
   normalisation, field by field (no padding bytes hashed). */
uint64_t mllm_vision_params_hash(const int64_t *ints, int n_ints, const float mean[3], const float std[3]);

typedef struct mllm_vision_family {
    /* The tokenizer's image token, which the chat template places once per image. */
    const char *image_token;
    /* The rows take M-RoPE positions (t, h, w): the decoder must have M-RoPE sections. */
    bool mrope;
    /* Opens the tower: from mmproj when it is not NULL, else from the text
       model's own path (hf: it is a Hugging Face folder). Errors say what
       to give instead when this family cannot be read from there. It runs
       on pool (lent: the model's, which must outlive it). */
    mllm_status (*open)(const char *model_path, bool hf, const char *mmproj, mllm_pool *pool, void **out);
    void (*free)(void *tower);
    /* The backends its graphs run on, in order of preference (the CPU,
       last, takes what they cannot compute); the weights each can use are
       placed there now. n == 0: the CPU alone (as opened). */
    mllm_status (*use_backends)(void *tower, mllm_backend *const *be, int n);
    /* The width of its rows (the text model's n_embd, checked by the caller). */
    int (*out_width)(const void *tower);
    /* A hash of what the preprocessing depends on, for the cache key. */
    uint64_t (*params_hash)(const void *tower);
    /* Preprocesses and encodes im: fills grid, merge, n_rows, emb,
       resized_w/h and the tile fields, and adds the preprocessing time to
       decode_ms and the tower's to encode_ms. One call at a time per tower. */
    mllm_status (*embed)(void *tower, const mllm_image *im, mllm_vision_embedding *out);
    /* The prompt with the k-th image token of ids[0..n) replaced by the
       k-th image's tokens (emb[k].n_rows of pad among them) in *out
       (mllm_malloc'd, *n_out tokens, at most max_tokens). */
    mllm_status (*expand)(const mllm_tokenizer *tok, const int32_t *ids, size_t n, int32_t pad,
                          const mllm_vision_embedding *emb, int n_images, int64_t max_tokens, int32_t **out,
                          int64_t *n_out);
} mllm_vision_family;

#endif
