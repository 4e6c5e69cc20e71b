/* Hugging Face config.json -> mllm_llama_config, for model_type llama, qwen2
   and qwen3 (architectures LlamaForCausalLM, Qwen2ForCausalLM,
   Qwen3ForCausalLM). Missing optional fields take transformers' defaults;
   a missing required field or a field of the wrong JSON type is an error
   that names the field. rope_neox is always true: HF checkpoints rotate
   halves (rotate_half), unlike GGUF llama weights which are permuted. */
#ifndef MLLM_FORMATS_HF_CONFIG_H
#define MLLM_FORMATS_HF_CONFIG_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include "models/llama_config.h"

mllm_status mllm_hf_config_parse(const char *json, size_t len, const char *label, mllm_llama_config *cfg);
mllm_status mllm_hf_config_load(const char *path, mllm_llama_config *cfg);

/* Maps an HF tensor name ("model.layers.3.self_attn.q_proj.weight") to its
   GGUF name ("blk.3.attn_q.weight"); false for names the graph does not use
   (the HF loader keeps those under their HF name). */
bool mllm_hf_name_to_gguf(const char *hf, char *out, size_t cap);
/* The reverse ("blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight"). */
bool mllm_gguf_name_to_hf(const char *gguf, char *out, size_t cap);

#endif
