/* Private to src/quantize. */
#ifndef MLLM_QUANTIZE_INTERNAL_H
#define MLLM_QUANTIZE_INTERNAL_H
#include <mllm/mllm.h>
#include "models/hparams.h"

struct mllm_gguf;
struct mllm_gguf_writer;
struct mllm_model_file;

/* Every key of g except general.file_type / quantization_version / alignment
   and, when skip_prefix is not NULL, the keys that start with it. */
mllm_status quant_meta_copy_gguf(const struct mllm_gguf *g, struct mllm_gguf_writer *w, const char *skip_prefix);
/* Architecture keys from a non-GGUF source's parsed config. */
mllm_status quant_meta_from_config(const struct mllm_model_file *f, const mllm_hparams *hp, struct mllm_gguf_writer *w);
/* Tokenizer keys from a Hugging Face tokenizer.json (byte-level BPE); MLLM_OK
   and nothing written when the source has none. */
mllm_status quant_meta_hf_tokenizer(const struct mllm_model_file *f, const mllm_hparams *hp, struct mllm_gguf_writer *w);

#endif
