/* safetensors parser: the JSON header is parsed with cJSON; each entry's
   dtype, shape and data_offsets are checked (integral, in range, matching
   byte count, inside the file, not overlapping) before a view is made. */
#include "formats/safetensors.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/file_map.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Headers are a few hundred KB even for big models; this bounds the parse. */
#define ST_MAX_HEADER (100u << 20)
/* JSON numbers are doubles: integers above 2^53 are not exact. */
#define ST_MAX_JSON_INT 9007199254740992.0

struct mllm_safetensors {
    char *path;
    const uint8_t *base;
    size_t size;
    bool mapped;
    mllm_st_tensor *tensors;
    size_t n_tensors;
};

typedef struct { uint64_t begin, end; size_t index; } span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static bool json_u64(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return false;
    double d = j->valuedouble;
    if (!(d >= 0 && d <= ST_MAX_JSON_INT) || d != (double)(uint64_t)d) return false;
    *out = (uint64_t)d;
    return true;
}

static mllm_status parse_dtype(const mllm_safetensors *s, const char *name, const cJSON *dt, int *out,
                               size_t *elsize) {
    if (!cJSON_IsString(dt)) return mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%s': dtype is not a string", s->path, name);
    const char *v = dt->valuestring;
    if (!strcmp(v, "F32")) { *out = MLLM_DTYPE_F32; *elsize = 4; return MLLM_OK; }
    if (!strcmp(v, "F16")) { *out = MLLM_DTYPE_F16; *elsize = 2; return MLLM_OK; }
    if (!strcmp(v, "BF16")) { *out = MLLM_DTYPE_BF16; *elsize = 2; return MLLM_OK; }
    /* Integer buffers (BERT's embeddings.position_ids) are listed, never computed with. */
    if (!strcmp(v, "I32")) { *out = MLLM_DTYPE_I32; *elsize = 4; return MLLM_OK; }
    if (!strcmp(v, "I64")) { *out = MLLM_DTYPE_I64; *elsize = 8; return MLLM_OK; }
    return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %.16s (only F32, F16, BF16, I32 and I64 are supported)",
                    s->path, name, v);
}

static mllm_status parse_entry(mllm_safetensors *s, const cJSON *e, uint64_t data_len, mllm_st_tensor *t,
                               span *sp) {
    const char *name = e->string;
    if (!cJSON_IsObject(e)) return mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%s' is not a JSON object", s->path, name);
    size_t elsize = 0;
    mllm_status st = parse_dtype(s, name, cJSON_GetObjectItemCaseSensitive(e, "dtype"), &t->dtype, &elsize);
    if (st) return st;
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    if (!cJSON_IsArray(shape)) return mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%s': shape is not an array", s->path, name);
    int nd = cJSON_GetArraySize(shape);
    if (nd > MLLM_ST_MAX_DIMS)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: tensor '%s' has %d dimensions (at most %d)", s->path, name, nd,
                        MLLM_ST_MAX_DIMS);
    uint64_t n_el = 1;
    t->n_dims = nd < 4 ? nd : 4;
    t->src_dims = nd;
    int64_t fold = 1;
    for (int d = 0; d < 4; d++) t->ne[d] = 1;
    for (int d = 0; d < nd; d++) {
        uint64_t v;
        if (!json_u64(cJSON_GetArrayItem(shape, d), &v)) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%s': shape[%d] is not a non-negative integer", s->path, name, d);
        }
        if (v && n_el > UINT64_MAX / v / elsize) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%s': shape overflows", s->path, name);
        }
        n_el *= v;
        /* dims past the 4th (a Conv3d kernel: out, in, t, h, w) fold into ne[3] */
        if (nd - 1 - d < 4) t->ne[nd - 1 - d] = (int64_t)v;
        else fold *= (int64_t)v;
    }
    t->ne[3] *= fold;
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    uint64_t b = 0, en = 0;
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || !json_u64(cJSON_GetArrayItem(offs, 0), &b) ||
        !json_u64(cJSON_GetArrayItem(offs, 1), &en) || b > en) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%s': data_offsets must be [begin, end] with begin <= end",
                        s->path, name);
    }
    if (en > data_len) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] are past the end of the file",
                        s->path, name, (unsigned long long)b, (unsigned long long)en);
    }
    if (en - b != n_el * elsize) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%s': data_offsets span %llu bytes, shape needs %llu", s->path,
                        name, (unsigned long long)(en - b), (unsigned long long)(n_el * elsize));
    }
    t->size = (size_t)(en - b);
    sp->begin = b;
    sp->end = en;
    t->name = mllm_strndup(name, strlen(name));
    if (!t->name) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", s->path);
    return MLLM_OK;
}

static mllm_status parse_tensors(mllm_safetensors *s, const cJSON *root, size_t data_start) {
    size_t n = 0;
    for (const cJSON *e = root->child; e; e = e->next) n += strcmp(e->string, "__metadata__") != 0;
    s->tensors = mllm_calloc(n ? n : 1, sizeof *s->tensors);
    span *spans = mllm_malloc((n ? n : 1) * sizeof *spans);
    if (!s->tensors || !spans) {
        mllm_free(spans);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", s->path);
    }
    mllm_status st = MLLM_OK;
    uint64_t data_len = s->size - data_start;
    for (const cJSON *e = root->child; e && !st; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) continue;
        if (mllm_safetensors_find(s, e->string)) {
            st = mllm_err(MLLM_ERR_FORMAT, "%s: duplicate tensor name '%s'", s->path, e->string);
            break;
        }
        mllm_st_tensor *t = &s->tensors[s->n_tensors];
        spans[s->n_tensors].index = s->n_tensors;
        st = parse_entry(s, e, data_len, t, &spans[s->n_tensors]);
        if (!st) {
            t->data = s->base + data_start + spans[s->n_tensors].begin;
            s->n_tensors++;
        } else {
            mllm_free(t->name);
            t->name = NULL;
        }
    }
    if (!st) {
        qsort(spans, s->n_tensors, sizeof *spans, cmp_span);
        for (size_t i = 1; i < s->n_tensors && !st; i++) {
            if (spans[i].begin < spans[i - 1].end) {
                st = mllm_err(MLLM_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap", s->path,
                              s->tensors[spans[i - 1].index].name, s->tensors[spans[i].index].name);
            }
        }
    }
    mllm_free(spans);
    return st;
}

static mllm_status parse(mllm_safetensors *s) {
    uint64_t hlen = 0;
    if (s->size < 8) return mllm_err(MLLM_ERR_FORMAT, "%s: file too short for a safetensors header", s->path);
    memcpy(&hlen, s->base, 8);
    /* Safetensors has no magic: these 8 bytes may be any file's (a shard
       symlinked to a secret), so the value is never printed. */
    if (hlen > s->size - 8) {
        return mllm_err(MLLM_ERR_FORMAT,
                        "%s: not a safetensors file (the header length in its first 8 bytes is past the end of "
                        "its %zu bytes)", s->path, s->size);
    }
    if (hlen > ST_MAX_HEADER)
        return mllm_err(MLLM_ERR_FORMAT, "%s: header length is over the %u-byte limit", s->path, (unsigned)ST_MAX_HEADER);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts((const char *)s->base + 8, (size_t)hlen, &end, false);
    if (!root) return mllm_err(MLLM_ERR_FORMAT, "%s: header is not valid JSON", s->path);
    mllm_status st = MLLM_OK;
    if (!cJSON_IsObject(root)) {
        st = mllm_err(MLLM_ERR_FORMAT, "%s: header is not a JSON object", s->path);
    } else {
        st = parse_tensors(s, root, 8 + (size_t)hlen);
    }
    cJSON_Delete(root);
    return st;
}

static mllm_status finish(mllm_safetensors *s, mllm_safetensors **out) {
    mllm_status st = parse(s);
    if (st) {
        mllm_safetensors_close(s);
        return st;
    }
    *out = s;
    return MLLM_OK;
}

mllm_status mllm_safetensors_open_memory(const void *buf, size_t len, const char *label, mllm_safetensors **out) {
    if (!out || (!buf && len)) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_safetensors_open_memory: NULL argument");
    *out = NULL;
    if (!label) label = "<memory>";
    mllm_safetensors *s = mllm_calloc(1, sizeof *s);
    if (!s || !(s->path = mllm_strndup(label, strlen(label)))) {
        mllm_free(s);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
    }
    s->base = buf;
    s->size = len;
    return finish(s, out);
}

mllm_status mllm_safetensors_open(const char *path, mllm_safetensors **out) {
    if (!out || !path) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_safetensors_open: NULL argument");
    *out = NULL;
    void *p = NULL;
    size_t map_size = 0;
    mllm_status mst = mllm_file_map(path, 8, "not a safetensors file (shorter than its 8-byte header length)", &p,
                                    &map_size);
    if (mst != MLLM_OK) return mst;
    mllm_safetensors *s = mllm_calloc(1, sizeof *s);
    if (!s || !(s->path = mllm_strndup(path, strlen(path)))) {
        mllm_free(s);
        mllm_file_unmap(p, map_size);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    }
    s->base = p;
    s->size = map_size;
    s->mapped = true;
    return finish(s, out);
}

bool mllm_safetensors_damaged(const mllm_safetensors *s) {
    return s && s->mapped && mllm_file_map_damaged(s->base);
}

void mllm_safetensors_close(mllm_safetensors *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n_tensors; i++) mllm_free(s->tensors[i].name);
    mllm_free(s->tensors);
    if (s->mapped) mllm_file_unmap((void *)s->base, s->size);
    mllm_free(s->path);
    mllm_free(s);
}

size_t mllm_safetensors_n_tensors(const mllm_safetensors *s) { return s ? s->n_tensors : 0; }

const mllm_st_tensor *mllm_safetensors_tensor_at(const mllm_safetensors *s, size_t i) {
    return s && i < s->n_tensors ? &s->tensors[i] : NULL;
}

const mllm_st_tensor *mllm_safetensors_find(const mllm_safetensors *s, const char *name) {
    if (!s || !name) return NULL;
    for (size_t i = 0; i < s->n_tensors; i++) {
        if (!strcmp(s->tensors[i].name, name)) return &s->tensors[i];
    }
    return NULL;
}
