/* The Qwen2.5-VL vision tower from an mmproj GGUF, as llama.cpp's
   convert_hf_to_gguf.py --mmproj writes it (general.architecture "clip",
   clip.projector_type "qwen2.5vl_merger"): clip.vision.* sizes, the window
   attention pattern as n_wa_pattern (block i attends fully when
   (i + 1) % n_wa_pattern == 0, as llama.cpp's qwen2vl.cpp reads it), the
   Conv3d patch kernel as two Conv2d kernels (v.patch_embd.weight and
   .weight.1, one per frame), q / k / v as three tensors (joined here into
   the tower's one qkv matrix: the only weights copied), the merger's
   RMSNorm as v.post_ln and its MLP as mm.0 / mm.2. Every size is checked
   against the metadata before a byte is read. The file carries no pixel
   limits (llama.cpp picks its own): the ones of Qwen2.5-VL's
   preprocessor_config.json are used (3136 .. 12845056 pixels), or
   clip.vision.image_min_pixels / image_max_pixels when present. */
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "models/vision/qwen2vl_vision_internal.h"

typedef struct {
    mllm_gguf *g;
    const char *path;
    mllm_status st;
} gbinder;

static const mllm_gguf_tensor *gfind(gbinder *b, const char *name, int64_t ne0, int64_t ne1, int64_t ne2,
                                     int64_t ne3) {
    if (b->st) return NULL;
    const mllm_gguf_tensor *t = mllm_gguf_find_tensor(b->g, name);
    if (!t) {
        b->st = mllm_err(MLLM_ERR_FORMAT, "%s: tensor %s is missing", b->path, name);
        return NULL;
    }
    if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != ne2 || t->ne[3] != ne3) {
        b->st = mllm_err(MLLM_ERR_FORMAT, "%s: tensor %s is [%lld, %lld, %lld, %lld], want [%lld, %lld, %lld, %lld]",
                         b->path, name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                         (long long)t->ne[3], (long long)ne0, (long long)ne1, (long long)ne2, (long long)ne3);
        return NULL;
    }
    return (b->st = qv_check_dtype(t->dtype, b->path, name)) ? NULL : t;
}

static void *galloc(gbinder *b, size_t n) {
    void *p = b->st ? NULL : mllm_malloc(n ? n : 1);
    if (!p && !b->st) b->st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", b->path);
    return p;
}

/* n floats of a 1-D tensor, widened (owned). */
static float *gvec(gbinder *b, const char *name, int64_t n) {
    const mllm_gguf_tensor *t = gfind(b, name, n, 1, 1, 1);
    float *f = t ? galloc(b, (size_t)n * sizeof(float)) : NULL;
    if (f && !qv_widen(t->dtype, t->data, n, 1, f)) {
        mllm_free(f);
        f = NULL;
        b->st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", b->path);
    }
    return f;
}

static void glinear(gbinder *b, qv_linear *L, const char *name, int64_t n_in, int64_t n_out) {
    char w[160], bn[160];
    snprintf(w, sizeof w, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    const mllm_gguf_tensor *t = gfind(b, w, n_in, n_out, 1, 1);
    if (!t) return;
    *L = (qv_linear){.w = t->data, .dtype = t->dtype, .row_bytes = t->size / (size_t)n_out, .n_in = n_in,
                     .n_out = n_out};
    L->b = gvec(b, bn, n_out);
}

/* v.blk.i.attn_{q,k,v} joined into one H -> 3H linear (rows q, then k, then v). */
static void gqkv(gbinder *b, qv_linear *L, int i, int64_t H) {
    const mllm_gguf_tensor *w[3] = {0}, *bias[3] = {0};
    static const char qkv[3] = {'q', 'k', 'v'};
    char n[96];
    for (int j = 0; j < 3; j++) {
        snprintf(n, sizeof n, "v.blk.%d.attn_%c.weight", i, qkv[j]);
        w[j] = gfind(b, n, H, H, 1, 1);
        snprintf(n, sizeof n, "v.blk.%d.attn_%c.bias", i, qkv[j]);
        bias[j] = gfind(b, n, H, 1, 1, 1);
    }
    if (b->st) return;
    if (w[1]->dtype != w[0]->dtype || w[2]->dtype != w[0]->dtype) {
        b->st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: block %d's q, k and v weights differ in type", b->path, i);
        return;
    }
    const size_t one = w[0]->size;
    uint8_t *joined = galloc(b, 3 * one);
    float *bj = galloc(b, 3 * (size_t)H * sizeof(float));
    if (b->st) {
        mllm_free(joined);
        mllm_free(bj);
        return;
    }
    bool ok = true;
    for (int j = 0; j < 3; j++) {
        memcpy(joined + (size_t)j * one, w[j]->data, one);
        ok = ok && qv_widen(bias[j]->dtype, bias[j]->data, H, 1, bj + (size_t)j * H);
    }
    if (!ok) {
        mllm_free(joined);
        mllm_free(bj);
        b->st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", b->path);
        return;
    }
    *L = (qv_linear){.w = joined, .own = joined, .dtype = w[0]->dtype, .row_bytes = one / (size_t)H, .n_in = H,
                     .n_out = 3 * H, .b = bj};
}

/* The Conv3d kernel [H, 3, T, P, P] (as the flat patches of
   image/qwen2vl_pre.h order it) from T Conv2d kernels [H, 3, P, P]. */
static void gpatch(gbinder *b, qv_linear *L, const mllm_qwen2vl_vision_config *c) {
    const int64_t H = c->hidden, P = c->patch, T = c->temporal, pd = 3 * T * P * P;
    const mllm_gguf_tensor *k[8] = {0};
    for (int t = 0; t < T; t++) {
        char n[64];
        snprintf(n, sizeof n, t ? "v.patch_embd.weight.%d" : "v.patch_embd.weight", t);
        k[t] = gfind(b, n, P, P, 3, H);
    }
    float *w = galloc(b, (size_t)(H * pd) * sizeof(float));
    float *kt = galloc(b, (size_t)(H * 3 * P * P) * sizeof(float)); /* one frame's kernel: H rows of 3 x P x P */
    for (int t = 0; !b->st && t < T; t++) {
        if (!qv_widen(k[t]->dtype, k[t]->data, 3 * P * P, H, kt)) {
            b->st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", b->path);
            break;
        }
        for (int64_t o = 0; o < H; o++)
            for (int ch = 0; ch < 3; ch++)
                memcpy(w + o * pd + (ch * T + t) * P * P, kt + (o * 3 + ch) * P * P, (size_t)(P * P) * sizeof(float));
    }
    mllm_free(kt);
    if (b->st) {
        mllm_free(w);
        return;
    }
    *L = (qv_linear){.w = w, .own = w, .dtype = MLLM_DTYPE_F32, .row_bytes = (size_t)pd * sizeof(float),
                     .n_in = pd, .n_out = H};
}

static bool gint(gbinder *b, const char *key, int64_t lo, int64_t hi, bool required, int dflt, int *out) {
    if (b->st) return false;
    int64_t v;
    if (mllm_gguf_find_key(b->g, key) < 0) {
        if (required) b->st = mllm_err(MLLM_ERR_FORMAT, "%s: %s is missing", b->path, key);
        *out = dflt;
        return !required;
    }
    if (!mllm_gguf_get_i64(b->g, key, &v) || v < lo || v > hi) {
        b->st = mllm_err(MLLM_ERR_FORMAT, "%s: %s is not an integer in [%lld, %lld]", b->path, key, (long long)lo,
                         (long long)hi);
        return false;
    }
    *out = (int)v;
    return true;
}

static bool str_is(const mllm_gguf *g, const char *key, const char *want) {
    mllm_gguf_str s;
    return mllm_gguf_get_str(g, key, &s) && s.len == strlen(want) && !memcmp(s.ptr, want, s.len);
}

static void read_gconfig(gbinder *b, mllm_qwen2vl_vision_config *c, mllm_qwen2vl_pre_params *pp) {
    memset(c, 0, sizeof *c);
    if (!str_is(b->g, "general.architecture", "clip")) {
        b->st = mllm_err(MLLM_ERR_FORMAT, "%s: not an mmproj GGUF (general.architecture is not \"clip\")", b->path);
        return;
    }
    mllm_gguf_str pt = {"?", 1};
    mllm_gguf_get_str(b->g, "clip.projector_type", &pt);
    if (!str_is(b->g, "clip.projector_type", "qwen2.5vl_merger")) {
        b->st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: clip.projector_type '%.*s' (only Qwen2.5-VL's qwen2.5vl_merger "
                                               "is run)", b->path, (int)(pt.len > 64 ? 64 : pt.len), pt.ptr);
        return;
    }
    bool silu = false;
    if (!mllm_gguf_get_bool(b->g, "clip.use_silu", &silu) || !silu) {
        b->st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: clip.use_silu is not true (Qwen2.5-VL's SwiGLU blocks)", b->path);
        return;
    }
    int wa = 0, pmin = 0, pmax = 0;
    gint(b, "clip.vision.block_count", 1, MLLM_QWEN2VL_MAX_DEPTH, true, 0, &c->depth);
    gint(b, "clip.vision.embedding_length", 8, 16384, true, 0, &c->hidden);
    gint(b, "clip.vision.feed_forward_length", 1, 65536, true, 0, &c->intermediate);
    gint(b, "clip.vision.attention.head_count", 1, 256, true, 0, &c->heads);
    gint(b, "clip.vision.projection_dim", 1, 65536, true, 0, &c->out_hidden);
    gint(b, "clip.vision.patch_size", 1, 64, true, 0, &c->patch);
    gint(b, "clip.vision.spatial_merge_size", 1, 8, false, 2, &c->merge);
    gint(b, "clip.vision.window_size", 1, 4096, false, 112, &c->window);
    gint(b, "clip.vision.n_wa_pattern", 0, MLLM_QWEN2VL_MAX_DEPTH, true, 0, &wa);
    gint(b, "clip.vision.image_min_pixels", 0, 1 << 30, false, 3136, &pmin);
    gint(b, "clip.vision.image_max_pixels", 1, 1 << 30, false, 12845056, &pmax);
    if (b->st) return;
    c->temporal = mllm_gguf_find_tensor(b->g, "v.patch_embd.weight.1") ? 2 : 1;
    for (int i = 0; i < c->depth; i++)
        if (wa == 0 || (i + 1) % wa == 0) c->fullatt[c->n_fullatt++] = i; /* 0: every block attends fully */
    c->rope_theta = 10000.0f; /* Qwen2.5-VL's; not stored by the converter */
    float eps = 0;
    if (mllm_gguf_get_f32(b->g, "clip.vision.attention.layer_norm_epsilon", &eps) && !(eps > 0 && eps < 1e-3f)) {
        b->st = mllm_err(MLLM_ERR_FORMAT, "%s: layer_norm_epsilon %g", b->path, eps);
        return;
    }
    if ((b->st = qv_check_config(c, b->path))) return;
    mllm_qwen2vl_pre_defaults(pp);
    pp->patch_size = c->patch;
    pp->merge_size = c->merge;
    pp->temporal_patch_size = 2; /* the still frame is repeated for the kernel's two frames */
    pp->min_pixels = pmin;
    pp->max_pixels = pmax;
    mllm_gguf_type et;
    uint64_t n = 0;
    const void *d;
    for (int k = 0; k < 2; k++) {
        const char *key = k ? "clip.vision.image_std" : "clip.vision.image_mean";
        if (!mllm_gguf_get_arr(b->g, key, &et, &n, &d)) continue;
        double x[3];
        if (n != 3 || !mllm_gguf_arr_f64(b->g, key, 0, &x[0]) || !mllm_gguf_arr_f64(b->g, key, 1, &x[1]) ||
            !mllm_gguf_arr_f64(b->g, key, 2, &x[2]) || (k && !(x[0] > 0 && x[1] > 0 && x[2] > 0))) {
            b->st = mllm_err(MLLM_ERR_FORMAT, "%s: %s is not 3 numbers%s", b->path, key, k ? " above 0" : "");
            return;
        }
        for (int ch = 0; ch < 3; ch++) (k ? pp->std : pp->mean)[ch] = (float)x[ch];
    }
}

/* Binds the opened GGUF g (owned from here on, closed on error). */
static mllm_status open_from(mllm_gguf *g, int n_threads, mllm_qwen2vl_vision **out) {
    const char *path = mllm_gguf_path(g);
    mllm_qwen2vl_vision *v = mllm_calloc(1, sizeof *v);
    if (!v) {
        mllm_gguf_close(g);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    v->gg = g;
    gbinder b = {g, path, MLLM_OK};
    if (!b.st) read_gconfig(&b, &v->c, &v->pre);
    if (!b.st && v->c.temporal != 2)
        b.st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: a patch kernel of %d frame(s) (Qwen2.5-VL's has 2)", path,
                        v->c.temporal);
    const mllm_qwen2vl_vision_config *c = &v->c;
    const int64_t H = c->hidden, F = c->intermediate, M = H * c->merge * c->merge;
    if (!b.st) gpatch(&b, &v->patch, c);
    if (!b.st) v->blocks = mllm_calloc((size_t)c->depth, sizeof *v->blocks);
    if (!b.st && !v->blocks) b.st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
    for (int i = 0; !b.st && i < c->depth; i++) {
        qv_block *k = &v->blocks[i];
        char n[96];
#define NAME(s) (snprintf(n, sizeof n, "v.blk.%d." s, i), n)
        k->norm1 = gvec(&b, NAME("ln1.weight"), H);
        k->norm2 = gvec(&b, NAME("ln2.weight"), H);
        gqkv(&b, &k->qkv, i, H);
        glinear(&b, &k->proj, NAME("attn_out"), H, H);
        glinear(&b, &k->gate, NAME("ffn_gate"), H, F);
        glinear(&b, &k->up, NAME("ffn_up"), H, F);
        glinear(&b, &k->down, NAME("ffn_down"), F, H);
#undef NAME
    }
    v->merge_norm = gvec(&b, "v.post_ln.weight", H);
    glinear(&b, &v->mlp0, "mm.0", M, M);
    glinear(&b, &v->mlp2, "mm.2", M, c->out_hidden);
    if (!b.st) b.st = qv_make_tensors(v);
    if (!b.st && n_threads > 1 && !(v->pool = mllm_pool_new(n_threads)))
        b.st = mllm_err(MLLM_ERR_NOMEM, "cannot start %d threads", n_threads);
    if (b.st) {
        mllm_qwen2vl_vision_free(v);
        return b.st;
    }
    *out = v;
    return MLLM_OK;
}

mllm_status mllm_qwen2vl_vision_open_gguf(const char *path, int n_threads, mllm_qwen2vl_vision **out) {
    if (!out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_qwen2vl_vision_open_gguf: NULL out");
    *out = NULL;
    if (!path || n_threads < 1) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_qwen2vl_vision_open_gguf: bad arguments");
    mllm_gguf *g = NULL;
    mllm_status st = mllm_gguf_open(path, &g);
    return st ? st : open_from(g, n_threads, out);
}

mllm_status mllm_qwen2vl_vision_open_gguf_memory(const void *buf, size_t len, const char *label, int n_threads,
                                                 mllm_qwen2vl_vision **out) {
    if (!out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_qwen2vl_vision_open_gguf_memory: NULL out");
    *out = NULL;
    if (!buf || n_threads < 1) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_qwen2vl_vision_open_gguf_memory: bad arguments");
    mllm_gguf *g = NULL;
    mllm_status st = mllm_gguf_open_memory(buf, len, label ? label : "mmproj", &g);
    return st ? st : open_from(g, n_threads, out);
}
