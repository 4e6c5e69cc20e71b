/* GGUF -> mllm_model_file: every metadata key into the generic metadata (the
   tokenizer's long arrays by length only: the tokenizer reads them from the
   GGUF itself) and the tensors as zero-copy weights. */
#include "formats/model_file_internal.h"
#include "formats/gguf.h"
#include "core/alloc.h"
#include "core/error.h"
#include <stdio.h>
#include <string.h>

/* More split files than this is refused (llama.cpp's gguf-split writes at
   most 99999; real models: a handful). */
#define MLLM_GGUF_MAX_SPLITS 1024

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

static mllm_status add_tensors(mllm_model_file *f, const mllm_gguf *g, const char *path) {
    char name[256];
    for (uint64_t i = 0; i < mllm_gguf_n_tensors(g); i++) {
        const mllm_gguf_tensor *t = mllm_gguf_tensor_at(g, i);
        if (t->name.len >= sizeof name) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: tensor name of %llu bytes is too long", path,
                            (unsigned long long)t->name.len);
        }
        memcpy(name, t->name.ptr, (size_t)t->name.len);
        name[t->name.len] = 0;
        if (mllm_model_file_find(f, name))
            return mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%s' is in two split files", path, name);
        mllm_status st = mllm_model_file_add_weight(f, name, t->dtype, (int)t->n_dims, t->ne, t->data, t->size);
        if (st) return st;
        mllm_model_file_mark_mapped(f);
    }
    return MLLM_OK;
}

/* The split keys of one file (llama.cpp's gguf-split: split.no counts from
   0, split.count files in all, split.tensors.count tensors in all). */
static mllm_status split_keys(const mllm_gguf *g, const char *path, int64_t *no, int64_t *count, int64_t *tensors) {
    if (!mllm_gguf_get_i64(g, "split.no", no) || !mllm_gguf_get_i64(g, "split.count", count) ||
        !mllm_gguf_get_i64(g, "split.tensors.count", tensors))
        return mllm_err(MLLM_ERR_FORMAT, "%s: a split GGUF needs integer keys split.no, split.count and "
                                         "split.tensors.count", path);
    if (*count < 1 || *count > MLLM_GGUF_MAX_SPLITS || *no < 0 || *no >= *count || *tensors < 0)
        return mllm_err(MLLM_ERR_FORMAT, "%s: split.no %lld / split.count %lld is out of range (at most %d files)",
                        path, (long long)*no, (long long)*count, MLLM_GGUF_MAX_SPLITS);
    return MLLM_OK;
}

/* "<prefix>-00001-of-00003.gguf": the other files' names come from the
   first's, as llama.cpp names them (llama_split_path). */
static mllm_status open_splits(mllm_model_file *f) {
    int64_t no, count, total;
    mllm_status st = split_keys(f->gguf, f->path, &no, &count, &total);
    if (st) return st;
    const size_t n = strlen(f->path), tail = strlen("-00001-of-00000.gguf");
    char want[32];
    snprintf(want, sizeof want, "-%05d-of-%05d.gguf", 1, (int)count);
    if (no != 0 || n < tail || strcmp(f->path + n - tail, want) != 0)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: file %lld of a %lld-file split GGUF: open the first one, "
                                              "named ...%s", f->path, (long long)no + 1, (long long)count, want);
    mllm_model_file_priv *p = f->priv;
    p->splits = mllm_calloc((size_t)count, sizeof *p->splits);
    char *path = mllm_malloc(n + 32);
    if (!p->splits || !path) {
        mllm_free(path);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", f->path);
    }
    for (int64_t i = 1; i < count && !st; i++) {
        memcpy(path, f->path, n - tail);
        snprintf(path + n - tail, tail + 32, "-%05d-of-%05d.gguf", (int)(i + 1) % 100000, (int)count % 100000);
        mllm_gguf *g = NULL;
        if ((st = mllm_gguf_open(path, &g))) break;
        p->splits[p->n_splits++] = g;
        int64_t no_i, count_i, total_i;
        if ((st = split_keys(g, path, &no_i, &count_i, &total_i))) break;
        if (no_i != i || count_i != count || total_i != total)
            st = mllm_err(MLLM_ERR_FORMAT, "%s: split keys say file %lld of %lld (%lld tensors), expected file %lld "
                                           "of %lld (%lld tensors)", path, (long long)no_i + 1, (long long)count_i,
                          (long long)total_i, (long long)i + 1, (long long)count, (long long)total);
        if (!st) st = add_tensors(f, g, path);
    }
    mllm_free(path);
    if (!st && (int64_t)f->n_weights != total)
        st = mllm_err(MLLM_ERR_FORMAT, "%s: the %lld split files hold %zu tensors, split.tensors.count says %lld",
                      f->path, (long long)count, f->n_weights, (long long)total);
    return st;
}

mllm_status mllm_model_file_open_gguf(mllm_model_file *f) {
    mllm_status st = mllm_gguf_open(f->path, &f->gguf);
    if (st) return st;
    if ((st = read_meta(f->gguf, f->path, &f->meta))) return st;
    if ((st = add_tensors(f, f->gguf, f->path))) return st;
    int64_t count = 1;
    if (mllm_gguf_find_key(f->gguf, "split.count") >= 0 && (!mllm_gguf_get_i64(f->gguf, "split.count", &count) || count != 1))
        return open_splits(f);
    return MLLM_OK;
}
