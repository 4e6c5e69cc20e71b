/* One generation's grammar constraint (constraint.h). */
#include "runtime/constraint.h"
#include <math.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"

/* Tokens that are text: not control, unknown or unused, nor end of generation. */
const char *mllm_constraint_piece(const mllm_tokenizer *t, int32_t id, size_t *len) {
    mllm_token_type ty = mllm_tokenizer_token_type(t, id);
    if (ty == MLLM_TOKEN_CONTROL || ty == MLLM_TOKEN_UNKNOWN || ty == MLLM_TOKEN_UNUSED || mllm_tokenizer_is_eog(t, id))
        return NULL;
    return mllm_tokenizer_piece(t, id, len);
}

static const char *trie_piece(const void *user, int32_t id, size_t *len) {
    return mllm_constraint_piece(user, id, len);
}

mllm_status mllm_constraint_trie_build(const mllm_tokenizer *t, mllm_vocab_trie **out) {
    return mllm_vocab_trie_build(mllm_tokenizer_n_vocab(t), trie_piece, t, out);
}

/* ---- one generation's constraint ---------------------------------------- */
mllm_status mllm_constraint_init(mllm_constraint *c, mllm_gmatch *match, const mllm_tokenizer *tok,
                                 const mllm_vocab_trie *trie, int n_vocab) {
    memset(c, 0, sizeof *c);
    c->match = match;
    c->tok = tok;
    c->trie = trie;
    const int32_t n_tok = mllm_tokenizer_n_vocab(tok);
    if (n_vocab < n_tok)
        return mllm_err(MLLM_ERR_INVALID_ARG, "grammar: %d logits for a tokenizer of %d tokens", n_vocab, n_tok);
    c->n_vocab = n_vocab;
    c->allow = mllm_malloc((size_t)c->n_vocab);
    c->logits = mllm_malloc((size_t)c->n_vocab * sizeof *c->logits);
    c->eog = mllm_malloc((size_t)(n_tok > 0 ? n_tok : 1) * sizeof *c->eog);
    if (!c->allow || !c->logits || !c->eog) {
        mllm_constraint_free(c);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory for the grammar's mask");
    }
    for (int32_t id = 0; id < n_tok; id++)
        if (mllm_tokenizer_is_eog(tok, id)) c->eog[c->n_eog++] = id;
    return MLLM_OK;
}

void mllm_constraint_free(mllm_constraint *c) {
    mllm_free(c->allow);
    mllm_free(c->logits);
    mllm_free(c->eog);
    memset(c, 0, sizeof *c);
}

static bool is_eog(const mllm_constraint *c, int32_t tok) {
    for (int i = 0; i < c->n_eog; i++)
        if (c->eog[i] == tok) return true;
    return false;
}

bool mllm_constraint_done(const mllm_constraint *c) { return mllm_gmatch_done(c->match); }

bool mllm_constraint_allows(mllm_constraint *c, int32_t tok) {
    if (is_eog(c, tok)) return mllm_gmatch_can_end(c->match);
    size_t len = 0;
    const char *p = tok >= 0 && tok < c->trie->n_vocab ? mllm_constraint_piece(c->tok, tok, &len) : NULL;
    return p && len && mllm_gmatch_try(c->match, p, len) == MLLM_OK;
}

mllm_status mllm_constraint_apply(mllm_constraint *c, const float *logits, const float **out, bool *done) {
    *done = false;
    *out = NULL;
    mllm_gmatch *gm = c->match;
    if (mllm_gmatch_done(gm)) { *done = true; return MLLM_OK; }
    size_t n_allowed = 0;
    memset(c->allow + c->trie->n_vocab, 0, (size_t)(c->n_vocab - c->trie->n_vocab));
    mllm_status st = mllm_gmatch_mask(gm, c->trie, c->allow, &n_allowed);
    if (st != MLLM_OK) return st;
    if (mllm_gmatch_can_end(gm))
        for (int i = 0; i < c->n_eog; i++) { c->allow[c->eog[i]] = 1; n_allowed++; }
    if (n_allowed == 0) {
        if (mllm_gmatch_can_end(gm)) { *done = true; return MLLM_OK; } /* complete, and no EOG token to say so */
        return mllm_err(MLLM_ERR_UNSUPPORTED, "grammar: no token of the vocabulary continues the text here");
    }
    for (int i = 0; i < c->n_vocab; i++) c->logits[i] = c->allow[i] ? logits[i] : -INFINITY;
    *out = c->logits;
    return MLLM_OK;
}

mllm_status mllm_constraint_accept(mllm_constraint *c, int32_t tok) {
    if (is_eog(c, tok)) return MLLM_OK;
    size_t len = 0;
    const char *p = mllm_constraint_piece(c->tok, tok, &len);
    if (!p || !len) return mllm_err(MLLM_ERR_UNSUPPORTED, "grammar: token %d is not text", tok);
    mllm_status st = mllm_gmatch_accept(c->match, p, len);
    if (st == MLLM_ERR_INVALID_ARG) st = mllm_err(MLLM_ERR_UNSUPPORTED, "grammar: token %d broke the grammar", tok);
    return st;
}
