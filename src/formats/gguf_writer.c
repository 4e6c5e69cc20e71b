/* GGUF v3 writer: metadata is serialised into a byte buffer as it is added;
   tensors are written at write time, from caller memory or a fill callback,
   so a model larger than memory streams through a fixed-size chunk. */
#include "formats/gguf_writer.h"
#include "core/alloc.h"
#include "core/atomic_write.h"
#include "core/dtype.h"
#include "core/error.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GGUF_WRITE_ALIGNMENT 32
#define GGUF_WRITE_CHUNK (4u << 20) /* bytes per fill callback call */

typedef struct {
    char *name;
    int dtype;
    int n_dims;
    int64_t ne[4];
    size_t size;
    uint64_t offset;
    const void *data;
    mllm_gguf_fill_fn fill;
    void *user;
} wtensor;

struct mllm_gguf_writer {
    uint8_t *kv;          /* serialised key/value section */
    size_t kv_len, kv_cap;
    uint64_t n_kv;
    char **keys;          /* (n_kv) for the duplicate check */
    size_t keys_cap;
    wtensor *tensors;
    size_t n_tensors, tensors_cap;
    uint32_t align;       /* tensor data alignment; 0 = GGUF_WRITE_ALIGNMENT */
};

mllm_status mllm_gguf_writer_new(mllm_gguf_writer **out) {
    if (!out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_gguf_writer_new: out is NULL");
    *out = mllm_calloc(1, sizeof **out);
    return *out ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "gguf writer: out of memory");
}

mllm_status mllm_gguf_writer_set_alignment(mllm_gguf_writer *w, uint32_t align) {
    if (!w || !align || (align & (align - 1)) || align > 4096)
        return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: alignment %u is not a power of two up to 4096", align);
    if (w->align) return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: alignment already set");
    mllm_status st = mllm_gguf_writer_add_u32(w, "general.alignment", align);
    if (!st) w->align = align;
    return st;
}

void mllm_gguf_writer_free(mllm_gguf_writer *w) {
    if (!w) return;
    for (uint64_t i = 0; i < w->n_kv; i++) mllm_free(w->keys[i]);
    for (size_t i = 0; i < w->n_tensors; i++) mllm_free(w->tensors[i].name);
    mllm_free(w->keys);
    mllm_free(w->tensors);
    mllm_free(w->kv);
    mllm_free(w);
}

static mllm_status put(mllm_gguf_writer *w, const void *p, size_t n) {
    if (w->kv_len + n > w->kv_cap) {
        size_t cap = w->kv_cap ? w->kv_cap : 4096;
        while (cap < w->kv_len + n) cap *= 2;
        uint8_t *nb = mllm_realloc(w->kv, cap);
        if (!nb) return mllm_err(MLLM_ERR_NOMEM, "gguf writer: out of memory");
        w->kv = nb;
        w->kv_cap = cap;
    }
    memcpy(w->kv + w->kv_len, p, n);
    w->kv_len += n;
    return MLLM_OK;
}

static mllm_status put_u32(mllm_gguf_writer *w, uint32_t v) { return put(w, &v, 4); }
static mllm_status put_u64(mllm_gguf_writer *w, uint64_t v) { return put(w, &v, 8); }
static mllm_status put_str(mllm_gguf_writer *w, const char *s, size_t n) {
    mllm_status st = put_u64(w, n);
    return st ? st : put(w, s, n);
}

/* Registers a new key and writes it with its type; the value follows. */
static mllm_status begin_kv(mllm_gguf_writer *w, const char *key, mllm_gguf_type t) {
    if (!w || !key) return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: NULL argument");
    for (uint64_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->keys[i], key) == 0) return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: duplicate key '%s'", key);
    }
    if (w->n_kv == w->keys_cap) {
        size_t cap = w->keys_cap ? 2 * w->keys_cap : 32;
        char **nk = mllm_realloc(w->keys, cap * sizeof *nk);
        if (!nk) return mllm_err(MLLM_ERR_NOMEM, "gguf writer: out of memory");
        w->keys = nk;
        w->keys_cap = cap;
    }
    char *k = mllm_strndup(key, strlen(key));
    if (!k) return mllm_err(MLLM_ERR_NOMEM, "gguf writer: out of memory");
    w->keys[w->n_kv++] = k;
    mllm_status st = put_str(w, key, strlen(key));
    return st ? st : put_u32(w, (uint32_t)t);
}

static mllm_status add_scalar(mllm_gguf_writer *w, const char *key, mllm_gguf_type t, const void *v, size_t n) {
    mllm_status st = begin_kv(w, key, t);
    return st ? st : put(w, v, n);
}

mllm_status mllm_gguf_writer_add_u8(mllm_gguf_writer *w, const char *k, uint8_t v) { return add_scalar(w, k, MLLM_GGUF_UINT8, &v, 1); }
mllm_status mllm_gguf_writer_add_i8(mllm_gguf_writer *w, const char *k, int8_t v) { return add_scalar(w, k, MLLM_GGUF_INT8, &v, 1); }
mllm_status mllm_gguf_writer_add_u16(mllm_gguf_writer *w, const char *k, uint16_t v) { return add_scalar(w, k, MLLM_GGUF_UINT16, &v, 2); }
mllm_status mllm_gguf_writer_add_i16(mllm_gguf_writer *w, const char *k, int16_t v) { return add_scalar(w, k, MLLM_GGUF_INT16, &v, 2); }
mllm_status mllm_gguf_writer_add_u32(mllm_gguf_writer *w, const char *k, uint32_t v) { return add_scalar(w, k, MLLM_GGUF_UINT32, &v, 4); }
mllm_status mllm_gguf_writer_add_i32(mllm_gguf_writer *w, const char *k, int32_t v) { return add_scalar(w, k, MLLM_GGUF_INT32, &v, 4); }
mllm_status mllm_gguf_writer_add_u64(mllm_gguf_writer *w, const char *k, uint64_t v) { return add_scalar(w, k, MLLM_GGUF_UINT64, &v, 8); }
mllm_status mllm_gguf_writer_add_i64(mllm_gguf_writer *w, const char *k, int64_t v) { return add_scalar(w, k, MLLM_GGUF_INT64, &v, 8); }
mllm_status mllm_gguf_writer_add_f32(mllm_gguf_writer *w, const char *k, float v) { return add_scalar(w, k, MLLM_GGUF_FLOAT32, &v, 4); }
mllm_status mllm_gguf_writer_add_f64(mllm_gguf_writer *w, const char *k, double v) { return add_scalar(w, k, MLLM_GGUF_FLOAT64, &v, 8); }

mllm_status mllm_gguf_writer_add_bool(mllm_gguf_writer *w, const char *k, bool v) {
    uint8_t b = v ? 1 : 0;
    return add_scalar(w, k, MLLM_GGUF_BOOL, &b, 1);
}

mllm_status mllm_gguf_writer_add_strn(mllm_gguf_writer *w, const char *key, const char *v, size_t len) {
    if (!v && len) return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: NULL string for '%s'", key ? key : "?");
    mllm_status st = begin_kv(w, key, MLLM_GGUF_STRING);
    return st ? st : put_str(w, v ? v : "", len);
}

mllm_status mllm_gguf_writer_add_str(mllm_gguf_writer *w, const char *key, const char *v) {
    return mllm_gguf_writer_add_strn(w, key, v, v ? strlen(v) : 0);
}

static size_t elem_size(mllm_gguf_type t) {
    switch (t) {
    case MLLM_GGUF_UINT8: case MLLM_GGUF_INT8: case MLLM_GGUF_BOOL: return 1;
    case MLLM_GGUF_UINT16: case MLLM_GGUF_INT16: return 2;
    case MLLM_GGUF_UINT32: case MLLM_GGUF_INT32: case MLLM_GGUF_FLOAT32: return 4;
    case MLLM_GGUF_UINT64: case MLLM_GGUF_INT64: case MLLM_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

mllm_status mllm_gguf_writer_add_arr(mllm_gguf_writer *w, const char *key, mllm_gguf_type elem,
                                     const void *data, uint64_t n) {
    size_t es = elem_size(elem);
    if (es == 0) return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: '%s': not a numeric element type", key ? key : "?");
    if (n && !data) return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: '%s': NULL array data", key ? key : "?");
    if (n > SIZE_MAX / es) return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: '%s': array too large", key ? key : "?");
    mllm_status st = begin_kv(w, key, MLLM_GGUF_ARRAY);
    if (!st) st = put_u32(w, (uint32_t)elem);
    if (!st) st = put_u64(w, n);
    if (!st && n) st = put(w, data, (size_t)n * es);
    return st;
}

mllm_status mllm_gguf_writer_add_arr_str(mllm_gguf_writer *w, const char *key, const char *const *strs,
                                         const size_t *lens, uint64_t n) {
    if (n && !strs) return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: '%s': NULL string array", key ? key : "?");
    mllm_status st = begin_kv(w, key, MLLM_GGUF_ARRAY);
    if (!st) st = put_u32(w, MLLM_GGUF_STRING);
    if (!st) st = put_u64(w, n);
    for (uint64_t i = 0; i < n && !st; i++) {
        const char *s = strs[i] ? strs[i] : "";
        st = put_str(w, s, lens ? lens[i] : strlen(s));
    }
    return st;
}

static mllm_status add_tensor(mllm_gguf_writer *w, const char *name, int dtype, int n_dims, const int64_t *ne,
                              const void *data, mllm_gguf_fill_fn fill, void *user) {
    if (!w || !name || !ne) return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: NULL argument");
    const mllm_dtype_traits *tr = mllm_dtype_get(dtype);
    if (!tr) return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: tensor '%s': unknown dtype %d", name, dtype);
    if (n_dims < 1 || n_dims > 4) return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: tensor '%s': n_dims %d", name, n_dims);
    for (size_t i = 0; i < w->n_tensors; i++) {
        if (strcmp(w->tensors[i].name, name) == 0) {
            return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: duplicate tensor '%s'", name);
        }
    }
    wtensor t = {.dtype = dtype, .n_dims = n_dims, .ne = {1, 1, 1, 1}, .data = data, .fill = fill, .user = user};
    uint64_t n_el = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] < 0 || (ne[d] && n_el > INT64_MAX / (uint64_t)ne[d])) {
            return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: tensor '%s': bad shape", name);
        }
        t.ne[d] = ne[d];
        n_el *= (uint64_t)ne[d];
    }
    if (ne[0] % tr->block_size != 0) {
        return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: tensor '%s': ne[0]=%lld is not a multiple of %d",
                        name, (long long)ne[0], tr->block_size);
    }
    t.size = (size_t)(n_el / (uint64_t)tr->block_size * tr->type_size);
    if (t.size && !data && !fill) return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: tensor '%s': no data", name);
    if (w->n_tensors == w->tensors_cap) {
        size_t cap = w->tensors_cap ? 2 * w->tensors_cap : 64;
        wtensor *nt = mllm_realloc(w->tensors, cap * sizeof *nt);
        if (!nt) return mllm_err(MLLM_ERR_NOMEM, "gguf writer: out of memory");
        w->tensors = nt;
        w->tensors_cap = cap;
    }
    t.name = mllm_strndup(name, strlen(name));
    if (!t.name) return mllm_err(MLLM_ERR_NOMEM, "gguf writer: out of memory");
    w->tensors[w->n_tensors++] = t;
    return MLLM_OK;
}

mllm_status mllm_gguf_writer_add_tensor(mllm_gguf_writer *w, const char *name, int dtype, int n_dims,
                                        const int64_t *ne, const void *data) {
    return add_tensor(w, name, dtype, n_dims, ne, data, NULL, NULL);
}

mllm_status mllm_gguf_writer_add_tensor_fn(mllm_gguf_writer *w, const char *name, int dtype, int n_dims,
                                           const int64_t *ne, mllm_gguf_fill_fn fill, void *user) {
    if (!fill) return mllm_err(MLLM_ERR_INVALID_ARG, "gguf writer: tensor '%s': NULL fill", name ? name : "?");
    return add_tensor(w, name, dtype, n_dims, ne, NULL, fill, user);
}

static mllm_status fwrite_all(FILE *f, const void *p, size_t n, const char *path) {
    if (n && fwrite(p, 1, n, f) != n) return mllm_err(MLLM_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return MLLM_OK;
}

static mllm_status write_pad(FILE *f, uint64_t *pos, uint32_t align, const char *path) {
    static const uint8_t zeros[4096];
    size_t pad = (size_t)((align - *pos % align) % align);
    *pos += pad;
    return fwrite_all(f, zeros, pad, path);
}

static mllm_status write_tensor_data(FILE *f, const wtensor *t, uint8_t **chunk, const char *path) {
    if (t->data) return fwrite_all(f, t->data, t->size, path);
    if (!*chunk && t->size) {
        *chunk = mllm_malloc(GGUF_WRITE_CHUNK);
        if (!*chunk) return mllm_err(MLLM_ERR_NOMEM, "gguf writer: out of memory");
    }
    for (size_t off = 0; off < t->size; off += GGUF_WRITE_CHUNK) {
        size_t n = t->size - off < GGUF_WRITE_CHUNK ? t->size - off : GGUF_WRITE_CHUNK;
        mllm_status st = t->fill(t->user, *chunk, off, n);
        if (st) return st;
        if ((st = fwrite_all(f, *chunk, n, path))) return st;
    }
    return MLLM_OK;
}

static mllm_status write_body(mllm_gguf_writer *w, FILE *f, const char *path) {
    uint64_t pos = 0, data_off = 0;
    const uint32_t A = w->align ? w->align : GGUF_WRITE_ALIGNMENT;
    mllm_status st = fwrite_all(f, "GGUF", 4, path);
    uint32_t version = 3;
    uint64_t nt = w->n_tensors;
    if (!st) st = fwrite_all(f, &version, 4, path);
    if (!st) st = fwrite_all(f, &nt, 8, path);
    if (!st) st = fwrite_all(f, &w->n_kv, 8, path);
    if (!st) st = fwrite_all(f, w->kv, w->kv_len, path);
    pos = 24 + w->kv_len;
    for (size_t i = 0; i < w->n_tensors && !st; i++) {
        wtensor *t = &w->tensors[i];
        uint64_t len = strlen(t->name);
        uint32_t nd = (uint32_t)t->n_dims, type = (uint32_t)t->dtype;
        t->offset = data_off;
        data_off += (t->size + A - 1) / A * A;
        st = fwrite_all(f, &len, 8, path);
        if (!st) st = fwrite_all(f, t->name, (size_t)len, path);
        if (!st) st = fwrite_all(f, &nd, 4, path);
        for (int d = 0; d < t->n_dims && !st; d++) {
            uint64_t ne = (uint64_t)t->ne[d];
            st = fwrite_all(f, &ne, 8, path);
        }
        if (!st) st = fwrite_all(f, &type, 4, path);
        if (!st) st = fwrite_all(f, &t->offset, 8, path);
        pos += 8 + len + 4 + 8 * (uint64_t)t->n_dims + 4 + 8;
    }
    if (!st) st = write_pad(f, &pos, A, path);
    uint8_t *chunk = NULL;
    for (size_t i = 0; i < w->n_tensors && !st; i++) {
        st = write_tensor_data(f, &w->tensors[i], &chunk, path);
        pos += w->tensors[i].size;
        if (!st) st = write_pad(f, &pos, A, path);
    }
    mllm_free(chunk);
    return st;
}

mllm_status mllm_gguf_writer_write(mllm_gguf_writer *w, const char *path) {
    if (!w || !path) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_gguf_writer_write: NULL argument");
    mllm_atomic_file af;
    mllm_status st = mllm_atomic_open(&af, path);
    if (st) return st;
    return mllm_atomic_commit(&af, write_body(w, af.f, af.tmp));
}
