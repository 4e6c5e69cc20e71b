#include "models/blocks.h"

mllm_tensor *mllm_block_attention(mllm_graph *g, const mllm_hparams *c, const mllm_decoder_layer *L, mllm_tensor *x,
                                  const mllm_decoder_inputs *in, const mllm_kv_layer *kv, const mllm_kv_paged *pkv) {
    mllm_tensor *pos = in->pos;
    mllm_tensor *rope_pos = in->rope_pos ? in->rope_pos : in->pos; /* M-RoPE's 3 rows, or the positions */
    const int64_t T = x ? x->ne[1] : 0, D = c->head_dim, H = c->n_head, Hkv = c->n_head_kv;
    mllm_tensor *h = mllm_op_rmsnorm(g, x, L->attn_norm, c->rms_eps);
    mllm_tensor *q = mllm_op_matmul(g, L->wq, h, L->bq);
    mllm_tensor *k = mllm_op_matmul(g, L->wk, h, L->bk);
    mllm_tensor *v = mllm_op_matmul(g, L->wv, h, L->bv);
    int64_t qs[3] = {D, H, T}, ks[3] = {D, Hkv, T};
    q = mllm_op_reshape(g, q, 3, qs);
    k = mllm_op_reshape(g, k, 3, ks);
    if (L->q_norm) {
        q = mllm_op_rmsnorm(g, q, L->q_norm, c->rms_eps);
        k = mllm_op_rmsnorm(g, k, L->k_norm, c->rms_eps);
    }
    if (L->rope) {
        q = mllm_op_rope(g, q, rope_pos, L->rope);
        k = mllm_op_rope(g, k, rope_pos, L->rope);
    }
    mllm_tensor *a;
    if (pkv) {
        mllm_tensor *st = mllm_op_kv_store_paged(g, k, v, pos, in->seq, in->table, pkv);
        a = mllm_op_attention_paged(g, q, st, pos, in->seq, in->table, pkv, (int)Hkv, c->attn_scale, L->window);
    } else {
        mllm_tensor *st = mllm_op_kv_store(g, k, v, pos, kv);
        a = mllm_op_attention(g, q, st, pos, kv, (int)Hkv, c->attn_scale, L->window);
    }
    mllm_tensor *o = mllm_op_matmul(g, L->wo, a, NULL);
    if (L->post_attn_norm) o = mllm_op_rmsnorm(g, o, L->post_attn_norm, c->rms_eps);
    return o;
}

mllm_tensor *mllm_block_ffn(mllm_graph *g, const mllm_hparams *c, const mllm_decoder_layer *L, mllm_tensor *x) {
    mllm_tensor *h = mllm_op_rmsnorm(g, x, L->ffn_norm, c->rms_eps);
    mllm_tensor *gt = mllm_op_matmul(g, L->w_gate, h, NULL);
    mllm_tensor *up = mllm_op_matmul(g, L->w_up, h, NULL);
    mllm_tensor *act = c->act == MLLM_ACT_GELU_TANH ? mllm_op_gelu_mul(g, gt, up) : mllm_op_silu_mul(g, gt, up);
    mllm_tensor *dn = mllm_op_matmul(g, L->w_down, act, NULL);
    if (L->post_ffw_norm) dn = mllm_op_rmsnorm(g, dn, L->post_ffw_norm, c->rms_eps);
    return dn;
}
