/* Exercises a tokenizer that loaded from fuzzed bytes: encode fuzzed text,
   decode the ids, look up pieces, checking the documented contracts
   (ids in range, buffer-size protocol, NULL for bad ids). */
#ifndef MLLM_FUZZ_TOK_CHECK_H
#define MLLM_FUZZ_TOK_CHECK_H
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

/* The first byte of `text` picks add_special / parse_special; the rest is
   the text. Frees nothing. */
void fz_exercise_tokenizer(const mllm_tokenizer *t, fz_input text);

#endif
