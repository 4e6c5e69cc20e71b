/* The engine (src/engine) on a loaded mllm_model, for the server: an
   engine on the model's thread pool over the model's decoder, and a
   request's grammar as the engine's constraint (runtime/constraint.h). Not part of the
   public API (yet): the server is its one user. */
#ifndef MLLM_API_ENGINE_API_H
#define MLLM_API_ENGINE_API_H
#include <mllm/mllm.h>
#include "engine/engine.h"

typedef struct {
    mllm_engine *e;
    mllm_pool *pool;
    bool own_pool; /* another thread count than the model's: a pool of its own */
} mllm_model_engine;

/* The context length a session of m gets by default (n_ctx 0). */
int mllm_model_default_ctx(const mllm_model *m);
/* p->n_ctx 0: the default; n_threads 0: the model's. The model must
   outlive it. Errors: MLLM_ERR_UNSUPPORTED (not a text decoder), those of
   mllm_engine_new. */
mllm_status mllm_model_engine_open(mllm_model *m, const mllm_engine_params *p, int n_threads, mllm_model_engine *out);
void mllm_model_engine_close(mllm_model_engine *me);

/* A conversation with images as an engine request's prompt and images
   (chat_image.c), as mllm_chat_prefill reads it: the template's ids with
   each image token expanded by the model's vision tower, the images' rows
   through the model's embedding cache, and, for an M-RoPE decoder, the
   prompt's rotation positions and the offset of the text after it. */
typedef struct {
    int32_t *ids;            /* (n) */
    int n;
    mllm_engine_image image; /* its arrays point at the fields below */
    uint64_t *id;
    int64_t *n_rows;
    float *emb;
    int32_t *rope_pos;
    int n_cached;            /* images that came from the embedding cache */
} mllm_engine_image_prompt;

/* Errors: those of mllm_chat_prefill's images (MLLM_ERR_FORMAT: not
   decodable; MLLM_ERR_INVALID_ARG: images and the template's image tokens
   differ; MLLM_ERR_CONTEXT_FULL: more than max_tokens; MLLM_ERR_UNSUPPORTED:
   the model takes no images). */
mllm_status mllm_engine_image_prompt_new(mllm_model *m, const char *conversation, const void *const *images,
                                         const size_t *image_lens, int n_images, int max_tokens,
                                         mllm_engine_image_prompt **out);
void mllm_engine_image_prompt_free(mllm_engine_image_prompt *p); /* NULL ok */

/* One generation's grammar as the engine's constraint, with a match state of its own
   from the grammar's start: g's compiled rules are only read (g must
   outlive it), so several generations may follow one grammar at once. */
typedef struct mllm_engine_grammar mllm_engine_grammar;
mllm_status mllm_engine_grammar_new(mllm_model *m, mllm_grammar *g, mllm_engine_grammar **out);
/* The request's constraint (mllm_engine_request.constraint). */
mllm_constraint *mllm_engine_grammar_constraint(mllm_engine_grammar *eg);
void mllm_engine_grammar_free(mllm_engine_grammar *eg); /* NULL ok */

#endif
