/* .mllm v3 writer. Tensors are streamed (whole rows at a time) into a temp
   file while their checksums are computed; the index and header are written
   last (they hold the checksums), then the file is fsynced and renamed onto
   the target, so a reader never sees a half-written file under that name. */
#include "formats/mllmfile.h"
#include "core/alloc.h"
#include "core/atomic_write.h"
#include "core/dtype.h"
#include "core/error.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MW_CHUNK (4u << 20) /* bytes asked of a fill callback at a time (whole rows) */

typedef struct {
    char *name;
    int dtype, n_dims;
    int64_t ne[4];
    uint64_t size, offset, checksum;
    size_t row;
    mllm_mllmfile_fill_fn fill;
    void *user;
} mw_tensor;

typedef struct {
    void *data;
    size_t len;
} mw_blob;

struct mllm_mllmfile_writer {
    mw_tensor *t;
    size_t n, cap;
    mw_blob cfg, tok, tmpl;
    mllm_tok_kind tok_kind;
};

mllm_status mllm_mllmfile_writer_new(mllm_mllmfile_writer **out) {
    *out = mllm_calloc(1, sizeof **out);
    return *out ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "mllm writer: out of memory");
}

void mllm_mllmfile_writer_free(mllm_mllmfile_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) mllm_free(w->t[i].name);
    mllm_free(w->t);
    mllm_free(w->cfg.data);
    mllm_free(w->tok.data);
    mllm_free(w->tmpl.data);
    mllm_free(w);
}

static mllm_status set_blob(mw_blob *b, const void *data, size_t len) {
    void *c = mllm_malloc(len ? len : 1);
    if (!c) return mllm_err(MLLM_ERR_NOMEM, "mllm writer: out of memory");
    if (len) memcpy(c, data, len);
    mllm_free(b->data);
    b->data = c;
    b->len = len;
    return MLLM_OK;
}

mllm_status mllm_mllmfile_writer_set_config(mllm_mllmfile_writer *w, const char *json, size_t len) {
    return set_blob(&w->cfg, json, len);
}

mllm_status mllm_mllmfile_writer_set_tokenizer(mllm_mllmfile_writer *w, mllm_tok_kind kind, const void *data,
                                               size_t len) {
    if ((kind == MLLM_TOK_NONE) != (len == 0) || kind > MLLM_TOK_HF_JSON) {
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm writer: tokenizer kind %d with %zu bytes", (int)kind, len);
    }
    w->tok_kind = kind;
    return set_blob(&w->tok, data, len);
}

mllm_status mllm_mllmfile_writer_set_chat_template(mllm_mllmfile_writer *w, const char *text, size_t len) {
    return set_blob(&w->tmpl, text, len);
}

mllm_status mllm_mllmfile_writer_add_tensor(mllm_mllmfile_writer *w, const char *name, int dtype, int n_dims,
                                            const int64_t *ne, mllm_mllmfile_fill_fn fill, void *user) {
    size_t nl = name ? strlen(name) : 0;
    if (nl == 0 || nl > MLLM_FILE_MAX_NAME || n_dims < 1 || n_dims > MLLM_FILE_MAX_DIMS || !fill ||
        !mllm_dtype_get(dtype)) {
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm writer: bad tensor '%s' (dtype %d, %d dims)", name ? name : "",
                        dtype, n_dims);
    }
    for (size_t i = 0; i < w->n; i++) {
        if (!strcmp(w->t[i].name, name)) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm writer: duplicate tensor '%s'", name);
    }
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        mw_tensor *nt = mllm_realloc(w->t, cap * sizeof *nt);
        if (!nt) return mllm_err(MLLM_ERR_NOMEM, "mllm writer: out of memory");
        w->t = nt;
        w->cap = cap;
    }
    mw_tensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    uint64_t rows = 1;
    for (int d = 0; d < 4; d++) {
        t->ne[d] = d < n_dims ? ne[d] : 1;
        if (t->ne[d] < 1) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm writer: tensor '%s' has an empty dimension", name);
        if (d) rows *= (uint64_t)t->ne[d];
    }
    t->row = mllm_dtype_row_size((mllm_dtype)dtype, t->ne[0]);
    if (!t->row) {
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm writer: tensor '%s': %lld is not a multiple of %s's block size",
                        name, (long long)t->ne[0], mllm_dtype_name(dtype));
    }
    t->name = mllm_strndup(name, nl);
    if (!t->name) return mllm_err(MLLM_ERR_NOMEM, "mllm writer: out of memory");
    t->dtype = dtype;
    t->n_dims = n_dims;
    t->size = t->row * rows;
    t->fill = fill;
    t->user = user;
    w->n++;
    return MLLM_OK;
}

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

static void wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void wr64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static mllm_status pwrite_all(int fd, const void *buf, size_t n, uint64_t off, const char *path) {
    const uint8_t *p = buf;
    while (n) {
        ssize_t k = pwrite(fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return mllm_err(MLLM_ERR_IO, "%s: write failed: %s", path, strerror(errno));
        p += k, n -= (size_t)k, off += (uint64_t)k;
    }
    return MLLM_OK;
}

/* Streams one tensor to its offset, hashing it on the way. */
static mllm_status write_tensor(int fd, mw_tensor *t, uint64_t base, uint8_t *buf, const char *path) {
    size_t rows_per = MW_CHUNK / t->row ? MW_CHUNK / t->row : 1;
    mllm_xxh64_state hs;
    mllm_xxh64_init(&hs);
    for (uint64_t off = 0; off < t->size;) {
        size_t n = (size_t)(t->size - off < rows_per * t->row ? t->size - off : rows_per * t->row);
        mllm_status st = t->fill(t->user, buf, (size_t)off, n);
        if (st) return st;
        mllm_xxh64_update(&hs, buf, n);
        if ((st = pwrite_all(fd, buf, n, base + t->offset + off, path))) return st;
        off += n;
    }
    t->checksum = mllm_xxh64_digest(&hs);
    return MLLM_OK;
}

/* Header + index + sections, with the meta checksum (after data is written:
   the index holds the tensor checksums). */
static mllm_status build_meta(const mllm_mllmfile_writer *w, uint8_t *meta, uint64_t index_size,
                              uint64_t data_off, uint64_t data_size) {
    uint8_t *h = meta;
    uint64_t off = MLLM_FILE_HEADER_BYTES;
    uint8_t *e = meta + off;
    for (size_t i = 0; i < w->n; i++) {
        const mw_tensor *t = &w->t[i];
        size_t nl = strlen(t->name);
        wr32(e, (uint32_t)nl);
        wr32(e + 4, (uint32_t)t->dtype);
        wr32(e + 8, (uint32_t)t->n_dims);
        for (int d = 0; d < 4; d++) wr64(e + 16 + 8 * d, (uint64_t)t->ne[d]);
        wr64(e + 48, t->offset);
        wr64(e + 56, t->size);
        wr64(e + 64, t->checksum);
        memcpy(e + MLLM_FILE_ENTRY_BYTES, t->name, nl);
        e += align_up(MLLM_FILE_ENTRY_BYTES + nl, 8);
    }
    uint64_t cfg_off = off + index_size;
    uint64_t tok_off = align_up(cfg_off + w->cfg.len, 8);
    uint64_t tmpl_off = align_up(tok_off + w->tok.len, 8);
    if (w->cfg.len) memcpy(meta + cfg_off, w->cfg.data, w->cfg.len);
    if (w->tok.len) memcpy(meta + tok_off, w->tok.data, w->tok.len);
    if (w->tmpl.len) memcpy(meta + tmpl_off, w->tmpl.data, w->tmpl.len);
    wr32(h, MLLM_FILE_MAGIC);
    wr32(h + 4, MLLM_FILE_VERSION);
    wr32(h + 8, MLLM_FILE_HEADER_BYTES);
    wr64(h + 16, data_off + data_size);
    wr64(h + 24, w->n);
    wr64(h + 32, off);
    wr64(h + 40, index_size);
    wr64(h + 48, w->cfg.len ? cfg_off : 0);
    wr64(h + 56, w->cfg.len);
    wr64(h + 64, w->tok.len ? tok_off : 0);
    wr64(h + 72, w->tok.len);
    wr32(h + 80, (uint32_t)w->tok_kind);
    wr64(h + 88, w->tmpl.len ? tmpl_off : 0);
    wr64(h + 96, w->tmpl.len);
    wr64(h + 104, data_off);
    wr64(h + 112, data_size);
    mllm_xxh64_state s;
    mllm_xxh64_init(&s);
    mllm_xxh64_update(&s, h, 120);
    mllm_xxh64_update(&s, meta + MLLM_FILE_HEADER_BYTES, (size_t)data_off - MLLM_FILE_HEADER_BYTES);
    wr64(h + 120, mllm_xxh64_digest(&s));
    return MLLM_OK;
}

static mllm_status write_body(mllm_mllmfile_writer *w, int fd, const char *path) {
    uint64_t index_size = 0;
    for (size_t i = 0; i < w->n; i++) index_size += align_up(MLLM_FILE_ENTRY_BYTES + strlen(w->t[i].name), 8);
    uint64_t end = MLLM_FILE_HEADER_BYTES + index_size;
    end = align_up(end + w->cfg.len, 8);
    end = align_up(end + w->tok.len, 8);
    end += w->tmpl.len;
    uint64_t data_off = align_up(end, MLLM_FILE_ALIGN), data_size = 0;
    size_t max_chunk = 0;
    for (size_t i = 0; i < w->n; i++) {
        mw_tensor *t = &w->t[i];
        t->offset = align_up(data_size, MLLM_FILE_ALIGN);
        data_size = t->offset + t->size;
        size_t rows_per = MW_CHUNK / t->row ? MW_CHUNK / t->row : 1;
        size_t c = (size_t)(rows_per * t->row < t->size ? rows_per * t->row : t->size);
        if (c > max_chunk) max_chunk = c;
    }
    uint8_t *buf = mllm_malloc(max_chunk ? max_chunk : 1);
    uint8_t *meta = mllm_calloc(1, (size_t)data_off);
    mllm_status st = (!buf || !meta) ? mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path) : MLLM_OK;
    /* The gaps between tensors must read as zeros: size the file first. */
    if (!st && ftruncate(fd, (off_t)(data_off + data_size)) != 0) {
        st = mllm_err(MLLM_ERR_IO, "%s: cannot size the file: %s", path, strerror(errno));
    }
    for (size_t i = 0; i < w->n && !st; i++) st = write_tensor(fd, &w->t[i], data_off, buf, path);
    if (!st) st = build_meta(w, meta, index_size, data_off, data_size);
    if (!st) st = pwrite_all(fd, meta, (size_t)data_off, 0, path);
    mllm_free(buf);
    mllm_free(meta);
    return st;
}

mllm_status mllm_mllmfile_writer_write(mllm_mllmfile_writer *w, const char *path) {
    if (!w || !path) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm writer: NULL argument");
    mllm_atomic_file af;
    mllm_status st = mllm_atomic_open(&af, path);
    if (st) return st;
    /* write_body writes with pwrite on the descriptor: nothing goes through
       the stdio buffer, which the commit's fflush then finds empty. */
    return mllm_atomic_commit(&af, write_body(w, fileno(af.f), af.tmp));
}
