/* Validates a Llama-family config and the shapes of the weights it implies,
   whatever the file format, so the model code can index weights blindly. */
#include "formats/model_file_internal.h"
#include "core/dtype.h"
#include "core/error.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Generous limits: they only exist to keep products inside int64. */
#define MF_MAX_DIM (1 << 20)      /* E, F, D */
#define MF_MAX_VOCAB (1 << 24)
#define MF_MAX_LAYERS 4096
#define MF_MAX_HEADS 4096

static mllm_status check_range(const mllm_model_file *f, const char *what, int64_t v, int64_t max) {
    if (v <= 0 || v > max) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: %s = %lld is out of range (1..%lld)", f->path, what, (long long)v,
                        (long long)max);
    }
    return MLLM_OK;
}

/* Real-valued hyper-parameters: finite, positive and below a bound far past
   any trained model's (an eps of +inf or 1e308 loads and then generates
   garbage; refused like NaN, 0 and negatives). */
#define MF_MAX_ROPE_THETA 1e12f   /* real models: 1e4 .. 1e8 */
#define MF_MAX_RMS_EPS 0.1f       /* real models: 1e-12 .. 1e-5 */
#define MF_MAX_ROPE_FACTOR 1e6f   /* real models: 1 .. 64 */

static mllm_status check_real(const mllm_model_file *f, const char *what, float v, float max) {
    if (!(v > 0) || !isfinite(v) || v > max)
        return mllm_err(MLLM_ERR_FORMAT, "%s: %s = %g is out of range (a finite value in (0, %g])", f->path, what,
                        (double)v, (double)max);
    return MLLM_OK;
}

static mllm_status check_cfg(const mllm_model_file *f) {
    const mllm_llama_config *c = &f->cfg;
    mllm_status st;
    if ((st = check_range(f, "n_vocab", c->n_vocab, MF_MAX_VOCAB))) return st;
    if ((st = check_range(f, "n_embd", c->n_embd, MF_MAX_DIM))) return st;
    if ((st = check_range(f, "n_layer", c->n_layer, MF_MAX_LAYERS))) return st;
    if ((st = check_range(f, "n_head", c->n_head, MF_MAX_HEADS))) return st;
    if ((st = check_range(f, "n_head_kv", c->n_head_kv, MF_MAX_HEADS))) return st;
    if ((st = check_range(f, "head_dim", c->head_dim, MF_MAX_DIM))) return st;
    if ((st = check_range(f, "n_ff", c->n_ff, MF_MAX_DIM * 8))) return st;
    if ((st = check_range(f, "n_rot", c->n_rot, c->head_dim))) return st;
    if ((st = check_range(f, "n_ctx_train", c->n_ctx_train, INT32_MAX))) return st;
    if (c->n_head % c->n_head_kv != 0) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: n_head %d is not a multiple of n_head_kv %d", f->path, c->n_head,
                        c->n_head_kv);
    }
    if (c->n_rot % 2 != 0) return mllm_err(MLLM_ERR_FORMAT, "%s: n_rot %d is odd", f->path, c->n_rot);
    if ((st = check_real(f, "rope_theta", c->rope_theta, MF_MAX_ROPE_THETA))) return st;
    if ((st = check_real(f, "rms_eps", c->rms_eps, MF_MAX_RMS_EPS))) return st;
    if (c->rope_scaling != MLLM_ROPE_SCALING_NONE && (st = check_real(f, "rope scaling factor", c->rope_factor, MF_MAX_ROPE_FACTOR)))
        return st;
    if (c->rope_scaling == MLLM_ROPE_SCALING_LLAMA3 &&
        ((st = check_real(f, "rope low_freq_factor", c->rope_low_freq_factor, MF_MAX_ROPE_FACTOR)) ||
         (st = check_real(f, "rope high_freq_factor", c->rope_high_freq_factor, MF_MAX_ROPE_FACTOR))))
        return st;
    return MLLM_OK;
}

/* Expected shape: ne0 x ne1 (ne1 = 0 for a vector). */
static mllm_status expect(const mllm_model_file *f, const char *name, int64_t ne0, int64_t ne1) {
    const mllm_weight *w = mllm_model_file_find(f, name);
    if (!w) return mllm_err(MLLM_ERR_FORMAT, "%s: missing tensor '%s'", f->path, name);
    int64_t want[4] = {ne0, ne1 ? ne1 : 1, 1, 1};
    if (memcmp(w->ne, want, sizeof want) != 0) {
        return mllm_err(MLLM_ERR_FORMAT,
                        "%s: tensor '%s' has shape {%lld, %lld, %lld, %lld}, expected {%lld, %lld}", f->path, name,
                        (long long)w->ne[0], (long long)w->ne[1], (long long)w->ne[2], (long long)w->ne[3],
                        (long long)want[0], (long long)want[1]);
    }
    if (!mllm_dtype_get(w->dtype)) {
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: tensor '%s' has unknown dtype %d", f->path, name, w->dtype);
    }
    return MLLM_OK;
}

static mllm_status expect_layer(const mllm_model_file *f, int l, const char *suffix, int64_t ne0, int64_t ne1) {
    char name[96];
    snprintf(name, sizeof name, "blk.%d.%s", l, suffix);
    return expect(f, name, ne0, ne1);
}

mllm_status mllm_model_file_check(const mllm_model_file *f) {
    const mllm_llama_config *c = &f->cfg;
    mllm_status st = check_cfg(f);
    if (st) return st;
    const int64_t E = c->n_embd, V = c->n_vocab, F = c->n_ff;
    const int64_t QD = (int64_t)c->n_head * c->head_dim, KD = (int64_t)c->n_head_kv * c->head_dim;
    if ((st = expect(f, "token_embd.weight", E, V))) return st;
    for (int l = 0; l < c->n_layer; l++) {
        if ((st = expect_layer(f, l, "attn_norm.weight", E, 0))) return st;
        if ((st = expect_layer(f, l, "attn_q.weight", E, QD))) return st;
        if ((st = expect_layer(f, l, "attn_k.weight", E, KD))) return st;
        if ((st = expect_layer(f, l, "attn_v.weight", E, KD))) return st;
        if ((st = expect_layer(f, l, "attn_output.weight", QD, E))) return st;
        if ((st = expect_layer(f, l, "ffn_norm.weight", E, 0))) return st;
        if ((st = expect_layer(f, l, "ffn_gate.weight", E, F))) return st;
        if ((st = expect_layer(f, l, "ffn_up.weight", E, F))) return st;
        if ((st = expect_layer(f, l, "ffn_down.weight", F, E))) return st;
        if (c->qkv_bias) {
            if ((st = expect_layer(f, l, "attn_q.bias", QD, 0))) return st;
            if ((st = expect_layer(f, l, "attn_k.bias", KD, 0))) return st;
            if ((st = expect_layer(f, l, "attn_v.bias", KD, 0))) return st;
        }
        if (c->qk_norm) {
            if ((st = expect_layer(f, l, "attn_q_norm.weight", c->head_dim, 0))) return st;
            if ((st = expect_layer(f, l, "attn_k_norm.weight", c->head_dim, 0))) return st;
        }
    }
    if ((st = expect(f, "output_norm.weight", E, 0))) return st;
    if (!c->tied_embd && (st = expect(f, "output.weight", E, V))) return st;
    const mllm_weight *rf = mllm_model_file_find(f, "rope_freqs.weight");
    if (rf && (st = expect(f, "rope_freqs.weight", c->n_rot / 2, 0))) return st;
    return MLLM_OK;
}
