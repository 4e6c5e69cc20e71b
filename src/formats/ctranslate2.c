/* CTranslate2 model.bin parser: a cursor walks the image field by field;
   each read is bounds-checked first, and a failure names the field, the
   variable and the byte offset. Names go into a sorted index, so duplicates
   and alias targets are found in O(n log n) whatever the file claims. */
#include "formats/ctranslate2.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/file_map.h"
#include <stdlib.h>
#include <string.h>

/* Smallest variable record: a 1-character name (u16 + 2 bytes), rank,
   dtype and byte count (u8 + u8 + u32), no dims, no data. It bounds the
   variable count a file of a given size can really hold. */
#define CT2_MIN_VARIABLE_BYTES 10
/* Smallest alias record: two 1-character names. */
#define CT2_MIN_ALIAS_BYTES 6

struct mllm_ct2 {
    char *path;
    const uint8_t *base;
    size_t size;
    bool mapped;
    uint32_t version, revision;
    char *spec;
    mllm_ct2_tensor *tensors;
    size_t n_tensors;
    mllm_ct2_alias *aliases;
    size_t n_aliases;
    uint32_t *by_name;       /* tensor indices sorted by name */
    uint32_t *alias_by_name; /* alias indices sorted by name */
};

typedef struct {
    mllm_ct2 *c;
    size_t off;
} cursor;

static size_t left(const cursor *k) { return k->c->size - k->off; }

static mllm_status truncated(const cursor *k, const char *what, size_t need) {
    return mllm_err(MLLM_ERR_FORMAT, "%s: truncated at byte %zu: %s needs %zu bytes, %zu left", k->c->path, k->off,
                    what, need, left(k));
}

static mllm_status take_u8(cursor *k, const char *what, uint8_t *v) {
    if (left(k) < 1) return truncated(k, what, 1);
    *v = k->c->base[k->off++];
    return MLLM_OK;
}

static mllm_status take_u16(cursor *k, const char *what, uint16_t *v) {
    if (left(k) < 2) return truncated(k, what, 2);
    const uint8_t *p = k->c->base + k->off;
    *v = (uint16_t)(p[0] | p[1] << 8);
    k->off += 2;
    return MLLM_OK;
}

static mllm_status take_u32(cursor *k, const char *what, uint32_t *v) {
    if (left(k) < 4) return truncated(k, what, 4);
    const uint8_t *p = k->c->base + k->off;
    *v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    k->off += 4;
    return MLLM_OK;
}

/* A string: u16 length counting the final NUL, the bytes, the NUL. Only
   printable ASCII is accepted (CTranslate2 names are scope paths), so a name
   can be printed in later messages; a bad byte is reported by offset. */
static mllm_status take_name(cursor *k, const char *what, size_t max_len, char **out) {
    uint16_t n = 0;
    size_t at = k->off;
    mllm_status st = take_u16(k, what, &n);
    if (st) return st;
    if (n < 2) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: byte %zu: %s has length %u (an empty name)", k->c->path, at, what, n);
    }
    if (n - 1u > max_len) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: byte %zu: %s is %u bytes long (at most %zu)", k->c->path, at, what,
                        n - 1u, max_len);
    }
    if (left(k) < n) return truncated(k, what, n);
    const char *s = (const char *)k->c->base + k->off;
    if (s[n - 1] != '\0') {
        return mllm_err(MLLM_ERR_FORMAT, "%s: byte %zu: %s does not end with a NUL", k->c->path, at, what);
    }
    for (size_t i = 0; i + 1 < n; i++) {
        if (s[i] < 0x21 || s[i] > 0x7e) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: byte %zu: %s has a byte that is not printable ASCII", k->c->path,
                            k->off + i, what);
        }
    }
    *out = mllm_strndup(s, n - 1u);
    if (!*out) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", k->c->path);
    k->off += n;
    return MLLM_OK;
}

/* CTranslate2's DataType enum (include/ctranslate2/types.h), in order. */
static const struct { int dtype; size_t size; const char *name; } k_ct2_types[] = {
    {MLLM_DTYPE_F32, 4, "float32"}, {MLLM_DTYPE_I8, 1, "int8"},     {MLLM_DTYPE_I16, 2, "int16"},
    {MLLM_DTYPE_I32, 4, "int32"},   {MLLM_DTYPE_F16, 2, "float16"}, {MLLM_DTYPE_BF16, 2, "bfloat16"},
};
#define CT2_N_TYPES (sizeof k_ct2_types / sizeof k_ct2_types[0])

const char *mllm_ct2_dtype_name(int dtype) {
    for (size_t i = 0; i < CT2_N_TYPES; i++) {
        if (k_ct2_types[i].dtype == dtype) return k_ct2_types[i].name;
    }
    return "?";
}

static size_t item_size(int dtype) {
    for (size_t i = 0; i < CT2_N_TYPES; i++) {
        if (k_ct2_types[i].dtype == dtype) return k_ct2_types[i].size;
    }
    return 0;
}

/* dtype and byte count: a type code and bytes (v4+), or an item size and an
   element count (v2, v3: 4 = float32, 2 = int16, 1 = int8, as CTranslate2
   resolved them). */
static mllm_status take_type(cursor *k, mllm_ct2_tensor *t, uint64_t *bytes) {
    const char *p = k->c->path;
    size_t at = k->off;
    uint8_t code = 0;
    uint32_t count = 0;
    mllm_status st = take_u8(k, k->c->version >= 4 ? "dtype code" : "item size", &code);
    if (!st) st = take_u32(k, k->c->version >= 4 ? "byte count" : "element count", &count);
    if (st) return st;
    if (k->c->version >= 4) {
        if (code >= CT2_N_TYPES) {
            return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: byte %zu: variable '%s' has dtype code %u (known: 0..%zu)", p,
                            at, t->name, code, CT2_N_TYPES - 1);
        }
        t->dtype = k_ct2_types[code].dtype;
        *bytes = count;
        return MLLM_OK;
    }
    switch (code) {
    case 4: t->dtype = MLLM_DTYPE_F32; break;
    case 2: t->dtype = MLLM_DTYPE_I16; break;
    case 1: t->dtype = MLLM_DTYPE_I8; break;
    default:
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: byte %zu: variable '%s' has item size %u (known: 1, 2, 4)", p, at,
                        t->name, code);
    }
    *bytes = (uint64_t)count * code;
    return MLLM_OK;
}

static mllm_status take_variable(cursor *k, uint32_t i, mllm_ct2_tensor *t) {
    const char *p = k->c->path;
    t->scale = -1;
    mllm_status st = take_name(k, "a variable name", UINT16_MAX, &t->name);
    if (st) return st;
    size_t at = k->off;
    uint8_t rank = 0;
    if ((st = take_u8(k, "rank", &rank))) return st;
    if (rank > MLLM_CT2_MAX_RANK) {
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: byte %zu: variable '%s' has rank %u (at most %d)", p, at, t->name,
                        rank, MLLM_CT2_MAX_RANK);
    }
    t->rank = rank;
    uint64_t n_el = 1;
    for (int d = 0; d < MLLM_CT2_MAX_RANK; d++) t->dims[d] = 1;
    for (int d = 0; d < rank; d++) {
        if ((st = take_u32(k, "a dimension", &t->dims[d]))) return st;
        /* Keeps the product under 2^60, so product x item size (<= 4)
           cannot overflow either. */
        if (t->dims[d] && n_el > (UINT64_MAX >> 4) / t->dims[d]) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: variable '%s': the dimensions' product overflows", p, t->name);
        }
        n_el *= t->dims[d];
    }
    t->n_elements = n_el;
    uint64_t bytes = 0;
    if ((st = take_type(k, t, &bytes))) return st;
    uint64_t want = n_el * item_size(t->dtype);
    if (bytes != want) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: variable %u '%s' (%s, %llu elements) has %llu bytes, its shape needs %llu",
                        p, i, t->name, mllm_ct2_dtype_name(t->dtype), (unsigned long long)n_el,
                        (unsigned long long)bytes, (unsigned long long)want);
    }
    if (bytes > left(k)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: truncated at byte %zu: variable '%s' needs %llu bytes of data, %zu left",
                        p, k->off, t->name, (unsigned long long)bytes, left(k));
    }
    t->data = k->c->base + k->off;
    t->size = (size_t)bytes;
    k->off += (size_t)bytes;
    return MLLM_OK;
}

/* ---- the name index ------------------------------------------------------ */

static int cmp_tensor_index(const void *a, const void *b, void *ctx) {
    const mllm_ct2 *c = ctx;
    return strcmp(c->tensors[*(const uint32_t *)a].name, c->tensors[*(const uint32_t *)b].name);
}

static int cmp_alias_index(const void *a, const void *b, void *ctx) {
    const mllm_ct2 *c = ctx;
    return strcmp(c->aliases[*(const uint32_t *)a].name, c->aliases[*(const uint32_t *)b].name);
}

/* qsort with a context, without relying on qsort_r's non-portable forms:
   a plain heap sort over u32 indices (n log n, no recursion, no allocation). */
static void sort_indices(uint32_t *v, size_t n, int (*cmp)(const void *, const void *, void *), void *ctx) {
    for (size_t start = n / 2; start-- > 0;) {
        for (size_t root = start;;) {
            size_t child = 2 * root + 1;
            if (child >= n) break;
            if (child + 1 < n && cmp(&v[child], &v[child + 1], ctx) < 0) child++;
            if (cmp(&v[root], &v[child], ctx) >= 0) break;
            uint32_t t = v[root]; v[root] = v[child]; v[child] = t;
            root = child;
        }
    }
    for (size_t end = n; end-- > 1;) {
        uint32_t t = v[0]; v[0] = v[end]; v[end] = t;
        for (size_t root = 0;;) {
            size_t child = 2 * root + 1;
            if (child >= end) break;
            if (child + 1 < end && cmp(&v[child], &v[child + 1], ctx) < 0) child++;
            if (cmp(&v[root], &v[child], ctx) >= 0) break;
            uint32_t u = v[root]; v[root] = v[child]; v[child] = u;
            root = child;
        }
    }
}

/* Binary search of a sorted index (of aliases or of tensors) for the first
   len bytes of name. */
static long search(const mllm_ct2 *c, const uint32_t *index, size_t n, const char *name, size_t len, bool alias) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *s = alias ? c->aliases[index[mid]].name : c->tensors[index[mid]].name;
        int r = strncmp(s, name, len);
        if (r == 0 && s[len] != '\0') r = 1;
        if (r == 0) return (long)index[mid];
        if (r < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

static long find_tensor(const mllm_ct2 *c, const char *name, size_t len) {
    return search(c, c->by_name, c->n_tensors, name, len, false);
}

static long find_alias(const mllm_ct2 *c, const char *name, size_t len) {
    return c->alias_by_name ? search(c, c->alias_by_name, c->n_aliases, name, len, true) : -1;
}

/* The tensor named the first len bytes of name, then suffix; -1 if none,
   -2 when out of memory. */
static long find_suffixed(const mllm_ct2 *c, const char *name, size_t len, const char *suffix) {
    size_t sl = strlen(suffix);
    char *buf = mllm_malloc(len + sl + 1);
    if (!buf) return -2;
    memcpy(buf, name, len);
    memcpy(buf + len, suffix, sl + 1);
    long i = find_tensor(c, buf, len + sl);
    mllm_free(buf);
    return i;
}

/* ---- checks across variables ---------------------------------------------- */

static bool is_float(int dtype) {
    return dtype == MLLM_DTYPE_F32 || dtype == MLLM_DTYPE_F16 || dtype == MLLM_DTYPE_BF16;
}

/* Quantised weights and their scales, as model_spec.py `_quantize` writes
   them: an int8 weight (rank >= 2) has one float scale per output row
   (dims[0]); an int16 weight has one float scale. A scale that does not fit
   its weight would make every dequantised value wrong, so it is refused. */
static mllm_status check_scales(mllm_ct2 *c) {
    for (size_t i = 0; i < c->n_tensors; i++) {
        mllm_ct2_tensor *t = &c->tensors[i];
        if ((t->dtype != MLLM_DTYPE_I8 && t->dtype != MLLM_DTYPE_I16) || t->rank < 2) continue;
        long s = find_suffixed(c, t->name, strlen(t->name), "_scale");
        if (s == -2) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", c->path);
        if (s < 0) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: %s weight '%s' has no '%s_scale' variable", c->path,
                            mllm_ct2_dtype_name(t->dtype), t->name, t->name);
        }
        const mllm_ct2_tensor *sc = &c->tensors[s];
        uint64_t want = t->dtype == MLLM_DTYPE_I8 ? t->dims[0] : 1;
        bool shape_ok = t->dtype == MLLM_DTYPE_I8 ? sc->rank == 1 && sc->dims[0] == t->dims[0] : sc->n_elements == 1;
        if (!is_float(sc->dtype) || !shape_ok) {
            return mllm_err(MLLM_ERR_FORMAT,
                            "%s: scale '%s' is %s with %llu elements; its %s weight needs %llu float value%s", c->path,
                            sc->name, mllm_ct2_dtype_name(sc->dtype), (unsigned long long)sc->n_elements,
                            mllm_ct2_dtype_name(t->dtype), (unsigned long long)want, want == 1 ? "" : "s (one per row)");
        }
        t->scale = (int32_t)s;
    }
    return MLLM_OK;
}

static mllm_status index_tensors(mllm_ct2 *c) {
    c->by_name = mllm_malloc((c->n_tensors ? c->n_tensors : 1) * sizeof *c->by_name);
    if (!c->by_name) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", c->path);
    for (size_t i = 0; i < c->n_tensors; i++) c->by_name[i] = (uint32_t)i;
    sort_indices(c->by_name, c->n_tensors, cmp_tensor_index, c);
    for (size_t i = 1; i < c->n_tensors; i++) {
        const char *a = c->tensors[c->by_name[i - 1]].name, *b = c->tensors[c->by_name[i]].name;
        if (!strcmp(a, b)) return mllm_err(MLLM_ERR_FORMAT, "%s: two variables are named '%s'", c->path, a);
    }
    return MLLM_OK;
}

static mllm_status take_aliases(cursor *k) {
    mllm_ct2 *c = k->c;
    uint32_t n = 0;
    size_t at = k->off;
    mllm_status st = take_u32(k, "the alias count", &n);
    if (st) return st;
    if (n > left(k) / CT2_MIN_ALIAS_BYTES) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: byte %zu: %u aliases cannot fit in the %zu bytes left", c->path, at, n,
                        left(k));
    }
    c->aliases = mllm_calloc(n ? n : 1, sizeof *c->aliases);
    c->alias_by_name = mllm_malloc((n ? n : 1) * sizeof *c->alias_by_name);
    if (!c->aliases || !c->alias_by_name) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", c->path);
    for (uint32_t i = 0; i < n; i++) {
        mllm_ct2_alias *a = &c->aliases[i];
        char *target = NULL;
        if ((st = take_name(k, "an alias name", UINT16_MAX, &a->name))) return st;
        c->n_aliases++;
        st = take_name(k, "an alias target", UINT16_MAX, &target);
        if (st) return st;
        long ti = find_tensor(c, target, strlen(target));
        if (ti < 0) {
            st = mllm_err(MLLM_ERR_FORMAT, "%s: alias '%s' names '%s', which is not a variable", c->path, a->name,
                          target);
        } else if (find_tensor(c, a->name, strlen(a->name)) >= 0) {
            st = mllm_err(MLLM_ERR_FORMAT, "%s: alias '%s' has the name of a variable", c->path, a->name);
        }
        mllm_free(target);
        if (st) return st;
        a->target = (uint32_t)ti;
    }
    for (size_t i = 0; i < c->n_aliases; i++) c->alias_by_name[i] = (uint32_t)i;
    sort_indices(c->alias_by_name, c->n_aliases, cmp_alias_index, c);
    for (size_t i = 1; i < c->n_aliases; i++) {
        const char *a = c->aliases[c->alias_by_name[i - 1]].name, *b = c->aliases[c->alias_by_name[i]].name;
        if (!strcmp(a, b)) return mllm_err(MLLM_ERR_FORMAT, "%s: two aliases are named '%s'", c->path, a);
    }
    return MLLM_OK;
}

static mllm_status parse(mllm_ct2 *c) {
    cursor k = {c, 0};
    mllm_status st = take_u32(&k, "the binary version", &c->version);
    if (st) return st;
    /* Nothing else identifies the format, so a file that is not a model
       most likely fails here; its bytes are never printed. */
    if (c->version < MLLM_CT2_MIN_VERSION || c->version > MLLM_CT2_MAX_VERSION) {
        return mllm_err(MLLM_ERR_UNSUPPORTED,
                        "%s: not a CTranslate2 model.bin of a binary version this reader knows (%d..%d)", c->path,
                        MLLM_CT2_MIN_VERSION, MLLM_CT2_MAX_VERSION);
    }
    if ((st = take_name(&k, "the spec name", MLLM_CT2_MAX_SPEC_NAME, &c->spec))) return st;
    if ((st = take_u32(&k, "the spec revision", &c->revision))) return st;
    uint32_t n = 0;
    size_t at = k.off;
    if ((st = take_u32(&k, "the variable count", &n))) return st;
    if (n > left(&k) / CT2_MIN_VARIABLE_BYTES) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: byte %zu: %u variables cannot fit in the %zu bytes left", c->path, at, n,
                        left(&k));
    }
    c->tensors = mllm_calloc(n ? n : 1, sizeof *c->tensors);
    if (!c->tensors) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", c->path);
    for (uint32_t i = 0; i < n; i++) {
        st = take_variable(&k, i, &c->tensors[i]);
        c->n_tensors++; /* so close() frees a half-read name too */
        if (st) return st;
    }
    if ((st = index_tensors(c))) return st;
    if (c->version >= 3 && (st = take_aliases(&k))) return st;
    if (left(&k)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: %zu bytes after the last %s (byte %zu); the file is not one model.bin",
                        c->path, left(&k), c->version >= 3 ? "alias" : "variable", k.off);
    }
    return check_scales(c);
}

static mllm_status finish(mllm_ct2 *c, mllm_ct2 **out) {
    mllm_status st = parse(c);
    if (st) {
        mllm_ct2_close(c);
        return st;
    }
    *out = c;
    return MLLM_OK;
}

static mllm_ct2 *new_handle(const char *label) {
    mllm_ct2 *c = mllm_calloc(1, sizeof *c);
    if (c && !(c->path = mllm_strndup(label, strlen(label)))) {
        mllm_free(c);
        c = NULL;
    }
    return c;
}

mllm_status mllm_ct2_open_memory(const void *buf, size_t len, const char *label, mllm_ct2 **out) {
    if (!out || (!buf && len)) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_ct2_open_memory: NULL argument");
    *out = NULL;
    if (!label) label = "<memory>";
    mllm_ct2 *c = new_handle(label);
    if (!c) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
    c->base = buf;
    c->size = len;
    return finish(c, out);
}

mllm_status mllm_ct2_open(const char *path, mllm_ct2 **out) {
    if (!out || !path) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_ct2_open: NULL argument");
    *out = NULL;
    void *p = NULL;
    size_t size = 0;
    mllm_status st = mllm_file_map(path, 4, "not a CTranslate2 model.bin (shorter than its 4-byte version)", &p, &size);
    if (st) return st;
    mllm_ct2 *c = new_handle(path);
    if (!c) {
        mllm_file_unmap(p, size);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    }
    c->base = p;
    c->size = size;
    c->mapped = true;
    return finish(c, out);
}

mllm_status mllm_ct2_view_new(const char *label, const char *spec, const mllm_ct2_tensor *tensors, size_t n,
                              mllm_ct2 **out) {
    if (!out || !spec || (!tensors && n)) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_ct2_view_new: NULL argument");
    *out = NULL;
    if (!label) label = "<view>";
    mllm_ct2 *c = new_handle(label);
    if (!c) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
    mllm_status st = MLLM_OK;
    c->spec = mllm_strndup(spec, strlen(spec));
    c->tensors = mllm_calloc(n ? n : 1, sizeof *c->tensors);
    if (!c->spec || !c->tensors) st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
    for (size_t i = 0; st == MLLM_OK && i < n; i++) {
        mllm_ct2_tensor *t = &c->tensors[i];
        *t = tensors[i];
        t->scale = -1;
        t->name = mllm_strndup(tensors[i].name, strlen(tensors[i].name));
        if (!t->name) st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
        else c->n_tensors++;
    }
    if (st == MLLM_OK) st = index_tensors(c);
    if (st) {
        mllm_ct2_close(c);
        return st;
    }
    *out = c;
    return MLLM_OK;
}

bool mllm_ct2_damaged(const mllm_ct2 *c) { return c && c->mapped && mllm_file_map_damaged(c->base); }

void mllm_ct2_close(mllm_ct2 *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n_tensors; i++) mllm_free(c->tensors[i].name);
    for (size_t i = 0; i < c->n_aliases; i++) mllm_free(c->aliases[i].name);
    mllm_free(c->tensors);
    mllm_free(c->aliases);
    mllm_free(c->by_name);
    mllm_free(c->alias_by_name);
    mllm_free(c->spec);
    if (c->mapped) mllm_file_unmap((void *)c->base, c->size);
    mllm_free(c->path);
    mllm_free(c);
}

uint32_t mllm_ct2_version(const mllm_ct2 *c) { return c ? c->version : 0; }
const char *mllm_ct2_spec_name(const mllm_ct2 *c) { return c ? c->spec : NULL; }
uint32_t mllm_ct2_spec_revision(const mllm_ct2 *c) { return c ? c->revision : 0; }
size_t mllm_ct2_n_tensors(const mllm_ct2 *c) { return c ? c->n_tensors : 0; }
size_t mllm_ct2_n_aliases(const mllm_ct2 *c) { return c ? c->n_aliases : 0; }

const mllm_ct2_tensor *mllm_ct2_tensor_at(const mllm_ct2 *c, size_t i) {
    return c && i < c->n_tensors ? &c->tensors[i] : NULL;
}

const mllm_ct2_alias *mllm_ct2_alias_at(const mllm_ct2 *c, size_t i) {
    return c && i < c->n_aliases ? &c->aliases[i] : NULL;
}

const mllm_ct2_tensor *mllm_ct2_find(const mllm_ct2 *c, const char *name) {
    if (!c || !name) return NULL;
    size_t len = strlen(name);
    long i = find_tensor(c, name, len);
    if (i >= 0) return &c->tensors[i];
    long a = find_alias(c, name, len);
    if (a >= 0) return &c->tensors[c->aliases[a].target];
    /* CTranslate2 also registers A_scale -> X_scale and A_zero -> X_zero
       for every alias A -> X (model.cc). */
    static const char *const k_suffixes[] = {"_scale", "_zero"};
    for (size_t s = 0; s < 2; s++) {
        size_t sl = strlen(k_suffixes[s]);
        if (len <= sl || strcmp(name + len - sl, k_suffixes[s])) continue;
        a = find_alias(c, name, len - sl);
        if (a < 0) continue;
        const char *target = c->tensors[c->aliases[a].target].name;
        i = find_suffixed(c, target, strlen(target), k_suffixes[s]);
        if (i >= 0) return &c->tensors[i];
    }
    return NULL;
}
