/* The hyper-parameters every decoder shares, read from GGUF-style keys
   (`<arch>.block_count`, ...; HF configs were rewritten into them by
   hf_keys.c), then the family's own (the row's read hook), then checked. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "core/error.h"
#include "models/registry.h"

#define DEFAULT_CTX 2048

mllm_status mllm_hp_int(const mllm_meta *m, const char *arch, const char *suffix, const char *path, bool required,
                        int32_t *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    const mllm_meta_entry *e = mllm_meta_find(m, key);
    if (!e) return required ? mllm_err(MLLM_ERR_FORMAT, "%s: missing key '%s'", path, key) : MLLM_OK;
    int64_t v;
    if (!mllm_meta_get_int(m, key, &v))
        return mllm_err(MLLM_ERR_FORMAT, "%s: key '%s' is a %s, not an integer", path, key, mllm_meta_type_name(e->type));
    if (v <= 0 || v > INT32_MAX)
        return mllm_err(MLLM_ERR_FORMAT, "%s: key '%s' = %lld is out of range", path, key, (long long)v);
    *out = (int32_t)v;
    return MLLM_OK;
}

mllm_status mllm_hp_float(const mllm_meta *m, const char *arch, const char *suffix, const char *path, float *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    const mllm_meta_entry *e = mllm_meta_find(m, key);
    if (!e) return MLLM_OK;
    double v;
    if (!mllm_meta_get_float(m, key, &v))
        return mllm_err(MLLM_ERR_FORMAT, "%s: key '%s' is a %s, not a number", path, key, mllm_meta_type_name(e->type));
    *out = (float)v;
    return MLLM_OK;
}

static mllm_status read_rope_scaling(const mllm_meta *m, const char *a, const char *path, mllm_hparams *c) {
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", a);
    const char *type = mllm_meta_get_str(m, key);
    c->rope_scaling = MLLM_ROPE_SCALING_NONE;
    c->rope_factor = 1.0f;
    c->yarn_beta_fast = 32.0f;
    c->yarn_beta_slow = 1.0f;
    mllm_status st;
    if (!type || !strcmp(type, "none") || !strcmp(type, "default")) return MLLM_OK;
    /* Qwen2-VL's M-RoPE: on text its three position rows are equal, the
       plain rotation (images are not fed to the decoder yet) */
    if (!strcmp(type, "mrope")) return MLLM_OK;
    if ((st = mllm_hp_float(m, a, "rope.scaling.factor", path, &c->rope_factor))) return st;
    if (!strcmp(type, "linear")) {
        c->rope_scaling = MLLM_ROPE_SCALING_LINEAR;
        return MLLM_OK;
    }
    c->rope_orig_ctx = 8192;
    if ((st = mllm_hp_int(m, a, "rope.scaling.original_context_length", path, false, &c->rope_orig_ctx))) return st;
    if (!strcmp(type, "llama3")) {
        c->rope_scaling = MLLM_ROPE_SCALING_LLAMA3;
        c->rope_low_freq_factor = 1.0f;
        c->rope_high_freq_factor = 4.0f;
        if ((st = mllm_hp_float(m, a, "rope.scaling.low_freq_factor", path, &c->rope_low_freq_factor))) return st;
        return mllm_hp_float(m, a, "rope.scaling.high_freq_factor", path, &c->rope_high_freq_factor);
    }
    if (!strcmp(type, "yarn")) {
        c->rope_scaling = MLLM_ROPE_SCALING_YARN;
        if ((st = mllm_hp_float(m, a, "rope.scaling.yarn_beta_fast", path, &c->yarn_beta_fast))) return st;
        return mllm_hp_float(m, a, "rope.scaling.yarn_beta_slow", path, &c->yarn_beta_slow);
    }
    return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: rope scaling '%.32s' is not supported (none, linear, llama3, yarn)",
                    path, type);
}

mllm_status mllm_hparams_read_decoder(const mllm_meta *m, const mllm_arch *row, const char *path, mllm_hparams *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->arch, sizeof c->arch, "%s", row->name);
    c->row = row;
    const char *a = row->name;
    mllm_status st;
    if ((st = mllm_hp_int(m, a, "block_count", path, true, &c->n_layer))) return st;
    if ((st = mllm_hp_int(m, a, "embedding_length", path, true, &c->n_embd))) return st;
    if ((st = mllm_hp_int(m, a, "feed_forward_length", path, true, &c->n_ff))) return st;
    if ((st = mllm_hp_int(m, a, "attention.head_count", path, true, &c->n_head))) return st;
    c->n_head_kv = c->n_head;
    if ((st = mllm_hp_int(m, a, "attention.head_count_kv", path, false, &c->n_head_kv))) return st;
    c->head_dim = c->n_embd / c->n_head;
    if ((st = mllm_hp_int(m, a, "attention.key_length", path, false, &c->head_dim))) return st;
    c->n_rot = c->head_dim;
    if ((st = mllm_hp_int(m, a, "rope.dimension_count", path, false, &c->n_rot))) return st;
    c->n_ctx_train = DEFAULT_CTX;
    if ((st = mllm_hp_int(m, a, "context_length", path, false, &c->n_ctx_train))) return st;
    c->rope_theta = 10000.0f;
    if ((st = mllm_hp_float(m, a, "rope.freq_base", path, &c->rope_theta))) return st;
    c->rms_eps = 1e-5f;
    if ((st = mllm_hp_float(m, a, "attention.layer_norm_rms_epsilon", path, &c->rms_eps))) return st;
    if ((st = read_rope_scaling(m, a, path, c))) return st;
    if ((st = mllm_hp_int(m, a, "attention.sliding_window", path, false, &c->swa_window))) return st;
    if ((st = mllm_hp_float(m, a, "final_logit_softcapping", path, &c->final_softcap))) return st;
    int64_t n_tok = mllm_meta_arr_len(m, "tokenizer.ggml.tokens");
    if (n_tok >= 0) {
        if (n_tok == 0 || n_tok > INT32_MAX)
            return mllm_err(MLLM_ERR_FORMAT, "%s: tokenizer.ggml.tokens has %lld entries", path, (long long)n_tok);
        c->n_vocab = (int32_t)n_tok;
    } else if ((st = mllm_hp_int(m, a, "vocab_size", path, true, &c->n_vocab))) {
        return st;
    }
    bool neox;
    c->rope_neox = mllm_meta_get_bool(m, "mllm.rope.neox", &neox) ? neox : row->rope_neox;
    c->attn_scale = 0; /* 1/sqrt(D) unless a family or the file says otherwise */
    if ((st = mllm_hp_float(m, a, "attention.scale", path, &c->attn_scale))) return st;
    c->embd_scale = 1.0f;
    c->act = MLLM_ACT_SILU;
    if (row->read && (st = row->read(m, path, c))) return st;
    if (c->attn_scale == 0 && c->head_dim > 0) c->attn_scale = 1.0f / sqrtf((float)c->head_dim);
    return mllm_hparams_check(c, path);
}

static mllm_status check_range(const char *path, const char *what, int64_t v, int64_t max) {
    if (v <= 0 || v > max)
        return mllm_err(MLLM_ERR_FORMAT, "%s: %s = %lld is out of range (1..%lld)", path, what, (long long)v,
                        (long long)max);
    return MLLM_OK;
}

/* Real-valued hyper-parameters: finite, positive and below a bound far past
   any trained model's (an eps of +inf or 1e308 loads and then generates
   garbage; refused like NaN, 0 and negatives). */
#define MAX_ROPE_THETA 1e12f   /* real models: 1e4 .. 1e8 */
#define MAX_RMS_EPS 0.1f       /* real models: 1e-12 .. 1e-5 */
#define MAX_ROPE_FACTOR 1e6f   /* real models: 1 .. 64 */
#define MAX_SCALE 1e4f         /* attention / embedding scales, soft caps */

static mllm_status check_real(const char *path, const char *what, float v, float max) {
    if (!(v > 0) || !isfinite(v) || v > max)
        return mllm_err(MLLM_ERR_FORMAT, "%s: %s = %g is out of range (a finite value in (0, %g])", path, what,
                        (double)v, (double)max);
    return MLLM_OK;
}

mllm_status mllm_hparams_check(const mllm_hparams *c, const char *path) {
    mllm_status st;
    if ((st = check_range(path, "n_vocab", c->n_vocab, MLLM_MAX_VOCAB))) return st;
    if ((st = check_range(path, "n_embd", c->n_embd, MLLM_MAX_DIM))) return st;
    if ((st = check_range(path, "n_layer", c->n_layer, MLLM_MAX_LAYERS))) return st;
    if ((st = check_range(path, "n_head", c->n_head, MLLM_MAX_HEADS))) return st;
    if ((st = check_range(path, "n_head_kv", c->n_head_kv, MLLM_MAX_HEADS))) return st;
    if ((st = check_range(path, "head_dim", c->head_dim, MLLM_MAX_DIM))) return st;
    if ((st = check_range(path, "n_ff", c->n_ff, MLLM_MAX_DIM * 8))) return st;
    if ((st = check_range(path, "n_rot", c->n_rot, c->head_dim))) return st;
    if ((st = check_range(path, "n_ctx_train", c->n_ctx_train, INT32_MAX))) return st;
    if (c->n_head % c->n_head_kv != 0)
        return mllm_err(MLLM_ERR_FORMAT, "%s: n_head %d is not a multiple of n_head_kv %d", path, c->n_head,
                        c->n_head_kv);
    if (c->n_rot % 2 != 0) return mllm_err(MLLM_ERR_FORMAT, "%s: n_rot %d is odd", path, c->n_rot);
    if ((st = check_real(path, "rope_theta", c->rope_theta, MAX_ROPE_THETA))) return st;
    if (c->rope_theta_swa != 0 && (st = check_real(path, "sliding-window rope_theta", c->rope_theta_swa, MAX_ROPE_THETA)))
        return st;
    if ((st = check_real(path, "rms_eps", c->rms_eps, MAX_RMS_EPS))) return st;
    if ((st = check_real(path, "attention scale", c->attn_scale, MAX_SCALE))) return st;
    if ((st = check_real(path, "embedding scale", c->embd_scale, MAX_SCALE))) return st;
    if (c->final_softcap != 0 && (st = check_real(path, "final logit soft cap", c->final_softcap, MAX_SCALE)))
        return st;
    if (c->rope_scaling != MLLM_ROPE_SCALING_NONE &&
        (st = check_real(path, "rope scaling factor", c->rope_factor, MAX_ROPE_FACTOR)))
        return st;
    if (c->rope_scaling == MLLM_ROPE_SCALING_LLAMA3 &&
        ((st = check_real(path, "rope low_freq_factor", c->rope_low_freq_factor, MAX_ROPE_FACTOR)) ||
         (st = check_real(path, "rope high_freq_factor", c->rope_high_freq_factor, MAX_ROPE_FACTOR))))
        return st;
    if (c->rope_scaling == MLLM_ROPE_SCALING_YARN &&
        ((st = check_real(path, "yarn beta_fast", c->yarn_beta_fast, MAX_ROPE_FACTOR)) ||
         (st = check_real(path, "yarn beta_slow", c->yarn_beta_slow, MAX_ROPE_FACTOR))))
        return st;
    bool sliding = false;
    for (int l = 0; l < c->n_layer; l++) sliding = sliding || (c->layer_flags[l] & MLLM_LAYER_SLIDING);
    if (sliding && (st = check_range(path, "sliding window", c->swa_window, INT32_MAX))) return st;
    return MLLM_OK;
}
