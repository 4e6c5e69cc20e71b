/* Marks the conversation's own text before the chat template renders it,
   and finds it again after, so it is tokenized as text: see chat_defuse.c. */
#ifndef MLLM_API_CHAT_DEFUSE_H
#define MLLM_API_CHAT_DEFUSE_H
#include "tokenizer/tokenizer.h"

/* An mllm_template_str_fn (user: the mllm_tokenizer): the string with each
   control-token text and each U+FDD0 replaced by a marker. */
int chat_defuse_mark(void *tokenizer, const char *s, size_t n, char **out, size_t *out_n);
/* The rendered text with the markers turned back into what the user wrote
   (*out, *out_len; mllm_free), and the byte ranges of control-token texts
   that came from the conversation (*spans, sorted; mllm_free; spans may be
   NULL). Errors: MLLM_ERR_NOMEM. */
mllm_status chat_defuse_restore(const mllm_tokenizer *t, const char *text, size_t len, char **out, size_t *out_len,
                                mllm_text_span **spans, size_t *n_spans);

#endif
