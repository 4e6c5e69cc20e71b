/* Opening a Whisper model in any layout mllm reads: a CTranslate2 folder
   (model.bin + config.json + tokenizer.json, whisper_load.c), a Hugging
   Face folder (config.json with model_type "whisper", model.safetensors,
   tokenizer.json: whisper_load_hf.c), or a .mllm file written by `mllm
   convert` (whisper_load_mllm.c). */
#ifndef MLLM_MODELS_WHISPER_OPEN_H
#define MLLM_MODELS_WHISPER_OPEN_H
#include "models/whisper/whisper.h"

typedef enum {
    MLLM_WHISPER_NONE = 0, /* not a Whisper model (or not one we can tell) */
    MLLM_WHISPER_CT2,
    MLLM_WHISPER_HF,
    MLLM_WHISPER_MLLM,
} mllm_whisper_layout;

/* What path holds, from its names and first bytes only (nothing parsed in
   depth: the loader checks everything). */
mllm_whisper_layout mllm_whisper_probe(const char *path);
/* Loads path in whichever layout it has. Errors: the loader's, and
   MLLM_ERR_FORMAT when path is no Whisper model. */
mllm_status mllm_whisper_open(const char *path, const mllm_whisper_params *p, mllm_whisper **out);
/* A .mllm file written by `mllm convert` from a Whisper folder
   (whisper_load_mllm.c). Errors: the file's open errors, FORMAT (not
   Whisper's, a tensor missing or of the wrong dtype or shape, named),
   INVALID_ARG (p->weight_type_given with a type other than the file's). */
mllm_status mllm_whisper_load_mllm(const char *path, const mllm_whisper_params *p, mllm_whisper **out);
/* Whether a .mllm config section is a Whisper's (arch "whisper"). */
bool mllm_whisper_mllm_config(const char *json, size_t len);

#endif
