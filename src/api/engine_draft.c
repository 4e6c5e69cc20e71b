/* A draft model as the batching engine's proposer (engine_draft.h). */
#include "api/engine_draft.h"

#include "api/internal.h"
#include "api/speculative.h"
#include "core/alloc.h"
#include "core/error.h"
#include "runtime/sampler.h"

typedef struct {
    mllm_session *s; /* NULL until a sequence needs it */
    uint64_t used;   /* the proposer's clock at its last use */
    int n_at;        /* the length of the context it was last asked about */
} draft_slot;

struct mllm_engine_draft {
    mllm_engine_draft_params p;
    draft_slot *slots;
    uint64_t clock, evals;
};

mllm_status mllm_engine_draft_new(const mllm_engine_draft_params *p, mllm_engine_draft **out) {
    *out = NULL;
    if (!p->draft || !p->model || p->n_slots < 1 || p->n_ctx < 2)
        return mllm_err(MLLM_ERR_INVALID_ARG, "engine draft: no draft, no slots or no context");
    if (p->draft->enc || p->draft->asr || !p->draft->tok)
        return mllm_err(MLLM_ERR_INVALID_ARG, "draft %s cannot generate text", p->draft->file->path);
    mllm_status st = mllm_spec_check_vocab(p->model, p->draft);
    if (st != MLLM_OK) return st;
    mllm_engine_draft *d = mllm_calloc(1, sizeof *d);
    if (d) d->slots = mllm_calloc((size_t)p->n_slots, sizeof *d->slots);
    if (!d || !d->slots) {
        mllm_free(d);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    d->p = *p;
    *out = d;
    return MLLM_OK;
}

void mllm_engine_draft_free(mllm_engine_draft *d) {
    if (!d) return;
    for (int i = 0; i < d->p.n_slots; i++) mllm_session_free(d->slots[i].s);
    mllm_free(d->slots);
    mllm_free(d);
}

uint64_t mllm_engine_draft_evals(const mllm_engine_draft *d) { return d ? d->evals : 0; }

/* The session of ctx's sequence: the one whose last context is where ctx
   starts (a sequence's context only grows; the proposals it refused stay
   past that point and are overwritten); else an unused one, or the least
   recently used (a finished sequence's, as a rule). NULL: out of memory. */
static draft_slot *slot_for(mllm_engine_draft *d, const int32_t *ctx, int n) {
    draft_slot *own = NULL, *empty = NULL, *lru = NULL;
    for (int i = 0; i < d->p.n_slots; i++) {
        draft_slot *sl = &d->slots[i];
        if (!sl->s) {
            if (!empty) empty = sl;
            continue;
        }
        if (sl->n_at > 0 && sl->n_at <= n && mllm_spec_common_prefix(sl->s, ctx, n) >= sl->n_at &&
            (!own || sl->n_at > own->n_at))
            own = sl;
        if (!lru || sl->used < lru->used) lru = sl;
    }
    draft_slot *sl = own ? own : empty ? empty : lru;
    if (!sl->s) {
        mllm_session_params sp;
        mllm_session_default_params(&sp);
        sp.n_ctx = d->p.n_ctx;
        if (mllm_session_create(d->p.draft, &sp, d->p.pool, &sl->s) != MLLM_OK) return NULL;
        if (mllm_session_cut_vocab(sl->s, MLLM_SPEC_DRAFT_VOCAB) != MLLM_OK) {
            mllm_session_free(sl->s);
            sl->s = NULL;
            return NULL;
        }
    }
    sl->used = ++d->clock;
    return sl;
}

int mllm_engine_draft_propose(void *user, const int32_t *ctx, int n, int cap, const mllm_spec_price *price,
                              int32_t *out) {
    mllm_engine_draft *d = user;
    if (cap <= 0 || n <= 0 || n >= d->p.n_ctx) return 0;
    draft_slot *sl = slot_for(d, ctx, n);
    if (!sl) return 0; /* out of memory: no proposal, the engine goes on */
    mllm_session *s = sl->s;
    sl->n_at = n;
    if (n + cap > s->n_ctx) cap = s->n_ctx - n;
    int e = 0;
    const mllm_status st = mllm_spec_draft_sync(s, ctx, n, &e);
    d->evals += (uint64_t)e;
    if (st != MLLM_OK) {
        s->n_past = 0; /* unknown: evaluated again next time */
        return 0;
    }
    /* Priced as a session prices its draft's proposals (runtime/spec_ctl.h). */
    double p_run = 1;
    for (int i = 0;; i++) {
        const int32_t tok = mllm_argmax(s->logits, s->n_out);
        const int take = tok < d->p.model->dec.cfg.n_vocab
                             ? mllm_spec_draft_take(price, &p_run, mllm_prob_of_best(s->logits, s->n_out, tok),
                                                    d->p.p_min, i, cap)
                             : 0;
        if (take == 0) return i;
        out[i] = tok;
        if (take == 1) return i + 1;
        d->evals++;
        if (mllm_session_eval_internal(s, &tok, 1) != MLLM_OK) {
            s->n_past = 0; /* unknown: evaluated again next time */
            return i + 1;
        }
    }
}
