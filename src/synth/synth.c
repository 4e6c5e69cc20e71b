/* mllm_synth_write: presets, argument checks, and the GGUF writer (keys and
   tensor names as llama.cpp writes them, so other GGUF readers load it). */
#include "backends/cpu.h"
#include "synth/synth.h"
#include "synth/synth_internal.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "formats/gguf_writer.h"
#include <stdio.h>
#include <string.h>

#define SHAPE(e, l, h, hkv, d, f, v, c) .E = e, .L = l, .H = h, .Hkv = hkv, .D = d, .F = f, .V = v, .ctx = c
#define LLAMA3_ROPE .llama3_rope = true, .rope_factor = 32.0f, .rope_low = 1.0f, .rope_high = 4.0f, .rope_orig_ctx = 8192

static const synth_preset k_presets[] = {
    /*             E     L   H   Hkv  D    F     V       ctx */
    {"qwen3", "tiny", "qwen3-tiny-synth", SHAPE(64, 2, 4, 2, 16, 128, 512, 4096), .theta = 1e6f, .eps = 1e-6f,
     .qk_norm = true, .tied = true},
    /* tiny with rows of 256 values, the k-quants' block (tests of q4_K / q6_K models) */
    {"qwen3", "tiny256", "qwen3-tiny256-synth", SHAPE(256, 2, 4, 2, 64, 512, 512, 4096), .theta = 1e6f,
     .eps = 1e-6f, .qk_norm = true, .tied = true},
    {"qwen3", "0.6b", "qwen3-0.6b-synth", SHAPE(1024, 28, 16, 8, 128, 3072, 151936, 40960), .theta = 1e6f,
     .eps = 1e-6f, .qk_norm = true, .tied = true},
    /* Qwen3-1.7B's shape */
    {"qwen3", "1b", "qwen3-1.7b-synth", SHAPE(2048, 28, 16, 8, 128, 6144, 151936, 40960), .theta = 1e6f,
     .eps = 1e-6f, .qk_norm = true, .tied = true},
    /* Qwen2: q/k/v biases, no q/k norm; 0.6b / 1b are Qwen2.5-0.5B / -1.5B's shapes. */
    {"qwen2", "tiny", "qwen2-tiny-synth", SHAPE(64, 2, 4, 2, 16, 128, 512, 4096), .theta = 1e6f, .eps = 1e-6f,
     .tied = true, .qkv_bias = true},
    {"qwen2", "0.6b", "qwen2.5-0.5b-synth", SHAPE(896, 24, 14, 2, 64, 4864, 151936, 32768), .theta = 1e6f,
     .eps = 1e-6f, .tied = true, .qkv_bias = true},
    {"qwen2", "1b", "qwen2.5-1.5b-synth", SHAPE(1536, 28, 12, 2, 128, 8960, 151936, 32768), .theta = 1e6f,
     .eps = 1e-6f, .tied = true, .qkv_bias = true},
    /* Llama tiny has Llama-3.2's llama3 RoPE scaling (rope_freqs.weight in GGUF). */
    {"llama", "tiny", "llama-tiny-synth", SHAPE(64, 2, 4, 2, 16, 128, 512, 4096), .theta = 5e5f, .eps = 1e-5f,
     .tied = true, LLAMA3_ROPE},
    /* SmolLM2-360M's shape: the Llama-architecture model nearest 0.6B */
    {"llama", "0.6b", "llama-360m-synth", SHAPE(960, 32, 15, 5, 64, 2560, 49152, 8192), .theta = 1e5f,
     .eps = 1e-5f, .tied = true},
    /* Llama-3.2-1B's shape */
    {"llama", "1b", "llama-3.2-1b-synth", SHAPE(2048, 16, 32, 8, 64, 8192, 128256, 131072), .theta = 5e5f,
     .eps = 1e-5f, .tied = true, LLAMA3_ROPE},
    /* SmolLM3: Llama layers, no RoPE in every 4th (layers 3 and 7 of tiny). */
    {"smollm3", "tiny", "smollm3-tiny-synth", SHAPE(64, 8, 4, 2, 16, 128, 512, 4096), .theta = 5e6f,
     .eps = 1e-6f, .tied = true, .no_rope_interval = 4},
    /* SmolLM3-3B's shape */
    {"smollm3", "3b", "smollm3-3b-synth", SHAPE(2048, 36, 16, 4, 128, 11008, 128256, 65536), .theta = 5e6f,
     .eps = 1e-6f, .tied = true, .no_rope_interval = 4},
    /* Gemma 3 tiny: E (96) not a square, so sqrt(E) is rounded; H * D != E;
       one KV head as the small Gemmas; window 4 (both prompts of the
       reference test are longer), every 3rd layer global (layers 2 and 5),
       query_pre_attn_scalar != D, a sliding RoPE base != the global one. */
    {"gemma3", "tiny", "gemma3-tiny-synth", SHAPE(96, 6, 4, 1, 32, 192, 512, 4096), .theta = 1e6f, .eps = 1e-6f,
     .qk_norm = true, .tied = true, .gemma = true, .swa_window = 4, .swa_pattern = 3, .theta_swa = 1e4f,
     .query_pre_attn_scalar = 24},
    /* Gemma-3-270M's and Gemma-3-1B's shapes */
    {"gemma3", "270m", "gemma3-270m-synth", SHAPE(640, 18, 4, 1, 256, 2048, 262144, 32768), .theta = 1e6f,
     .eps = 1e-6f, .qk_norm = true, .tied = true, .gemma = true, .swa_window = 512, .swa_pattern = 6,
     .theta_swa = 1e4f, .query_pre_attn_scalar = 256},
    {"gemma3", "1b", "gemma3-1b-synth", SHAPE(1152, 26, 4, 1, 256, 6912, 262144, 32768), .theta = 1e6f,
     .eps = 1e-6f, .qk_norm = true, .tied = true, .gemma = true, .swa_window = 512, .swa_pattern = 6,
     .theta_swa = 1e4f, .query_pre_attn_scalar = 256},
};

#undef SHAPE
#undef LLAMA3_ROPE

const synth_preset *synth_find_preset(const char *arch, const char *preset) {
    for (size_t i = 0; i < sizeof k_presets / sizeof *k_presets; i++) {
        if (!strcmp(k_presets[i].arch, arch) && !strcmp(k_presets[i].preset, preset)) return &k_presets[i];
    }
    return NULL;
}

bool synth_is_qwen(const synth_preset *p) { return !strcmp(p->arch, "qwen3") || !strcmp(p->arch, "qwen2"); }

/* llama.cpp's llama_ftype for a file whose matrices are mostly `dtype`
   (its numbering, not ggml_type's: Q8_0 is 7 here but 8 as a tensor type). */
static uint32_t llama_ftype(int dtype) {
    switch (dtype) {
    case MLLM_DTYPE_F16: return 1;  /* LLAMA_FTYPE_MOSTLY_F16 */
    case MLLM_DTYPE_Q4_0: return 2; /* LLAMA_FTYPE_MOSTLY_Q4_0 */
    case MLLM_DTYPE_Q4_1: return 3; /* LLAMA_FTYPE_MOSTLY_Q4_1 */
    case MLLM_DTYPE_Q8_0: return 7; /* LLAMA_FTYPE_MOSTLY_Q8_0 */
    case MLLM_DTYPE_BF16: return 32; /* LLAMA_FTYPE_MOSTLY_BF16 */
    default: return 0;              /* LLAMA_FTYPE_ALL_F32 */
    }
}

static mllm_status add_hparams(mllm_gguf_writer *w, const synth_preset *p, int dtype) {
    char k[96];
    const char *a = p->arch;
    mllm_status st = mllm_gguf_writer_add_str(w, "general.architecture", a);
    if (!st) st = mllm_gguf_writer_add_str(w, "general.name", p->name);
#define U32(suffix, v) \
    if (!st) (snprintf(k, sizeof k, "%s." suffix, a), st = mllm_gguf_writer_add_u32(w, k, (uint32_t)(v)))
#define F32(suffix, v) \
    if (!st) (snprintf(k, sizeof k, "%s." suffix, a), st = mllm_gguf_writer_add_f32(w, k, (v)))
    U32("block_count", p->L);
    U32("context_length", p->ctx);
    U32("embedding_length", p->E);
    U32("feed_forward_length", p->F);
    U32("attention.head_count", p->H);
    U32("attention.head_count_kv", p->Hkv);
    F32("rope.freq_base", p->theta);
    F32("attention.layer_norm_rms_epsilon", p->eps);
    U32("attention.key_length", p->D);
    U32("attention.value_length", p->D);
    if (!strcmp(a, "llama") || !strcmp(a, "smollm3")) { /* llama.cpp's LlamaModel converter */
        U32("rope.dimension_count", p->D);
        U32("vocab_size", p->V);
    }
    /* SmolLM3's no-RoPE layers have no key: llama.cpp fixes the interval at
       4, as do our reader's defaults. Gemma 3: llama.cpp writes the window;
       the pattern, the sliding layers' RoPE base and the attention scalar
       are what it assumes for the released models (6, 1e4, head_dim), so
       they are written as the keys our reader takes (llama.cpp's names where
       it has one: sliding_window_pattern, rope.freq_base_swa). */
    if (p->gemma) {
        U32("attention.sliding_window", p->swa_window);
        U32("attention.sliding_window_pattern", p->swa_pattern);
        F32("rope.freq_base_swa", p->theta_swa);
        F32("attention.query_pre_attn_scalar", p->query_pre_attn_scalar);
    }
#undef U32
#undef F32
    if (!st) st = mllm_gguf_writer_add_u32(w, "general.file_type", llama_ftype(dtype));
    return st;
}

static mllm_status add_tokenizer(mllm_gguf_writer *w, const synth_vocab *v) {
    mllm_status st = mllm_gguf_writer_add_str(w, "tokenizer.ggml.model", "gpt2");
    if (!st) st = mllm_gguf_writer_add_str(w, "tokenizer.ggml.pre", v->pre);
    if (!st) st = mllm_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->tokens, NULL,
                                               (uint64_t)v->n_vocab);
    if (!st) st = mllm_gguf_writer_add_arr(w, "tokenizer.ggml.token_type", MLLM_GGUF_INT32, v->types,
                                           (uint64_t)v->n_vocab);
    if (!st) st = mllm_gguf_writer_add_arr_str(w, "tokenizer.ggml.merges", (const char *const *)v->merges, NULL,
                                               (uint64_t)v->n_merges);
    if (!st) st = mllm_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->bos);
    if (!st) st = mllm_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eos);
    if (!st) st = mllm_gguf_writer_add_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)v->pad);
    if (!st) st = mllm_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", v->add_bos);
    if (!st) st = mllm_gguf_writer_add_str(w, "tokenizer.chat_template", v->chat_template);
    return st;
}

typedef struct {
    synth_tensor *t;
    size_t i, n;
    synth_progress_fn progress;
    void *user;
} progress_fill;

/* Reports each tensor as its first bytes are requested, then streams it. */
static mllm_status fill_with_progress(void *user, void *buf, size_t offset, size_t n) {
    progress_fill *pf = user;
    if (offset == 0 && pf->progress) {
        char msg[160], shape[48];
        if (pf->t->ne1 > 1) snprintf(shape, sizeof shape, "{%lld, %lld}", (long long)pf->t->ne0, (long long)pf->t->ne1);
        else snprintf(shape, sizeof shape, "{%lld}", (long long)pf->t->ne0);
        snprintf(msg, sizeof msg, "[%zu/%zu] %s %s %s", pf->i + 1, pf->n, pf->t->name, shape,
                 mllm_dtype_name(pf->t->dtype));
        pf->progress(pf->user, msg);
    }
    return synth_fill(pf->t, buf, offset, n);
}

mllm_status synth_write_gguf(const synth_preset *p, int dtype, const char *path, synth_progress_fn progress,
                             void *user) {
    synth_vocab v;
    mllm_status st = synth_vocab_build(p, &v);
    if (st) return st;
    size_t n = 0;
    float *freqs = NULL;
    synth_tensor *ts = synth_tensor_list(p, dtype, true, &n, &freqs);
    progress_fill *pf = ts ? mllm_calloc(n, sizeof *pf) : NULL;
    mllm_gguf_writer *w = NULL;
    if (!ts || !pf) st = mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
    if (!st) st = synth_check_blocks(ts, n);
    if (!st) st = mllm_gguf_writer_new(&w);
    if (!st) st = add_hparams(w, p, dtype);
    if (!st) st = add_tokenizer(w, &v);
    for (size_t i = 0; i < n && !st; i++) {
        pf[i] = (progress_fill){&ts[i], i, n, progress, user};
        int64_t ne[2] = {ts[i].ne0, ts[i].ne1};
        st = mllm_gguf_writer_add_tensor_fn(w, ts[i].name, ts[i].dtype, ts[i].ne1 > 1 ? 2 : 1, ne,
                                            fill_with_progress, &pf[i]);
    }
    if (!st) st = mllm_gguf_writer_write(w, path);
    mllm_gguf_writer_free(w);
    for (size_t i = 0; ts && i < n; i++) synth_tensor_free(&ts[i]);
    mllm_free(pf);
    mllm_free(ts);
    mllm_free(freqs);
    synth_vocab_free(&v);
    return st;
}

mllm_status mllm_synth_write(const char *arch, const char *preset, const char *dtype, const char *format,
                             const char *out_path, void (*progress)(void *user, const char *msg), void *user) {
    if (!arch || !preset || !dtype || !format || !out_path) {
        return mllm_err(MLLM_ERR_INVALID_ARG, "synth: NULL argument");
    }
    const synth_preset *p = synth_find_preset(arch, preset);
    if (!p) {
        return mllm_err(MLLM_ERR_INVALID_ARG,
                        "synth: unknown arch/preset '%s'/'%s' (qwen3|qwen2|llama: tiny|0.6b|1b; smollm3: tiny|3b; "
                        "gemma3: tiny|270m|1b)",
                        arch, preset);
    }
    static const char *const names[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1"};
    static const int dts[] = {MLLM_DTYPE_F32, MLLM_DTYPE_F16, MLLM_DTYPE_BF16,
                              MLLM_DTYPE_Q8_0, MLLM_DTYPE_Q4_0, MLLM_DTYPE_Q4_1};
    int dt = -1;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (!strcmp(dtype, names[i])) dt = dts[i];
    }
    if (dt < 0) {
        return mllm_err(MLLM_ERR_INVALID_ARG, "synth: unknown dtype '%s' (f32|f16|bf16|q8_0|q4_0|q4_1)", dtype);
    }
    mllm_cpu_init();
    if (!strcmp(format, "gguf")) return synth_write_gguf(p, dt, out_path, progress, user);
    if (!strcmp(format, "hf")) {
        /* safetensors has no block-quantized types. */
        if (dt != MLLM_DTYPE_F32 && dt != MLLM_DTYPE_F16 && dt != MLLM_DTYPE_BF16) {
            return mllm_err(MLLM_ERR_INVALID_ARG, "synth: dtype '%s': hf format supports f32|f16|bf16", dtype);
        }
        return synth_write_hf(p, dt, out_path, progress, user);
    }
    return mllm_err(MLLM_ERR_INVALID_ARG, "synth: unknown format '%s' (gguf|hf)", format);
}
