/* Loading the Qwen2.5-VL vision tower from a Hugging Face folder: the
   vision_config of config.json, every size checked, and the visual.*
   tensors of model.safetensors bound by name and shape. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/meta.h"
#include "formats/hf_config.h"
#include "models/vision/qwen2vl_vision_internal.h"


static bool get_int(const mllm_meta *m, const char *key, int64_t lo, int64_t hi, int *out, mllm_status *st,
                    const char *path, bool required, int dflt) {
    int64_t v;
    if (!mllm_meta_get_int(m, key, &v)) {
        if (!required) {
            *out = dflt;
            return true;
        }
        *st = mllm_err(MLLM_ERR_FORMAT, "%s: %s is missing (not a Qwen2.5-VL config?)", path, key);
        return false;
    }
    if (v < lo || v > hi) {
        *st = mllm_err(MLLM_ERR_FORMAT, "%s: %s = %lld is out of range [%lld, %lld]", path, key, (long long)v,
                       (long long)lo, (long long)hi);
        return false;
    }
    *out = (int)v;
    return true;
}

mllm_status qv_check_config(const mllm_qwen2vl_vision_config *c, const char *path) {
    if (c->hidden % c->heads || (c->hidden / c->heads) % 4)
        return mllm_err(MLLM_ERR_FORMAT, "%s: vision hidden_size %d is not num_heads %d x a multiple of 4", path,
                        c->hidden, c->heads);
    if (c->hidden / c->heads > 1024)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: vision head size %d (at most 1024)", path, c->hidden / c->heads);
    if (c->window % (c->merge * c->patch))
        return mllm_err(MLLM_ERR_FORMAT, "%s: window_size %d is not a multiple of %d", path, c->window,
                        c->merge * c->patch);
    return MLLM_OK;
}

static mllm_status read_config(const mllm_meta *m, const char *path, mllm_qwen2vl_vision_config *c) {
    mllm_status st = MLLM_OK;
    memset(c, 0, sizeof *c);
    const char *mt = mllm_meta_get_str(m, "model_type");
    if (mt && strcmp(mt, "qwen2_5_vl"))
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: model_type '%s' (only qwen2_5_vl vision towers are run)", path, mt);
    int in_ch = 3;
    if (!get_int(m, "vision_config.depth", 1, MLLM_QWEN2VL_MAX_DEPTH, &c->depth, &st, path, true, 0) ||
        !get_int(m, "vision_config.hidden_size", 8, 16384, &c->hidden, &st, path, true, 0) ||
        !get_int(m, "vision_config.intermediate_size", 1, 65536, &c->intermediate, &st, path, true, 0) ||
        !get_int(m, "vision_config.num_heads", 1, 256, &c->heads, &st, path, true, 0) ||
        !get_int(m, "vision_config.out_hidden_size", 1, 65536, &c->out_hidden, &st, path, true, 0) ||
        !get_int(m, "vision_config.patch_size", 1, 64, &c->patch, &st, path, false, 14) ||
        !get_int(m, "vision_config.spatial_merge_size", 1, 8, &c->merge, &st, path, false, 2) ||
        !get_int(m, "vision_config.temporal_patch_size", 1, 8, &c->temporal, &st, path, false, 2) ||
        !get_int(m, "vision_config.window_size", 1, 4096, &c->window, &st, path, false, 112) ||
        !get_int(m, "vision_config.in_channels", 3, 3, &in_ch, &st, path, false, 3) ||
        !get_int(m, "vision_config.in_chans", 3, 3, &in_ch, &st, path, false, 3))
        return st;
    if ((st = qv_check_config(c, path))) return st;
    const char *act = mllm_meta_get_str(m, "vision_config.hidden_act");
    if (act && strcmp(act, "silu"))
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: vision hidden_act '%s' (only silu, Qwen2.5-VL's)", path, act);
    const mllm_meta_entry *fa = mllm_meta_find(m, "vision_config.fullatt_block_indexes");
    if (fa && fa->type != MLLM_META_ARR_NUM && fa->len)
        return mllm_err(MLLM_ERR_FORMAT, "%s: fullatt_block_indexes is not a list of numbers", path);
    for (size_t i = 0; fa && i < fa->len; i++) {
        double d = fa->num[i];
        if (d != floor(d) || d < 0 || d >= c->depth)
            return mllm_err(MLLM_ERR_FORMAT, "%s: fullatt_block_indexes[%zu] = %g is not a block index", path, i, d);
        if (c->n_fullatt < MLLM_QWEN2VL_MAX_DEPTH) c->fullatt[c->n_fullatt++] = (int)d;
    }
    double theta = 10000.0;
    if (!mllm_meta_get_float(m, "vision_config.rope_parameters.rope_theta", &theta))
        mllm_meta_get_float(m, "vision_config.rope_theta", &theta);
    if (!(theta > 1 && theta < 1e12)) return mllm_err(MLLM_ERR_FORMAT, "%s: vision rope_theta %g", path, theta);
    c->rope_theta = (float)theta;
    return MLLM_OK;
}

/* preprocessor_config.json (optional): the pixel limits (min_pixels /
   max_pixels, or transformers 5's size.shortest_edge / longest_edge) and
   the normalisation. Qwen2.5-VL ships 3136 and 12845056. */
static mllm_status read_preprocessor(const char *dir, mllm_qwen2vl_pre_params *p) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/preprocessor_config.json", dir) >= sizeof path) return MLLM_OK;
    FILE *f = fopen(path, "rb");
    if (!f) return MLLM_OK;
    fclose(f);
    mllm_meta m = {0};
    mllm_status st = mllm_hf_config_load(path, &m);
    int64_t v;
    if (!st && (mllm_meta_get_int(&m, "min_pixels", &v) || mllm_meta_get_int(&m, "size.shortest_edge", &v)))
        p->min_pixels = v;
    if (!st && (mllm_meta_get_int(&m, "max_pixels", &v) || mllm_meta_get_int(&m, "size.longest_edge", &v)))
        p->max_pixels = v;
    const mllm_meta_entry *mean = st ? NULL : mllm_meta_find(&m, "image_mean");
    const mllm_meta_entry *sd = st ? NULL : mllm_meta_find(&m, "image_std");
    for (int c = 0; mean && mean->type == MLLM_META_ARR_NUM && mean->len == 3 && c < 3; c++) p->mean[c] = (float)mean->num[c];
    for (int c = 0; sd && sd->type == MLLM_META_ARR_NUM && sd->len == 3 && c < 3; c++)
        if (sd->num[c] > 0) p->std[c] = (float)sd->num[c];
    mllm_meta_free(&m);
    if (!st && (p->min_pixels < 0 || p->max_pixels < 1 || p->max_pixels > ((int64_t)1 << 32)))
        st = mllm_err(MLLM_ERR_FORMAT, "%s: pixel limits [%lld, %lld] out of range", path, (long long)p->min_pixels,
                      (long long)p->max_pixels);
    return st;
}

void mllm_qwen2vl_vision_free(mllm_qwen2vl_vision *v) {
    if (!v) return;
    for (int i = 0; v->blocks && i < v->c.depth; i++) {
        qv_block *b = &v->blocks[i];
        mllm_free(b->norm1);
        mllm_free(b->norm2);
        mllm_free(b->qkv.b);
        mllm_free(b->qkv.own);
        mllm_free(b->proj.b);
        mllm_free(b->gate.b);
        mllm_free(b->up.b);
        mllm_free(b->down.b);
    }
    mllm_free(v->blocks);
    mllm_free(v->tb);
    qv_weights_free(&v->w);
    mllm_free(v->merge_norm);
    mllm_free(v->mlp0.b);
    mllm_free(v->mlp2.b);
    mllm_free(v->patch.own);
    mllm_safetensors_close(v->st);
    mllm_gguf_close(v->gg);
    if (v->pool && !v->pool_lent) mllm_pool_free(v->pool);
    mllm_free(v);
}

mllm_status mllm_qwen2vl_vision_open(const char *dir, int n_threads, mllm_qwen2vl_vision **out) {
    if (!out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_qwen2vl_vision_open: NULL out");
    *out = NULL;
    if (!dir || n_threads < 1) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_qwen2vl_vision_open: bad arguments");
    qv_folder fo;
    mllm_meta m = {0};
    mllm_status st = qv_folder_config(dir, &fo, &m);
    const char *cfg = fo.cfg, *stp = fo.weights;
    mllm_qwen2vl_vision *v = st ? NULL : mllm_calloc(1, sizeof *v);
    if (!st && !v) st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
    if (!st) st = read_config(&m, cfg, &v->c);
    mllm_meta_free(&m);
    if (!st) st = qv_folder_weights(dir, &fo, &v->st);
    if (!st) {
        const mllm_qwen2vl_vision_config *c = &v->c;
        qv_binder b = {v->st, stp, "visual.", MLLM_OK};
        if (!mllm_safetensors_find(v->st, "visual.patch_embed.proj.weight") &&
            mllm_safetensors_find(v->st, "model.visual.patch_embed.proj.weight"))
            b.prefix = "model.visual.";
        const int64_t H = c->hidden, F = c->intermediate, pd = 3LL * c->temporal * c->patch * c->patch;
        const int64_t M = H * c->merge * c->merge;
        qv_bind_linear(&b, &v->patch, "patch_embed.proj", pd, H, false);
        v->blocks = mllm_calloc((size_t)c->depth, sizeof *v->blocks);
        if (!v->blocks) b.st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
        for (int i = 0; !b.st && i < c->depth; i++) {
            qv_block *k = &v->blocks[i];
            char n[96];
#define NAME(s) (snprintf(n, sizeof n, "blocks.%d." s, i), n)
            k->norm1 = qv_bind_f32(&b, NAME("norm1.weight"), H);
            k->norm2 = qv_bind_f32(&b, NAME("norm2.weight"), H);
            qv_bind_linear(&b, &k->qkv, NAME("attn.qkv"), H, 3 * H, true);
            qv_bind_linear(&b, &k->proj, NAME("attn.proj"), H, H, true);
            qv_bind_linear(&b, &k->gate, NAME("mlp.gate_proj"), H, F, true);
            qv_bind_linear(&b, &k->up, NAME("mlp.up_proj"), H, F, true);
            qv_bind_linear(&b, &k->down, NAME("mlp.down_proj"), F, H, true);
#undef NAME
        }
        v->merge_norm = qv_bind_f32(&b, "merger.ln_q.weight", H);
        qv_bind_linear(&b, &v->mlp0, "merger.mlp.0", M, M, true);
        qv_bind_linear(&b, &v->mlp2, "merger.mlp.2", M, c->out_hidden, true);
        st = b.st;
    }
    if (!st) {
        mllm_qwen2vl_pre_defaults(&v->pre);
        v->pre.patch_size = v->c.patch;
        v->pre.merge_size = v->c.merge;
        v->pre.temporal_patch_size = v->c.temporal;
        st = read_preprocessor(dir, &v->pre);
    }
    if (!st) st = qv_make_tensors(v);
    if (!st && n_threads > 1 && !(v->pool = mllm_pool_new(n_threads)))
        st = mllm_err(MLLM_ERR_NOMEM, "cannot start %d threads", n_threads);
    if (st) {
        mllm_qwen2vl_vision_free(v);
        return st;
    }
    *out = v;
    return MLLM_OK;
}

mllm_status qv_make_tensors(mllm_qwen2vl_vision *v) {
    const mllm_qwen2vl_vision_config *c = &v->c;
    const int64_t H = c->hidden;
    qv_weights *ws = &v->w;
    qv_weights_init(ws);
    if (!(v->tb = mllm_calloc((size_t)c->depth, sizeof *v->tb))) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    v->tpatch = qv_weight_linear(ws, &v->patch, "patch_embd");
    for (int i = 0; i < c->depth; i++) {
        const qv_block *b = &v->blocks[i];
        qv_block_t *t = &v->tb[i];
        t->norm1 = qv_weight_f32(ws, b->norm1, H, 1, "ln1");
        t->norm2 = qv_weight_f32(ws, b->norm2, H, 1, "ln2");
        /* the joined q, k, v rows as three matmuls: each feeds its own rotation or the attention */
        t->q = qv_weight_linear_rows(ws, &b->qkv, 0, H, "attn_q");
        t->k = qv_weight_linear_rows(ws, &b->qkv, H, H, "attn_k");
        t->v = qv_weight_linear_rows(ws, &b->qkv, 2 * H, H, "attn_v");
        t->proj = qv_weight_linear(ws, &b->proj, "attn_out");
        t->gate = qv_weight_linear(ws, &b->gate, "ffn_gate");
        t->up = qv_weight_linear(ws, &b->up, "ffn_up");
        t->down = qv_weight_linear(ws, &b->down, "ffn_down");
        t->full = false;
        for (int j = 0; j < c->n_fullatt; j++) t->full |= c->fullatt[j] == i;
    }
    v->tmerge_norm = qv_weight_f32(ws, v->merge_norm, H, 1, "merge_ln");
    v->tmlp0 = qv_weight_linear(ws, &v->mlp0, "mm_0");
    v->tmlp2 = qv_weight_linear(ws, &v->mlp2, "mm_2");
    return ws->failed ? mllm_err(MLLM_ERR_NOMEM, "out of memory") : MLLM_OK;
}

mllm_status mllm_qwen2vl_vision_use_backends(mllm_qwen2vl_vision *v, mllm_backend *const *be, int n) {
    if (!v) return mllm_err(MLLM_ERR_INVALID_ARG, "qwen2vl vision: NULL tower");
    return qv_weights_use_backends(&v->w, be, n, "qwen2vl vision");
}

const mllm_qwen2vl_vision_config *mllm_qwen2vl_vision_config_of(const mllm_qwen2vl_vision *v) { return &v->c; }

void mllm_qwen2vl_vision_pre_params(const mllm_qwen2vl_vision *v, mllm_qwen2vl_pre_params *p) { *p = v->pre; }

void mllm_qwen2vl_vision_lend_pool(mllm_qwen2vl_vision *v, mllm_pool *pool) {
    if (v->pool && !v->pool_lent) mllm_pool_free(v->pool);
    v->pool = pool;
    v->pool_lent = pool != NULL;
}
