/* The controller both speculative paths share (the session's,
   api/speculative.c, and the batching engine's, engine/engine.c): a
   proposer's proposal length follows what was accepted, and every
   MLLM_SPEC_CTL_WINDOW passes it is judged by the tokens its passes gained
   against what they cost (each path measures both its own way); one that
   does not pay rests for MLLM_SPEC_CTL_BACKOFF_MIN generated tokens, twice
   as long after each further failure (up to MLLM_SPEC_CTL_BACKOFF_MAX),
   and is then tried again.

   The batching engine also decides before each pass whether it is worth
   making, and how long it should be (mllm_spec_ctl_len): it keeps an
   estimate of how often a proposal is kept (from its passes, and from
   proposals it did not verify but compared with the tokens that came
   next, which cost nothing) and weighs it against what one more token
   costs the step (mllm_spec_cost, a fit of step time against batch
   tokens). In a full batch on few cores a row costs nearly a token of
   output, so only proposals that are very likely kept are verified. */
#ifndef MLLM_RUNTIME_SPEC_CTL_H
#define MLLM_RUNTIME_SPEC_CTL_H
#include <stdbool.h>
#include <mllm/mllm.h>

#define MLLM_SPEC_CTL_WINDOW 8
#define MLLM_SPEC_CTL_BACKOFF_MIN 32
#define MLLM_SPEC_CTL_BACKOFF_MAX 1024
/* The acceptance estimate starts as if one proposal had been kept and one
   refused (0.5), and each observed proposal weighs DECAY times the one
   after it, so it follows what the text does now (a copied stretch, then
   new text). */
#define MLLM_SPEC_CTL_PRIOR_KEPT 1.0
#define MLLM_SPEC_CTL_PRIOR_REFUSED 1.0
#define MLLM_SPEC_CTL_DECAY 0.95

typedef struct {
    int off_until; /* generated-token index from which it may propose again */
    int backoff;
    int n_cur;     /* proposal length, adapted to what was accepted */
    int w_passes;  /* the current window: passes, what they gained, what they cost */
    double w_gain, w_cost;
    double kept, refused; /* observed proposals (decayed): kept, and refused (a pass's first wrong one) */
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

/* What a proposal costs where it would be verified, in one-token passes
   of the model (tokens of output): a proposer that knows how sure it is
   (a draft model) proposes while the chance that its run is all kept
   covers the next row (and its own next step: mllm_spec_ctl_draft_more). */
typedef struct {
    double step;                         /* the proposer's next step (a draft's evaluation) */
    double row[MLLM_SPEC_MAX_DRAFT + 1]; /* row[i]: the (i + 1)-th proposal's row in the pass */
} mllm_spec_price;

/* A draft's i-th proposal (from 0), whose own probability is conf, after
   proposals all kept with chance *p_run (updated): 0, not proposed (below
   p_min, or, priced, its row costs more than it likely saves); 1, proposed
   and the last (priced: the next would not pay its draft step and row, or
   i + 1 is cap); 2, proposed and the draft goes on. pr NULL: unpriced. */
int mllm_spec_draft_take(const mllm_spec_price *pr, double *p_run, double conf, double p_min, int i, int cap);

/* The cost model's extra token of a pass, in one-token passes (an
   estimate for a bandwidth-bound decode: the weights are read once for all
   T tokens; measured 0.03-0.05 per token up to T = 4 on a loaded 2-core
   host, and more past 4, where the packed kernels sweep the weights again:
   bench/history/2026-12-01_to_2026-12-03.md). */
#define MLLM_SPEC_PASS_PRIOR 0.06

/* The cost of a pass over n tokens of one sequence against a one-token
   pass (c[n], c[1] = 1), measured per length as passes are timed: not
   linear in n (the CPU's packed kernels take 4 tokens per sweep over the
   weights). A length not timed yet costs the longest shorter one that was,
   and per_token for each token more. */
typedef struct {
    double c1_ms; /* a one-token pass, moving average */
    int c1_n;
    double per_token;
    double c[MLLM_SPEC_MAX_DRAFT + 2];
    unsigned timed; /* bit n: c[n] was measured */
} mllm_spec_passes;

void mllm_spec_passes_init(mllm_spec_passes *p, double per_token);
/* A pass over n tokens (1..MLLM_SPEC_MAX_DRAFT + 1) took ms. */
void mllm_spec_passes_add(mllm_spec_passes *p, int n, double ms);
/* A pass over n tokens (1..MLLM_SPEC_MAX_DRAFT + 1) in one-token passes. */
double mllm_spec_passes_cost(const mllm_spec_passes *p, int n);
/* What the (i + 1)-th proposal's row adds to its pass. */
static inline double mllm_spec_passes_row(const mllm_spec_passes *p, int i) {
    return mllm_spec_passes_cost(p, i + 2) - mllm_spec_passes_cost(p, i + 1);
}

/* k proposals of which the first `accepted` were right (a verified pass,
   or proposals compared with the tokens generated after them; accepted ==
   k: no wrong one seen) into the acceptance estimate. */
void mllm_spec_ctl_observe(mllm_spec_ctl *c, int k, int accepted);
/* The estimated chance that a proposal is kept when the ones before it
   were (each position alike: the number kept in a pass is geometric). */
double mllm_spec_ctl_keep(const mllm_spec_ctl *c);
/* How many of up to cap proposals to verify when each costs `cost` tokens
   of output: the k-th is expected to be kept with chance keep^k, so the
   longest run whose last token still gains more than it costs; 0: none
   (a cost of 1 or more never pays: a kept proposal saves one token). */
int mllm_spec_ctl_len(const mllm_spec_ctl *c, double cost, int cap);
/* The same when the k-th proposal costs costs[k - 1] (a session's passes:
   each length measured on its own). */
int mllm_spec_ctl_len_costs(const mllm_spec_ctl *c, const double *costs, int cap);

/* Step time against the tokens of the step, fitted as the engine runs
   (exponentially weighted mean and (co)variance), and what extra tokens
   cost from it. */
typedef struct {
    double t, y, tt, ty; /* mean tokens, mean ms, variance of tokens, covariance */
    int n;
    double prior;        /* until the fit is usable: an extra token's time over a one-token step's */
} mllm_spec_cost;

void mllm_spec_cost_init(mllm_spec_cost *f, double prior);
/* The fitted time of a step of T tokens (the mean per token times T while
   the fit is not usable); 0 before any step. */
double mllm_spec_cost_step_ms(const mllm_spec_cost *f, int T);
/* A step of T tokens took ms. */
void mllm_spec_cost_add(mllm_spec_cost *f, int T, double ms);
/* What one extra token costs a step of B decodes, in tokens of that
   step's output: its time over the step's time per token, from the fit,
   never below what the prior gives (prior B / (1 + prior B)). In (0, 1). */
double mllm_spec_cost_token(const mllm_spec_cost *f, int B);

#endif
