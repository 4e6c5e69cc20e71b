/* Which dtype each tensor gets: llama.cpp's llama_tensor_get_type rules
   (src/llama-quant.cpp) for the mixes we write, re-stated from its
   behaviour. Differences, on purpose: "mxfp4" puts every dense matrix in
   mxfp4 (llama.cpp's MXFP4_MOE only does that for MoE experts, dense ones
   get q8_0), and w4a32 is ours. */
#include <string.h>
#include <strings.h>

#include "core/dtype.h"
#include "quantize/quantize.h"

/* LLAMA_FTYPE_* (include/llama.h). */
static const mllm_quant_mix k_mixes[] = {
    {"f32", MLLM_DTYPE_F32, 0},       {"f16", MLLM_DTYPE_F16, 1},       {"q4_0", MLLM_DTYPE_Q4_0, 2},
    {"q4_1", MLLM_DTYPE_Q4_1, 3},     {"q8_0", MLLM_DTYPE_Q8_0, 7},     {"q5_0", MLLM_DTYPE_Q5_0, 8},
    {"q5_1", MLLM_DTYPE_Q5_1, 9},     {"q4_k_s", MLLM_DTYPE_Q4_K, 14},  {"q4_k_m", MLLM_DTYPE_Q4_K, 15},
    {"q5_k_s", MLLM_DTYPE_Q5_K, 16},  {"q5_k_m", MLLM_DTYPE_Q5_K, 17},  {"q6_k", MLLM_DTYPE_Q6_K, 18},
    {"bf16", MLLM_DTYPE_BF16, 32},    {"mxfp4", MLLM_DTYPE_MXFP4, 38},
    /* Not a llama.cpp file type: general.file_type carries our dtype id. */
    {"w4a32", MLLM_DTYPE_W4A32_G32, MLLM_DTYPE_W4A32_G32},
    {"w4a32_g64", MLLM_DTYPE_W4A32_G64, MLLM_DTYPE_W4A32_G64},
};

const mllm_quant_mix *mllm_quant_mix_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof k_mixes / sizeof *k_mixes; i++)
        if (!strcasecmp(k_mixes[i].name, name)) return &k_mixes[i];
    return NULL;
}

static bool ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* llama.cpp quantizes 2-D+ tensors named *weight except norms, MoE gates and
   a few small special cases; everything else is copied. */
static bool allows_quantization(const char *name, int n_dims) {
    if (n_dims < 2 || !ends_with(name, "weight")) return false;
    static const char *const never[] = {"_norm.weight", "ffn_gate_inp.weight", "altup", "laurel",
                                        "per_layer_model_proj", "ssm_conv1d", "position_embd.weight",
                                        "token_types.weight"};
    for (size_t i = 0; i < sizeof never / sizeof *never; i++)
        if (strstr(name, never[i])) return false;
    return true;
}

static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* A type whose block does not divide the row falls back as llama.cpp's
   tensor_type_fallback does; f16 if even that does not fit. */
static int fallback(int t, int64_t ncols) {
    const mllm_dtype_traits *tr = mllm_dtype_get(t);
    if (ncols % tr->block_size == 0) return t;
    int f;
    switch (t) {
    case MLLM_DTYPE_Q4_K: f = MLLM_DTYPE_Q5_0; break;
    case MLLM_DTYPE_Q5_K: f = MLLM_DTYPE_Q5_1; break;
    case MLLM_DTYPE_Q6_K: f = MLLM_DTYPE_Q8_0; break;
    default: f = MLLM_DTYPE_F16; break;
    }
    return ncols % mllm_dtype_get(f)->block_size == 0 ? f : MLLM_DTYPE_F16;
}

int mllm_quant_rules_pick(mllm_quant_rules *r, const char *name, int n_dims, const int64_t *ne, int src_dtype,
                          int manual) {
    if (!allows_quantization(name, n_dims)) return src_dtype;
    const int base = r->mix->base;
    if (!mllm_dtype_get(base)->quantized) return base;
    if (manual >= 0) return fallback(manual, ne[0]);
    if (r->pure) return fallback(base, ne[0]);
    const uint32_t ft = r->mix->ftype;
    int t = base;
    const bool is_output = !strcmp(name, "output.weight");
    const bool is_embd = !strcmp(name, "token_embd.weight");
    if (is_output || (r->tied && is_embd)) {
        if (ft == 38 || ne[0] % mllm_dtype_get(base)->block_size != 0) t = MLLM_DTYPE_Q8_0;
        else if (t != MLLM_DTYPE_Q8_0) t = MLLM_DTYPE_Q6_K;
    } else if (is_embd) {
        /* stays at the base type for every mix we write */
    } else if (strstr(name, "attn_v.weight") || strstr(name, "attn_qkv.weight")) {
        /* llama.cpp treats a fused qkv like attn_v (its own qkv branch is
           never reached) and counts both. */
        if ((ft == 15 || ft == 17) && use_more_bits(r->i_attn_v, r->n_attn_v)) t = MLLM_DTYPE_Q6_K;
        else if (ft == 14 && r->i_attn_v < 4) t = MLLM_DTYPE_Q5_K;
        r->i_attn_v++;
    } else if (strstr(name, "ffn_down")) {
        const int i = r->i_ffn_down, n = r->n_layer;
        if ((ft == 15 || ft == 17) && use_more_bits(i, n)) t = MLLM_DTYPE_Q6_K;
        else if (ft == 14 && i < n / 8) t = MLLM_DTYPE_Q5_K;
        r->i_ffn_down++;
    }
    return fallback(t, ne[0]);
}
