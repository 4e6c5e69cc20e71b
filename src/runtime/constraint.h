/* One generation's grammar constraint: the grammar matcher (grammar_match.h)
   over the vocabulary's byte trie (vocab_trie.h) masks the logits of the
   tokens that cannot come next, and advances by each sampled token's bytes.
   End-of-generation tokens are allowed where the text is complete. Used by
   a session's generation loop and by the batching engine's sampler. */
#ifndef MLLM_RUNTIME_CONSTRAINT_H
#define MLLM_RUNTIME_CONSTRAINT_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "runtime/grammar_match.h"
#include "runtime/vocab_trie.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    mllm_gmatch *match;        /* the grammar's matcher, advanced here (not owned) */
    const mllm_tokenizer *tok;
    const mllm_vocab_trie *trie;
    uint8_t *allow;            /* (n_vocab) the mask of the current step */
    float *logits;             /* (n_vocab) the logits with disallowed tokens at -inf */
    int32_t *eog;              /* (n_eog) end-of-generation tokens */
    int n_eog, n_vocab;
} mllm_constraint;

/* A token's text as the grammar sees it, or NULL for tokens that are not
   text (control, unknown, unused, end of generation). */
const char *mllm_constraint_piece(const mllm_tokenizer *t, int32_t id, size_t *len);
/* The byte trie of the tokenizer's text tokens (mllm_constraint_piece). */
mllm_status mllm_constraint_trie_build(const mllm_tokenizer *t, mllm_vocab_trie **out);

/* n_vocab: the logits' length (the model's; INVALID_ARG below the tokenizer's). */
mllm_status mllm_constraint_init(mllm_constraint *c, mllm_gmatch *match, const mllm_tokenizer *tok,
                                 const mllm_vocab_trie *trie, int n_vocab);
void mllm_constraint_free(mllm_constraint *c);
/* Whether the grammar is complete and nothing may follow (generation ends). */
bool mllm_constraint_done(const mllm_constraint *c);
/* Whether token tok may come next (an end token: where the text is complete). */
bool mllm_constraint_allows(mllm_constraint *c, int32_t tok);
/* The logits to sample from (*out): those of the tokens the grammar does
   not allow at -inf; or *done as mllm_constraint_done. Errors:
   MLLM_ERR_UNSUPPORTED (no token continues the grammar; a matcher limit). */
mllm_status mllm_constraint_apply(mllm_constraint *c, const float *logits, const float **out, bool *done);
/* Advances the grammar by the sampled token's bytes. */
mllm_status mllm_constraint_accept(mllm_constraint *c, int32_t tok);

#endif
