/* Marks the conversation's own text before the chat template renders it,
   and finds it again after, so it is tokenized as text: see defuse.c. */
#ifndef MLLM_TOKENIZER_DEFUSE_H
#define MLLM_TOKENIZER_DEFUSE_H
#include "tokenizer/tokenizer.h"

/* What marking needs, set up once per render: the tokenizer, and which
   bytes can start a control token (most bytes of a message cannot). */
typedef struct {
    const mllm_tokenizer *t;
    bool first[256];
} mllm_defuse;
void mllm_defuse_init(mllm_defuse *d, const mllm_tokenizer *t);

/* An mllm_template_str_fn (user: a mllm_defuse): the string with each
   control-token text and each U+FDD0 replaced by a marker. */
int mllm_defuse_mark(void *defuse, const char *s, size_t n, char **out, size_t *out_n);
/* The rendered text with the markers turned back into what the user wrote
   (*out, *out_len; mllm_free), and the byte ranges of control-token texts
   that came from the conversation (*spans, sorted; mllm_free; spans may be
   NULL). Errors: MLLM_ERR_NOMEM. */
mllm_status mllm_defuse_restore(const mllm_tokenizer *t, const char *text, size_t len, char **out, size_t *out_len,
                                mllm_text_span **spans, size_t *n_spans);

#endif
