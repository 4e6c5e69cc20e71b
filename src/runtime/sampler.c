#include "runtime/sampler.h"
#include <math.h>
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

mllm_status mllm_sampler_init(mllm_sampler *s, const mllm_sampling *p, int n_vocab) {
    memset(s, 0, sizeof *s);
    if (p->temperature < 0 || p->top_p <= 0 || p->top_p > 1 || p->min_p < 0 || p->min_p > 1 ||
        p->repeat_penalty <= 0 || p->top_k < 0 || p->repeat_last_n < 0)
        return mllm_err(MLLM_ERR_INVALID_ARG,
                        "invalid sampling parameters (temp %g, top_p %g, min_p %g, repeat_penalty %g, top_k %d)",
                        p->temperature, p->top_p, p->min_p, p->repeat_penalty, p->top_k);
    s->p = *p;
    s->n_vocab = n_vocab;
    mllm_rng_seed(&s->rng, p->seed);
    s->logits = mllm_malloc((size_t)n_vocab * sizeof(float));
    s->idx = mllm_malloc((size_t)n_vocab * sizeof(int32_t));
    s->prob = mllm_malloc((size_t)n_vocab * sizeof(float));
    if (!s->logits || !s->idx || !s->prob) {
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
    memset(s, 0, sizeof *s);
}

int32_t mllm_argmax(const float *x, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
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

int32_t mllm_sampler_sample(mllm_sampler *s, const float *logits, const int32_t *recent,
                            int n_recent) {
    const mllm_sampling *p = &s->p;
    int n = s->n_vocab;
    float *l = s->logits;
    memcpy(l, logits, (size_t)n * sizeof(float));
    if (p->repeat_penalty != 1.0f && p->repeat_last_n > 0) {
        /* Penalise each distinct recent token once (as llama.cpp does). */
        int from = n_recent > p->repeat_last_n ? n_recent - p->repeat_last_n : 0;
        for (int i = from; i < n_recent; i++) {
            int32_t t = recent[i];
            if (t < 0 || t >= n) continue;
            bool seen = false;
            for (int j = from; j < i; j++)
                if (recent[j] == t) { seen = true; break; }
            if (seen) continue;
            l[t] = l[t] > 0 ? l[t] / p->repeat_penalty : l[t] * p->repeat_penalty;
        }
    }
    if (p->temperature <= 0) return mllm_argmax(l, n);

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
    double r = mllm_rng_uniform(&s->rng) * sum, acc = 0;
    for (int i = 0; i < k; i++) {
        acc += s->prob[i];
        if (r < acc) return s->idx[i];
    }
    return s->idx[k - 1];
}
