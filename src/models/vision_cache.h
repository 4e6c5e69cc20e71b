/* The embedding cache of one vision tower (models/vision_tower.h): image
   embeddings keyed by the encoded file's bytes, the tower's preprocessing
   parameters and its weights' identity, so a later turn (or another session of the
   same model) about the same image does not decode or encode it again.
   Thread-safe: a mutex guards the entries, another makes the tower encode
   one image at a time. */
#ifndef MLLM_MODELS_VISION_CACHE_H
#define MLLM_MODELS_VISION_CACHE_H
#include <mllm/mllm.h>
#include <stddef.h>
#include "models/vision_tower.h"

/* The cache's bounds: the embeddings plus a copy of each file's bytes
   (kept to compare on a hit, so two files whose hashes collide are never
   confused), least recently used first out. An image larger than the
   whole budget is encoded and not kept. */
#define MLLM_VISION_CACHE_MAX_ENTRIES 32
#define MLLM_VISION_CACHE_MAX_BYTES ((size_t)256 << 20)

typedef struct mllm_vision_cache mllm_vision_cache;

/* A cache over tower (of fam, not owned: it must outlive the cache),
   whose rows are n_embd wide; weights_id identifies what else its rows
   depend on (the caller's hash of its weights and backends). */
mllm_status mllm_vision_cache_new(const mllm_vision_family *fam, void *tower, int n_embd, uint64_t weights_id,
                                  mllm_vision_cache **out);
void mllm_vision_cache_free(mllm_vision_cache *c); /* NULL ok */
/* Embeds the encoded image (PNG, JPEG, BMP, GIF, WebP) of len bytes:
   from the cache (out->cached, a copy of its rows), else decoded, encoded
   and kept; label names it in errors. out->id: the key, a 64-bit hash of
   the file's bytes, the preprocessing parameters and weights_id (never 0),
   the same in every process: equal ids, equal rows (to the strength of
   that hash), which the prefix cache and store key image blocks by
   (engine.h). */
mllm_status mllm_vision_cache_embed(mllm_vision_cache *c, const void *data, size_t len, const char *label,
                                    mllm_vision_embedding *out);

#endif
