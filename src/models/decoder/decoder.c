#include "models/decoder/decoder.h"
#include "models/blocks.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/cpu.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"

mllm_status mllm_model_bind_tensor(mllm_graph *wg, size_t *n_params, const mllm_model_file *f, const char *name,
                                   int n_dims, int64_t ne0, int64_t ne1, bool required, mllm_tensor **out) {
    *out = NULL;
    const mllm_weight *w = mllm_model_file_find(f, name);
    if (!w) {
        if (!required) return MLLM_OK;
        return mllm_err(MLLM_ERR_FORMAT, "%s: missing tensor '%s'", f->path, name);
    }
    int64_t want[2] = {ne0, ne1};
    for (int i = 0; i < 4; i++) {
        int64_t e = i < n_dims ? want[i] : 1;
        int64_t have = i < w->n_dims ? w->ne[i] : 1;
        if (have != e)
            return mllm_err(MLLM_ERR_FORMAT,
                            "%s: tensor '%s' has shape [%lld, %lld], expected [%lld, %lld]", f->path,
                            name, (long long)w->ne[0], (long long)(w->n_dims > 1 ? w->ne[1] : 1),
                            (long long)ne0, (long long)(n_dims > 1 ? ne1 : 1));
    }
    const mllm_dtype_traits *tr = mllm_dtype_get(w->dtype);
    if (!tr || !tr->supported)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s, which this build cannot compute",
                        f->path, name, mllm_dtype_name(w->dtype));
    if (n_dims == 1 && w->dtype != MLLM_DTYPE_F32 && w->dtype != MLLM_DTYPE_F16 && w->dtype != MLLM_DTYPE_BF16)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: vector '%s' must be f32, f16 or bf16, not %s", f->path, name,
                        mllm_dtype_name(w->dtype));
    if (n_dims == 1 && w->dtype != MLLM_DTYPE_F32) {
        /* Hugging Face checkpoints keep norms and biases in bf16 / f16 like
           everything else; the kernels read vectors as f32, so these few
           are widened once into the weight graph's arena (exact: both
           formats are subsets of f32). */
        float *v = mllm_arena_alloc(&wg->arena, (size_t)ne0 * sizeof(float));
        if (!v) return mllm_err(MLLM_ERR_NOMEM, "out of memory widening '%s'", name);
        mllm_cpu_to_float((mllm_dtype)w->dtype, w->data, v, ne0);
        *out = mllm_tensor_wrap(wg, MLLM_DTYPE_F32, 1, &ne0, v, name);
        if (!*out) return mllm_err(MLLM_ERR_NOMEM, "out of memory binding '%s'", name);
        *n_params += (size_t)ne0;
        return MLLM_OK;
    }
    if (n_dims == 2 && mllm_dtype_get(tr->vec_dot_type) &&
        mllm_dtype_row_size(tr->vec_dot_type, ne0) == 0)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: tensor '%s': row length %lld is not a multiple of %s's block",
                        f->path, name, (long long)ne0, mllm_dtype_name(w->dtype));
    *out = mllm_tensor_wrap(wg, w->dtype, w->n_dims, w->ne, w->data, name);
    if (!*out) return mllm_err(MLLM_ERR_NOMEM, "out of memory binding '%s'", name);
    *n_params += (size_t)(ne0 * (n_dims > 1 ? ne1 : 1));
    return MLLM_OK;
}

/* llama3 rope scaling as Meta defines it: long wavelengths are divided by
   `factor`, short ones kept, the band between interpolated smoothly. */
static float *llama3_factors(const mllm_hparams *c) {
    int n = c->n_rot / 2;
    float *ff = mllm_malloc((size_t)n * sizeof(float));
    if (!ff) return NULL;
    double low_wl = c->rope_orig_ctx / c->rope_low_freq_factor;
    double high_wl = c->rope_orig_ctx / c->rope_high_freq_factor;
    for (int i = 0; i < n; i++) {
        double freq = 1.0 / pow(c->rope_theta, 2.0 * i / c->n_rot);
        double wl = 2.0 * M_PI / freq;
        if (wl < high_wl) ff[i] = 1.0f;
        else if (wl > low_wl) ff[i] = c->rope_factor;
        else {
            double smooth = (c->rope_orig_ctx / wl - c->rope_low_freq_factor) /
                            (c->rope_high_freq_factor - c->rope_low_freq_factor);
            ff[i] = (float)(1.0 / ((1 - smooth) / c->rope_factor + smooth));
        }
    }
    return ff;
}

/* YaRN's correction dimension for a number of rotations (ggml's
   ggml_rope_yarn_corr_dim), in units of rotated pairs. */
static float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return (float)n_dims * logf((float)n_ctx_orig / (n_rot * 2.0f * (float)M_PI)) / (2.0f * logf(base));
}

static void rope_params(const mllm_hparams *c, float theta, bool scaled, mllm_rope_params *rp) {
    memset(rp, 0, sizeof *rp);
    rp->n_rot = c->n_rot;
    rp->neox = c->rope_neox;
    rp->theta_scale = powf(theta, -2.0f / (float)c->n_rot);
    memcpy(rp->mrope, c->mrope, sizeof rp->mrope);
    const bool lin = c->rope_scaling == MLLM_ROPE_SCALING_LINEAR || c->rope_scaling == MLLM_ROPE_SCALING_YARN;
    rp->freq_scale = scaled && lin && c->rope_factor > 0 ? 1.0f / c->rope_factor : 1.0f;
    if (scaled && c->rope_scaling == MLLM_ROPE_SCALING_YARN) {
        rp->ext_factor = 1.0f;
        rp->attn_factor = 1.0f;
        const float lo = floorf(yarn_corr_dim(c->n_rot, c->rope_orig_ctx, c->yarn_beta_fast, theta));
        const float hi = ceilf(yarn_corr_dim(c->n_rot, c->rope_orig_ctx, c->yarn_beta_slow, theta));
        rp->corr[0] = fmaxf(0.0f, lo);
        rp->corr[1] = fminf((float)(c->n_rot - 1), hi);
    }
}

mllm_status mllm_decoder_bind(mllm_decoder *m, const mllm_model_file *f, const mllm_hparams *hp,
                              const mllm_decoder_params *p) {
    memset(m, 0, sizeof *m);
    m->requant = p->requant;
    m->cfg = *hp;
    const mllm_hparams *c = &m->cfg;
    mllm_graph_init(&m->wg, MLLM_MODE_TRACE, NULL, 64 * 1024);
    if (c->rope_scaling == MLLM_ROPE_SCALING_YARN && (c->rope_orig_ctx <= 0 || c->rope_factor < 1.0f))
        return mllm_err(MLLM_ERR_FORMAT, "%s: YaRN needs original_max_position_embeddings and a factor >= 1", f->path);
    int64_t E = c->n_embd, V = c->n_vocab, D = c->head_dim, F = c->n_ff;
    int64_t QD = c->n_head * D, KD = c->n_head_kv * D;
    mllm_status st;
#define BIND(name, nd, a, b, req, dst) \
    if ((st = mllm_model_bind_tensor(&m->wg, &m->n_params, f, name, nd, a, b, req, dst)) != MLLM_OK) return st
    BIND("token_embd.weight", 2, E, V, true, &m->tok_embd);
    BIND("output_norm.weight", 1, E, 1, true, &m->output_norm);
    BIND("output.weight", 2, E, V, !c->tied_embd, &m->output);
    if (!m->output) m->output = m->tok_embd;
    m->layers = mllm_calloc((size_t)c->n_layer, sizeof *m->layers);
    if (!m->layers) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    /* Rope: llama.cpp stores llama3 factors as a tensor; HF configs give params. */
    mllm_tensor *rf = NULL;
    BIND("rope_freqs.weight", 1, c->n_rot / 2, 1, false, &rf);
    rope_params(c, c->rope_theta, true, &m->rope);
    rope_params(c, c->rope_theta_swa > 0 ? c->rope_theta_swa : c->rope_theta, false, &m->rope_swa);
    if (rf) {
        m->rope.freq_factors = rf->data;
    } else if (c->rope_scaling == MLLM_ROPE_SCALING_LLAMA3) {
        if (c->rope_factor <= 0 || c->rope_orig_ctx <= 0 ||
            c->rope_high_freq_factor <= c->rope_low_freq_factor || c->rope_low_freq_factor <= 0)
            return mllm_err(MLLM_ERR_FORMAT, "%s: invalid llama3 rope_scaling parameters", f->path);
        m->freq_factors = llama3_factors(c);
        if (!m->freq_factors) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
        m->rope.freq_factors = m->freq_factors;
    }
    char nm[96];
    for (int l = 0; l < c->n_layer; l++) {
        mllm_decoder_layer *L = &m->layers[l];
        const mllm_layer_spec sp = mllm_hparams_layer(c, l);
        L->rope = !sp.rope ? NULL : sp.sliding ? &m->rope_swa : &m->rope;
        L->window = sp.window;
#define LNAME(s) (snprintf(nm, sizeof nm, "blk.%d." s, l), nm)
        BIND(LNAME("attn_norm.weight"), 1, E, 1, true, &L->attn_norm);
        BIND(LNAME("attn_q.weight"), 2, E, QD, true, &L->wq);
        BIND(LNAME("attn_k.weight"), 2, E, KD, true, &L->wk);
        BIND(LNAME("attn_v.weight"), 2, E, KD, true, &L->wv);
        BIND(LNAME("attn_output.weight"), 2, QD, E, true, &L->wo);
        BIND(LNAME("attn_q.bias"), 1, QD, 1, c->qkv_bias, &L->bq);
        BIND(LNAME("attn_k.bias"), 1, KD, 1, c->qkv_bias, &L->bk);
        BIND(LNAME("attn_v.bias"), 1, KD, 1, c->qkv_bias, &L->bv);
        BIND(LNAME("attn_q_norm.weight"), 1, D, 1, c->qk_norm, &L->q_norm);
        BIND(LNAME("attn_k_norm.weight"), 1, D, 1, c->qk_norm, &L->k_norm);
        BIND(LNAME("post_attention_norm.weight"), 1, E, 1, c->post_norms, &L->post_attn_norm);
        BIND(LNAME("ffn_norm.weight"), 1, E, 1, true, &L->ffn_norm);
        BIND(LNAME("ffn_gate.weight"), 2, E, F, true, &L->w_gate);
        BIND(LNAME("ffn_up.weight"), 2, E, F, true, &L->w_up);
        BIND(LNAME("ffn_down.weight"), 2, F, E, true, &L->w_down);
        BIND(LNAME("post_ffw_norm.weight"), 1, E, 1, c->post_norms, &L->post_ffw_norm);
#undef LNAME
    }
#undef BIND
    /* Placed first: a weight the device computes with is copied there as
       the file has it, and the CPU does not repack it. */
    st = mllm_decoder_use_backends(m, p->backends, p->n_offload, p->backends_from ? p->backends_from : "backend");
    if (st != MLLM_OK) return st;
    return mllm_decoder_pack(m, f, p->repack, p->pack_threads);
}

void mllm_decoder_release(mllm_decoder *m) {
    if (!m) return;
    mllm_decoder_drop_backends(m);
    mllm_graph_free(&m->wg);
    mllm_free(m->layers);
    mllm_free(m->freq_factors);
    if (m->packed_buf.type) m->packed_buf.type->free(&m->packed_buf);
    memset(m, 0, sizeof *m);
}

/* The residual stream after the last layer, every token (E x T). */
static mllm_tensor *run_layers(mllm_graph *g, const mllm_decoder *m, const mllm_kv_layer *kv,
                               const mllm_decoder_inputs *in) {
    const mllm_hparams *c = &m->cfg;
    mllm_graph_set_backends(g, m->backends, m->n_backends);
    /* input embeddings (images) replace the token lookup, already scaled */
    mllm_tensor *x = in->embd ? in->embd : mllm_op_get_rows(g, m->tok_embd, in->ids);
    if (!in->embd && c->embd_scale != 1.0f) x = mllm_op_scale(g, x, c->embd_scale);
    for (int l = 0; l < c->n_layer && x; l++) {
        const mllm_decoder_layer *L = &m->layers[l];
        mllm_tensor *a = mllm_block_attention(g, c, L, x, in, in->paged ? NULL : &kv[l],
                                              in->paged ? &in->paged[l] : NULL);
        x = mllm_op_add(g, x, a);
        mllm_tensor *h = mllm_block_ffn(g, c, L, x);
        x = mllm_op_add(g, x, h);
    }
    return x;
}

mllm_tensor *mllm_decoder_forward(mllm_graph *g, const mllm_decoder *m, const mllm_kv_layer *kv,
                                  const mllm_decoder_inputs *in, int first_out) {
    const mllm_hparams *c = &m->cfg;
    if (!in->ids || !in->pos) return NULL;
    const int64_t T = in->ids->ne[0];
    const int n_tokens = (int)T;
    mllm_tensor *x = run_layers(g, m, kv, in);
    /* Only the positions asked for reach the (large) output projection. */
    if (first_out < 0 || first_out >= n_tokens) first_out = n_tokens - 1;
    x = mllm_op_view_cols(g, x, first_out, T - first_out);
    x = mllm_op_rmsnorm(g, x, m->output_norm, c->rms_eps);
    mllm_tensor *logits = mllm_op_matmul(g, m->output, x, NULL);
    if (c->final_softcap > 0) logits = mllm_op_softcap(g, logits, c->final_softcap);
    return g->failed ? NULL : logits;
}

mllm_tensor *mllm_decoder_hidden(mllm_graph *g, const mllm_decoder *m, const mllm_kv_layer *kv,
                                 const mllm_decoder_inputs *in) {
    if (!in->ids || !in->pos) return NULL;
    mllm_tensor *x = mllm_op_rmsnorm(g, run_layers(g, m, kv, in), m->output_norm, m->cfg.rms_eps);
    return g->failed ? NULL : x;
}
