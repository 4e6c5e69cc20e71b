/* The engine (src/engine) on a loaded mllm_model, for the server: an
   engine on the model's thread pool over the model's decoder, and a
   request's grammar as the engine's constraint hooks. Not part of the
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

/* One generation's grammar as engine hooks, with a match state of its own
   from the grammar's start: g's compiled rules are only read (g must
   outlive it), so several generations may follow one grammar at once. */
typedef struct mllm_engine_grammar mllm_engine_grammar;
mllm_status mllm_engine_grammar_new(mllm_model *m, mllm_grammar *g, mllm_engine_grammar **out);
const mllm_engine_constraint *mllm_engine_grammar_hooks(const mllm_engine_grammar *eg);
void mllm_engine_grammar_free(mllm_engine_grammar *eg); /* NULL ok */

#endif
