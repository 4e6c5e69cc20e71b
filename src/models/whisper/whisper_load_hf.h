/* Whisper from a Hugging Face folder (whisper_load_hf.c). */
#ifndef MLLM_MODELS_WHISPER_LOAD_HF_H
#define MLLM_MODELS_WHISPER_LOAD_HF_H
#include "models/whisper/whisper.h"

/* The sizes of an HF WhisperConfig (config.json). */
typedef struct {
    int d_model, n_head, n_enc_layers, n_dec_layers, d_ff, n_mels, n_vocab, n_audio_ctx, n_text_ctx;
} mllm_whisper_hf_config;

/* Parses a config.json text: model_type "whisper", every size present and
   in range, encoder and decoder of one width, GELU. Exposed for the fuzz
   target. Errors: FORMAT (not Whisper's, a size missing or absurd),
   UNSUPPORTED (settings Whisper never used). */
mllm_status mllm_whisper_hf_config_parse(const char *json, size_t len, const char *label, mllm_whisper_hf_config *c);

/* Loads dir/config.json, dir/model.safetensors (f32, f16 or bf16; with or
   without the "model." prefix of WhisperForConditionalGeneration) and
   dir/tokenizer.json. Errors: IO, FORMAT (a tensor missing or of the wrong
   shape, named), UNSUPPORTED, NOMEM. */
mllm_status mllm_whisper_load_hf(const char *dir, const mllm_whisper_params *p, mllm_whisper **out);

#endif
