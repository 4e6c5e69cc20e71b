/* The controller both speculative paths share (the session's,
   api/speculative.c, and the batching engine's, engine/engine.c): a
   proposer's proposal length follows what was accepted, and every
   MLLM_SPEC_CTL_WINDOW passes it is judged by the tokens its passes gained
   against what they cost (each path measures both its own way); one that
   does not pay rests for MLLM_SPEC_CTL_BACKOFF_MIN generated tokens, twice
   as long after each further failure (up to MLLM_SPEC_CTL_BACKOFF_MAX),
   and is then tried again. */
#ifndef MLLM_RUNTIME_SPEC_CTL_H
#define MLLM_RUNTIME_SPEC_CTL_H
#include <stdbool.h>

#define MLLM_SPEC_CTL_WINDOW 8
#define MLLM_SPEC_CTL_BACKOFF_MIN 32
#define MLLM_SPEC_CTL_BACKOFF_MAX 1024

typedef struct {
    int off_until; /* generated-token index from which it may propose again */
    int backoff;
    int n_cur;     /* proposal length, adapted to what was accepted */
    int w_passes;  /* the current window: passes, what they gained, what they cost */
    double w_gain, w_cost;
} mllm_spec_ctl;

void mllm_spec_ctl_init(mllm_spec_ctl *c, int n_cur);
/* May it propose at generated-token index now? */
static inline bool mllm_spec_ctl_on(const mllm_spec_ctl *c, int now) { return now >= c->off_until; }
/* A pass that proposed k tokens kept `accepted`: the next length (longer
   after a full acceptance, up to n_max; just past the accepted run after a
   rejection). */
void mllm_spec_ctl_adapt(mllm_spec_ctl *c, int k, int accepted, int n_max);
/* One pass's gain and cost into the window; at its end, the verdict
   (gain below cost: rest from index now). Returns true when it was turned
   off. */
bool mllm_spec_ctl_judge(mllm_spec_ctl *c, double gain, double cost, int now);

/* A draft model's proposal: after a token whose proposals so far are all
   kept with probability p_run (estimated by the product of the draft's
   probabilities of its tokens), one more costs a draft step (step_cost) and
   a row of the verification (row_cost), both in one-token passes of the
   model, and saves at most p_run passes: worth drafting while p_run covers
   that cost. */
static inline bool mllm_spec_ctl_draft_more(double p_run, double step_cost, double row_cost) {
    return p_run >= step_cost + row_cost;
}

#endif
