/* The generation loop (mllm_generate_ids, mllm_generate): sampling, the
   grammar constraint and speculative decoding over a session's
   evaluations. */
#include <math.h>
#include <string.h>
#include "api/internal.h"
#include "api/speculative.h"
#include "core/alloc.h"
#include "core/error.h"
#include "runtime/sampler.h"
#include "runtime/token_text.h"

/* llama.cpp's order: sample as usual, and only when the grammar rejects
   that token compute the full mask and sample again from the allowed
   tokens (most tokens pass, and one token's check costs microseconds).
   *tok = -1 when the grammar is complete and nothing may follow. */
static mllm_status sample_constrained(mllm_session *s, mllm_sampler *smp, mllm_constraint *con, int32_t *tok) {
    *tok = -1;
    if (mllm_constraint_done(con)) return MLLM_OK;
    mllm_rng saved = smp->rng; /* a rejected draw is replayed on the allowed tokens */
    *tok = mllm_sampler_sample(smp, s->logits, s->tokens, s->n_past);
    double t0 = mllm_clock_mono_ms();
    bool ok = mllm_constraint_allows(con, *tok);
    mllm_status st = MLLM_OK;
    if (!ok) {
        const float *masked;
        bool done;
        st = mllm_constraint_apply(con, s->logits, &masked, &done);
        s->timings.n_grammar++;
        *tok = -1;
        if (st == MLLM_OK && !done) {
            smp->rng = saved;
            s->timings.grammar_ms += mllm_clock_mono_ms() - t0;
            *tok = mllm_sampler_sample(smp, masked, s->tokens, s->n_past);
            return MLLM_OK;
        }
    }
    s->timings.grammar_ms += mllm_clock_mono_ms() - t0;
    return st;
}

MLLM_API mllm_status mllm_generate_ids(mllm_session *s, const int32_t *ids, size_t n, const mllm_sampling *sp0,
                                       mllm_on_token cb, void *user) {
    if (!s || !sp0 || (!ids && n)) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_generate: NULL argument");
    mllm_sampling full; /* callers built against an older, shorter struct keep working */
    mllm_status st = mllm_sampling_upgrade(sp0, &full);
    if (st != MLLM_OK) return st;
    const mllm_sampling *sp = &full;
    if (n == 0 && s->n_past == 0) return mllm_err(MLLM_ERR_INVALID_ARG, "empty prompt and empty session");
    mllm_sampler smp;
    st = mllm_sampler_init(&smp, sp, s->m->dec.cfg.n_vocab);
    if (st != MLLM_OK) return st;
    mllm_constraint con;
    if (sp->grammar && (st = mllm_model_constraint_init(&con, s->m, sp->grammar)) != MLLM_OK) {
        mllm_sampler_free(&smp);
        return st;
    }
    atomic_store(&s->cancel, false);
    double t0 = mllm_clock_mono_ms();
    st = mllm_session_eval_internal(s, ids, n);
    /* A draft model's prefill of the context counts as prompt time. */
    if (st == MLLM_OK) st = mllm_spec_begin(s, sp);
    s->timings.n_prompt += (int)n;
    s->timings.prompt_ms += mllm_clock_mono_ms() - t0;
    mllm_token_text tt = {0};
    double tg = mllm_clock_mono_ms();
    for (int i = 0; st == MLLM_OK && i < sp->max_tokens; i++) {
        if (atomic_load(&s->cancel)) { st = MLLM_ERR_CANCELLED; mllm_err(st, "generation cancelled"); break; }
        int32_t tok;
        if (sp->grammar) {
            st = sample_constrained(s, &smp, &con, &tok);
            if (st != MLLM_OK || tok < 0) break; /* -1: the text is complete and nothing may follow */
        } else {
            tok = mllm_spec_sample(s, &smp); /* a proposed token, accepted or corrected, or a plain draw */
        }
        /* With a grammar an end token is allowed only where the text is complete: it always ends it. */
        if ((!sp->ignore_eos || sp->grammar) && mllm_tokenizer_is_eog(s->m->tok, tok)) break;
        if (sp->grammar && (st = mllm_constraint_accept(&con, tok)) != MLLM_OK) break;
        if (sp->on_logprobs) mllm_sampler_report_logprobs(&smp, sp, s->logits, tok);
        int stop = mllm_token_text_emit(&tt, s->m->tok, tok, cb, user);
        s->timings.n_gen++;
        if (stop) break;
        if (s->n_past >= s->n_ctx) { st = mllm_err(MLLM_ERR_CONTEXT_FULL, "context full after %d tokens", s->n_past); break; }
        st = mllm_spec_advance(s, tok, sp->max_tokens - i - 1);
    }
    mllm_spec_end(s);
    mllm_token_text_flush(&tt, cb, user);
    s->timings.gen_ms += mllm_clock_mono_ms() - tg;
    mllm_sampler_free(&smp);
    if (sp->grammar) mllm_constraint_free(&con);
    return st;
}

MLLM_API mllm_status mllm_generate(mllm_session *s, const char *prompt, const mllm_sampling *sp,
                                   mllm_on_token cb, void *user) {
    if (!s || !prompt) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_generate: NULL argument");
    size_t len = strlen(prompt), n = 0;
    mllm_status st = mllm_tokenize(s->m, prompt, len, s->n_past == 0, NULL, 0, &n);
    if (st != MLLM_OK && st != MLLM_ERR_BUFFER_TOO_SMALL) return st;
    int32_t *ids = mllm_malloc((n ? n : 1) * sizeof(int32_t));
    if (!ids) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    st = mllm_tokenize(s->m, prompt, len, s->n_past == 0, ids, n, &n);
    if (st == MLLM_OK) st = mllm_generate_ids(s, ids, n, sp, cb, user);
    mllm_free(ids);
    return st;
}
