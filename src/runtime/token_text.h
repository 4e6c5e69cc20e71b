/* A generated token's text as callers see it: control tokens are not text,
   and a multi-byte UTF-8 character split over tokens is delivered whole
   (its first bytes wait for the rest). Shared by the session's generation
   loop (api/session.c) and the engine (engine/engine.c). */
#ifndef MLLM_RUNTIME_TOKEN_TEXT_H
#define MLLM_RUNTIME_TOKEN_TEXT_H
#include <stddef.h>
#include <stdint.h>
#include <mllm/mllm.h>
#include "tokenizer/tokenizer.h"

typedef struct {
    char pending[8]; /* at most the 3 first bytes of an unfinished character */
    size_t n_pending;
} mllm_token_text;

/* Hands tok's text (with any pending bytes before it) to cb; returns cb's
   answer (nonzero: stop). */
int mllm_token_text_emit(mllm_token_text *tt, const mllm_tokenizer *tok, int32_t id, mllm_on_token cb, void *user);
/* Hands the bytes still pending to cb (id -1), at the end of a generation. */
void mllm_token_text_flush(mllm_token_text *tt, mllm_on_token cb, void *user);

#endif
