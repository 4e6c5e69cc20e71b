/* Loading the Idefics3 / SmolVLM vision side from a Hugging Face folder:
   config.json's vision_config and scale_factor, every size checked, the
   model.vision_model.* / model.connector.* tensors bound by name and shape,
   preprocessor_config.json's sizes. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "core/meta.h"
#include "formats/hf_config.h"
#include "models/vision/idefics3_vision_internal.h"

static bool get_int(const mllm_meta *m, const char *key, int64_t lo, int64_t hi, int dflt, int *out, mllm_status *st,
                    const char *path) {
    int64_t v;
    if (!mllm_meta_get_int(m, key, &v)) {
        if (dflt < 0) {
            *st = mllm_err(MLLM_ERR_FORMAT, "%s: %s is missing (not an Idefics3 / SmolVLM config?)", path, key);
            return false;
        }
        *out = dflt;
        return true;
    }
    if (v < lo || v > hi) {
        *st = mllm_err(MLLM_ERR_FORMAT, "%s: %s = %lld is out of range [%lld, %lld]", path, key, (long long)v,
                       (long long)lo, (long long)hi);
        return false;
    }
    *out = (int)v;
    return true;
}

static mllm_status read_config(const mllm_meta *m, const char *path, mllm_idefics3_vision_config *c) {
    mllm_status st = MLLM_OK;
    memset(c, 0, sizeof *c);
    const char *mt = mllm_meta_get_str(m, "model_type");
    if (!mt || (strcmp(mt, "idefics3") && strcmp(mt, "smolvlm")))
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: model_type '%s' is not idefics3 or smolvlm", path, mt ? mt : "?");
    int ch = 3;
    if (!get_int(m, "vision_config.num_hidden_layers", 1, MLLM_IDEFICS3_MAX_DEPTH, 12, &c->depth, &st, path) ||
        !get_int(m, "vision_config.hidden_size", 8, 16384, 768, &c->hidden, &st, path) ||
        !get_int(m, "vision_config.intermediate_size", 1, 65536, 3072, &c->intermediate, &st, path) ||
        !get_int(m, "vision_config.num_attention_heads", 1, 256, 12, &c->heads, &st, path) ||
        !get_int(m, "vision_config.image_size", 1, MLLM_IDEFICS3_MAX_SIDE, 224, &c->image_size, &st, path) ||
        !get_int(m, "vision_config.patch_size", 1, 256, 32, &c->patch, &st, path) ||
        !get_int(m, "vision_config.num_channels", 3, 3, 3, &ch, &st, path) ||
        !get_int(m, "scale_factor", 1, 16, 2, &c->scale, &st, path) ||
        !get_int(m, "text_config.hidden_size", 1, 65536, -1, &c->out_hidden, &st, path))
        return st;
    if (c->hidden % c->heads || c->hidden / c->heads > 1024)
        return mllm_err(MLLM_ERR_FORMAT, "%s: vision hidden_size %d, %d heads", path, c->hidden, c->heads);
    const int side = c->image_size / c->patch;
    if (c->image_size % c->patch || side % c->scale)
        return mllm_err(MLLM_ERR_FORMAT, "%s: image_size %d is not a multiple of patch_size %d x scale_factor %d",
                        path, c->image_size, c->patch, c->scale);
    c->image_seq_len = side * side / (c->scale * c->scale);
    const char *act = mllm_meta_get_str(m, "vision_config.hidden_act");
    if (act && strcmp(act, "gelu_pytorch_tanh"))
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: vision hidden_act '%s' (only gelu_pytorch_tanh, SigLIP's)", path,
                        act);
    double eps = 1e-6;
    mllm_meta_get_float(m, "vision_config.layer_norm_eps", &eps);
    if (!(eps > 0 && eps < 1)) return mllm_err(MLLM_ERR_FORMAT, "%s: vision layer_norm_eps %g", path, eps);
    c->eps = (float)eps;
    return MLLM_OK;
}

/* preprocessor_config.json (optional: transformers' defaults otherwise).
   The resample filter must be LANCZOS (1), the rescale 1/255. */
static mllm_status read_preprocessor(const char *dir, mllm_idefics3_pre_params *p) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/preprocessor_config.json", dir) >= sizeof path) return MLLM_OK;
    FILE *f = fopen(path, "rb");
    if (!f) return MLLM_OK;
    fclose(f);
    mllm_meta m = {0};
    mllm_status st = mllm_hf_config_load(path, &m);
    int64_t v;
    double d;
    bool bv;
    if (!st && mllm_meta_get_int(&m, "size.longest_edge", &v)) p->longest_edge = v < 1 || v > 1 << 16 ? -1 : (int)v;
    if (!st && mllm_meta_get_int(&m, "max_image_size.longest_edge", &v)) p->tile = v < 1 || v > 1 << 16 ? -1 : (int)v;
    if (!st && mllm_meta_get_bool(&m, "do_image_splitting", &bv)) p->do_split = bv;
    if (!st && mllm_meta_get_bool(&m, "do_resize", &bv)) p->do_resize = bv;
    if (!st && mllm_meta_get_int(&m, "resample", &v) && v != 1)
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: resample %lld (only 1, LANCZOS, Idefics3's)", path, (long long)v);
    if (!st && mllm_meta_get_float(&m, "rescale_factor", &d) && fabs(d - 1.0 / 255.0) > 1e-9)
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: rescale_factor %g (only 1/255)", path, d);
    if (!st && mllm_meta_get_bool(&m, "do_rescale", &bv) && !bv)
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: do_rescale false is not supported", path);
    if (!st && mllm_meta_get_bool(&m, "do_normalize", &bv) && !bv)
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: do_normalize false is not supported", path);
    const mllm_meta_entry *mean = st ? NULL : mllm_meta_find(&m, "image_mean");
    const mllm_meta_entry *sd = st ? NULL : mllm_meta_find(&m, "image_std");
    for (int c = 0; mean && mean->type == MLLM_META_ARR_NUM && mean->len == 3 && c < 3; c++) p->mean[c] = (float)mean->num[c];
    for (int c = 0; sd && sd->type == MLLM_META_ARR_NUM && sd->len == 3 && c < 3; c++)
        if (sd->num[c] > 0) p->std[c] = (float)sd->num[c];
    mllm_meta_free(&m);
    if (!st && (p->longest_edge < 1 || p->longest_edge > MLLM_IDEFICS3_MAX_SIDE || p->tile < 1 ||
                p->tile > MLLM_IDEFICS3_MAX_SIDE))
        st = mllm_err(MLLM_ERR_FORMAT, "%s: size.longest_edge %d / max_image_size %d out of range", path,
                      p->longest_edge, p->tile);
    return st;
}

void mllm_idefics3_vision_free(mllm_idefics3_vision *v) {
    if (!v) return;
    for (int i = 0; v->blocks && i < v->c.depth; i++) {
        i3_block *b = &v->blocks[i];
        mllm_free(b->ln1_w), mllm_free(b->ln1_b), mllm_free(b->ln2_w), mllm_free(b->ln2_b);
        mllm_free(b->q.b), mllm_free(b->k.b), mllm_free(b->v.b), mllm_free(b->o.b);
        mllm_free(b->fc1.b), mllm_free(b->fc2.b);
    }
    mllm_free(v->blocks);
    mllm_free(v->tb);
    qv_weights_free(&v->w);
    mllm_free(v->patch.b);
    mllm_free(v->pos);
    mllm_free(v->post_w);
    mllm_free(v->post_b);
    mllm_safetensors_close(v->st);
    if (v->pool && !v->pool_lent) mllm_pool_free(v->pool);
    mllm_free(v);
}

static void bind(qv_binder *b, mllm_idefics3_vision *v) {
    const mllm_idefics3_vision_config *c = &v->c;
    const int64_t H = c->hidden, F = c->intermediate, side = c->image_size / c->patch;
    qv_bind_linear(b, &v->patch, "embeddings.patch_embedding", 3LL * c->patch * c->patch, H, true);
    v->pos = qv_bind_f32_2d(b, "embeddings.position_embedding.weight", H, side * side);
    v->blocks = b->st ? NULL : mllm_calloc((size_t)c->depth, sizeof *v->blocks);
    if (!b->st && !v->blocks) b->st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
    for (int i = 0; !b->st && i < c->depth; i++) {
        i3_block *k = &v->blocks[i];
        char n[96];
#define NAME(s) (snprintf(n, sizeof n, "encoder.layers.%d." s, i), n)
        k->ln1_w = qv_bind_f32(b, NAME("layer_norm1.weight"), H);
        k->ln1_b = qv_bind_f32(b, NAME("layer_norm1.bias"), H);
        k->ln2_w = qv_bind_f32(b, NAME("layer_norm2.weight"), H);
        k->ln2_b = qv_bind_f32(b, NAME("layer_norm2.bias"), H);
        qv_bind_linear(b, &k->q, NAME("self_attn.q_proj"), H, H, true);
        qv_bind_linear(b, &k->k, NAME("self_attn.k_proj"), H, H, true);
        qv_bind_linear(b, &k->v, NAME("self_attn.v_proj"), H, H, true);
        qv_bind_linear(b, &k->o, NAME("self_attn.out_proj"), H, H, true);
        qv_bind_linear(b, &k->fc1, NAME("mlp.fc1"), H, F, true);
        qv_bind_linear(b, &k->fc2, NAME("mlp.fc2"), F, H, true);
#undef NAME
    }
    v->post_w = qv_bind_f32(b, "post_layernorm.weight", H);
    v->post_b = qv_bind_f32(b, "post_layernorm.bias", H);
}

mllm_status mllm_idefics3_vision_open(const char *dir, int n_threads, mllm_idefics3_vision **out) {
    if (!out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_idefics3_vision_open: NULL out");
    *out = NULL;
    if (!dir || n_threads < 1) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_idefics3_vision_open: bad arguments");
    qv_folder fo;
    mllm_meta m = {0};
    mllm_status st = qv_folder_config(dir, &fo, &m);
    const char *cfg = fo.cfg, *stp = fo.weights;
    mllm_idefics3_vision *v = st ? NULL : mllm_calloc(1, sizeof *v);
    if (!st && !v) st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
    if (!st) st = read_config(&m, cfg, &v->c);
    mllm_meta_free(&m);
    if (!st) st = qv_folder_weights(dir, &fo, &v->st);
    if (!st) {
        /* transformers 5 and the published checkpoints: model.vision_model.*;
           older saves: vision_model.* */
        const bool nested = mllm_safetensors_find(v->st, "model.vision_model.post_layernorm.weight") != NULL;
        qv_binder b = {v->st, stp, nested ? "model.vision_model." : "vision_model.", MLLM_OK};
        bind(&b, v);
        b.prefix = nested ? "model.connector." : "connector.";
        qv_bind_linear(&b, &v->proj, "modality_projection.proj", (int64_t)v->c.hidden * v->c.scale * v->c.scale,
                       v->c.out_hidden, false);
        st = b.st;
    }
    if (!st) {
        mllm_idefics3_pre_defaults(&v->pre);
        st = read_preprocessor(dir, &v->pre);
    }
    if (!st && v->pre.tile != v->c.image_size)
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: max_image_size %d differs from the tower's image_size %d (partial "
                                            "tiles are not supported)", dir, v->pre.tile, v->c.image_size);
    if (!st) st = i3_make_tensors(v);
    if (!st && n_threads > 1 && !(v->pool = mllm_pool_new(n_threads)))
        st = mllm_err(MLLM_ERR_NOMEM, "cannot start %d threads", n_threads);
    if (st) {
        mllm_idefics3_vision_free(v);
        return st;
    }
    *out = v;
    return MLLM_OK;
}

mllm_status i3_make_tensors(mllm_idefics3_vision *v) {
    const mllm_idefics3_vision_config *c = &v->c;
    const int64_t H = c->hidden, side = c->image_size / c->patch;
    qv_weights *ws = &v->w;
    qv_weights_init(ws);
    if (!(v->tb = mllm_calloc((size_t)c->depth, sizeof *v->tb))) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    v->tpatch = qv_weight_linear(ws, &v->patch, "patch_embd");
    v->tpos = qv_weight_f32(ws, v->pos, H, side * side, "pos_embd");
    for (int i = 0; i < c->depth; i++) {
        const i3_block *b = &v->blocks[i];
        i3_block_t *t = &v->tb[i];
        t->ln1_w = qv_weight_f32(ws, b->ln1_w, H, 1, "ln1");
        t->ln1_b = qv_weight_f32(ws, b->ln1_b, H, 1, "ln1_b");
        t->ln2_w = qv_weight_f32(ws, b->ln2_w, H, 1, "ln2");
        t->ln2_b = qv_weight_f32(ws, b->ln2_b, H, 1, "ln2_b");
        t->q = qv_weight_linear(ws, &b->q, "attn_q");
        t->k = qv_weight_linear(ws, &b->k, "attn_k");
        t->v = qv_weight_linear(ws, &b->v, "attn_v");
        t->o = qv_weight_linear(ws, &b->o, "attn_out");
        t->fc1 = qv_weight_linear(ws, &b->fc1, "ffn_up");
        t->fc2 = qv_weight_linear(ws, &b->fc2, "ffn_down");
    }
    v->tpost_w = qv_weight_f32(ws, v->post_w, H, 1, "post_ln");
    v->tpost_b = qv_weight_f32(ws, v->post_b, H, 1, "post_ln_b");
    v->tproj = qv_weight_linear(ws, &v->proj, "mm_proj");
    return ws->failed ? mllm_err(MLLM_ERR_NOMEM, "out of memory") : MLLM_OK;
}

mllm_status mllm_idefics3_vision_use_backends(mllm_idefics3_vision *v, mllm_backend *const *be, int n) {
    if (!v) return mllm_err(MLLM_ERR_INVALID_ARG, "idefics3 vision: NULL tower");
    return qv_weights_use_backends(&v->w, be, n, "idefics3 vision");
}

const mllm_idefics3_vision_config *mllm_idefics3_vision_config_of(const mllm_idefics3_vision *v) { return &v->c; }

void mllm_idefics3_vision_pre_params(const mllm_idefics3_vision *v, mllm_idefics3_pre_params *p) { *p = v->pre; }

void mllm_idefics3_vision_lend_pool(mllm_idefics3_vision *v, mllm_pool *pool) {
    if (v->pool && !v->pool_lent) mllm_pool_free(v->pool);
    v->pool = pool;
    v->pool_lent = pool != NULL;
}
