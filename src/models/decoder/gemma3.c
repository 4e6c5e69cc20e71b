/* Gemma 3 text decoders (270M .. 27B; the text part of the multimodal
   checkpoints). What differs from Llama, each a switch of the shared
   decoder: embeddings scaled by sqrt(E); RMSNorm after attention and after
   the FFN as well as before; GeGLU (tanh GELU) FFN; q/k RMSNorm; five
   sliding-window layers (window 512, RoPE base 10000) for each global one
   (RoPE base 1e6, the model's rope scaling); the attention scale from
   query_pre_attn_scalar. GGUF stores the norm weights as 1 + w (llama.cpp's
   converter adds the 1 that Gemma's RMSNorm applies); HF checkpoints get it
   added at load. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "backends/cpu.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "models/registry.h"

static const mllm_name_pair k_keys[] = {
    {"rope_local_base_freq", "rope.freq_base_swa"},
    {"query_pre_attn_scalar", "attention.query_pre_attn_scalar"},
    {"sliding_window_pattern", "attention.sliding_window_pattern"},
    {"layer_types", "attention.layer_types"},
    {NULL, NULL},
};

/* transformers' Gemma3TextConfig defaults, for configs that leave them out. */
static const mllm_hf_default k_hf_defaults[] = {
    {"rope.freq_base", 1e6, false},
    {"rope.freq_base_swa", 1e4, false},
    {"attention.sliding_window", 4096, true},
    {"attention.query_pre_attn_scalar", 256, false},
    {NULL, 0, false},
};

static const mllm_name_pair k_layer_names[] = {
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"input_layernorm.weight", "attn_norm.weight"},
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {NULL, NULL},
};

static mllm_status gemma3_read(const mllm_meta *m, const char *path, mllm_hparams *hp) {
    mllm_status st;
    hp->embd_scale = sqrtf((float)hp->n_embd);
    hp->act = MLLM_ACT_GELU_TANH;
    hp->rope_theta_swa = 10000.0f;
    if ((st = mllm_hp_float(m, "gemma3", "rope.freq_base_swa", path, &hp->rope_theta_swa))) return st;
    /* gemma_pytorch: the 27B scales by 1/sqrt(E/H), the others 1/sqrt(D);
       HF configs say it as query_pre_attn_scalar. */
    float qpas = 0;
    if ((st = mllm_hp_float(m, "gemma3", "attention.query_pre_attn_scalar", path, &qpas))) return st;
    if (hp->attn_scale > 0) { /* the file's own gemma3.attention.scale wins */
    } else if (qpas > 0) hp->attn_scale = 1.0f / sqrtf(qpas);
    else if (hp->n_layer == 62) hp->attn_scale = 1.0f / sqrtf((float)(hp->n_embd / hp->n_head));
    else hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    if (hp->swa_window <= 0) return MLLM_OK; /* no sliding window: every layer global */
    const mllm_meta_entry *types = mllm_meta_find(m, "gemma3.attention.layer_types");
    if (types) {
        if (types->type != MLLM_META_ARR_STR || types->len != (size_t)hp->n_layer)
            return mllm_err(MLLM_ERR_FORMAT, "%s: layer_types must list %d strings (one per layer)", path, hp->n_layer);
        for (int l = 0; l < hp->n_layer; l++) {
            if (!strcmp(types->str[l], "sliding_attention")) hp->layer_flags[l] |= MLLM_LAYER_SLIDING;
            else if (strcmp(types->str[l], "full_attention"))
                return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: layer type '%.32s' is not supported", path, types->str[l]);
        }
        return MLLM_OK;
    }
    int32_t period = 6; /* as llama.cpp: 5 sliding layers, then a global one */
    if ((st = mllm_hp_int(m, "gemma3", "attention.sliding_window_pattern", path, false, &period))) return st;
    for (int l = 0; l < hp->n_layer; l++)
        if (l % period < period - 1) hp->layer_flags[l] |= MLLM_LAYER_SLIDING;
    return MLLM_OK;
}

static bool is_norm(const char *name) {
    size_t n = strlen(name), s = strlen("norm.weight");
    return n >= s && !strcmp(name + n - s, "norm.weight");
}

/* HF Gemma RMSNorm multiplies by (1 + w): store 1 + w in f32, as GGUF does. */
static mllm_status gemma3_hf_fixup(mllm_model_file *f, const mllm_hparams *hp) {
    (void)hp;
    for (size_t i = 0; i < f->n_weights; i++) {
        mllm_weight *w = &f->weights[i];
        if (!is_norm(w->name) || w->n_dims != 1) continue;
        const mllm_dtype_traits *tr = mllm_dtype_get(w->dtype);
        const mllm_to_float_fn to_float = mllm_cpu_type_get(w->dtype)->to_float;
        if (!tr || !to_float || tr->block_size != 1)
            return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: norm '%s' has dtype %s", f->path, w->name,
                            mllm_dtype_name(w->dtype));
        float *v = mllm_malloc_aligned((size_t)w->ne[0] * sizeof(float));
        if (!v) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
        to_float(w->data, v, w->ne[0]);
        for (int64_t k = 0; k < w->ne[0]; k++) v[k] += 1.0f;
        mllm_status st = mllm_model_file_own(f, v);
        if (st) return st;
        w->data = v;
        w->dtype = MLLM_DTYPE_F32;
        w->size = (size_t)w->ne[0] * sizeof(float);
        w->mapped = false;
    }
    return MLLM_OK;
}

const mllm_arch mllm_arch_gemma3 = {
    .name = "gemma3",
    .about = "Gemma 3 text (sliding-window layers, soft-capping, post norms)",
    .hf_types = "gemma3_text gemma3",
    .hf_classes = "Gemma3ForCausalLM Gemma3ForConditionalGeneration",
    .family = "gemma3",
    .rope_neox = true,
    .chat_template = "gemma",
    .hf_keys = k_keys,
    .hf_defaults = k_hf_defaults,
    .hf_layer_names = k_layer_names,
    .read = gemma3_read,
    .hf_fixup = gemma3_hf_fixup,
};
