/* The Llama-shaped families: Llama 2/3 (TinyLlama, SmolLM/SmolLM2), Qwen2 /
   Qwen2.5, Qwen3 and SmolLM3. One decoder graph (decoder.c) serves them
   all; the rows differ in names, RoPE layout and, for SmolLM3, layers
   without RoPE. Qwen2's q/k/v biases and Qwen3's q/k norms are found from
   the tensors (decoder_check.c). */
#include <string.h>
#include "core/error.h"
#include "models/registry.h"
#include "models/vision_tower.h"

/* The towers the vision-language rows take images from (models/vision/). */
extern const mllm_vision_family mllm_vision_qwen2vl, mllm_vision_idefics3;

const mllm_arch mllm_arch_llama = {
    .name = "llama",
    .about = "Llama 2/3, TinyLlama, SmolLM/SmolLM2",
    .hf_types = "llama",
    .hf_classes = "LlamaForCausalLM",
    .family = "llama",
    .rope_neox = false, /* GGUF llama q/k are permuted for pairwise rotation */
};

const mllm_arch mllm_arch_qwen2 = {
    .name = "qwen2",
    .tokenizer_pre = "qwen2",
    .about = "Qwen2 / Qwen2.5 (q/k/v biases)",
    .hf_types = "qwen2",
    .hf_classes = "Qwen2ForCausalLM",
    .family = "llama",
    .rope_neox = true,
};

/* Qwen2-VL / Qwen2.5-VL's language model: Qwen2 with M-RoPE. With text
   alone M-RoPE's three position rows are equal, which is Qwen2's rotation,
   so a text prompt runs exactly; with images the session feeds the vision
   tower's embeddings and M-RoPE's three rows (mllm_session_eval_image,
   docs/vision.md). The visual.* tensors stay unused under their HF names.
   llama.cpp names the text GGUF of both "qwen2vl". */
static const mllm_name_pair k_qwen2vl_keys[] = {
    {"rope_scaling.mrope_section", "rope.dimension_sections"},
    {"rope_parameters.mrope_section", "rope.dimension_sections"}, /* transformers >= 5 */
    {NULL, NULL},
};

/* The M-RoPE sections (llama.cpp's GGUF key has a 4th, 0): they must
   cover the rotated half exactly. */
static mllm_status qwen2vl_read(const mllm_meta *m, const char *path, mllm_hparams *hp) {
    const mllm_meta_entry *e = mllm_meta_find(m, "qwen2vl.rope.dimension_sections");
    if (!e) return MLLM_OK;
    if (e->type != MLLM_META_ARR_NUM || e->len < 3 || e->len > 4)
        return mllm_err(MLLM_ERR_FORMAT, "%s: mrope_section must be 3 numbers", path);
    int sum = 0;
    for (int i = 0; i < 3; i++) {
        double v = e->num[i];
        if (v < 0 || v > 4096 || v != (int)v) return mllm_err(MLLM_ERR_FORMAT, "%s: mrope_section[%d] = %g", path, i, v);
        hp->mrope[i] = (int32_t)v;
        sum += (int)v;
    }
    if (sum != hp->n_rot / 2)
        return mllm_err(MLLM_ERR_FORMAT, "%s: mrope_section sums to %d, the rotated half is %d", path, sum,
                        hp->n_rot / 2);
    return MLLM_OK;
}

const mllm_arch mllm_arch_qwen2vl = {
    .name = "qwen2vl",
    .tokenizer_pre = "qwen2",
    .about = "Qwen2-VL / Qwen2.5-VL's language model (M-RoPE); images through qwen2vl_vision",
    .vision = &mllm_vision_qwen2vl,
    .hf_types = "qwen2_5_vl qwen2_vl qwen2_5_vl_text qwen2_vl_text",
    .hf_classes = "Qwen2_5_VLForConditionalGeneration Qwen2VLForConditionalGeneration",
    .family = "llama",
    .rope_neox = true,
    .hf_keys = k_qwen2vl_keys,
    .read = qwen2vl_read,
};

/* Idefics3 / SmolVLM's language model: a Llama decoder (model.text_model.*
   in the checkpoints) whose <image> tokens take the vision side's rows
   (idefics3_vision.h) in order; plain 1-D RoPE, images included. The
   vision_model.* and connector.* tensors stay unused under their HF names. */
const mllm_arch mllm_arch_idefics3 = {
    .name = "idefics3",
    .about = "Idefics3 / SmolVLM's language model; images through idefics3_vision",
    .vision = &mllm_vision_idefics3,
    .hf_types = "idefics3 smolvlm",
    .hf_classes = "Idefics3ForConditionalGeneration SmolVLMForConditionalGeneration",
    .family = "llama",
    .rope_neox = true,
};

const mllm_arch mllm_arch_qwen3 = {
    .name = "qwen3",
    .tokenizer_pre = "qwen2",
    .about = "Qwen3 (q/k norms)",
    .hf_types = "qwen3",
    .hf_classes = "Qwen3ForCausalLM",
    .family = "llama",
    .rope_neox = true,
};

/* SmolLM3: every no_rope_layer_interval-th layer (4) has no RoPE. GGUF
   files carry no key for it (llama.cpp fixes the interval at 4); HF configs
   list it per layer (no_rope_layers: 1 = rotates, 0 = does not). */
static const mllm_name_pair k_smollm3_keys[] = {
    {"no_rope_layers", "no_rope_layers"},
    {"no_rope_layer_interval", "no_rope_layer_interval"},
    {NULL, NULL},
};

static mllm_status smollm3_read(const mllm_meta *m, const char *path, mllm_hparams *hp) {
    const mllm_meta_entry *list = mllm_meta_find(m, "smollm3.no_rope_layers");
    if (list) {
        if (list->type != MLLM_META_ARR_NUM || list->len != (size_t)hp->n_layer)
            return mllm_err(MLLM_ERR_FORMAT, "%s: no_rope_layers must list %d numbers (one per layer)", path,
                            hp->n_layer);
        for (int l = 0; l < hp->n_layer; l++)
            if (list->num[l] == 0) hp->layer_flags[l] |= MLLM_LAYER_NO_ROPE;
        return MLLM_OK;
    }
    int32_t every = 4;
    mllm_status st = mllm_hp_int(m, "smollm3", "no_rope_layer_interval", path, false, &every);
    if (st) return st;
    for (int l = 0; l < hp->n_layer && l < MLLM_MAX_LAYERS; l++)
        if ((l + 1) % every == 0) hp->layer_flags[l] |= MLLM_LAYER_NO_ROPE;
    return MLLM_OK;
}

const mllm_arch mllm_arch_smollm3 = {
    .name = "smollm3",
    .tokenizer_pre = "gpt2", /* what quantize wrote before rows carried it */
    .about = "SmolLM3 (layers without RoPE)",
    .hf_types = "smollm3",
    .hf_classes = "SmolLM3ForCausalLM",
    .family = "llama",
    .rope_neox = false, /* converted like Llama: q/k permuted */
    .hf_keys = k_smollm3_keys,
    .read = smollm3_read,
};
