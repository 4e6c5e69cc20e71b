/* GGUF -> mllm_model_file: the config from `<arch>.*` metadata (as llama.cpp
   names it) and the tensors as zero-copy weights. */
#include "formats/model_file_internal.h"
#include "formats/gguf.h"
#include "core/alloc.h"
#include "core/error.h"
#include <stdio.h>
#include <string.h>

#define GGUF_DEFAULT_CTX 2048

typedef struct {
    const mllm_gguf *g;
    const char *path;
    char arch[32];
} meta;

static void key_of(const meta *m, const char *suffix, char *buf, size_t cap) {
    snprintf(buf, cap, "%s.%s", m->arch, suffix);
}

/* Reads `<arch>.<suffix>` as a positive int32; `def` < 0 makes it required. */
static mllm_status get_int(const meta *m, const char *suffix, int64_t def, int32_t *out) {
    char key[128];
    key_of(m, suffix, key, sizeof key);
    int64_t v;
    if (mllm_gguf_find_key(m->g, key) < 0) {
        if (def < 0) return mllm_err(MLLM_ERR_FORMAT, "%s: missing key '%s'", m->path, key);
        *out = (int32_t)def;
        return MLLM_OK;
    }
    if (!mllm_gguf_get_i64(m->g, key, &v)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: key '%s' is not an integer", m->path, key);
    }
    if (v <= 0 || v > INT32_MAX) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: key '%s' = %lld is out of range", m->path, key, (long long)v);
    }
    *out = (int32_t)v;
    return MLLM_OK;
}

static mllm_status get_float(const meta *m, const char *suffix, float def, float *out) {
    char key[128];
    key_of(m, suffix, key, sizeof key);
    if (mllm_gguf_find_key(m->g, key) < 0) {
        *out = def;
        return MLLM_OK;
    }
    if (!mllm_gguf_get_f32(m->g, key, out)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: key '%s' is not a number", m->path, key);
    }
    return MLLM_OK;
}

static mllm_status read_arch(meta *m, mllm_llama_config *c) {
    mllm_gguf_str s;
    if (!mllm_gguf_get_str(m->g, "general.architecture", &s)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: missing key 'general.architecture'", m->path);
    }
    static const char *known[] = {"llama", "qwen2", "qwen3"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        if (s.len == strlen(known[i]) && memcmp(s.ptr, known[i], s.len) == 0) {
            snprintf(m->arch, sizeof m->arch, "%s", known[i]);
            snprintf(c->arch, sizeof c->arch, "%s", known[i]);
            return MLLM_OK;
        }
    }
    return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: architecture '%.*s' is not supported (llama, qwen2, qwen3)",
                    m->path, (int)(s.len > 64 ? 64 : s.len), s.ptr);
}

static mllm_status read_rope_scaling(const meta *m, mllm_llama_config *c) {
    char key[128];
    mllm_gguf_str s;
    key_of(m, "rope.scaling.type", key, sizeof key);
    c->rope_scaling = MLLM_ROPE_SCALING_NONE;
    if (!mllm_gguf_get_str(m->g, key, &s) || (s.len == 4 && memcmp(s.ptr, "none", 4) == 0)) return MLLM_OK;
    if (s.len == 6 && memcmp(s.ptr, "linear", 6) == 0) {
        c->rope_scaling = MLLM_ROPE_SCALING_LINEAR;
        return get_float(m, "rope.scaling.factor", 1.0f, &c->rope_factor);
    }
    return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: rope scaling '%.*s' is not supported (none, linear)", m->path,
                    (int)(s.len > 32 ? 32 : s.len), s.ptr);
}

static mllm_status read_config(meta *m, mllm_llama_config *c) {
    mllm_status st;
    memset(c, 0, sizeof *c);
    if ((st = read_arch(m, c))) return st;
    if ((st = get_int(m, "block_count", -1, &c->n_layer))) return st;
    if ((st = get_int(m, "embedding_length", -1, &c->n_embd))) return st;
    if ((st = get_int(m, "feed_forward_length", -1, &c->n_ff))) return st;
    if ((st = get_int(m, "attention.head_count", -1, &c->n_head))) return st;
    if ((st = get_int(m, "attention.head_count_kv", c->n_head, &c->n_head_kv))) return st;
    if ((st = get_int(m, "attention.key_length", c->n_embd / c->n_head, &c->head_dim))) return st;
    if ((st = get_int(m, "rope.dimension_count", c->head_dim, &c->n_rot))) return st;
    if ((st = get_int(m, "context_length", GGUF_DEFAULT_CTX, &c->n_ctx_train))) return st;
    if ((st = get_float(m, "rope.freq_base", 10000.0f, &c->rope_theta))) return st;
    if ((st = get_float(m, "attention.layer_norm_rms_epsilon", 1e-5f, &c->rms_eps))) return st;
    if ((st = read_rope_scaling(m, c))) return st;
    /* llama 3 GGUFs carry rope_freqs.weight (per-dimension frequency
       factors) instead of llama3 scaling keys; the model code uses it. */
    uint64_t n_tok;
    mllm_gguf_type et;
    if (mllm_gguf_get_arr(m->g, "tokenizer.ggml.tokens", &et, &n_tok, NULL)) {
        if (n_tok == 0 || n_tok > INT32_MAX) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: tokenizer.ggml.tokens has %llu entries", m->path,
                            (unsigned long long)n_tok);
        }
        c->n_vocab = (int32_t)n_tok;
    } else if ((st = get_int(m, "vocab_size", -1, &c->n_vocab))) {
        return st;
    }
    c->rope_neox = strcmp(c->arch, "llama") != 0;
    c->qkv_bias = mllm_gguf_find_tensor(m->g, "blk.0.attn_q.bias") != NULL;
    c->qk_norm = mllm_gguf_find_tensor(m->g, "blk.0.attn_q_norm.weight") != NULL;
    c->tied_embd = mllm_gguf_find_tensor(m->g, "output.weight") == NULL;
    return MLLM_OK;
}

mllm_status mllm_model_file_open_gguf(mllm_model_file *f) {
    mllm_status st = mllm_gguf_open(f->path, &f->gguf);
    if (st) return st;
    meta m = {.g = f->gguf, .path = f->path};
    if ((st = read_config(&m, &f->cfg))) return st;
    char name[256];
    for (uint64_t i = 0; i < mllm_gguf_n_tensors(f->gguf); i++) {
        const mllm_gguf_tensor *t = mllm_gguf_tensor_at(f->gguf, i);
        if (t->name.len >= sizeof name) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: tensor name of %llu bytes is too long", f->path,
                            (unsigned long long)t->name.len);
        }
        memcpy(name, t->name.ptr, (size_t)t->name.len);
        name[t->name.len] = 0;
        if ((st = mllm_model_file_add_weight(f, name, t->dtype, (int)t->n_dims, t->ne, t->data, t->size))) return st;
        mllm_model_file_mark_mapped(f);
    }
    return MLLM_OK;
}
