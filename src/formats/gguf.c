/* GGUF v2/v3 parser. Every count, length and offset read from the file is
   checked against the bytes that remain before it is used, so a truncated or
   hostile file gives one error line "<path>: <problem> (offset N)" and never
   a crash. Multi-byte fields are little-endian; the host is assumed to be
   little-endian too (x86-64, arm64), values are read with memcpy because
   nothing in a GGUF header is aligned. */
#include "formats/gguf_internal.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/file_map.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4
/* Smallest possible encodings, used to bound counts before allocating. */
#define GGUF_MIN_KV_BYTES 13     /* key len u64 + type u32 + 1 value byte */
#define GGUF_MIN_TENSOR_BYTES 24 /* name len u64 + n_dims u32 + type u32 + offset u64 */

typedef struct {
    const uint8_t *base;
    size_t size;
    size_t off;
    const char *path;
} cursor;

static mllm_status bad(const cursor *c, size_t off, const char *problem) {
    return mllm_err(MLLM_ERR_FORMAT, "%s: %s (offset %zu)", c->path, problem, off);
}

static size_t remaining(const cursor *c) { return c->size - c->off; }

static mllm_status rd(cursor *c, void *dst, size_t n, const char *what) {
    if (remaining(c) < n) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: file truncated while reading %s (offset %zu)",
                        c->path, what, c->off);
    }
    memcpy(dst, c->base + c->off, n);
    c->off += n;
    return MLLM_OK;
}

static mllm_status rd_u32(cursor *c, uint32_t *v, const char *what) { return rd(c, v, 4, what); }
static mllm_status rd_u64(cursor *c, uint64_t *v, const char *what) { return rd(c, v, 8, what); }

static mllm_status rd_str(cursor *c, mllm_gguf_str *s, const char *what) {
    size_t at = c->off;
    uint64_t len = 0;
    mllm_status st = rd_u64(c, &len, what);
    if (st) return st;
    if (len > remaining(c)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: %s length %llu is past the end of the file (offset %zu)",
                        c->path, what, (unsigned long long)len, at);
    }
    s->ptr = (const char *)(c->base + c->off);
    s->len = len;
    c->off += (size_t)len;
    return MLLM_OK;
}

size_t mllm_gguf_type_size(mllm_gguf_type t) {
    switch (t) {
    case MLLM_GGUF_UINT8: case MLLM_GGUF_INT8: case MLLM_GGUF_BOOL: return 1;
    case MLLM_GGUF_UINT16: case MLLM_GGUF_INT16: return 2;
    case MLLM_GGUF_UINT32: case MLLM_GGUF_INT32: case MLLM_GGUF_FLOAT32: return 4;
    case MLLM_GGUF_UINT64: case MLLM_GGUF_INT64: case MLLM_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

uint64_t mllm_gguf_hash(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

static mllm_status index_init(mllm_gguf_index *ix, uint64_t n) {
    uint64_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    ix->slots = mllm_calloc((size_t)cap, sizeof *ix->slots);
    if (!ix->slots) return mllm_err(MLLM_ERR_NOMEM, "out of memory for a GGUF index of %llu names",
                                    (unsigned long long)n);
    ix->mask = cap - 1;
    return MLLM_OK;
}

/* Inserts item `i` named `name`; false if the name is already present.
   `name_of(items, j)` returns the name of item j. */
static bool index_insert(mllm_gguf_index *ix, mllm_gguf_str name, uint64_t i,
                         mllm_gguf_str (*name_of)(const void *, uint64_t), const void *items) {
    uint64_t h = mllm_gguf_hash(name.ptr, (size_t)name.len) & ix->mask;
    while (ix->slots[h]) {
        mllm_gguf_str o = name_of(items, ix->slots[h] - 1);
        if (o.len == name.len && memcmp(o.ptr, name.ptr, (size_t)name.len) == 0) return false;
        h = (h + 1) & ix->mask;
    }
    ix->slots[h] = i + 1;
    return true;
}

static int64_t index_find(const mllm_gguf_index *ix, const char *name,
                          mllm_gguf_str (*name_of)(const void *, uint64_t), const void *items) {
    if (!ix->slots || !name) return -1;
    size_t n = strlen(name);
    uint64_t h = mllm_gguf_hash(name, n) & ix->mask;
    while (ix->slots[h]) {
        mllm_gguf_str o = name_of(items, ix->slots[h] - 1);
        if (o.len == n && memcmp(o.ptr, name, n) == 0) return (int64_t)(ix->slots[h] - 1);
        h = (h + 1) & ix->mask;
    }
    return -1;
}

static mllm_gguf_str kv_name(const void *items, uint64_t i) { return ((const mllm_gguf_kv *)items)[i].key; }
static mllm_gguf_str tensor_name(const void *items, uint64_t i) {
    return ((const mllm_gguf_tensor *)items)[i].name;
}

/* Reads one value of type `t` (not an array); for strings only checks bounds. */
static mllm_status skip_scalar(cursor *c, mllm_gguf_type t, const char *what) {
    if (t == MLLM_GGUF_STRING) {
        mllm_gguf_str s;
        return rd_str(c, &s, what);
    }
    size_t n = mllm_gguf_type_size(t);
    if (remaining(c) < n) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: file truncated while reading %s (offset %zu)",
                        c->path, what, c->off);
    }
    c->off += n;
    return MLLM_OK;
}

static bool type_known(uint32_t t) { return t <= MLLM_GGUF_FLOAT64; }

static mllm_status parse_array(cursor *c, mllm_gguf_kv *kv) {
    size_t at = c->off;
    uint32_t et = 0;
    uint64_t n = 0;
    mllm_status st = rd_u32(c, &et, "array element type");
    if (st) return st;
    if (!type_known(et)) return bad(c, at, "unknown array element type");
    if (et == MLLM_GGUF_ARRAY) return bad(c, at, "nested arrays are not supported");
    if ((st = rd_u64(c, &n, "array count"))) return st;
    /* Every element takes at least 8 bytes (string) or its fixed size. */
    size_t min = et == MLLM_GGUF_STRING ? 8 : mllm_gguf_type_size((mllm_gguf_type)et);
    if (n > remaining(c) / min) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: array count %llu does not fit in the file (offset %zu)",
                        c->path, (unsigned long long)n, at + 4);
    }
    kv->elem = (mllm_gguf_type)et;
    kv->n = n;
    if (et != MLLM_GGUF_STRING) {
        c->off += (size_t)(n * min);
        return MLLM_OK;
    }
    kv->strs = mllm_malloc((size_t)(n ? n : 1) * sizeof *kv->strs);
    if (!kv->strs) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory for a string array", c->path);
    for (uint64_t i = 0; i < n; i++) {
        if ((st = rd_str(c, &kv->strs[i], "string array element"))) return st;
    }
    return MLLM_OK;
}

static mllm_status parse_kvs(mllm_gguf *g, cursor *c) {
    mllm_status st = index_init(&g->kv_index, g->n_kv);
    if (st) return st;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        mllm_gguf_kv *kv = &g->kv[i];
        size_t at = c->off;
        uint32_t t = 0;
        if ((st = rd_str(c, &kv->key, "key"))) return st;
        if (!index_insert(&g->kv_index, kv->key, i, kv_name, g->kv)) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: duplicate key '%.*s' (offset %zu)", c->path,
                            (int)(kv->key.len > 200 ? 200 : kv->key.len), kv->key.ptr, at);
        }
        size_t tat = c->off;
        if ((st = rd_u32(c, &t, "value type"))) return st;
        if (!type_known(t)) return bad(c, tat, "unknown value type");
        kv->type = (mllm_gguf_type)t;
        kv->val = c->base + c->off;
        st = t == MLLM_GGUF_ARRAY ? parse_array(c, kv) : skip_scalar(c, kv->type, "value");
        if (st) return st;
    }
    return MLLM_OK;
}

static mllm_status parse_alignment(mllm_gguf *g, const cursor *c) {
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    if (mllm_gguf_find_key(g, "general.alignment") < 0) return MLLM_OK;
    uint32_t a = 0;
    if (!mllm_gguf_get_u32(g, "general.alignment", &a) || a == 0 || (a & (a - 1)) != 0) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: general.alignment must be a power of two (offset %zu)",
                        c->path, (size_t)(mllm_gguf_kv_find(g, "general.alignment")->val - c->base));
    }
    g->alignment = a;
    return MLLM_OK;
}

static bool mul_ok(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a) return false;
    *out = a * b;
    return true;
}

static mllm_status parse_tensor_info(mllm_gguf *g, cursor *c, uint64_t i) {
    mllm_gguf_tensor *t = &g->tensors[i];
    size_t at = c->off;
    mllm_status st;
    uint32_t n_dims = 0, type = 0;
    if ((st = rd_str(c, &t->name, "tensor name"))) return st;
    if (!index_insert(&g->tensor_index, t->name, i, tensor_name, g->tensors)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: duplicate tensor name '%.*s' (offset %zu)", c->path,
                        (int)(t->name.len > 200 ? 200 : t->name.len), t->name.ptr, at);
    }
    size_t dat = c->off;
    if ((st = rd_u32(c, &n_dims, "tensor n_dims"))) return st;
    if (n_dims > GGUF_MAX_DIMS) return bad(c, dat, "tensor n_dims is larger than 4");
    t->n_dims = n_dims;
    uint64_t n_el = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        uint64_t ne = 0;
        size_t nat = c->off;
        if ((st = rd_u64(c, &ne, "tensor dimension"))) return st;
        if (ne > INT64_MAX) return bad(c, nat, "tensor dimension is negative");
        if (!mul_ok(n_el, ne, &n_el) || n_el > INT64_MAX) {
            return bad(c, nat, "tensor element count overflows");
        }
        t->ne[d] = (int64_t)ne;
    }
    size_t tat = c->off;
    if ((st = rd_u32(c, &type, "tensor type"))) return st;
    const mllm_dtype_traits *tr = mllm_dtype_get((int)type);
    /* Our kernel layouts and activation types (202+) are never written to
       GGUF: a file that has them is not one we or anyone else made. */
    if (!tr || tr->block_size <= 0 || tr->type_size == 0 || !mllm_dtype_in_gguf((int)type)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%.*s' has unknown dtype %u (offset %zu)", c->path,
                        (int)(t->name.len > 200 ? 200 : t->name.len), t->name.ptr, type, tat);
    }
    t->dtype = (int)type;
    if (t->ne[0] % tr->block_size != 0) {
        return mllm_err(MLLM_ERR_FORMAT,
                        "%s: tensor '%.*s' ne[0]=%lld is not a multiple of the %s block size %d (offset %zu)",
                        c->path, (int)(t->name.len > 200 ? 200 : t->name.len), t->name.ptr,
                        (long long)t->ne[0], tr->name ? tr->name : "?", tr->block_size, dat);
    }
    uint64_t bytes = 0;
    if (!mul_ok(n_el / (uint64_t)tr->block_size, tr->type_size, &bytes) || bytes > SIZE_MAX) {
        return bad(c, dat, "tensor byte size overflows");
    }
    t->size = (size_t)bytes;
    size_t oat = c->off;
    if ((st = rd_u64(c, &t->offset, "tensor offset"))) return st;
    if (t->offset % g->alignment != 0) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%.*s' offset %llu is not aligned to %llu (offset %zu)",
                        c->path, (int)(t->name.len > 200 ? 200 : t->name.len), t->name.ptr,
                        (unsigned long long)t->offset, (unsigned long long)g->alignment, oat);
    }
    return MLLM_OK;
}

typedef struct { uint64_t offset, index; } span_key;

static int cmp_span(const void *a, const void *b) {
    const span_key *x = a, *y = b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Checks that every tensor lies inside the file and that no two overlap. */
static mllm_status check_data(mllm_gguf *g, const cursor *c, size_t info_end) {
    uint64_t data = (uint64_t)info_end;
    data = (data + g->alignment - 1) / g->alignment * g->alignment;
    g->data_offset = data;
    if (g->n_tensors == 0) return MLLM_OK;
    if (data > g->size) return bad(c, info_end, "data section starts past the end of the file");
    uint64_t avail = g->size - data;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        mllm_gguf_tensor *t = &g->tensors[i];
        if (t->offset > avail || t->size > avail - t->offset) {
            return mllm_err(MLLM_ERR_FORMAT,
                            "%s: tensor '%.*s' data [%llu, +%zu) is past the end of the file (offset %llu)",
                            c->path, (int)(t->name.len > 200 ? 200 : t->name.len), t->name.ptr,
                            (unsigned long long)t->offset, t->size,
                            (unsigned long long)(data + t->offset));
        }
        t->data = g->base + data + t->offset;
    }
    span_key *order = mllm_malloc((size_t)g->n_tensors * sizeof *order);
    if (!order) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", c->path);
    for (uint64_t i = 0; i < g->n_tensors; i++) order[i] = (span_key){g->tensors[i].offset, i};
    qsort(order, (size_t)g->n_tensors, sizeof *order, cmp_span);
    mllm_status st = MLLM_OK;
    for (uint64_t i = 1; i < g->n_tensors && !st; i++) {
        const mllm_gguf_tensor *p = &g->tensors[order[i - 1].index], *t = &g->tensors[order[i].index];
        if (t->offset < p->offset + p->size) {
            st = mllm_err(MLLM_ERR_FORMAT, "%s: tensors '%.*s' and '%.*s' overlap (offset %llu)", c->path,
                          (int)(p->name.len > 200 ? 200 : p->name.len), p->name.ptr,
                          (int)(t->name.len > 200 ? 200 : t->name.len), t->name.ptr,
                          (unsigned long long)(data + t->offset));
        }
    }
    mllm_free(order);
    return st;
}

static mllm_status parse(mllm_gguf *g) {
    cursor c = {g->base, g->size, 0, g->path};
    char magic[4] = {0};
    mllm_status st;
    if ((st = rd(&c, magic, 4, "magic"))) return st;
    if (memcmp(magic, "GGUF", 4) != 0) return bad(&c, 0, "not a GGUF file (bad magic)");
    if ((st = rd_u32(&c, &g->version, "version"))) return st;
    if (g->version == 1) {
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: GGUF v1 is not supported, re-convert the file to v3 (offset 4)",
                        g->path);
    }
    if (g->version != 2 && g->version != 3) {
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: GGUF version %u is not supported%s (offset 4)", g->path,
                        g->version, (g->version & 0xffff) == 0 ? " (big-endian file?)" : "");
    }
    if ((st = rd_u64(&c, &g->n_tensors, "tensor count"))) return st;
    if ((st = rd_u64(&c, &g->n_kv, "key/value count"))) return st;
    if (g->n_tensors > remaining(&c) / GGUF_MIN_TENSOR_BYTES) {
        return bad(&c, 8, "tensor count does not fit in the file");
    }
    if (g->n_kv > remaining(&c) / GGUF_MIN_KV_BYTES) return bad(&c, 16, "key/value count does not fit in the file");
    g->kv = mllm_calloc((size_t)(g->n_kv ? g->n_kv : 1), sizeof *g->kv);
    g->tensors = mllm_calloc((size_t)(g->n_tensors ? g->n_tensors : 1), sizeof *g->tensors);
    if (!g->kv || !g->tensors) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", g->path);
    if ((st = parse_kvs(g, &c))) return st;
    if ((st = parse_alignment(g, &c))) return st;
    if ((st = index_init(&g->tensor_index, g->n_tensors))) return st;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        if ((st = parse_tensor_info(g, &c, i))) return st;
    }
    return check_data(g, &c, c.off);
}

static mllm_status open_common(mllm_gguf *g, mllm_gguf **out) {
    mllm_status st = parse(g);
    if (st) {
        mllm_gguf_close(g);
        return st;
    }
    *out = g;
    return MLLM_OK;
}

mllm_status mllm_gguf_open_memory(const void *buf, size_t len, const char *label, mllm_gguf **out) {
    if (!out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_gguf_open_memory: out is NULL");
    *out = NULL;
    if (!buf && len) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_gguf_open_memory: buf is NULL");
    if (!label) label = "<memory>";
    mllm_gguf *g = mllm_calloc(1, sizeof *g);
    if (!g) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
    g->path = mllm_strndup(label, strlen(label));
    if (!g->path) {
        mllm_free(g);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
    }
    g->base = buf;
    g->size = len;
    return open_common(g, out);
}

bool mllm_gguf_damaged(const mllm_gguf *g) { return g && g->mapped && mllm_file_map_damaged(g->base); }

mllm_status mllm_gguf_open(const char *path, mllm_gguf **out) {
    if (!out || !path) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_gguf_open: NULL argument");
    *out = NULL;
    void *p = NULL;
    size_t map_size = 0;
    mllm_status mst = mllm_file_map(path, 1, "file is empty (offset 0)", &p, &map_size);
    if (mst != MLLM_OK) return mst;
    mllm_gguf *g = mllm_calloc(1, sizeof *g);
    char *name = mllm_strndup(path, strlen(path));
    if (!g || !name) {
        mllm_free(g);
        mllm_free(name);
        mllm_file_unmap(p, map_size);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    }
    g->path = name;
    g->base = p;
    g->size = map_size;
    g->mapped = true;
    return open_common(g, out);
}

void mllm_gguf_close(mllm_gguf *g) {
    if (!g) return;
    if (g->kv) {
        for (uint64_t i = 0; i < g->n_kv; i++) mllm_free(g->kv[i].strs);
    }
    mllm_free(g->kv);
    mllm_free(g->tensors);
    mllm_free(g->kv_index.slots);
    mllm_free(g->tensor_index.slots);
    if (g->mapped) mllm_file_unmap((void *)g->base, g->size);
    mllm_free(g->path);
    mllm_free(g);
}

int64_t mllm_gguf_find_key(const mllm_gguf *g, const char *key) {
    return g ? index_find(&g->kv_index, key, kv_name, g->kv) : -1;
}

const mllm_gguf_kv *mllm_gguf_kv_find(const mllm_gguf *g, const char *key) {
    int64_t i = mllm_gguf_find_key(g, key);
    return i < 0 ? NULL : &g->kv[i];
}

const mllm_gguf_tensor *mllm_gguf_find_tensor(const mllm_gguf *g, const char *name) {
    if (!g) return NULL;
    int64_t i = index_find(&g->tensor_index, name, tensor_name, g->tensors);
    return i < 0 ? NULL : &g->tensors[i];
}
