/* Token sampling: repetition / presence / frequency penalties and logit
   biases, then top-k, top-p, min-p, temperature and a seeded draw (the
   order llama.cpp's default chain uses). Greedy when temperature <= 0. All
   buffers are allocated once per sampler. */
#ifndef MLLM_RUNTIME_SAMPLER_H
#define MLLM_RUNTIME_SAMPLER_H
#include <mllm/mllm.h>
#include <stddef.h>
#include <stdint.h>
#include "runtime/rng.h"

typedef struct {
    mllm_sampling p;
    mllm_rng rng;
    int n_vocab;
    float *logits;   /* (n_vocab) working copy */
    int32_t *idx;    /* (n_vocab) candidate ids */
    float *prob;     /* (n_vocab) candidate probabilities */
    int32_t *count;  /* (n_vocab) occurrences in the penalty window; all 0 between calls */
} mllm_sampler;

/* mllm_sampling as first released (ABI 2): its sizeof is what callers
   built against that header put in struct_size. */
typedef struct {
    uint32_t struct_size;
    float temperature, top_p, min_p, repeat_penalty;
    int top_k, repeat_last_n, max_tokens;
    uint64_t seed;
    int ignore_eos;
} mllm_sampling_v1;

/* The sizeof of ABI 3's mllm_sampling, which ended at n_top_logprobs (its
   tail padding is where grammar starts). */
#define MLLM_SAMPLING_ABI3_SIZE offsetof(mllm_sampling, grammar)

/* Copies a caller's struct of any accepted size (sizeof(mllm_sampling),
   ABI 3's offsetof(mllm_sampling, grammar), or sizeof(mllm_sampling_v1))
   into out, the fields it lacks at their defaults; MLLM_ERR_INVALID_ARG
   for another size. */
mllm_status mllm_sampling_upgrade(const mllm_sampling *in, mllm_sampling *out);
/* p must be a full-size struct (mllm_sampling_upgrade). */
mllm_status mllm_sampler_init(mllm_sampler *s, const mllm_sampling *p, int n_vocab);
void mllm_sampler_free(mllm_sampler *s);
/* Picks the next token from logits; recent = the last n_recent tokens
   (prompt and generated) for the repetition penalty. */
int32_t mllm_sampler_sample(mllm_sampler *s, const float *logits, const int32_t *recent,
                            int n_recent);
/* The distribution mllm_sampler_sample draws from when temperature > 0
   (penalties, biases, top-k, top-p, min-p, temperature): its k candidates
   are s->idx[0..k), most likely first, with weights s->prob[0..k) summing
   to *sum (not normalised). Valid until the next call on s. */
int mllm_sampler_dist(mllm_sampler *s, const float *logits, const int32_t *recent, int n_recent, double *sum);
/* One draw from weights w[0..k) (total sum) over ids idx[0..k). */
int32_t mllm_sampler_draw(mllm_rng *rng, const int32_t *idx, const float *w, int k, double sum);
/* After a greedy mllm_sampler_sample that returned best: the softmax
   probability of best among the processed logits (how sure the model is). */
float mllm_sampler_greedy_confidence(const mllm_sampler *s, int32_t best);
/* Log-softmax of the raw logits (temperature 1, nothing applied): *lp for
   id, and the n_top most likely ids with theirs, most likely first. */
void mllm_sampler_logprobs(mllm_sampler *s, const float *logits, int32_t id, int n_top, int32_t *top_ids,
                           float *top_lp, float *lp);
/* Calls sp->on_logprobs with the model's log-probabilities of tok (about
   to be delivered) and its sp->n_top_logprobs alternatives. */
void mllm_sampler_report_logprobs(mllm_sampler *s, const mllm_sampling *sp, const float *logits, int32_t tok);
/* Index of the largest logit; ties go to the lowest id. */
int32_t mllm_argmax(const float *x, int n);
/* The softmax probability of logits[best] (the largest) among logits[0, n). */
float mllm_prob_of_best(const float *logits, int n, int32_t best);

#endif
