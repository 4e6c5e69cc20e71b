/* The engine on a loaded model (engine_api.h). */
#include "api/engine_api.h"
#include "api/internal.h"
#include "core/alloc.h"
#include "core/error.h"
#include "runtime/grammar_match.h"

mllm_status mllm_model_engine_open(mllm_model *m, const mllm_engine_params *p0, int n_threads, mllm_model_engine *out) {
    out->e = NULL;
    out->pool = NULL;
    if (m->asr || m->enc || !m->tok)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "the engine runs text decoders only");
    mllm_engine_params p = *p0;
    if (p.n_ctx <= 0) p.n_ctx = mllm_model_default_ctx(m);
    p.exact = m->exact;
    out->own_pool = n_threads > 0 && n_threads != m->n_threads;
    out->pool = out->own_pool ? mllm_pool_new(n_threads) : m->pool;
    if (!out->pool) return mllm_err(MLLM_ERR_NOMEM, "out of memory for a thread pool");
    mllm_status st = mllm_engine_new(&m->dec, m->tok, m->file, out->pool, &p, &out->e);
    if (st != MLLM_OK) {
        if (out->own_pool) mllm_pool_free(out->pool);
        out->pool = NULL;
    }
    return st;
}

void mllm_model_engine_close(mllm_model_engine *me) {
    mllm_engine_free(me->e);
    if (me->own_pool) mllm_pool_free(me->pool);
    me->e = NULL;
    me->pool = NULL;
}

struct mllm_engine_grammar {
    /* g's compiled rules (not owned) with a match state of its own, from
       the start: the choices of one request follow one grammar at once */
    struct mllm_grammar own;
    mllm_constraint c;
};

mllm_status mllm_engine_grammar_new(mllm_model *m, mllm_grammar *g, mllm_engine_grammar **out) {
    *out = NULL;
    mllm_engine_grammar *eg = mllm_calloc(1, sizeof *eg);
    if (!eg) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    eg->own.gram = g->gram;
    mllm_status st = mllm_gmatch_new(g->gram, &eg->own.match);
    if (st == MLLM_OK) st = mllm_model_constraint_init(&eg->c, m, &eg->own);
    if (st != MLLM_OK) {
        mllm_gmatch_free(eg->own.match);
        mllm_free(eg);
        return st;
    }
    *out = eg;
    return MLLM_OK;
}

mllm_constraint *mllm_engine_grammar_constraint(mllm_engine_grammar *eg) { return &eg->c; }

void mllm_engine_grammar_free(mllm_engine_grammar *eg) {
    if (!eg) return;
    mllm_constraint_free(&eg->c);
    mllm_gmatch_free(eg->own.match);
    mllm_free(eg);
}
