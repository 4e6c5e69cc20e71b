/* The grammar matcher: llama.cpp's design (a set of pushdown stacks, one
   per way the text so far can be parsed; each stack's top is the character
   class to match next), with stacks that share their tails (a node is a
   position in a rule plus its parent, the position to return to), so
   advancing by one character copies nothing.

   It takes bytes: a UTF-8 character split over tokens is held as a
   partial code point, and a stack survives a partial only if its class
   holds some character with that prefix. mllm_gmatch_mask() walks the
   vocabulary trie with the matcher's state, one byte per trie edge, so a
   token is tested only as far as its prefix is viable and every shared
   prefix once. A matcher is used by one thread at a time. */
#ifndef MLLM_RUNTIME_GRAMMAR_MATCH_H
#define MLLM_RUNTIME_GRAMMAR_MATCH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "runtime/grammar.h"
#include "runtime/vocab_trie.h"

/* Limits of one matcher: past them the grammar is too ambiguous to follow
   (every way of parsing is kept) and matching stops with an error. */
#define MLLM_GRAMMAR_MAX_STACKS 1024       /* parses alive at once */
#define MLLM_GRAMMAR_MAX_EXPAND (1u << 16) /* expansion steps for one character */
#define MLLM_GRAMMAR_MAX_NODES (1u << 24)  /* stack nodes held (all stacks, a mask walk included) */
#define MLLM_GRAMMAR_MAX_MASK_WORK (1u << 26) /* expansion steps and comparisons of one token mask */

typedef struct mllm_gmatch mllm_gmatch;

/* A matcher at the start of g (g must outlive it). */
mllm_status mllm_gmatch_new(const mllm_gram *g, mllm_gmatch **out);
void mllm_gmatch_free(mllm_gmatch *m);
/* Back to the start. */
mllm_status mllm_gmatch_reset(mllm_gmatch *m);
/* Advances by n bytes. MLLM_OK; MLLM_ERR_INVALID_ARG if the grammar
   rejects them (the state is then unchanged); MLLM_ERR_UNSUPPORTED when a
   limit above is hit (mllm_last_error() names it). */
mllm_status mllm_gmatch_accept(mllm_gmatch *m, const char *bytes, size_t n);
/* Whether mllm_gmatch_accept would take the bytes (same statuses); the
   state is left as it was. */
mllm_status mllm_gmatch_try(mllm_gmatch *m, const char *bytes, size_t n);
/* Whether the text so far is a complete match (end of text allowed). */
bool mllm_gmatch_can_end(const mllm_gmatch *m);
/* Whether it is complete and nothing may follow. */
bool mllm_gmatch_done(const mllm_gmatch *m);
/* allow[id] = 1 for every token of t whose bytes the grammar accepts
   next, 0 for the others (t->n_vocab entries; tokens not in the trie get
   0: the caller decides about end-of-generation tokens). *n_allowed
   receives the count. Errors as mllm_gmatch_accept (limits). */
mllm_status mllm_gmatch_mask(mllm_gmatch *m, const mllm_vocab_trie *t, uint8_t *allow, size_t *n_allowed);

#endif
