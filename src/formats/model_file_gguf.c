/* GGUF -> mllm_model_file: every metadata key into the generic metadata (the
   tokenizer's long arrays by length only: the tokenizer reads them from the
   GGUF itself) and the tensors as zero-copy weights. */
#include "formats/model_file_internal.h"
#include "formats/gguf.h"
#include "core/alloc.h"
#include "core/error.h"
#include <stdio.h>
#include <string.h>

static bool is_int(mllm_gguf_type t) {
    return t == MLLM_GGUF_UINT8 || t == MLLM_GGUF_INT8 || t == MLLM_GGUF_UINT16 || t == MLLM_GGUF_INT16 ||
           t == MLLM_GGUF_UINT32 || t == MLLM_GGUF_INT32 || t == MLLM_GGUF_UINT64 || t == MLLM_GGUF_INT64;
}

static mllm_status copy_array(const mllm_gguf *g, const char *key, mllm_meta *m) {
    mllm_gguf_type et;
    uint64_t n;
    if (!mllm_gguf_get_arr(g, key, &et, &n, NULL)) return MLLM_OK;
    if (n > MLLM_META_MAX_ARRAY || (et != MLLM_GGUF_STRING && !is_int(et) && et != MLLM_GGUF_FLOAT32 &&
                                    et != MLLM_GGUF_FLOAT64 && et != MLLM_GGUF_BOOL))
        return mllm_meta_set_arr_len(m, key, (size_t)n);
    mllm_status st;
    if (et == MLLM_GGUF_STRING) {
        const char **s = mllm_calloc(n ? n : 1, sizeof *s);
        size_t *lens = mllm_calloc(n ? n : 1, sizeof *lens);
        st = s && lens ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "out of memory (metadata)");
        for (uint64_t i = 0; i < n && !st; i++) {
            mllm_gguf_str v;
            if (!mllm_gguf_get_arr_str(g, key, i, &v)) break;
            s[i] = v.ptr;
            lens[i] = (size_t)v.len;
        }
        if (!st) st = mllm_meta_set_arr_str(m, key, s, lens, (size_t)n);
        mllm_free(s);
        mllm_free(lens);
        return st;
    }
    double *v = mllm_malloc((n ? n : 1) * sizeof *v);
    if (!v) return mllm_err(MLLM_ERR_NOMEM, "out of memory (metadata)");
    for (uint64_t i = 0; i < n; i++) {
        int64_t iv;
        if (!mllm_gguf_arr_f64(g, key, i, &v[i])) v[i] = mllm_gguf_arr_i64(g, key, i, &iv) ? (double)iv : 0;
    }
    st = mllm_meta_set_arr_num(m, key, v, (size_t)n);
    mllm_free(v);
    return st;
}

static mllm_status read_meta(const mllm_gguf *g, const char *path, mllm_meta *m) {
    char key[MLLM_META_MAX_KEY + 1];
    for (uint64_t i = 0; i < mllm_gguf_n_kv(g); i++) {
        mllm_gguf_str k = mllm_gguf_kv_key(g, i);
        if (k.len > MLLM_META_MAX_KEY || memchr(k.ptr, 0, (size_t)k.len))
            return mllm_err(MLLM_ERR_FORMAT, "%s: metadata key %llu is too long or holds a NUL byte", path,
                            (unsigned long long)i);
        memcpy(key, k.ptr, (size_t)k.len);
        key[k.len] = 0;
        mllm_gguf_type t = mllm_gguf_kv_type(g, i);
        mllm_status st = MLLM_OK;
        int64_t iv;
        float fv;
        bool bv;
        mllm_gguf_str sv;
        if (is_int(t) && mllm_gguf_get_i64(g, key, &iv)) st = mllm_meta_set_int(m, key, iv);
        else if (t == MLLM_GGUF_UINT64) st = mllm_meta_set_float(m, key, 1.8446744073709552e19); /* > INT64_MAX */
        else if ((t == MLLM_GGUF_FLOAT32 || t == MLLM_GGUF_FLOAT64) && mllm_gguf_get_f32(g, key, &fv))
            st = mllm_meta_set_float(m, key, fv);
        else if (t == MLLM_GGUF_BOOL && mllm_gguf_get_bool(g, key, &bv)) st = mllm_meta_set_bool(m, key, bv);
        else if (t == MLLM_GGUF_STRING && mllm_gguf_get_str(g, key, &sv))
            st = mllm_meta_set_str(m, key, sv.ptr, (size_t)sv.len);
        else if (t == MLLM_GGUF_ARRAY) st = copy_array(g, key, m);
        if (st) return st;
    }
    return MLLM_OK;
}

mllm_status mllm_model_file_open_gguf(mllm_model_file *f) {
    mllm_status st = mllm_gguf_open(f->path, &f->gguf);
    if (st) return st;
    if ((st = read_meta(f->gguf, f->path, &f->meta))) return st;
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
