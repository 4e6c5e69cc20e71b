/* mllm_grammar (GBNF or JSON Schema, compiled once, matched as text is
   generated) and the per-generation constraint that masks the logits. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "api/internal.h"
#include "core/alloc.h"
#include "core/error.h"
#include "runtime/json_schema.h"

static mllm_status grammar_from_gram(mllm_gram *gram, mllm_grammar **out) {
    mllm_grammar *g = mllm_calloc(1, sizeof *g);
    if (!g) { mllm_gram_free(gram); return mllm_err(MLLM_ERR_NOMEM, "out of memory"); }
    g->gram = gram;
    mllm_status st = mllm_gmatch_new(gram, &g->match);
    if (st != MLLM_OK) { mllm_grammar_free(g); return st; }
    *out = g;
    return MLLM_OK;
}

MLLM_API mllm_status mllm_grammar_new(const char *gbnf, const char *root, mllm_grammar **out) {
    if (!gbnf || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_grammar_new: NULL argument");
    *out = NULL;
    mllm_gram *gram;
    mllm_status st = mllm_gram_compile(gbnf, strlen(gbnf), root, &gram);
    return st == MLLM_OK ? grammar_from_gram(gram, out) : st;
}

/* The schema's GBNF (mllm_free) or NULL with the error recorded. */
static mllm_status schema_gbnf(const char *schema, char **gbnf, size_t *len) {
    cJSON *doc = cJSON_ParseWithLength(schema, strlen(schema));
    if (!doc) return mllm_err(MLLM_ERR_INVALID_ARG, "json schema: not valid JSON");
    mllm_status st = mllm_jsg_compile(doc, gbnf, len);
    cJSON_Delete(doc);
    return st;
}

MLLM_API mllm_status mllm_grammar_from_json_schema(const char *schema, mllm_grammar **out) {
    if (!schema || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_grammar_from_json_schema: NULL argument");
    *out = NULL;
    char *gbnf = NULL;
    size_t len = 0;
    mllm_status st = schema_gbnf(schema, &gbnf, &len);
    mllm_gram *gram = NULL;
    if (st == MLLM_OK) {
        st = mllm_gram_compile(gbnf, len, "root", &gram);
        /* The compiler's text always parses; what can still fail is a
           recursion that never consumes input or never ends. */
        if (st == MLLM_ERR_INVALID_ARG) {
            char why[512];
            snprintf(why, sizeof why, "%s", mllm_last_error()); /* mllm_err writes over that buffer */
            st = mllm_err(st, "json schema: %s", why);
        }
    }
    mllm_free(gbnf);
    return st == MLLM_OK ? grammar_from_gram(gram, out) : st;
}

MLLM_API mllm_status mllm_json_schema_to_gbnf(const char *schema, char *buf, size_t cap, size_t *needed) {
    if (!schema) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_json_schema_to_gbnf: NULL schema");
    char *gbnf = NULL;
    size_t len = 0;
    mllm_status st = schema_gbnf(schema, &gbnf, &len);
    if (st != MLLM_OK) return st;
    if (needed) *needed = len + 1;
    if (!buf || cap < len + 1) st = mllm_err(MLLM_ERR_BUFFER_TOO_SMALL, "need %zu bytes", len + 1);
    else memcpy(buf, gbnf, len + 1);
    mllm_free(gbnf);
    return st;
}

MLLM_API void mllm_grammar_reset(mllm_grammar *g) {
    if (g) mllm_gmatch_reset(g->match);
}

MLLM_API mllm_status mllm_grammar_accept(mllm_grammar *g, const char *text, size_t len) {
    if (!g || (!text && len)) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_grammar_accept: NULL argument");
    mllm_status st = mllm_gmatch_accept(g->match, text, len);
    if (st == MLLM_ERR_INVALID_ARG) return mllm_err(st, "the grammar does not accept this text here");
    return st;
}

MLLM_API int mllm_grammar_complete(const mllm_grammar *g) { return g && mllm_gmatch_can_end(g->match); }

MLLM_API void mllm_grammar_free(mllm_grammar *g) {
    if (!g) return;
    mllm_gmatch_free(g->match);
    mllm_gram_free(g->gram);
    mllm_free(g);
}

/* ---- the model's vocabulary trie and constraints ------------------------ */
mllm_status mllm_model_trie(mllm_model *m, const mllm_vocab_trie **out) {
    mllm_vocab_trie *t = atomic_load(&m->trie);
    if (!t) {
        mllm_status st = mllm_constraint_trie_build(m->tok, &t);
        if (st != MLLM_OK) return st;
        mllm_vocab_trie *expected = NULL;
        /* Two first users may race: one trie wins, the other is dropped. */
        if (!atomic_compare_exchange_strong(&m->trie, &expected, t)) {
            mllm_vocab_trie_free(t);
            t = expected;
        }
    }
    *out = t;
    return MLLM_OK;
}

mllm_status mllm_model_constraint_init(mllm_constraint *c, mllm_model *m, mllm_grammar *g) {
    const mllm_vocab_trie *trie = NULL;
    memset(c, 0, sizeof *c);
    mllm_status st = mllm_model_trie(m, &trie);
    return st ? st : mllm_constraint_init(c, g->match, m->tok, trie, m->dec.cfg.n_vocab);
}
