/* Decoding one 30-s window: the logit filters of openai-whisper's
   decoding.py (SuppressBlank, SuppressTokens, ApplyTimestampRules), then
   greedy argmax, sampling (temperature > 0, best_of candidates) or beam
   search (beam_size live beams; an EOT among the beam_size best candidates
   of a step finishes one, until beam_size * patience are finished, as in
   CTranslate2's BeamSearch under faster-whisper; ranked by sum logprob /
   length). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backends/cpu.h"
#include "core/alloc.h"
#include "core/error.h"
#include "models/whisper/whisper_transcribe.h"
#include "runtime/rng.h"

typedef struct {
    int32_t *tok;    /* generated tokens */
    int n;
    float sum_lp;
    bool done;
} seq_t;

typedef struct {
    int32_t *tok;
    int n;
    float sum_lp;
} fin_t;

/* log(sum(exp(lg - mx))) + mx over lg[i0, i1) with mx the largest value
   there: the log-softmax normalizer, summed in double in index order (the
   -inf entries add exactly 0). `ts_from` >= i0: *ts_sum (if not NULL) gets
   the sum over [ts_from, i1) from the same terms, in the same order. */
static double lse_range(const float *lg, int i0, int i1, int ts_from, double *ts_sum, float *mx_out) {
    float mx = -INFINITY;
    for (int i = i0; i < i1; i++) mx = lg[i] > mx ? lg[i] : mx;
    const double sum = mllm_cpu_sum_exp(lg + i0, i1 - i0, mx, ts_from - i0, ts_sum);
    if (mx_out) *mx_out = mx;
    return log(sum) + mx;
}

/* Whisper's rules on one sequence's logits, given what it generated; returns
   the log-softmax normalizer of the filtered logits (lp[i] = lg[i] - it),
   computed once here: each exp pass over the 51,864 logits costs about as
   much as a decoder layer. */
static float filter(const mllm_whisper *w, const mllm_whisper_options *o, const seq_t *s, float *lg) {
    const mllm_whisper_special *sp = mllm_whisper_tokens(w);
    const int V = mllm_whisper_hp(w)->n_vocab, tb = sp->timestamp_begin;
    int n;
    const int32_t *sup = mllm_whisper_suppress(w, false, &n);
    if (s->n == 0) {
        int nb;
        const int32_t *b = mllm_whisper_suppress(w, true, &nb);
        for (int i = 0; i < nb; i++) lg[b[i]] = -INFINITY;
    }
    for (int i = 0; i < n; i++) lg[sup[i]] = -INFINITY;
    const int32_t always[] = {sp->transcribe, sp->translate, sp->sot, sp->sot_prev, sp->sot_lm, sp->no_speech};
    for (size_t i = 0; i < sizeof always / sizeof always[0]; i++)
        if (always[i] >= 0) lg[always[i]] = -INFINITY;
    if (!o->timestamps) return (float)lse_range(lg, 0, V, V, NULL, NULL);
    lg[sp->no_timestamps] = -INFINITY;
    const bool last_ts = s->n >= 1 && s->tok[s->n - 1] >= tb;
    const bool penult_ts = s->n < 2 || s->tok[s->n - 2] >= tb;
    if (last_ts) {
        if (penult_ts) /* a pair just closed: text must follow */
            for (int i = tb; i < V; i++) lg[i] = -INFINITY;
        else /* an open timestamp: another timestamp or EOT */
            for (int i = 0; i < sp->eot; i++) lg[i] = -INFINITY;
    }
    int last = -1;
    for (int i = s->n - 1; i >= 0; i--)
        if (s->tok[i] >= tb) {
            last = s->tok[i];
            break;
        }
    if (last >= 0) { /* monotonic; a segment has a nonzero length */
        const int lim = last_ts && !penult_ts ? last : last + 1;
        for (int i = tb; i < lim && i < V; i++) lg[i] = -INFINITY;
    }
    if (s->n == 0) { /* the first token is a timestamp, at most max_initial_timestamp */
        for (int i = 0; i < tb; i++) lg[i] = -INFINITY;
        if (o->max_initial_timestamp >= 0) {
            const int last_allowed = tb + (int)lroundf(o->max_initial_timestamp / 0.02f);
            for (int i = last_allowed + 1; i < V; i++) lg[i] = -INFINITY;
        }
    }
    /* If the timestamps together are likelier than any one text token, a
       timestamp it is. */
    double ts_sum;
    float mx;
    const double lse = lse_range(lg, 0, V, tb, &ts_sum, &mx);
    double text_max = -INFINITY;
    for (int i = 0; i < tb; i++) text_max = lg[i] > text_max ? lg[i] : text_max;
    const double ts_lp = ts_sum > 0 ? log(ts_sum) + mx - lse : -INFINITY;
    if (!(ts_lp > text_max - lse)) return (float)lse;
    for (int i = 0; i < tb; i++) lg[i] = -INFINITY;
    /* the text entries now add exactly 0: the sum over the timestamps is
       the whole one */
    return (float)lse_range(lg, tb, V, V, NULL, NULL);
}

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* The k best of lg[i] - lse (the log-probabilities), best first, ties to the
   lower index: what k rounds of argmax-and-remove give, in one pass. Short
   of k finite ones, the rest are (-inf, token 0), as argmax over all -inf
   returns 0. */
static void top_k_lp(const float *lg, int V, float lse, int k, float *val, int *idx) {
    int n = 0;
    for (int i = 0; i < V; i++) {
        const float v = lg[i] - lse;
        if (v == -INFINITY || (n == k && !(v > val[k - 1]))) continue;
        int j = n < k ? n++ : k - 1;
        for (; j > 0 && v > val[j - 1]; j--) {
            val[j] = val[j - 1];
            idx[j] = idx[j - 1];
        }
        val[j] = v;
        idx[j] = i;
    }
    for (; n < k; n++) {
        val[n] = -INFINITY;
        idx[n] = 0;
    }
}

static int sample(const float *lg, int V, float temp, mllm_rng *rng) {
    float mx = -INFINITY;
    for (int i = 0; i < V; i++) mx = lg[i] > mx ? lg[i] : mx;
    double sum = 0;
    for (int i = 0; i < V; i++) sum += lg[i] == -INFINITY ? 0.0 : exp((double)((lg[i] - mx) / temp));
    double u = mllm_rng_uniform(rng) * sum, acc = 0;
    int last = argmax(lg, V);
    for (int i = 0; i < V; i++) {
        if (lg[i] == -INFINITY) continue;
        acc += exp((double)((lg[i] - mx) / temp));
        last = i;
        if (acc >= u) return i;
    }
    return last;
}

typedef struct {
    float score;
    int parent, tok;
} cand_t;

static int cand_cmp(const void *a, const void *b) {
    const cand_t *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->parent != y->parent ? x->parent - y->parent : x->tok - y->tok; /* deterministic ties */
}

mllm_status mllm_whisper_decode_window(mllm_whisper *w, const mllm_whisper_options *o, const int32_t *prompt,
                                       int n_prompt, int sot_index, float temperature, uint64_t seed,
                                       mllm_whisper_hyp *out) {
    const mllm_whisper_hparams *hp = mllm_whisper_hp(w);
    const mllm_whisper_special *sp = mllm_whisper_tokens(w);
    const int V = hp->n_vocab;
    memset(out, 0, sizeof *out);
    const bool beam = temperature == 0.0f && o->beam_size > 1;
    const int S = beam ? o->beam_size : temperature > 0.0f ? o->best_of : 1;
    if (S < 1 || 2 * S > MLLM_WHISPER_MAX_SEQ || n_prompt < 1 || n_prompt >= hp->n_text_ctx || sot_index < 0 ||
        sot_index >= n_prompt)
        return mllm_err(MLLM_ERR_INVALID_ARG, "whisper: %d candidates or a prompt of %d tokens out of range", S,
                        n_prompt);
    const int sample_len = hp->n_text_ctx / 2 < hp->n_text_ctx - n_prompt ? hp->n_text_ctx / 2 : hp->n_text_ctx - n_prompt;
    const int max_fin = beam ? (int)lroundf((float)S * (o->patience > 0 ? o->patience : 1.0f)) : S;
    float *lg = mllm_malloc((size_t)S * (size_t)V * sizeof(float));
    float *top_v = mllm_malloc((size_t)(S + 1) * sizeof(float));
    int *top_i = mllm_malloc((size_t)(S + 1) * sizeof(int));
    seq_t *seq = mllm_calloc((size_t)S * 2, sizeof *seq);
    fin_t *fin = mllm_calloc((size_t)max_fin + (size_t)S + 1, sizeof *fin);
    cand_t *cand = mllm_malloc((size_t)S * (size_t)(S + 1) * sizeof *cand);
    int32_t *next = mllm_malloc((size_t)S * sizeof *next);
    int *parent = mllm_malloc((size_t)S * sizeof *parent);
    int32_t *pool = mllm_malloc((size_t)S * 2 * (size_t)(sample_len + 1) * sizeof(int32_t));
    mllm_status st = MLLM_OK;
    int n_fin = 0;
    if (!lg || !top_v || !top_i || !seq || !fin || !cand || !next || !parent || !pool) {
        st = mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory for decoding");
        goto done;
    }
    for (int i = 0; i < 2 * S; i++) seq[i].tok = pool + (size_t)i * (size_t)(sample_len + 1);
    mllm_rng rng;
    mllm_rng_seed(&rng, seed);

    /* The prompt up to <|startoftranscript|>: its logits give no_speech. */
    if ((st = mllm_whisper_decode(w, 1, prompt, sot_index + 1, 0, lg, false)) != MLLM_OK) goto done;
    if (sp->no_speech >= 0)
        out->no_speech_prob = expf(lg[sp->no_speech] - (float)lse_range(lg, 0, V, V, NULL, NULL));
    if (sot_index + 1 < n_prompt &&
        (st = mllm_whisper_decode(w, 1, prompt + sot_index + 1, n_prompt - sot_index - 1, sot_index + 1, lg, false)) !=
            MLLM_OK)
        goto done;
    for (int s = 1; s < S; s++) {
        memcpy(lg + (size_t)s * V, lg, (size_t)V * sizeof(float));
        mllm_whisper_kv_copy(w, s, 0, n_prompt);
    }
    int pos = n_prompt;
    for (int step = 0; step < sample_len; step++) {
        int n_cand = 0;
        bool all_done = true;
        for (int s = 0; s < S; s++) {
            seq_t *q = &seq[s];
            float *l = lg + (size_t)s * V;
            if (q->done || (beam && step == 0 && s > 0)) { /* beams start identical: expand one */
                next[s] = sp->eot;
                continue;
            }
            const float lse = filter(w, o, q, l);
            if (beam) { /* the beam_size + 1 best tokens */
                top_k_lp(l, V, lse, S + 1, top_v, top_i);
                for (int k = 0; k <= S; k++) cand[n_cand++] = (cand_t){q->sum_lp + top_v[k], s, top_i[k]};
                continue;
            }
            const int t = temperature > 0.0f ? sample(l, V, temperature, &rng) : argmax(l, V);
            next[s] = t;
            if (t == sp->eot) {
                q->done = true;
            } else {
                q->sum_lp += l[t] - lse;
                q->tok[q->n++] = t;
                all_done = false;
            }
        }
        if (beam) {
            qsort(cand, (size_t)n_cand, sizeof *cand, cand_cmp);
            int saved = 0;
            for (int c = 0; c < n_cand && saved < S; c++) {
                const seq_t *src = &seq[cand[c].parent];
                if (cand[c].tok == sp->eot) {
                    /* CTranslate2's BeamSearch (faster-whisper's, the
                       reference): only an EOT among the beam_size best
                       candidates finishes a hypothesis. openai-whisper also
                       keeps one ranked below that (before the beam_size-th
                       live one), so it reached beam_size finished sooner and
                       stopped before "you. Ask" on jfk.wav. */
                    if (c < S && n_fin < max_fin) {
                        fin[n_fin].tok = mllm_malloc((size_t)(src->n + 1) * sizeof(int32_t));
                        if (!fin[n_fin].tok) {
                            st = mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory for decoding");
                            goto done;
                        }
                        memcpy(fin[n_fin].tok, src->tok, (size_t)src->n * sizeof(int32_t));
                        fin[n_fin].n = src->n;
                        fin[n_fin++].sum_lp = cand[c].score;
                    }
                    continue;
                }
                seq_t *dst = &seq[S + saved];
                memcpy(dst->tok, src->tok, (size_t)src->n * sizeof(int32_t));
                dst->n = src->n;
                dst->tok[dst->n++] = cand[c].tok;
                dst->sum_lp = cand[c].score;
                parent[saved] = cand[c].parent;
                next[saved] = cand[c].tok;
                saved++;
            }
            for (int s = 0; s < saved; s++) {
                seq_t tmp = seq[s];
                seq[s] = seq[S + s];
                seq[S + s] = tmp;
            }
            if (n_fin >= max_fin || saved < S) break;
            if ((st = mllm_whisper_kv_reorder(w, parent, S, pos)) != MLLM_OK) goto done;
            all_done = false;
        }
        if (all_done || step + 1 >= sample_len) break;
        if ((st = mllm_whisper_decode(w, S, next, 1, pos, lg, false)) != MLLM_OK) goto done;
        pos++;
    }
    /* The candidates: finished beams (or, short of beam_size, the live ones
       with EOT appended), every sample otherwise; best sum_lp / length. */
    if (beam) {
        for (int s = 0; s < S && n_fin < S; s++) {
            int best = -1;
            for (int k = 0; k < S; k++)
                if (!seq[k].done && (best < 0 || seq[k].sum_lp > seq[best].sum_lp)) best = k;
            if (best < 0) break;
            seq[best].done = true;
            fin[n_fin].tok = mllm_malloc((size_t)(seq[best].n + 1) * sizeof(int32_t));
            if (!fin[n_fin].tok) {
                st = mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory for decoding");
                goto done;
            }
            memcpy(fin[n_fin].tok, seq[best].tok, (size_t)seq[best].n * sizeof(int32_t));
            fin[n_fin].n = seq[best].n;
            fin[n_fin++].sum_lp = seq[best].sum_lp;
        }
    } else {
        for (int s = 0; s < S; s++) fin[n_fin++] = (fin_t){seq[s].tok, seq[s].n, seq[s].sum_lp};
    }
    int best = 0;
    for (int i = 1; i < n_fin; i++) {
        const float a = fin[i].sum_lp / (float)(fin[i].n > 0 ? fin[i].n : 1);
        const float b = fin[best].sum_lp / (float)(fin[best].n > 0 ? fin[best].n : 1);
        if (a > b) best = i;
    }
    out->tokens = mllm_malloc((size_t)(fin[best].n + 1) * sizeof(int32_t));
    if (!out->tokens) {
        st = mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory for decoding");
        goto done;
    }
    memcpy(out->tokens, fin[best].tok, (size_t)fin[best].n * sizeof(int32_t));
    out->n_tokens = fin[best].n;
    out->sum_logprob = fin[best].sum_lp;
    out->avg_logprob = fin[best].sum_lp / (float)(fin[best].n + 1);
done:
    if (beam && fin)
        for (int i = 0; i < n_fin; i++) mllm_free(fin[i].tok);
    mllm_free(lg);
    mllm_free(top_v);
    mllm_free(top_i);
    mllm_free(seq);
    mllm_free(fin);
    mllm_free(cand);
    mllm_free(next);
    mllm_free(parent);
    mllm_free(pool);
    return st;
}
