/* .mllm v3 reader: one read-only mmap, every header field, section and index
   entry checked against the file before anything points into it. */
#include "formats/mllmfile.h"
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

/* Hard limits: only there to keep sizes sane and products inside 64 bits. */
#define MF_MAX_TENSORS (1u << 20)
#define MF_MAX_NE (1ll << 40)

struct mllm_mllmfile {
    char *label;
    const uint8_t *base;
    size_t size;
    bool mapped;
    uint64_t n_tensors;
    mllm_mllmfile_tensor *tensors; /* (n_tensors) */
    uint64_t cfg_off, cfg_size, tok_off, tok_size, tmpl_off, tmpl_size;
    uint32_t tok_kind;
    uint64_t data_off, data_size;
};

static uint32_t rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

bool mllm_mllmfile_sniff(const void *head, size_t n) {
    if (n < 8) return false;
    const uint8_t *p = head;
    return (int32_t)rd32(p) == MLLM_FILE_MAGIC && (int32_t)rd32(p + 4) == MLLM_FILE_VERSION;
}

/* [off, off+len) inside [lo, hi)? */
static bool in_range(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi) {
    return off >= lo && off <= hi && len <= hi - off;
}

static mllm_status check_section(const mllm_mllmfile *m, const char *what, uint64_t off, uint64_t len) {
    if (len == 0) return MLLM_OK;
    if (!in_range(off, len, MLLM_FILE_HEADER_BYTES, m->data_off)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: %s section [%llu, +%llu) lies outside the metadata region [%u, %llu)",
                        m->label, what, (unsigned long long)off, (unsigned long long)len, MLLM_FILE_HEADER_BYTES,
                        (unsigned long long)m->data_off);
    }
    return MLLM_OK;
}

static mllm_status parse_header(mllm_mllmfile *m, uint64_t *index_off, uint64_t *index_size) {
    const uint8_t *h = m->base;
    if (m->size < MLLM_FILE_HEADER_BYTES) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: %zu bytes is shorter than the %d-byte .mllm header", m->label, m->size,
                        MLLM_FILE_HEADER_BYTES);
    }
    if (!mllm_mllmfile_sniff(h, 8)) {
        /* Nothing of the file is printed: it is not ours to show. */
        return mllm_err(MLLM_ERR_FORMAT, "%s: not a .mllm v3 file (no MLLM v3 magic and version)", m->label);
    }
    if (rd32(h + 8) != MLLM_FILE_HEADER_BYTES || rd32(h + 12) != 0 || rd32(h + 84) != 0) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: header size %u / flags %u / reserved %u not as version 3 defines",
                        m->label, rd32(h + 8), rd32(h + 12), rd32(h + 84));
    }
    uint64_t file_size = rd64(h + 16);
    if (file_size != m->size) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: header says %llu bytes but the file has %zu (truncated?)", m->label,
                        (unsigned long long)file_size, m->size);
    }
    m->n_tensors = rd64(h + 24);
    *index_off = rd64(h + 32);
    *index_size = rd64(h + 40);
    m->cfg_off = rd64(h + 48), m->cfg_size = rd64(h + 56);
    m->tok_off = rd64(h + 64), m->tok_size = rd64(h + 72);
    m->tok_kind = rd32(h + 80);
    m->tmpl_off = rd64(h + 88), m->tmpl_size = rd64(h + 96);
    m->data_off = rd64(h + 104), m->data_size = rd64(h + 112);
    if (m->data_off % MLLM_FILE_ALIGN || !in_range(m->data_off, m->data_size, MLLM_FILE_HEADER_BYTES, m->size) ||
        m->data_off + m->data_size != m->size) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: data section [%llu, +%llu) is misaligned or does not end the file",
                        m->label, (unsigned long long)m->data_off, (unsigned long long)m->data_size);
    }
    /* The header and all metadata are covered by one checksum: a flipped
       bit anywhere before the data is caught here, at every open. */
    mllm_xxh64_state s;
    mllm_xxh64_init(&s);
    mllm_xxh64_update(&s, h, 120);
    mllm_xxh64_update(&s, h + MLLM_FILE_HEADER_BYTES, (size_t)m->data_off - MLLM_FILE_HEADER_BYTES);
    if (mllm_xxh64_digest(&s) != rd64(h + 120)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: header/metadata checksum mismatch (file corrupted)", m->label);
    }
    if (m->n_tensors > MF_MAX_TENSORS) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: %llu tensors (limit %u)", m->label, (unsigned long long)m->n_tensors,
                        MF_MAX_TENSORS);
    }
    if (m->tok_kind > MLLM_TOK_HF_JSON || (m->tok_kind == MLLM_TOK_NONE) != (m->tok_size == 0)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: unknown tokenizer kind %u (size %llu)", m->label, m->tok_kind,
                        (unsigned long long)m->tok_size);
    }
    mllm_status st;
    if ((st = check_section(m, "index", *index_off, *index_size))) return st;
    if ((st = check_section(m, "config", m->cfg_off, m->cfg_size))) return st;
    if ((st = check_section(m, "tokenizer", m->tok_off, m->tok_size))) return st;
    return check_section(m, "chat template", m->tmpl_off, m->tmpl_size);
}

static mllm_status entry_err(const mllm_mllmfile *m, uint64_t i, const mllm_mllmfile_tensor *t, const char *why) {
    return mllm_err(MLLM_ERR_FORMAT, "%s: index entry %llu ('%.*s'): %s", m->label, (unsigned long long)i,
                    (int)(t->name ? t->name_len : 0), t->name ? t->name : "", why);
}

static mllm_status parse_entry(mllm_mllmfile *m, uint64_t i, const uint8_t *p, uint64_t left, uint64_t *used) {
    mllm_mllmfile_tensor *t = &m->tensors[i];
    if (left < MLLM_FILE_ENTRY_BYTES) return entry_err(m, i, t, "runs past the end of the index");
    t->name_len = rd32(p);
    if (t->name_len == 0 || t->name_len > MLLM_FILE_MAX_NAME || t->name_len > left - MLLM_FILE_ENTRY_BYTES) {
        return entry_err(m, i, t, "name length is 0, over 255 or past the end of the index");
    }
    t->name = (const char *)p + MLLM_FILE_ENTRY_BYTES;
    if (memchr(t->name, 0, t->name_len)) return entry_err(m, i, t, "name contains a NUL byte");
    uint64_t padded = (MLLM_FILE_ENTRY_BYTES + t->name_len + 7) & ~(uint64_t)7;
    *used = padded <= left ? padded : left;
    uint32_t dtype = rd32(p + 4), n_dims = rd32(p + 8);
    const mllm_dtype_traits *tr = dtype < MLLM_DTYPE_COUNT ? mllm_dtype_get((int)dtype) : NULL;
    if (!tr || dtype == MLLM_DTYPE_Q8_0S || dtype == MLLM_DTYPE_Q8_K32) return entry_err(m, i, t, "unknown dtype");
    t->dtype = (int)dtype;
    if (n_dims < 1 || n_dims > MLLM_FILE_MAX_DIMS || rd32(p + 12) != 0 || rd64(p + 72) != 0) {
        return entry_err(m, i, t, "dimension count not in 1..4, or reserved fields not zero");
    }
    t->n_dims = (int)n_dims;
    uint64_t n_rows = 1;
    for (int d = 0; d < 4; d++) {
        t->ne[d] = (int64_t)rd64(p + 16 + 8 * d);
        if (t->ne[d] < 1 || t->ne[d] > MF_MAX_NE || (d >= t->n_dims && t->ne[d] != 1)) {
            return entry_err(m, i, t, "dimension out of range (or unused dimension not 1)");
        }
        if (d > 0) {
            if (n_rows > (uint64_t)MF_MAX_NE / (uint64_t)t->ne[d]) return entry_err(m, i, t, "too many elements");
            n_rows *= (uint64_t)t->ne[d];
        }
    }
    size_t row = mllm_dtype_row_size((mllm_dtype)t->dtype, t->ne[0]);
    if (row == 0) return entry_err(m, i, t, "first dimension is not a multiple of the dtype's block size");
    if (tr->packed_rows && (t->n_dims != 2 || n_rows % (uint64_t)tr->packed_rows != 0))
        return entry_err(m, i, t, "packed layout needs a matrix whose row count is a multiple of 8");
    t->offset = rd64(p + 48);
    t->size = rd64(p + 56);
    t->checksum = rd64(p + 64);
    if (n_rows > UINT64_MAX / row || t->size != row * n_rows) {
        return entry_err(m, i, t, "byte size does not match dtype and shape");
    }
    if (t->offset % MLLM_FILE_ALIGN) return entry_err(m, i, t, "data offset is not 64-byte aligned");
    if (!in_range(t->offset, t->size, 0, m->data_size)) return entry_err(m, i, t, "data lies outside the file");
    t->data = m->base + m->data_off + t->offset;
    return MLLM_OK;
}

static int by_offset(const void *a, const void *b) {
    const mllm_mllmfile_tensor *x = *(mllm_mllmfile_tensor *const *)a, *y = *(mllm_mllmfile_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int by_name(const void *a, const void *b) {
    const mllm_mllmfile_tensor *x = *(mllm_mllmfile_tensor *const *)a, *y = *(mllm_mllmfile_tensor *const *)b;
    uint32_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* No two tensors share bytes, no name appears twice. */
static mllm_status check_overlaps(mllm_mllmfile *m) {
    if (m->n_tensors < 2) return MLLM_OK;
    mllm_mllmfile_tensor **v = mllm_malloc(m->n_tensors * sizeof *v);
    if (!v) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", m->label);
    for (uint64_t i = 0; i < m->n_tensors; i++) v[i] = &m->tensors[i];
    mllm_status st = MLLM_OK;
    qsort(v, m->n_tensors, sizeof *v, by_offset);
    for (uint64_t i = 1; i < m->n_tensors && !st; i++) {
        if (v[i - 1]->offset + v[i - 1]->size > v[i]->offset) {
            st = mllm_err(MLLM_ERR_FORMAT, "%s: index entry '%.*s' overlaps '%.*s'", m->label, (int)v[i]->name_len,
                          v[i]->name, (int)v[i - 1]->name_len, v[i - 1]->name);
        }
    }
    qsort(v, m->n_tensors, sizeof *v, by_name);
    for (uint64_t i = 1; i < m->n_tensors && !st; i++) {
        if (by_name(&v[i - 1], &v[i]) == 0) {
            st = mllm_err(MLLM_ERR_FORMAT, "%s: index entry '%.*s' appears twice", m->label, (int)v[i]->name_len,
                          v[i]->name);
        }
    }
    mllm_free(v);
    return st;
}

static mllm_status parse(mllm_mllmfile *m) {
    uint64_t index_off = 0, index_size = 0;
    mllm_status st = parse_header(m, &index_off, &index_size);
    if (st) return st;
    if (m->n_tensors > index_size / MLLM_FILE_ENTRY_BYTES) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: %llu tensors cannot fit in a %llu-byte index", m->label,
                        (unsigned long long)m->n_tensors, (unsigned long long)index_size);
    }
    m->tensors = mllm_calloc(m->n_tensors ? m->n_tensors : 1, sizeof *m->tensors);
    if (!m->tensors) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", m->label);
    const uint8_t *p = m->base + index_off;
    uint64_t left = index_size;
    for (uint64_t i = 0; i < m->n_tensors; i++) {
        uint64_t used = 0;
        if ((st = parse_entry(m, i, p, left, &used))) return st;
        p += used;
        left -= used;
    }
    if (left != 0) return mllm_err(MLLM_ERR_FORMAT, "%s: %llu unused bytes at the end of the index", m->label,
                                   (unsigned long long)left);
    return check_overlaps(m);
}

static mllm_status new_handle(const char *label, mllm_mllmfile **out) {
    mllm_mllmfile *m = mllm_calloc(1, sizeof *m);
    char *l = mllm_strndup(label, strlen(label));
    if (!m || !l) {
        mllm_free(m);
        mllm_free(l);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
    }
    m->label = l;
    *out = m;
    return MLLM_OK;
}

mllm_status mllm_mllmfile_open_memory(const void *buf, size_t len, const char *label, mllm_mllmfile **out) {
    if (!buf || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_mllmfile_open_memory: NULL argument");
    *out = NULL;
    mllm_mllmfile *m = NULL;
    mllm_status st = new_handle(label ? label : "mllm", &m);
    if (st) return st;
    m->base = buf;
    m->size = len;
    if ((st = parse(m))) {
        mllm_mllmfile_close(m);
        return st;
    }
    *out = m;
    return MLLM_OK;
}

mllm_status mllm_mllmfile_open(const char *path, mllm_mllmfile **out) {
    if (!path || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_mllmfile_open: NULL argument");
    *out = NULL;
    void *map = NULL;
    size_t map_size = 0;
    mllm_status st = mllm_file_map(path, MLLM_FILE_HEADER_BYTES, "shorter than the .mllm header", &map, &map_size);
    if (st != MLLM_OK) return st;
    mllm_mllmfile *m = NULL;
    st = new_handle(path, &m);
    if (st) {
        mllm_file_unmap(map, map_size);
        return st;
    }
    m->base = map;
    m->size = map_size;
    m->mapped = true;
    if ((st = parse(m))) {
        mllm_mllmfile_close(m);
        return st;
    }
    *out = m;
    return MLLM_OK;
}

void mllm_mllmfile_close(mllm_mllmfile *m) {
    if (!m) return;
    if (m->mapped) mllm_file_unmap((void *)m->base, m->size);
    mllm_free(m->tensors);
    mllm_free(m->label);
    mllm_free(m);
}

size_t mllm_mllmfile_n_tensors(const mllm_mllmfile *m) { return m ? (size_t)m->n_tensors : 0; }

const mllm_mllmfile_tensor *mllm_mllmfile_tensor_at(const mllm_mllmfile *m, size_t i) {
    return m && i < m->n_tensors ? &m->tensors[i] : NULL;
}

const char *mllm_mllmfile_config(const mllm_mllmfile *m, size_t *len) {
    *len = (size_t)m->cfg_size;
    return (const char *)m->base + m->cfg_off;
}

const void *mllm_mllmfile_tokenizer(const mllm_mllmfile *m, mllm_tok_kind *kind, size_t *len) {
    *kind = (mllm_tok_kind)m->tok_kind;
    *len = (size_t)m->tok_size;
    return m->base + m->tok_off;
}

const char *mllm_mllmfile_chat_template(const mllm_mllmfile *m, size_t *len) {
    *len = (size_t)m->tmpl_size;
    return (const char *)m->base + m->tmpl_off;
}

const char *mllm_mllmfile_label(const mllm_mllmfile *m) { return m->label; }

mllm_status mllm_mllmfile_hf_tokenizer(const mllm_mllmfile *m, const char **json, size_t *json_len,
                                       const char **config, size_t *config_len) {
    if (m->tok_kind != MLLM_TOK_HF_JSON) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: the tokenizer section is not tokenizer.json", m->label);
    }
    const uint8_t *p = m->base + m->tok_off;
    uint64_t a = m->tok_size >= 16 ? rd64(p) : UINT64_MAX, b = m->tok_size >= 16 ? rd64(p + 8) : UINT64_MAX;
    if (a == UINT64_MAX || a == 0 || a > m->tok_size - 16 || b != m->tok_size - 16 - a) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: tokenizer section lengths %llu + %llu do not fill its %llu bytes",
                        m->label, (unsigned long long)a, (unsigned long long)b, (unsigned long long)m->tok_size);
    }
    *json = (const char *)p + 16;
    *json_len = (size_t)a;
    *config = (const char *)p + 16 + a;
    *config_len = (size_t)b;
    return MLLM_OK;
}

mllm_status mllm_mllmfile_verify(const mllm_mllmfile *m, size_t *n_checked) {
    if (n_checked) *n_checked = 0;
    for (uint64_t i = 0; i < m->n_tensors; i++) {
        const mllm_mllmfile_tensor *t = &m->tensors[i];
        uint64_t h = mllm_xxh64(t->data, (size_t)t->size);
        if (h != t->checksum) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%.*s': checksum %016llx, expected %016llx (data corrupted)",
                            m->label, (int)t->name_len, t->name, (unsigned long long)h,
                            (unsigned long long)t->checksum);
        }
        if (n_checked) (*n_checked)++;
    }
    return MLLM_OK;
}
