/* Hugging Face config.json -> generic metadata: every field, nested objects
   flattened with dots ("rope_scaling.factor", "text_config.hidden_size"),
   numbers as int or float, arrays of numbers or of strings as arrays; null
   fields are left out (HF's "use the default"). Which fields mean what is
   the model registry's business (models/registry.c). Also the Llama-family
   tensor names of HF checkpoints <-> GGUF, used by the MLLM v1/v2 reader
   (a Llama-only format) and by the registry's Llama rows. */
#ifndef MLLM_FORMATS_HF_CONFIG_H
#define MLLM_FORMATS_HF_CONFIG_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include "core/meta.h"

/* Nesting deeper than this is refused (real configs: 3). */
#define MLLM_HF_CONFIG_MAX_DEPTH 8

mllm_status mllm_hf_config_parse(const char *json, size_t len, const char *label, mllm_meta *out);
mllm_status mllm_hf_config_load(const char *path, mllm_meta *out);

/* Maps an HF tensor name ("model.layers.3.self_attn.q_proj.weight") to its
   GGUF name ("blk.3.attn_q.weight"); false for names the graph does not use
   (the HF loader keeps those under their HF name). */
bool mllm_hf_name_to_gguf(const char *hf, char *out, size_t cap);
/* The reverse ("blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight"). */
bool mllm_gguf_name_to_hf(const char *gguf, char *out, size_t cap);

#endif
