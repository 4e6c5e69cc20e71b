/* Token sampling: repetition penalty, then top-k, top-p, min-p, temperature
   and a seeded draw (the order llama.cpp's default chain uses). Greedy when
   temperature <= 0. All buffers are allocated once per sampler. */
#ifndef MLLM_RUNTIME_SAMPLER_H
#define MLLM_RUNTIME_SAMPLER_H
#include <mllm/mllm.h>
#include <stdint.h>
#include "runtime/rng.h"

typedef struct {
    mllm_sampling p;
    mllm_rng rng;
    int n_vocab;
    float *logits;   /* (n_vocab) working copy */
    int32_t *idx;    /* (n_vocab) candidate ids */
    float *prob;     /* (n_vocab) candidate probabilities */
} mllm_sampler;

mllm_status mllm_sampler_init(mllm_sampler *s, const mllm_sampling *p, int n_vocab);
void mllm_sampler_free(mllm_sampler *s);
/* Picks the next token from logits; recent = the last n_recent tokens
   (prompt and generated) for the repetition penalty. */
int32_t mllm_sampler_sample(mllm_sampler *s, const float *logits, const int32_t *recent,
                            int n_recent);
/* Index of the largest logit; ties go to the lowest id. */
int32_t mllm_argmax(const float *x, int n);

#endif
