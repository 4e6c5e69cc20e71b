/* Tensor names: Hugging Face Llama/Qwen checkpoints <-> GGUF. */
#include "formats/hf_config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* HF suffix after "model.layers.N." -> GGUF suffix after "blk.N.". */
static const struct { const char *hf, *gguf; } k_layer_names[] = {
    {"self_attn.q_proj.weight", "attn_q.weight"},       {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},       {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},           {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},           {"self_attn.o_proj.bias", "attn_output.bias"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},  {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"input_layernorm.weight", "attn_norm.weight"},     {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},        {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

bool mllm_hf_name_to_gguf(const char *hf, char *out, size_t cap) {
    if (!strcmp(hf, "model.embed_tokens.weight")) return snprintf(out, cap, "token_embd.weight") < (int)cap;
    if (!strcmp(hf, "model.norm.weight")) return snprintf(out, cap, "output_norm.weight") < (int)cap;
    if (!strcmp(hf, "lm_head.weight")) return snprintf(out, cap, "output.weight") < (int)cap;
    const char *pre = "model.layers.";
    if (strncmp(hf, pre, strlen(pre)) != 0) return false;
    const char *p = hf + strlen(pre);
    if (*p < '0' || *p > '9') return false;
    char *end;
    long l = strtol(p, &end, 10);
    if (end == p || *end != '.' || l < 0 || l > 100000 || (p[0] == '0' && end - p > 1)) return false;
    for (size_t i = 0; i < sizeof k_layer_names / sizeof *k_layer_names; i++) {
        if (!strcmp(end + 1, k_layer_names[i].hf)) {
            return snprintf(out, cap, "blk.%ld.%s", l, k_layer_names[i].gguf) < (int)cap;
        }
    }
    return false;
}

bool mllm_gguf_name_to_hf(const char *gguf, char *out, size_t cap) {
    if (!strcmp(gguf, "token_embd.weight")) return snprintf(out, cap, "model.embed_tokens.weight") < (int)cap;
    if (!strcmp(gguf, "output_norm.weight")) return snprintf(out, cap, "model.norm.weight") < (int)cap;
    if (!strcmp(gguf, "output.weight")) return snprintf(out, cap, "lm_head.weight") < (int)cap;
    if (strncmp(gguf, "blk.", 4) != 0 || gguf[4] < '0' || gguf[4] > '9') return false;
    char *end;
    long l = strtol(gguf + 4, &end, 10);
    if (end == gguf + 4 || *end != '.' || l < 0) return false;
    for (size_t i = 0; i < sizeof k_layer_names / sizeof *k_layer_names; i++) {
        if (!strcmp(end + 1, k_layer_names[i].gguf)) {
            return snprintf(out, cap, "model.layers.%ld.%s", l, k_layer_names[i].hf) < (int)cap;
        }
    }
    return false;
}
