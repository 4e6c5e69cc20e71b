/* Speculative decoding inside the generation loop (mllm_generate_ids): a
   proposer (prompt lookup, a draft model) guesses the tokens after the one
   just sampled, the model evaluates them all in one pass, and the loop then
   takes them one by one as if it had sampled them: a proposed token that
   the sampler keeps costs no evaluation (its KV rows and next logits are
   already there). The session only ever holds delivered tokens, so a
   generation that stops in the middle of a proposal leaves it exactly as
   plain decoding would. */
#ifndef MLLM_API_SPECULATIVE_H
#define MLLM_API_SPECULATIVE_H
#include "api/internal.h"
#include "runtime/sampler.h"

/* Starts a generation with sampling p (the prompt is evaluated): decides
   whether it speculates and brings a draft model's session up to date. */
mllm_status mllm_spec_begin(mllm_session *s, const mllm_sampling *p);
/* The next token from s->logits: a plain draw, or the verdict on the
   proposed token there (greedy: the same draw; sampling: accepted with
   probability min(1, p/q), else a draw from norm(max(p - q, 0))). */
int32_t mllm_spec_sample(mllm_session *s, mllm_sampler *smp);
/* Makes the session hold tok (delivered) with the logits after it: free
   when it was the proposed token, else an evaluation, speculative when a
   proposer has tokens; remaining = how many more tokens may be delivered. */
mllm_status mllm_spec_advance(mllm_session *s, int32_t tok, int remaining);
void mllm_spec_end(mllm_session *s);
/* Cuts the draft set on s to logits for its first n_out token ids
   (mllm_session_cut_vocab), as set_speculative does at 65536: for tests,
   whose tiny models have fewer ids. */
mllm_status mllm_spec_cut_draft(mllm_session *s, int n_out);

/* The draft computes logits for this many token ids only (the most
   frequent: mllm_session_cut_vocab): for a 0.5B model with a 151k vocabulary the output matrix is
   36 % of the bytes a token reads, and ids past 65536 are rare in
   generated text (bench/history/2026-12-01_to_2026-12-03.md). */
#define MLLM_SPEC_DRAFT_VOCAB 65536
/* Same tokens under the same ids in model t and draft d (the logit rows
   may differ by up to 128 padding rows), the same BOS and EOS: a proposal
   is only worth checking if the draft's id means the model's. Errors name
   the first difference (MLLM_ERR_INVALID_ARG). */
mllm_status mllm_spec_check_vocab(const mllm_model *t, const mllm_model *d);
/* How many of ctx[0, n) draft session d holds, from the start. */
int mllm_spec_common_prefix(const mllm_session *d, const int32_t *ctx, int n);
/* Brings d to hold ctx[0, n) with the logits after it, evaluating only
   what it lacks (at least the last token when it holds more than ctx);
   *evals (NULL: not counted) goes up by the evaluations made (0 or 1). */
mllm_status mllm_spec_draft_sync(mllm_session *d, const int32_t *ctx, int n, int *evals);

#endif
