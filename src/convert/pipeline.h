/* Quantization pipeline: an ordered list of rules "tensor-name regex ->
   dtype" (first match wins) and a default. Two JSON spellings are read:

   ours:   {"default": "q4_0",
            "rules": [{"pattern": "^token_embd\\.weight$", "dtype": "q8_0"},
                      {"pattern": "norm", "dtype": "f32"}]}
   MLLM's: {"model\\.layers\\..*\\.mlp\\..*": {"hints": {"quant_method": "gguf",
                                                         "gguf_type": "Q4_K"}}, ...}
           (rules in key order; the default keeps the source dtype)

   A dtype is a name mllm_dtype_from_name knows (any case) whose dtype has a
   quantizer (from_float), or "keep" (the source dtype). Patterns are PCRE2
   regexes searched (not anchored: use ^ and $) in the tensor's GGUF name
   ("blk.0.attn_q.weight") and in its Hugging Face name
   ("model.layers.0.self_attn.q_proj.weight"); either may match. */
#ifndef MLLM_CONVERT_PIPELINE_H
#define MLLM_CONVERT_PIPELINE_H
#include <mllm/mllm.h>
#include <stddef.h>

#define MLLM_PIPELINE_KEEP (-1)

typedef struct mllm_pipeline mllm_pipeline;

mllm_status mllm_pipeline_parse(const char *json, size_t len, const char *label, mllm_pipeline **out);
mllm_status mllm_pipeline_load(const char *path, mllm_pipeline **out);
/* One dtype for every tensor (--quant); MLLM_PIPELINE_KEEP keeps them all. */
mllm_status mllm_pipeline_uniform(int dtype, mllm_pipeline **out);
void mllm_pipeline_free(mllm_pipeline *p);
/* The dtype for a tensor (MLLM_PIPELINE_KEEP = the source's); *rule gets
   the index of the rule that matched, -1 for the default. hf_name may be NULL. */
int mllm_pipeline_pick(const mllm_pipeline *p, const char *gguf_name, const char *hf_name, int *rule);
/* Checks that dtype can be produced (has a quantizer); the error lists the
   dtypes that can. */
mllm_status mllm_pipeline_check_dtype(int dtype, const char *label, const char *what);

#endif
