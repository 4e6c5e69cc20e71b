/* Speculative decoding: proposers, one-pass verification, the accept /
   resample rule and the controller that turns a proposer off where it does
   not pay (docs/speculative.md). */
#include "api/speculative.h"
#include <math.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "runtime/ngram_lookup.h"
#include "runtime/spec_ctl.h"

enum { SRC_LOOKUP = 0, SRC_DRAFT = 1, SRC_N = 2 };

/* The controller (runtime/spec_ctl.h) judges each proposer on its own. */
/* With temperature > 0 the controller uses a cost model, not the clock, so
   that a seed gives the same text on every run: a pass over T tokens costs
   1 + SPEC_VERIFY_COST * (T - 1) one-token passes (runtime/spec_ctl.h), a
   draft evaluation the ratio of the bytes a token of the draft reads to
   the model's. */
#define SPEC_VERIFY_COST MLLM_SPEC_PASS_PRIOR

typedef mllm_spec_ctl spec_src;

struct mllm_spec {
    mllm_speculative_params p;
    mllm_session *draft;   /* on p.draft, sharing the target's pool */
    double draft_ratio;    /* the draft's weight bytes read per token / the model's */
    /* A draft step, and a pass over n tokens (runtime/spec_ctl.h), in
       one-token passes of the model: the cost model (draft_ratio,
       SPEC_VERIFY_COST) until, greedy, passes are timed. */
    double c_step;
    mllm_spec_passes passes;
    mllm_speculative_stats *stats; /* the session's (spec_stats) */
    /* the generation */
    bool active, greedy, have_dsmp;
    mllm_sampler dsmp;     /* the draft's sampler: the same settings as the model's */
    mllm_rng rng;          /* the draft's own draws */
    spec_src src[SRC_N];
    int gen_i;             /* tokens advanced in this generation */
    /* the pass in flight: proposals queue[qi..qn) at the positions after n_past */
    int32_t queue[MLLM_SPEC_MAX_DRAFT];
    int qn, qi, q_src;
    int sh_at;             /* a lookup proposal not verified: its position (-1: none) and token */
    int32_t sh_tok;
    const float *rows;     /* (qn + 1, n_vocab) the model's logits of that pass */
    double pass_ms, verify_ms, draft_ms; /* the pass; its verification; what came before it */
    int pass_draft_evals;
    /* sampling with a draft: the draft's distribution of each proposal */
    int32_t *qidx;         /* (n_draft_max, draft n_vocab) */
    float *qprob;
    int qk[MLLM_SPEC_MAX_DRAFT];
    float *dense, *resid;  /* (n_scratch) scratch, dense all zero between uses */
    int n_scratch;
};

MLLM_API void mllm_speculative_default_params(mllm_speculative_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->mode = MLLM_SPEC_AUTO;
    p->lookup = 1;
    p->n_draft_max = 8;
    p->ngram_min = 2;
    p->ngram_max = 4;
    p->draft_p_min = 0.1f;
}

static void free_draft_bufs(struct mllm_spec *sp) {
    mllm_free(sp->qidx);
    mllm_free(sp->qprob);
    mllm_free(sp->dense);
    mllm_free(sp->resid);
    sp->qidx = NULL;
    sp->qprob = sp->dense = sp->resid = NULL;
    sp->n_scratch = 0;
}

static void spec_free(struct mllm_spec *sp) {
    if (!sp) return;
    mllm_session_free(sp->draft);
    if (sp->have_dsmp) mllm_sampler_free(&sp->dsmp);
    free_draft_bufs(sp);
    mllm_free(sp);
}

static struct mllm_spec *spec_of(mllm_session *s) {
    if (!s->spec && (s->spec = mllm_calloc(1, sizeof *s->spec))) {
        mllm_speculative_default_params(&s->spec->p);
        s->spec->stats = &s->spec_stats;
        s->spec_free = spec_free;
    }
    return s->spec;
}

/* Bytes a one-token pass reads: every weight (as loaded: requantized ones
   at their new size) but the embedding table (one row of it), the output
   matrix only its first n_out rows. */
static double weight_bytes(const mllm_model *m, int n_out) {
    double b = -(double)m->dec.requant_saved;
    for (size_t i = 0; i < m->file->n_weights; i++) b += (double)m->file->weights[i].size;
    const mllm_tensor *e = m->dec.tok_embd, *o = m->dec.output;
    const double nv = (double)m->dec.cfg.n_vocab, ob = (double)o->nb[1] * nv;
    if (e != o) b -= (double)e->nb[1] * nv;
    return b - ob + ob * (n_out < nv ? n_out / nv : 1);
}

mllm_status mllm_spec_check_vocab(const mllm_model *t, const mllm_model *d) {
    int32_t nt = mllm_tokenizer_n_vocab(t->tok), nd = mllm_tokenizer_n_vocab(d->tok);
    int dv = t->dec.cfg.n_vocab - d->dec.cfg.n_vocab;
    if (nt != nd || dv > 128 || dv < -128)
        return mllm_err(MLLM_ERR_INVALID_ARG,
                        "draft %s: its vocabulary (%d tokens, %d logits) is not the model's (%d tokens, %d logits)",
                        d->file->path, nd, d->dec.cfg.n_vocab, nt, t->dec.cfg.n_vocab);
    for (int32_t id = 0; id < nt; id++) {
        size_t la = 0, lb = 0;
        const char *a = mllm_tokenizer_token_text(t->tok, id, &la), *b = mllm_tokenizer_token_text(d->tok, id, &lb);
        if (la != lb || (la && memcmp(a, b, la) != 0))
            return mllm_err(MLLM_ERR_INVALID_ARG, "draft %s: token %d is '%.*s' there and '%.*s' in the model",
                            d->file->path, id, (int)(lb > 64 ? 64 : lb), b ? b : "", (int)(la > 64 ? 64 : la),
                            a ? a : "");
    }
    if (mllm_tokenizer_bos(t->tok) != mllm_tokenizer_bos(d->tok) ||
        mllm_tokenizer_eos(t->tok) != mllm_tokenizer_eos(d->tok))
        return mllm_err(MLLM_ERR_INVALID_ARG, "draft %s: BOS/EOS %d/%d, the model's %d/%d", d->file->path,
                        mllm_tokenizer_bos(d->tok), mllm_tokenizer_eos(d->tok), mllm_tokenizer_bos(t->tok),
                        mllm_tokenizer_eos(t->tok));
    return MLLM_OK;
}

MLLM_API mllm_status mllm_session_set_speculative(mllm_session *s, const mllm_speculative_params *p0) {
    if (!s) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_session_set_speculative: NULL session");
    mllm_speculative_params p;
    mllm_speculative_default_params(&p);
    if (p0) {
        if (p0->struct_size != sizeof p)
            return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_speculative_params struct_size %u, expected %zu",
                            p0->struct_size, sizeof p);
        p = *p0;
    }
    if (p.mode < MLLM_SPEC_AUTO || p.mode > MLLM_SPEC_ALWAYS || p.n_draft_max < 1 ||
        p.n_draft_max > MLLM_SPEC_MAX_DRAFT || p.ngram_min < 1 || p.ngram_max > 8 || p.ngram_min > p.ngram_max ||
        !(p.draft_p_min >= 0 && p.draft_p_min <= 1))
        return mllm_err(MLLM_ERR_INVALID_ARG,
                        "speculative: mode %d, n_draft_max %d (1..%d), ngram %d..%d (1..8), draft_p_min %g (0..1)",
                        p.mode, p.n_draft_max, MLLM_SPEC_MAX_DRAFT, p.ngram_min, p.ngram_max, p.draft_p_min);
    mllm_session *d = NULL;
    if (p.draft) {
        if (p.draft->enc)
            return mllm_err(MLLM_ERR_INVALID_ARG, "draft %s is an embedding model", p.draft->file->path);
        mllm_status st = mllm_spec_check_vocab(s->m, p.draft);
        if (st != MLLM_OK) return st;
        mllm_session_params dp;
        mllm_session_default_params(&dp);
        dp.n_ctx = s->n_ctx;
        /* The draft runs between the model's passes, never beside them: the
           same threads (a second pool would spin on the cores they need). */
        if ((st = mllm_session_create(p.draft, &dp, s->pool, &d)) != MLLM_OK) return st;
        if ((st = mllm_session_cut_vocab(d, MLLM_SPEC_DRAFT_VOCAB)) != MLLM_OK) {
            mllm_session_free(d);
            return st;
        }
    }
    struct mllm_spec *sp = spec_of(s);
    if (!sp) {
        mllm_session_free(d);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    mllm_session_free(sp->draft);
    free_draft_bufs(sp); /* sized for the old draft */
    sp->draft = d;
    sp->draft_ratio = d ? weight_bytes(p.draft, d->n_out) / weight_bytes(s->m, s->m->dec.cfg.n_vocab) : 0;
    sp->c_step = sp->draft_ratio;
    mllm_spec_passes_init(&sp->passes, SPEC_VERIFY_COST);
    sp->p = p;
    return MLLM_OK;
}

mllm_status mllm_spec_cut_draft(mllm_session *s, int n_out) {
    struct mllm_spec *sp = s->spec;
    if (!sp || !sp->draft) return mllm_err(MLLM_ERR_INVALID_ARG, "no draft model set");
    mllm_status st = mllm_session_cut_vocab(sp->draft, n_out);
    sp->draft_ratio = weight_bytes(sp->draft->m, sp->draft->n_out) / weight_bytes(s->m, s->m->dec.cfg.n_vocab);
    sp->c_step = sp->draft_ratio;
    return st;
}

MLLM_API void mllm_session_speculative_stats(const mllm_session *s, mllm_speculative_stats *out) {
    if (!s || !out || out->struct_size < sizeof(uint32_t)) return;
    mllm_speculative_stats t = {0};
    t = s->spec_stats;
    size_t n = out->struct_size < sizeof t ? out->struct_size : sizeof t;
    t.struct_size = out->struct_size;
    memcpy(out, &t, n);
}

mllm_status mllm_spec_begin(mllm_session *s, const mllm_sampling *p) {
    struct mllm_spec *sp = spec_of(s);
    if (!sp) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    sp->qn = sp->qi = 0;
    sp->gen_i = 0;
    sp->sh_at = -1;
    sp->greedy = p->temperature <= 0;
    sp->active = sp->p.mode != MLLM_SPEC_OFF && !p->grammar && (sp->p.lookup || sp->draft);
    for (int i = 0; i < SRC_N; i++)
        mllm_spec_ctl_init(&sp->src[i], i == SRC_DRAFT ? (sp->p.n_draft_max + 1) / 2 : sp->p.n_draft_max);
    mllm_rng_seed(&sp->rng, p->seed ^ 0x5851F42D4C957F2Dull);
    if (!sp->active) return MLLM_OK;
    int nv = s->m->dec.cfg.n_vocab, nvd = sp->draft ? sp->draft->m->dec.cfg.n_vocab : 0;
    int n_scratch = nv > nvd ? nv : nvd;
    if (!sp->greedy && sp->n_scratch < n_scratch) {
        free_draft_bufs(sp);
        sp->dense = mllm_calloc((size_t)n_scratch, sizeof(float));
        sp->resid = mllm_malloc((size_t)n_scratch * sizeof(float));
        if (sp->draft) {
            sp->qidx = mllm_malloc((size_t)sp->p.n_draft_max * (size_t)nvd * sizeof(int32_t));
            sp->qprob = mllm_malloc((size_t)sp->p.n_draft_max * (size_t)nvd * sizeof(float));
        }
        if (!sp->dense || !sp->resid || (sp->draft && (!sp->qidx || !sp->qprob))) {
            free_draft_bufs(sp);
            return mllm_err(MLLM_ERR_NOMEM, "out of memory for speculative sampling");
        }
        sp->n_scratch = n_scratch;
    }
    if (!sp->draft) return MLLM_OK;
    mllm_status st = mllm_sampler_init(&sp->dsmp, p, nvd);
    if (st != MLLM_OK) return st;
    sp->have_dsmp = true;
    /* The draft's prefill of what the model holds (only what it lacks). */
    return mllm_spec_draft_sync(sp->draft, s->tokens, s->n_past, NULL);
}

void mllm_spec_end(mllm_session *s) {
    struct mllm_spec *sp = s->spec;
    if (!sp) return;
    sp->qn = sp->qi = 0;
    sp->active = false;
    if (sp->have_dsmp) mllm_sampler_free(&sp->dsmp);
    sp->have_dsmp = false;
}

/* Probability of id among candidates (idx, w) of total sum; 0 if absent. */
static double prob_of(const int32_t *idx, const float *w, int k, double sum, int32_t id) {
    for (int i = 0; i < k; i++)
        if (idx[i] == id) return w[i] / sum;
    return 0;
}

int32_t mllm_spec_sample(mllm_session *s, mllm_sampler *smp) {
    struct mllm_spec *sp = s->spec;
    /* Greedy: the draw is the argmax whatever was proposed; a proposal is
       kept exactly when it is that token (mllm_spec_advance compares). */
    if (!sp || !sp->active || sp->qi >= sp->qn || sp->greedy)
        return mllm_sampler_sample(smp, s->logits, s->tokens, s->n_past);
    int32_t d = sp->queue[sp->qi];
    double sum;
    int k = mllm_sampler_dist(smp, s->logits, s->tokens, s->n_past, &sum);
    double pd = prob_of(smp->idx, smp->prob, k, sum, d), qd = 1; /* lookup: q is all on d */
    const int32_t *qi = NULL;
    const float *qp = NULL;
    int qk = 0;
    if (sp->q_src == SRC_DRAFT) {
        size_t nvd = (size_t)sp->draft->m->dec.cfg.n_vocab;
        qi = sp->qidx + (size_t)sp->qi * nvd;
        qp = sp->qprob + (size_t)sp->qi * nvd;
        qk = sp->qk[sp->qi];
        qd = prob_of(qi, qp, qk, 1.0, d);
    }
    /* Accept with probability min(1, p(d) / q(d)). */
    if (mllm_rng_uniform(&smp->rng) * qd < pd) return d;
    /* Rejected: a draw from norm(max(p - q, 0)), which never gives d. */
    if (qi) {
        for (int j = 0; j < qk; j++) sp->dense[qi[j]] = qp[j];
    } else {
        sp->dense[d] = 1;
    }
    double rs = 0;
    for (int i = 0; i < k; i++) {
        double r = smp->prob[i] / sum - sp->dense[smp->idx[i]];
        sp->resid[i] = r > 0 ? (float)r : 0.0f;
        rs += sp->resid[i];
    }
    if (qi) {
        for (int j = 0; j < qk; j++) sp->dense[qi[j]] = 0;
    } else {
        sp->dense[d] = 0;
    }
    if (rs <= 0) return mllm_sampler_draw(&smp->rng, smp->idx, smp->prob, k, sum); /* rounding: p == q */
    return mllm_sampler_draw(&smp->rng, smp->idx, sp->resid, k, rs);
}

int mllm_spec_common_prefix(const mllm_session *d, const int32_t *ctx, int n) {
    int k = 0;
    while (k < n && k < d->n_past && d->tokens[k] == ctx[k]) k++;
    return k;
}

mllm_status mllm_spec_draft_sync(mllm_session *d, const int32_t *ctx, int n, int *evals) {
    if (n <= 0) {
        d->n_past = 0;
        return MLLM_OK;
    }
    int k = mllm_spec_common_prefix(d, ctx, n);
    if (k == n && d->n_past == n) return MLLM_OK; /* its logits are the last token's */
    if (k == n) k = n - 1;
    d->n_past = k;
    if (evals) ++*evals;
    return mllm_session_eval_internal(d, ctx + k, (size_t)(n - k));
}

/* The draft's sync inside a pass, counted. */
static mllm_status draft_sync(struct mllm_spec *sp, const int32_t *ctx, int n) {
    int e = 0;
    const mllm_status st = mllm_spec_draft_sync(sp->draft, ctx, n, &e);
    sp->pass_draft_evals += e;
    sp->stats->n_draft_evals += e;
    return st;
}

/* Up to cap draft tokens after ctx[0..n) into sp->queue; their count. */
static int propose_draft(mllm_session *s, struct mllm_spec *sp, const int32_t *ctx, int n, int cap,
                         mllm_status *st) {
    mllm_session *d = sp->draft;
    if ((*st = draft_sync(sp, ctx, n)) != MLLM_OK) return 0;
    size_t nvd = (size_t)d->m->dec.cfg.n_vocab;
    /* MLLM_SPEC_AUTO: a proposal grows while the chance that it is all kept
       pays for its rows and the draft steps (mllm_spec_draft_take). */
    mllm_spec_price price;
    if (sp->p.mode == MLLM_SPEC_AUTO) {
        price.step = sp->c_step;
        for (int j = 0; j <= MLLM_SPEC_MAX_DRAFT; j++) price.row[j] = mllm_spec_passes_row(&sp->passes, j);
    }
    double p_run = 1;
    for (int i = 0;; i++) {
        int32_t tok;
        float conf;
        if (sp->greedy) {
            tok = mllm_sampler_sample(&sp->dsmp, d->logits, d->tokens, d->n_past);
            conf = mllm_sampler_greedy_confidence(&sp->dsmp, tok);
        } else {
            double sum;
            int k = mllm_sampler_dist(&sp->dsmp, d->logits, d->tokens, d->n_past, &sum);
            conf = (float)(sp->dsmp.prob[0] / sum);
            tok = mllm_sampler_draw(&sp->rng, sp->dsmp.idx, sp->dsmp.prob, k, sum);
            int32_t *qi = sp->qidx + (size_t)i * nvd;
            float *qp = sp->qprob + (size_t)i * nvd;
            memcpy(qi, sp->dsmp.idx, (size_t)k * sizeof *qi);
            for (int j = 0; j < k; j++) qp[j] = (float)(sp->dsmp.prob[j] / sum);
            sp->qk[i] = k;
        }
        const int take = tok < s->m->dec.cfg.n_vocab
                             ? mllm_spec_draft_take(sp->p.mode == MLLM_SPEC_AUTO ? &price : NULL, &p_run, conf,
                                                    sp->p.draft_p_min, i, cap)
                             : 0;
        if (take == 0) return i;
        sp->queue[i] = tok;
        if (take == 1) return i + 1;
        sp->pass_draft_evals++;
        sp->stats->n_draft_evals++;
        if ((*st = mllm_session_eval_internal(d, &tok, 1)) != MLLM_OK) return 0;
    }
}

static void note_plain_ms(struct mllm_spec *sp, double ms) {
    mllm_spec_passes_add(&sp->passes, 1, ms);
    sp->stats->n_plain++;
}

/* The controller: a window of passes of one proposer, judged every
   MLLM_SPEC_CTL_WINDOW passes by the tokens they gave per unit of cost
   against one token per one-token pass. */
static void judge(struct mllm_spec *sp, spec_src *r, int gain) {
    if (sp->p.mode != MLLM_SPEC_AUTO) return;
    const double cost = sp->greedy ? sp->pass_ms / sp->passes.c1_ms
                                   : 1 + SPEC_VERIFY_COST * sp->qn + sp->pass_draft_evals * sp->draft_ratio;
    if (mllm_spec_ctl_judge(r, gain, cost, sp->gen_i)) sp->stats->n_turned_off++;
}

/* A pass ended with `accepted` of its proposals kept: statistics, the
   proposal length (longer after a full acceptance, just past the accepted
   run after a rejection) and the controller. */
static void finish_pass(struct mllm_spec *sp, int accepted) {
    spec_src *r = &sp->src[sp->q_src];
    if (sp->q_src == SRC_LOOKUP) {
        sp->stats->n_lookup_passes++;
        sp->stats->n_lookup_drafted += sp->qn;
        sp->stats->n_lookup_accepted += accepted;
    } else {
        sp->stats->n_draft_passes++;
        sp->stats->n_draft_drafted += sp->qn;
        sp->stats->n_draft_accepted += accepted;
    }
    mllm_spec_ctl_adapt(r, sp->qn, accepted, sp->p.n_draft_max);
    mllm_spec_ctl_observe(r, sp->qn, accepted);
    judge(sp, r, accepted + 1);
}

static bool src_on(const struct mllm_spec *sp, int src) {
    return sp->p.mode == MLLM_SPEC_ALWAYS || mllm_spec_ctl_on(&sp->src[src], sp->gen_i);
}

/* MLLM_SPEC_AUTO: how many of prompt lookup's k proposals to verify, as
   the batching engine decides (runtime/spec_ctl.h): the longest run whose
   last one is still expected to be kept more often than its row costs
   (keep^j above the row it adds to the pass). A copied stretch has them
   kept nearly always, so the run grows to the cap; on new text the
   proposals are mostly refused and they stop being verified, compared
   only with the token that comes. */
static int lookup_len(const struct mllm_spec *sp, int k) {
    if (sp->p.mode != MLLM_SPEC_AUTO) return k;
    double row[MLLM_SPEC_MAX_DRAFT];
    for (int j = 0; j < k; j++) row[j] = mllm_spec_passes_row(&sp->passes, j);
    return mllm_spec_ctl_len_costs(&sp->src[SRC_LOOKUP], row, k);
}

/* tok after what s holds: proposals, then one pass over tok and them. */
static mllm_status pass(mllm_session *s, struct mllm_spec *sp, int32_t tok, int remaining) {
    int n0 = s->n_past, cap = s->n_ctx - n0 - 1;
    if (sp->sh_at >= 0 && sp->sh_at <= n0) /* see lookup_len */
        mllm_spec_ctl_observe(&sp->src[SRC_LOOKUP], 1, (sp->sh_at == n0 ? tok : s->tokens[sp->sh_at]) == sp->sh_tok);
    sp->sh_at = -1;
    if (cap > remaining) cap = remaining;
    if (cap > MLLM_SPEC_MAX_DRAFT) cap = MLLM_SPEC_MAX_DRAFT;
    double t0 = mllm_clock_mono_ms();
    int k = 0;
    mllm_status st = MLLM_OK;
    sp->pass_draft_evals = 0;
    /* The controller times passes against a one-token pass: with the clock
       (greedy MLLM_SPEC_AUTO) the session's first pass is a plain one. */
    if (cap > 0 && (sp->passes.c1_n > 0 || sp->p.mode != MLLM_SPEC_AUTO || !sp->greedy)) {
        s->tokens[n0] = tok; /* the context the proposers see: what s holds, then tok */
        int want = sp->src[SRC_LOOKUP].n_cur < cap ? sp->src[SRC_LOOKUP].n_cur : cap;
        if (sp->p.lookup && src_on(sp, SRC_LOOKUP) &&
            (k = mllm_ngram_lookup(s->tokens, n0 + 1, sp->p.ngram_min, sp->p.ngram_max, want, sp->queue))) {
            sp->q_src = SRC_LOOKUP;
            const int n = lookup_len(sp, k);
            if (n == 0) { /* not worth a row: only compared with the token that comes */
                sp->sh_at = n0 + 1;
                sp->sh_tok = sp->queue[0];
            }
            k = n;
        }
        if (!k && sp->draft && src_on(sp, SRC_DRAFT)) {
            want = sp->src[SRC_DRAFT].n_cur < cap ? sp->src[SRC_DRAFT].n_cur : cap;
            k = propose_draft(s, sp, s->tokens, n0 + 1, want, &st);
            if (st != MLLM_OK) return st;
            sp->q_src = SRC_DRAFT;
            if (!k) { /* the draft's time for nothing: counted against it as a pass that gave one token */
                double t1 = mllm_clock_mono_ms();
                if ((st = mllm_session_eval_internal(s, &tok, 1)) != MLLM_OK) return st;
                note_plain_ms(sp, mllm_clock_mono_ms() - t1);
                sp->pass_ms = mllm_clock_mono_ms() - t0;
                sp->qn = 0;
                judge(sp, &sp->src[SRC_DRAFT], 1);
                return MLLM_OK;
            }
        }
    }
    if (!k) {
        st = mllm_session_eval_internal(s, &tok, 1);
        note_plain_ms(sp, mllm_clock_mono_ms() - t0);
        return st;
    }
    int32_t ids[MLLM_SPEC_MAX_DRAFT + 1];
    ids[0] = tok;
    memcpy(ids + 1, sp->queue, (size_t)k * sizeof *ids);
    const float *rows;
    double tv = mllm_clock_mono_ms();
    sp->draft_ms = tv - t0;
    if ((st = mllm_session_eval_rows(s, ids, k + 1, &rows)) != MLLM_OK) return st;
    sp->verify_ms = mllm_clock_mono_ms() - tv;
    if (sp->greedy && sp->passes.c1_n > 0) { /* sampling keeps the cost model: see judge */
        mllm_spec_passes_add(&sp->passes, k + 1, sp->verify_ms);
        if (sp->pass_draft_evals)
            sp->c_step = 0.8 * sp->c_step + 0.2 * (sp->draft_ms / sp->pass_draft_evals / sp->passes.c1_ms);
    }
    /* The session holds tok; the proposals' KV rows wait past n_past. */
    s->n_past = n0 + 1;
    memcpy(s->logits, rows, (size_t)s->m->dec.cfg.n_vocab * sizeof(float));
    sp->rows = rows;
    sp->qn = k;
    sp->qi = 0;
    sp->pass_ms = mllm_clock_mono_ms() - t0;
    return MLLM_OK;
}

mllm_status mllm_spec_advance(mllm_session *s, int32_t tok, int remaining) {
    struct mllm_spec *sp = s->spec;
    if (!sp || !sp->active) return mllm_session_eval_internal(s, &tok, 1);
    sp->gen_i++;
    if (sp->qi < sp->qn) {
        if (tok == sp->queue[sp->qi]) { /* kept: already evaluated */
            size_t nv = (size_t)s->m->dec.cfg.n_vocab;
            sp->qi++;
            s->n_past++;
            memcpy(s->logits, sp->rows + (size_t)sp->qi * nv, nv * sizeof(float));
            if (sp->qi == sp->qn) {
                finish_pass(sp, sp->qn);
                sp->qn = sp->qi = 0;
            }
            return MLLM_OK;
        }
        finish_pass(sp, sp->qi);
        sp->qn = sp->qi = 0;
    }
    return pass(s, sp, tok, remaining);
}
