/* Shared by the tokenizer.json loader (load_hf.c) and its pipeline parts
   (hf_pipeline.c). */
#ifndef MLLM_TOKENIZER_HF_INTERNAL_H
#define MLLM_TOKENIZER_HF_INTERNAL_H
#include "tokenizer/tokenizer_internal.h"
#include <cjson/cJSON.h>

typedef struct {
    bool byte_level;     /* a ByteLevel pre-tokenizer or decoder is present */
    bool template_seen;  /* a TemplateProcessing post-processor said what to add */
    bool add_bos_set;    /* tokenizer_config.json gave add_bos_token */
} hf_flags;

mllm_status hf_normalizer(mllm_tokenizer *t, const cJSON *n, hf_flags *f);
mllm_status hf_pre_tokenizer(mllm_tokenizer *t, const cJSON *p, hf_flags *f);
void hf_post_processor(mllm_tokenizer *t, const cJSON *pp, hf_flags *f);
mllm_status hf_config(mllm_tokenizer *t, const cJSON *cfg, hf_flags *f);
void hf_guess_special(mllm_tokenizer *t);
/* A WordPiece model's settings (unk_token, continuing_subword_prefix,
   max_input_chars_per_word). */
mllm_status hf_wordpiece_model(mllm_tokenizer *t, const cJSON *model);

#endif
