/* Model quantization: `mllm quantize IN OUT --type T`. Reads any model file
   mllm_model_file_open reads (GGUF, Hugging Face folder, llama2.c) and
   writes a GGUF whose tensor types follow llama.cpp's llama-quantize mixes
   (q4_k_m keeps some attn_v / ffn_down layers and the output at q6_k, ...),
   with every row quantized by the dtype table's reference quantizers (the
   same bytes as llama-quantize without an importance matrix).

       mllm_quantize_params p;
       mllm_quantize_default_params(&p);
       p.type = "q4_k_m";
       mllm_quantize_file("model-f32.gguf", "model-q4_k_m.gguf", &p, &stats);

   Metadata: a GGUF source's keys are all copied (tokenizer, chat template,
   ...) with general.file_type set to llama.cpp's LLAMA_FTYPE of the mix and
   general.quantization_version = 2; other sources get the standard
   architecture keys (and tokenizer keys when a tokenizer.json is present). */
#ifndef MLLM_QUANTIZE_QUANTIZE_H
#define MLLM_QUANTIZE_QUANTIZE_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* mllm_quantize_params, mllm_quantize_stats, mllm_quantize_default_params
   and mllm_quantize_file are public (mllm/mllm_tools.h). */

/* ---- the mix rules (mix.c), exposed for tests ---- */

typedef struct {
    const char *name;   /* "q4_k_m" */
    int base;           /* mllm_dtype of most matrices */
    uint32_t ftype;     /* general.file_type (llama.cpp's LLAMA_FTYPE; ours for w4a32) */
} mllm_quant_mix;

/* NULL if unknown (case-insensitive). */
const mllm_quant_mix *mllm_quant_mix_find(const char *name);

/* Per-file state of the rules: llama.cpp counts attn_v / ffn_down tensors
   in file order. */
typedef struct {
    const mllm_quant_mix *mix;
    int n_layer, n_attn_v;
    int i_attn_v, i_ffn_down;
    bool tied;          /* no output.weight: token_embd is quantized like the output */
    bool pure;
} mllm_quant_rules;

/* The dtype for one tensor (src_dtype when it is not quantized: 1-D, norms,
   non-"weight"). `manual` >= 0 forces a type (an override matched). */
int mllm_quant_rules_pick(mllm_quant_rules *r, const char *name, int n_dims, const int64_t *ne, int src_dtype,
                          int manual);

#endif
