/* Checks that every tensor the decoder graph needs exists with the shape the
   hyper-parameters imply, whatever the file format, so the model code can
   index weights blindly; the optional ones (q/k/v biases, q/k norms, the
   output matrix, Gemma's post norms) are found here and recorded in hp. */
#include <stdio.h>
#include <string.h>
#include "core/dtype.h"
#include "core/error.h"
#include "models/registry.h"

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

static bool has(const mllm_model_file *f, const char *name) { return mllm_model_file_find(f, name) != NULL; }

mllm_status mllm_decoder_check_tensors(const mllm_model_file *f, mllm_hparams *c) {
    mllm_status st;
    const int64_t E = c->n_embd, V = c->n_vocab, F = c->n_ff, D = c->head_dim;
    const int64_t QD = (int64_t)c->n_head * D, KD = (int64_t)c->n_head_kv * D;
    c->qkv_bias = has(f, "blk.0.attn_q.bias") || has(f, "blk.0.attn_k.bias") || has(f, "blk.0.attn_v.bias");
    c->qk_norm = has(f, "blk.0.attn_q_norm.weight") || has(f, "blk.0.attn_k_norm.weight");
    c->post_norms = has(f, "blk.0.post_attention_norm.weight") || has(f, "blk.0.post_ffw_norm.weight");
    bool tied_cfg = true;
    bool said = mllm_meta_get_bool(&f->meta, "mllm.tie_word_embeddings", &tied_cfg);
    c->tied_embd = !has(f, "output.weight");
    if (c->tied_embd && said && !tied_cfg)
        return mllm_err(MLLM_ERR_FORMAT, "%s: missing tensor 'output.weight' (the config says the embeddings are "
                                         "not tied)", f->path);
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
            if ((st = expect_layer(f, l, "attn_q_norm.weight", D, 0))) return st;
            if ((st = expect_layer(f, l, "attn_k_norm.weight", D, 0))) return st;
        }
        if (c->post_norms) {
            if ((st = expect_layer(f, l, "post_attention_norm.weight", E, 0))) return st;
            if ((st = expect_layer(f, l, "post_ffw_norm.weight", E, 0))) return st;
        }
    }
    if ((st = expect(f, "output_norm.weight", E, 0))) return st;
    if (!c->tied_embd && (st = expect(f, "output.weight", E, V))) return st;
    if (has(f, "rope_freqs.weight") && (st = expect(f, "rope_freqs.weight", c->n_rot / 2, 0))) return st;
    return MLLM_OK;
}
