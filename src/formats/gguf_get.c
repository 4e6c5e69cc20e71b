/* Typed access to GGUF metadata and the tensor table. All bounds were
   checked at open, so these only convert types. */
#include "formats/gguf_internal.h"
#include <string.h>

uint32_t mllm_gguf_version(const mllm_gguf *g) { return g ? g->version : 0; }
uint64_t mllm_gguf_n_kv(const mllm_gguf *g) { return g ? g->n_kv : 0; }
uint64_t mllm_gguf_n_tensors(const mllm_gguf *g) { return g ? g->n_tensors : 0; }
const char *mllm_gguf_path(const mllm_gguf *g) { return g ? g->path : NULL; }
size_t mllm_gguf_file_size(const mllm_gguf *g) { return g ? g->size : 0; }

mllm_gguf_str mllm_gguf_kv_key(const mllm_gguf *g, uint64_t i) {
    mllm_gguf_str none = {"", 0};
    return g && i < g->n_kv ? g->kv[i].key : none;
}

mllm_gguf_type mllm_gguf_kv_type(const mllm_gguf *g, uint64_t i) {
    return g && i < g->n_kv ? g->kv[i].type : (mllm_gguf_type)-1;
}

const mllm_gguf_tensor *mllm_gguf_tensor_at(const mllm_gguf *g, uint64_t i) {
    return g && i < g->n_tensors ? &g->tensors[i] : NULL;
}

/* Integer value of a scalar of any integer type at p (false for other
   types). A u64 also comes back whole in *u with *is_unsigned set, so the
   callers can tell a value too large for int64. */
static bool read_int(mllm_gguf_type t, const uint8_t *p, int64_t *v, uint64_t *u, bool *is_unsigned) {
    *is_unsigned = false;
    switch (t) {
    case MLLM_GGUF_UINT8: { uint8_t x; memcpy(&x, p, 1); *v = x; return true; }
    case MLLM_GGUF_INT8: { int8_t x; memcpy(&x, p, 1); *v = x; return true; }
    case MLLM_GGUF_UINT16: { uint16_t x; memcpy(&x, p, 2); *v = x; return true; }
    case MLLM_GGUF_INT16: { int16_t x; memcpy(&x, p, 2); *v = x; return true; }
    case MLLM_GGUF_UINT32: { uint32_t x; memcpy(&x, p, 4); *v = x; return true; }
    case MLLM_GGUF_INT32: { int32_t x; memcpy(&x, p, 4); *v = x; return true; }
    case MLLM_GGUF_INT64: { int64_t x; memcpy(&x, p, 8); *v = x; return true; }
    case MLLM_GGUF_UINT64: {
        memcpy(u, p, 8);
        *is_unsigned = true;
        *v = *u > INT64_MAX ? INT64_MAX : (int64_t)*u;
        return true;
    }
    default: return false;
    }
}

static bool read_f64(mllm_gguf_type t, const uint8_t *p, double *out) {
    if (t == MLLM_GGUF_FLOAT32) { float x; memcpy(&x, p, 4); *out = x; return true; }
    if (t == MLLM_GGUF_FLOAT64) { double x; memcpy(&x, p, 8); *out = x; return true; }
    int64_t v; uint64_t u; bool uns;
    if (!read_int(t, p, &v, &u, &uns)) return false;
    *out = uns ? (double)u : (double)v;
    return true;
}

bool mllm_gguf_get_u32(const mllm_gguf *g, const char *key, uint32_t *out) {
    const mllm_gguf_kv *kv = mllm_gguf_kv_find(g, key);
    int64_t v; uint64_t u; bool uns;
    if (!kv || !read_int(kv->type, kv->val, &v, &u, &uns)) return false;
    if (uns ? u > UINT32_MAX : (v < 0 || v > (int64_t)UINT32_MAX)) return false;
    if (out) *out = uns ? (uint32_t)u : (uint32_t)v;
    return true;
}

bool mllm_gguf_get_i64(const mllm_gguf *g, const char *key, int64_t *out) {
    const mllm_gguf_kv *kv = mllm_gguf_kv_find(g, key);
    int64_t v; uint64_t u; bool uns;
    if (!kv || !read_int(kv->type, kv->val, &v, &u, &uns)) return false;
    if (uns && u > INT64_MAX) return false;
    if (out) *out = v;
    return true;
}

bool mllm_gguf_get_f32(const mllm_gguf *g, const char *key, float *out) {
    const mllm_gguf_kv *kv = mllm_gguf_kv_find(g, key);
    double d;
    if (!kv || !read_f64(kv->type, kv->val, &d)) return false;
    if (out) *out = (float)d;
    return true;
}

bool mllm_gguf_get_bool(const mllm_gguf *g, const char *key, bool *out) {
    const mllm_gguf_kv *kv = mllm_gguf_kv_find(g, key);
    if (!kv || kv->type != MLLM_GGUF_BOOL) return false;
    if (out) *out = kv->val[0] != 0;
    return true;
}

bool mllm_gguf_get_str(const mllm_gguf *g, const char *key, mllm_gguf_str *out) {
    const mllm_gguf_kv *kv = mllm_gguf_kv_find(g, key);
    if (!kv || kv->type != MLLM_GGUF_STRING) return false;
    if (out) {
        uint64_t len;
        memcpy(&len, kv->val, 8);
        out->len = len;
        out->ptr = (const char *)kv->val + 8;
    }
    return true;
}

bool mllm_gguf_get_arr(const mllm_gguf *g, const char *key, mllm_gguf_type *elem, uint64_t *n,
                       const void **data) {
    const mllm_gguf_kv *kv = mllm_gguf_kv_find(g, key);
    if (!kv || kv->type != MLLM_GGUF_ARRAY) return false;
    if (elem) *elem = kv->elem;
    if (n) *n = kv->n;
    if (data) *data = kv->val + 12; /* after element type u32 + count u64 */
    return true;
}

bool mllm_gguf_get_arr_str(const mllm_gguf *g, const char *key, uint64_t i, mllm_gguf_str *out) {
    const mllm_gguf_kv *kv = mllm_gguf_kv_find(g, key);
    if (!kv || kv->type != MLLM_GGUF_ARRAY || kv->elem != MLLM_GGUF_STRING || i >= kv->n) return false;
    if (out) *out = kv->strs[i];
    return true;
}

static const uint8_t *num_elem(const mllm_gguf *g, const char *key, uint64_t i, mllm_gguf_type *t) {
    const mllm_gguf_kv *kv = mllm_gguf_kv_find(g, key);
    if (!kv || kv->type != MLLM_GGUF_ARRAY || i >= kv->n) return NULL;
    size_t es = mllm_gguf_type_size(kv->elem);
    if (es == 0) return NULL;
    *t = kv->elem;
    return kv->val + 12 + i * es;
}

bool mllm_gguf_arr_f64(const mllm_gguf *g, const char *key, uint64_t i, double *out) {
    mllm_gguf_type t;
    const uint8_t *p = num_elem(g, key, i, &t);
    double d;
    if (!p || t == MLLM_GGUF_BOOL || !read_f64(t, p, &d)) return false;
    if (out) *out = d;
    return true;
}

bool mllm_gguf_arr_i64(const mllm_gguf *g, const char *key, uint64_t i, int64_t *out) {
    mllm_gguf_type t;
    const uint8_t *p = num_elem(g, key, i, &t);
    int64_t v; uint64_t u; bool uns;
    if (!p) return false;
    if (t == MLLM_GGUF_BOOL) {
        if (out) *out = p[0] != 0;
        return true;
    }
    if (!read_int(t, p, &v, &u, &uns) || (uns && u > INT64_MAX)) return false;
    if (out) *out = v;
    return true;
}
