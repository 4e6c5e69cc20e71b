#include "runtime/sampler.h"
#include <math.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"

MLLM_API void mllm_sampling_default(mllm_sampling *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->temperature = 0.8f;
    p->top_p = 0.95f;
    p->min_p = 0.05f;
    p->repeat_penalty = 1.0f;
    p->top_k = 40;
    p->repeat_last_n = 64;
    p->max_tokens = 128;
    p->seed = 0;
}

/* The first release's fields keep their places; the new ones start where
   its last one ended (inside what was its tail padding). */
_Static_assert(offsetof(mllm_sampling, ignore_eos) == offsetof(mllm_sampling_v1, ignore_eos),
               "mllm_sampling's first fields moved");
_Static_assert(offsetof(mllm_sampling, presence_penalty) == offsetof(mllm_sampling_v1, ignore_eos) + sizeof(int),
               "mllm_sampling's appended fields must follow ignore_eos");

_Static_assert(MLLM_SAMPLING_ABI3_SIZE == offsetof(mllm_sampling, n_top_logprobs) + sizeof(void *),
               "mllm_sampling's grammar must follow ABI 3's last field, in its tail padding");

mllm_status mllm_sampling_upgrade(const mllm_sampling *in, mllm_sampling *out) {
    size_t n = in->struct_size;
    if (n != sizeof *out && n != MLLM_SAMPLING_ABI3_SIZE && n != sizeof(mllm_sampling_v1))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_sampling struct_size %u, expected %zu (or %zu, %zu)",
                        in->struct_size, sizeof *out, MLLM_SAMPLING_ABI3_SIZE, sizeof(mllm_sampling_v1));
    mllm_sampling_default(out);
    /* An old struct's tail padding is not ours to read as new fields. */
    memcpy(out, in, n == sizeof(mllm_sampling_v1) ? offsetof(mllm_sampling, presence_penalty) : n);
    out->struct_size = sizeof *out;
    return MLLM_OK;
}

static mllm_status check_params(const mllm_sampling *p, int n_vocab) {
    if (p->temperature < 0 || p->top_p <= 0 || p->top_p > 1 || p->min_p < 0 || p->min_p > 1 ||
        p->repeat_penalty <= 0 || p->top_k < 0 || p->repeat_last_n < 0)
        return mllm_err(MLLM_ERR_INVALID_ARG,
                        "invalid sampling parameters (temp %g, top_p %g, min_p %g, repeat_penalty %g, top_k %d)",
                        p->temperature, p->top_p, p->min_p, p->repeat_penalty, p->top_k);
    if (!isfinite(p->presence_penalty) || !isfinite(p->frequency_penalty))
        return mllm_err(MLLM_ERR_INVALID_ARG, "presence_penalty %g / frequency_penalty %g must be finite",
                        p->presence_penalty, p->frequency_penalty);
    if (p->n_top_logprobs < 0 || p->n_top_logprobs > MLLM_MAX_TOP_LOGPROBS)
        return mllm_err(MLLM_ERR_INVALID_ARG, "n_top_logprobs %d outside [0, %d]", p->n_top_logprobs,
                        MLLM_MAX_TOP_LOGPROBS);
    if (p->n_logit_bias < 0 || (p->n_logit_bias > 0 && (!p->logit_bias_ids || !p->logit_bias)))
        return mllm_err(MLLM_ERR_INVALID_ARG, "logit bias: %d entries without arrays", p->n_logit_bias);
    for (int i = 0; i < p->n_logit_bias; i++)
        if (p->logit_bias_ids[i] < 0 || p->logit_bias_ids[i] >= n_vocab || !isfinite(p->logit_bias[i]))
            return mllm_err(MLLM_ERR_INVALID_ARG, "logit bias %d: token %d (vocabulary [0, %d)), bias %g", i,
                            p->logit_bias_ids[i], n_vocab, p->logit_bias[i]);
    return MLLM_OK;
}

mllm_status mllm_sampler_init(mllm_sampler *s, const mllm_sampling *p, int n_vocab) {
    memset(s, 0, sizeof *s);
    mllm_status st = check_params(p, n_vocab);
    if (st != MLLM_OK) return st;
    s->p = *p;
    s->n_vocab = n_vocab;
    mllm_rng_seed(&s->rng, p->seed);
    s->logits = mllm_malloc((size_t)n_vocab * sizeof(float));
    s->idx = mllm_malloc((size_t)n_vocab * sizeof(int32_t));
    s->prob = mllm_malloc((size_t)n_vocab * sizeof(float));
    s->count = mllm_calloc((size_t)n_vocab, sizeof(int32_t));
    if (!s->logits || !s->idx || !s->prob || !s->count) {
        mllm_sampler_free(s);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory for the sampler");
    }
    return MLLM_OK;
}

void mllm_sampler_free(mllm_sampler *s) {
    if (!s) return;
    mllm_free(s->logits);
    mllm_free(s->idx);
    mllm_free(s->prob);
    mllm_free(s->count);
    memset(s, 0, sizeof *s);
}

/* The index a plain scan (best = i where x[i] > x[best]) ends at, in two
   passes the compiler vectorises (the scan's compare chain ran serially on
   the engine thread: 5% of an 8-stream server step): the largest value over
   8 lanes, then the first index equal to it. The same index: the scan's
   best is the first element equal to the maximum, since every earlier one
   is below it (== also takes -0 and +0 as equal, as > never tells them
   apart); a NaN is never the maximum and never equal to it, and one at
   index 0 stays the answer (nothing compares greater with it). */
int32_t mllm_argmax(const float *x, int n) {
    if (n <= 1 || x[0] != x[0]) return 0;
    float m[8];
    for (int j = 0; j < 8; j++) m[j] = x[0];
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
    float mx = m[0];
    for (int j = 1; j < 8; j++) mx = m[j] > mx ? m[j] : mx;
    for (; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    for (i = 0; i < n; i++)
        if (x[i] == mx) return i;
    return 0;
}

/* The logits array the comparator sorts against (qsort has no user pointer). */
static _Thread_local const float *g_sort_keys;
static int by_logit_desc(const void *a, const void *b) {
    float x = g_sort_keys[*(const int32_t *)a], y = g_sort_keys[*(const int32_t *)b];
    if (x != y) return x < y ? 1 : -1;
    return *(const int32_t *)a - *(const int32_t *)b;
}

/* The k best ids (unordered) through a min-heap: O(n log k), not a full sort
   of a 150k vocabulary per token. */
static bool worse(const float *l, int32_t a, int32_t b) {
    return l[a] < l[b] || (l[a] == l[b] && a > b);
}
static void sift_down(const float *l, int32_t *h, int k, int i) {
    for (;;) {
        int c = 2 * i + 1;
        if (c >= k) return;
        if (c + 1 < k && worse(l, h[c + 1], h[c])) c++;
        if (!worse(l, h[c], h[i])) return;
        int32_t t = h[i]; h[i] = h[c]; h[c] = t;
        i = c;
    }
}
static void select_top_k(const float *l, int n, int k, int32_t *h) {
    for (int i = 0; i < k; i++) h[i] = i;
    for (int i = k / 2 - 1; i >= 0; i--) sift_down(l, h, k, i);
    for (int i = k; i < n; i++) {
        if (worse(l, h[0], i)) { h[0] = i; sift_down(l, h, k, 0); }
    }
}

/* llama.cpp's penalties over the last repeat_last_n tokens: each distinct
   token once, by how often it occurs there. count[] is left all zero. */
static void penalize(mllm_sampler *s, float *l, const int32_t *recent, int n_recent) {
    const mllm_sampling *p = &s->p;
    if (p->repeat_last_n <= 0 ||
        (p->repeat_penalty == 1.0f && p->presence_penalty == 0 && p->frequency_penalty == 0))
        return;
    int n = s->n_vocab;
    int from = n_recent > p->repeat_last_n ? n_recent - p->repeat_last_n : 0;
    for (int i = from; i < n_recent; i++)
        if (recent[i] >= 0 && recent[i] < n) s->count[recent[i]]++;
    for (int i = from; i < n_recent; i++) {
        int32_t t = recent[i];
        if (t < 0 || t >= n || s->count[t] == 0) continue; /* 0: already done */
        if (p->repeat_penalty != 1.0f) l[t] = l[t] > 0 ? l[t] / p->repeat_penalty : l[t] * p->repeat_penalty;
        l[t] -= (float)s->count[t] * p->frequency_penalty + p->presence_penalty;
        s->count[t] = 0;
    }
}

void mllm_sampler_logprobs(mllm_sampler *s, const float *logits, int32_t id, int n_top, int32_t *top_ids,
                           float *top_lp, float *lp) {
    int n = s->n_vocab;
    float mx = logits[mllm_argmax(logits, n)];
    double sum = 0;
    for (int i = 0; i < n; i++) sum += exp((double)logits[i] - mx);
    float lse = mx + (float)log(sum);
    *lp = logits[id] - lse;
    if (n_top > n) n_top = n;
    if (n_top <= 0) return;
    select_top_k(logits, n, n_top, s->idx);
    g_sort_keys = logits;
    qsort(s->idx, (size_t)n_top, sizeof(int32_t), by_logit_desc);
    for (int i = 0; i < n_top; i++) {
        top_ids[i] = s->idx[i];
        top_lp[i] = logits[s->idx[i]] - lse;
    }
}

/* Penalties and biases into s->logits (the working copy). */
static float *processed(mllm_sampler *s, const float *logits, const int32_t *recent, int n_recent) {
    const mllm_sampling *p = &s->p;
    float *l = s->logits;
    memcpy(l, logits, (size_t)s->n_vocab * sizeof(float));
    penalize(s, l, recent, n_recent);
    for (int i = 0; i < p->n_logit_bias; i++) l[p->logit_bias_ids[i]] += p->logit_bias[i];
    return l;
}

int mllm_sampler_dist(mllm_sampler *s, const float *logits, const int32_t *recent, int n_recent, double *sum_out) {
    const mllm_sampling *p = &s->p;
    int n = s->n_vocab;
    float *l = processed(s, logits, recent, n_recent);
    /* Candidates sorted by logit; top-k bounds how many we keep. */
    int k = p->top_k > 0 && p->top_k < n ? p->top_k : n;
    g_sort_keys = l;
    if (k < n) {
        select_top_k(l, n, k, s->idx);
    } else {
        for (int i = 0; i < n; i++) s->idx[i] = i;
    }
    qsort(s->idx, (size_t)k, sizeof(int32_t), by_logit_desc);
    /* Probabilities at temperature 1 for top-p / min-p (llama.cpp applies
       them before temperature in its default chain). */
    float mx = l[s->idx[0]];
    double sum = 0;
    for (int i = 0; i < k; i++) sum += (s->prob[i] = expf(l[s->idx[i]] - mx));
    if (p->top_p < 1.0f) {
        double cum = 0;
        for (int i = 0; i < k; i++) {
            cum += s->prob[i] / sum;
            if (cum >= p->top_p) { k = i + 1; break; }
        }
    }
    if (p->min_p > 0) {
        float thr = p->min_p * s->prob[0];
        int keep = 1;
        while (keep < k && s->prob[keep] >= thr) keep++;
        k = keep;
    }
    sum = 0;
    for (int i = 0; i < k; i++) sum += (s->prob[i] = expf((l[s->idx[i]] - mx) / p->temperature));
    *sum_out = sum;
    return k;
}

int32_t mllm_sampler_draw(mllm_rng *rng, const int32_t *idx, const float *w, int k, double sum) {
    double r = mllm_rng_uniform(rng) * sum, acc = 0;
    for (int i = 0; i < k; i++) {
        acc += w[i];
        if (r < acc) return idx[i];
    }
    return idx[k - 1];
}

int32_t mllm_sampler_sample(mllm_sampler *s, const float *logits, const int32_t *recent,
                            int n_recent) {
    if (s->p.temperature <= 0) return mllm_argmax(processed(s, logits, recent, n_recent), s->n_vocab);
    double sum;
    int k = mllm_sampler_dist(s, logits, recent, n_recent, &sum);
    return mllm_sampler_draw(&s->rng, s->idx, s->prob, k, sum);
}

float mllm_sampler_greedy_confidence(const mllm_sampler *s, int32_t best) {
    return mllm_prob_of_best(s->logits, s->n_vocab, best);
}

float mllm_prob_of_best(const float *l, int n, int32_t best) {
    const float mx = l[best], cut = mx - 20.0f; /* below: e^-20 each, nothing even over 150k tokens */
    float sum = 0;
    for (int i = 0; i < n; i++)
        if (l[i] > cut) sum += expf(l[i] - mx);
    return 1.0f / sum;
}

void mllm_sampler_report_logprobs(mllm_sampler *s, const mllm_sampling *sp, const float *logits, int32_t tok) {
    int32_t top_ids[MLLM_MAX_TOP_LOGPROBS];
    float top_lp[MLLM_MAX_TOP_LOGPROBS], lp;
    mllm_sampler_logprobs(s, logits, tok, sp->n_top_logprobs, top_ids, top_lp, &lp);
    int n_top = sp->n_top_logprobs < s->n_vocab ? sp->n_top_logprobs : s->n_vocab;
    sp->on_logprobs(sp->logprobs_user, tok, lp, top_ids, top_lp, n_top);
}
