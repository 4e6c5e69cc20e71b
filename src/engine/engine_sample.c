/* A sequence's next token from its logits: its own sampler and grammar,
   the end conditions, logprobs and text delivery, in the order
   mllm_generate_ids (api/session.c) uses, so a request answers the same
   through the engine as through a session. */
#include <stdio.h>
#include <string.h>
#include "core/error.h"
#include "engine/engine_internal.h"

static bool finish(mllm_eseq *s, mllm_engine_finish f, mllm_status st) {
    s->res.finish = f;
    s->res.status = st;
    return true;
}

/* The tokens the sampler's penalties look back over (*n of them): an image
   token's prefix-cache key (engine.h) is the image token there, as a
   session holds it. */
static const int32_t *recent(mllm_engine *e, const mllm_eseq *s, int *n) {
    const int w = s->sp.repeat_last_n, from = s->n_tokens > w ? s->n_tokens - w : 0;
    *n = s->n_tokens;
    if (!s->emb || w <= 0 || from >= s->res.n_prompt) return s->tokens; /* no image in the window */
    for (int i = from; i < s->n_tokens; i++) e->recent[i - from] = s->tokens[i] < 0 ? s->image_token : s->tokens[i];
    *n = s->n_tokens - from;
    return e->recent;
}

/* llama.cpp's order: sample as usual, and only when the grammar rejects
   that token compute the full mask and sample again from the allowed
   tokens. *tok = -1 when the grammar is complete and nothing may follow. */
static mllm_status sample_constrained(mllm_engine *e, mllm_eseq *s, const float *logits, int32_t *tok) {
    mllm_constraint *c = s->r.constraint;
    int n;
    const int32_t *ctx = recent(e, s, &n);
    *tok = -1;
    if (mllm_constraint_done(c)) return MLLM_OK;
    mllm_rng saved = s->smp.rng; /* a rejected draw is replayed on the allowed tokens */
    *tok = mllm_sampler_sample(&s->smp, logits, ctx, n);
    if (mllm_constraint_allows(c, *tok)) return MLLM_OK;
    const float *masked;
    bool done;
    mllm_status st = mllm_constraint_apply(c, logits, &masked, &done);
    *tok = -1;
    if (st != MLLM_OK || done) return st;
    s->smp.rng = saved;
    *tok = mllm_sampler_sample(&s->smp, masked, ctx, n);
    return MLLM_OK;
}

/* The context is full with tok still to be evaluated: keep the first n_keep
   tokens (at most half), drop the oldest half of the rest, and evaluate
   everything after the cut again at its new position, tok last (as
   mllm_session_shift). The kept blocks stay. */
static void shift(mllm_engine *e, mllm_eseq *s, int32_t tok) {
    const int n = s->n_done;
    const int keep = s->r.n_keep > n / 2 ? n / 2 : s->r.n_keep;
    const int drop = (n - keep) / 2 ? (n - keep) / 2 : (n > keep ? 1 : 0);
    memmove(s->tokens + keep, s->tokens + keep + drop, (size_t)(n - keep - drop) * sizeof(int32_t));
    s->n_tokens = n - drop;
    s->tokens[s->n_tokens++] = tok;
    mllm_kv_seq_truncate(&e->kp, &s->kv, keep);
    s->n_done = keep;
    s->res.n_shifts++;
    /* A shift must not replay the same random draws: the seed moves on by
       the shift count, as `mllm run --context-shift` and the session path
       reseed each generation after a shift. */
    mllm_rng_seed(&s->smp.rng, s->sp.seed + (uint64_t)s->res.n_shifts);
}

bool mllm_engine_sample(mllm_engine *e, mllm_eseq *s, const float *logits) {
    const mllm_sampling *sp = &s->sp;
    if (s->r.cancel && atomic_load(s->r.cancel)) return finish(s, MLLM_ENGINE_CANCELLED, MLLM_ERR_CANCELLED);
    if (s->res.n_gen >= sp->max_tokens) return finish(s, MLLM_ENGINE_LENGTH, MLLM_OK);
    int32_t tok;
    if (s->r.constraint) {
        mllm_status st = sample_constrained(e, s, logits, &tok);
        if (st != MLLM_OK) return finish(s, MLLM_ENGINE_ERROR, st);
        if (tok < 0) return finish(s, MLLM_ENGINE_STOP, MLLM_OK); /* the text is complete, nothing may follow */
    } else {
        int n;
        const int32_t *ctx = recent(e, s, &n);
        tok = mllm_sampler_sample(&s->smp, logits, ctx, n);
    }
    /* With a grammar an end token is allowed only where the text is complete: it always ends it. */
    if ((!sp->ignore_eos || s->r.constraint) && mllm_tokenizer_is_eog(e->tok, tok))
        return finish(s, MLLM_ENGINE_STOP, MLLM_OK);
    if (s->r.constraint) {
        mllm_status st = mllm_constraint_accept(s->r.constraint, tok);
        if (st != MLLM_OK) return finish(s, MLLM_ENGINE_ERROR, st);
    }
    if (sp->on_logprobs) mllm_sampler_report_logprobs(&s->smp, sp, logits, tok);
    const int stop = mllm_token_text_emit(&s->text, e->tok, tok, s->r.on_token, s->r.user);
    s->res.n_gen++;
    e->st.tokens_generated++;
    if (stop) return finish(s, MLLM_ENGINE_STOP, MLLM_OK);
    if (s->res.n_gen >= sp->max_tokens) return finish(s, MLLM_ENGINE_LENGTH, MLLM_OK);
    if (s->n_done >= e->p.n_ctx) {
        if (!s->r.context_shift) return finish(s, MLLM_ENGINE_LENGTH, MLLM_ERR_CONTEXT_FULL);
        shift(e, s, tok);
        return false;
    }
    s->tokens[s->n_tokens++] = tok; /* evaluated in the next step */
    return false;
}
