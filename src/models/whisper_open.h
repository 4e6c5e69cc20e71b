/* Opening a Whisper model in any layout mllm reads: a CTranslate2 folder
   (model.bin + config.json + tokenizer.json, whisper_load.c), a Hugging
   Face folder (config.json with model_type "whisper", model.safetensors,
   tokenizer.json: whisper_load_hf.c), or a .mllm file written by `mllm
   convert` (whisper_load_mllm.c). */
#ifndef MLLM_MODELS_WHISPER_OPEN_H
#define MLLM_MODELS_WHISPER_OPEN_H
#include "models/whisper.h"

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

#endif
