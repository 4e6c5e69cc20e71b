/* Prompt lookup (draft-free speculation): edits, summaries and code
   rewrites repeat long runs of their context, so the tokens that followed
   an earlier occurrence of the last few tokens are a cheap guess at what
   comes next. */
#ifndef MLLM_RUNTIME_NGRAM_LOOKUP_H
#define MLLM_RUNTIME_NGRAM_LOOKUP_H
#include <stdint.h>

/* For n = n_max down to n_min: the latest earlier occurrence of the last n
   tokens of ctx[0..n_ctx) that has a continuation; up to cap of the tokens
   that follow it go to out. Returns how many (0: no match). */
int mllm_ngram_lookup(const int32_t *ctx, int n_ctx, int n_min, int n_max, int cap, int32_t *out);

#endif
