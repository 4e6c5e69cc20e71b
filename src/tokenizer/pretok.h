/* Regex pre-tokenizer (PCRE2): see pretok.c. */
#ifndef MLLM_TOKENIZER_PRETOK_H
#define MLLM_TOKENIZER_PRETOK_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>

#define TOK_MAX_REGEXES 8 /* regexes applied in sequence */

typedef struct pcre2_real_code_8 tok_regex; /* = pcre2_code (8-bit) */

typedef struct {
    int n;
    tok_regex *re[TOK_MAX_REGEXES];
} tok_pretok;

typedef struct {
    size_t start, len;
} tok_span;

typedef struct {
    tok_span *v;
    size_t n, cap;
} tok_spans;

/* Compiles one regex (literal: the pattern is plain text). */
mllm_status tok_pretok_add(tok_pretok *p, const char *pattern, size_t len, bool literal,
                           const char *source);
/* The regexes llama.cpp uses for GGUF tokenizer.ggml.pre = pre, and whether
   that type ignores merges for whole-word tokens / adds BOS by default. */
mllm_status tok_pretok_by_name(tok_pretok *p, const char *pre, size_t n, bool *ignore_merges,
                               bool *add_bos, const char *source);
void tok_pretok_free(tok_pretok *p);
/* Splits text into pieces (out->v is reused; the caller frees it). */
mllm_status tok_pretok_split(const tok_pretok *p, const char *text, size_t len, tok_spans *out);

#endif
