/* A draft model as the batching engine's proposer (engine.h, `propose`):
   one draft session per sequence the engine steps, found again by the
   context it holds, proposing greedily what the draft would say next. The
   engine checks every proposal by drawing from the model's own logits with
   the random numbers it would use without speculation, so greedy and
   seeded text are those of --no-speculative whatever the draft says.
   Prompt lookup, when on, is the engine's own and goes first (it costs
   nothing: mllm_engine_params.lookup_first); the draft proposes where it
   has no match. The server's one user (sched_engine.c). */
#ifndef MLLM_API_ENGINE_DRAFT_H
#define MLLM_API_ENGINE_DRAFT_H
#include <stdbool.h>
#include <stdint.h>
#include <mllm/mllm.h>
#include "core/threadpool.h"
#include "runtime/spec_ctl.h"

typedef struct mllm_engine_draft mllm_engine_draft;

typedef struct {
    mllm_model *draft;   /* must outlive the proposer; its vocabulary is checked against model's */
    mllm_model *model;
    mllm_pool *pool;     /* the engine's: drafting runs between its steps */
    int n_slots;         /* draft sessions at most (the engine's max_running) */
    int n_ctx;           /* positions per sequence */
    float p_min;         /* no proposal below this probability of the draft's token */
} mllm_engine_draft_params;

/* Errors: MLLM_ERR_INVALID_ARG (a draft whose vocabulary is not the
   model's, or that cannot generate), MLLM_ERR_NOMEM. */
mllm_status mllm_engine_draft_new(const mllm_engine_draft_params *p, mllm_engine_draft **out);
void mllm_engine_draft_free(mllm_engine_draft *d); /* NULL ok */
/* The engine's propose hook (user: the mllm_engine_draft): greedy
   proposals down to p_min; priced, only while the product of the draft's
   confidences covers each one's row and the next draft step. */
int mllm_engine_draft_propose(void *user, const int32_t *ctx, int n, int cap, const mllm_spec_price *price,
                              int32_t *out);
/* The draft's forward passes so far (its prefills of prompts included). */
uint64_t mllm_engine_draft_evals(const mllm_engine_draft *d);

#endif
