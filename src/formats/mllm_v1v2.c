/* MLLM .mllm v1/v2 index parser: every length, offset and dtype checked
   against the buffer before an entry is accepted. */
#include "formats/mllm_v1v2.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define V1_MAX_NAME 4096
#define V1V2_MAX_TENSORS (1u << 20)
#define V1V2_MAX_NE (1ll << 40)

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

int mllm_v1v2_sniff(const void *head, size_t n) {
    const uint8_t *p = head;
    if (n >= 4 && (int32_t)rd32(p) == MLLM_V1_MAGIC) return 1;
    if (n >= 8 && (int32_t)rd32(p) == MLLM_V2_MAGIC && (int32_t)rd32(p + 4) == 2) return 2;
    return 0;
}

int mllm_v1v2_dtype(int32_t code, const char **why) {
    *why = NULL;
    if (code == MLLM_CODE_BF16) return MLLM_DTYPE_BF16;
    if (code == MLLM_CODE_PACKED) {
        *why = "opaque kernel-specific packed bytes (MLLM dtype 134) cannot be read outside the kernel that packed "
               "them; export the model unpacked";
        return -1;
    }
    if (code == MLLM_CODE_MXFP4) {
        /* 17 bytes per 32 values, GGUF's MXFP4 block, if this build has it. */
        int t = mllm_dtype_from_name("mxfp4");
        const mllm_dtype_traits *tr = t >= 0 ? mllm_dtype_get(t) : NULL;
        if (tr && tr->block_size == 32 && tr->type_size == 17) return t;
        *why = "MXFP4 (MLLM dtype 135) is not supported by this build (no MXFP4 dtype)";
        return -1;
    }
    if (code >= 0 && code <= 30 && mllm_dtype_get(code)) return code;
    *why = "unknown or unsupported MLLM dtype code";
    return -1;
}

void mllm_v1v2_index_free(mllm_v1v2_index *ix) {
    if (!ix) return;
    for (size_t i = 0; i < ix->n; i++) mllm_free(ix->e[i].name);
    mllm_free(ix->e);
    memset(ix, 0, sizeof *ix);
}

static mllm_status bad(const char *label, size_t i, const char *name, const char *why) {
    return mllm_err(MLLM_ERR_FORMAT, "%s: index entry %zu ('%s'): %s", label, i, name ? name : "", why);
}

/* Common checks: dtype, size vs shape (when known), bounds. */
static mllm_status check_entry(const char *label, size_t i, mllm_v1v2_entry *e, uint64_t data_lo, size_t len) {
    const char *why;
    e->dtype = mllm_v1v2_dtype(e->code, &why);
    if (e->dtype < 0) {
        return mllm_err(e->code == MLLM_CODE_PACKED || e->code == MLLM_CODE_MXFP4 ? MLLM_ERR_UNSUPPORTED : MLLM_ERR_FORMAT,
                        "%s: tensor '%s': %s (code %d)", label, e->name, why, (int)e->code);
    }
    if (e->n_dims > 0) {
        size_t row = mllm_dtype_row_size((mllm_dtype)e->dtype, e->ne[0]);
        uint64_t rows = (uint64_t)e->ne[1] * (uint64_t)e->ne[2] * (uint64_t)e->ne[3];
        if (!row || rows > UINT64_MAX / row || row * rows != e->size) {
            return bad(label, i, e->name, "byte size does not match dtype and shape");
        }
    }
    if (e->offset < data_lo || e->offset > len || e->size > len - e->offset) {
        return bad(label, i, e->name, "data lies outside the file or overlaps the header/index");
    }
    return MLLM_OK;
}

static int by_offset(const void *a, const void *b) {
    const mllm_v1v2_entry *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static mllm_status check_overlaps(const char *label, mllm_v1v2_index *ix) {
    if (ix->n < 2) return MLLM_OK;
    mllm_v1v2_entry *v = mllm_malloc(ix->n * sizeof *v);
    if (!v) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
    memcpy(v, ix->e, ix->n * sizeof *v);
    qsort(v, ix->n, sizeof *v, by_offset);
    mllm_status st = MLLM_OK;
    for (size_t i = 1; i < ix->n && !st; i++) {
        if (v[i - 1].offset + v[i - 1].size > v[i].offset) {
            st = mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%s' overlaps '%s'", label, v[i].name, v[i - 1].name);
        }
    }
    mllm_free(v);
    return st;
}

static mllm_status parse_v1(const uint8_t *b, size_t len, const char *label, mllm_v1v2_index *ix) {
    if (len < 12) return mllm_err(MLLM_ERR_FORMAT, "%s: %zu bytes is shorter than the 12-byte v1 header", label, len);
    uint64_t index_size = rd64(b + 4);
    if (index_size > len - 12) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: index of %llu bytes runs past the end of the file", label,
                        (unsigned long long)index_size);
    }
    uint64_t end = 12 + index_size, pos = 12;
    size_t cap = 0;
    while (pos < end) {
        size_t i = ix->n;
        if (end - pos < 4) return bad(label, i, NULL, "truncated name length");
        uint32_t nl = rd32(b + pos);
        if (nl == 0 || nl > V1_MAX_NAME || nl > end - pos - 4 || end - pos - 4 - nl < 20) {
            return bad(label, i, NULL, "name length is 0, too long, or the entry runs past the index");
        }
        if (memchr(b + pos + 4, 0, nl)) return bad(label, i, NULL, "name contains a NUL byte");
        if (ix->n == cap) {
            cap = cap ? 2 * cap : 64;
            if (cap > V1V2_MAX_TENSORS) return bad(label, i, NULL, "too many tensors");
            mllm_v1v2_entry *ne = mllm_realloc(ix->e, cap * sizeof *ne);
            if (!ne) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
            ix->e = ne;
        }
        mllm_v1v2_entry *e = &ix->e[ix->n];
        memset(e, 0, sizeof *e);
        e->name = mllm_strndup((const char *)b + pos + 4, nl);
        if (!e->name) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
        ix->n++;
        pos += 4 + nl;
        e->size = rd64(b + pos);
        e->offset = rd64(b + pos + 8);
        e->code = (int32_t)rd32(b + pos + 16);
        pos += 20;
        for (int d = 0; d < 4; d++) e->ne[d] = 1;
        mllm_status st = check_entry(label, i, e, end, len);
        if (st) return st;
    }
    return MLLM_OK;
}

static mllm_status parse_v2_record(const uint8_t *r, const char *label, size_t i, mllm_v1v2_entry *e,
                                   uint64_t data_lo, size_t len) {
    const char *nm = (const char *)r + 96;
    size_t nl = strnlen(nm, MLLM_V2_NAME_BYTES);
    if (nl == 0 || nl == MLLM_V2_NAME_BYTES) return bad(label, i, NULL, "name is empty or not NUL-terminated");
    e->name = mllm_strndup(nm, nl);
    if (!e->name) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
    e->code = (int32_t)rd32(r + 4);
    e->size = rd64(r + 8);
    e->offset = rd64(r + 16);
    uint64_t sl = rd64(r + 24);
    if (sl < 1 || sl > MLLM_V2_MAX_SHAPE) return bad(label, i, e->name, "shape length not in 1..16");
    int64_t shape[MLLM_V2_MAX_SHAPE];
    for (uint64_t d = 0; d < sl; d++) {
        shape[d] = (int32_t)rd32(r + 32 + 4 * d);
        if (shape[d] < 1) return bad(label, i, e->name, "shape has a dimension < 1");
    }
    /* Leading 1s are dropped; more than 4 real dimensions cannot be held. */
    uint64_t first = 0;
    while (first + 1 < sl && shape[first] == 1) first++;
    if (sl - first > 4) return bad(label, i, e->name, "more than 4 dimensions");
    e->n_dims = (int)(sl - first);
    for (int d = 0; d < 4; d++) e->ne[d] = d < e->n_dims ? shape[sl - 1 - (uint64_t)d] : 1;
    if (e->ne[0] * e->ne[1] > V1V2_MAX_NE / (e->ne[2] * e->ne[3])) return bad(label, i, e->name, "too many elements");
    return check_entry(label, i, e, data_lo, len);
}

static mllm_status parse_v2(const uint8_t *b, size_t len, const char *label, mllm_v1v2_index *ix) {
    if (len < MLLM_V2_HEADER_BYTES) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: %zu bytes is shorter than the 532-byte v2 header", label, len);
    }
    memcpy(ix->model_name, b + 8, 512);
    ix->model_name[512] = 0;
    uint32_t n = rd32(b + 520);
    uint64_t off = rd64(b + 524);
    if (n > V1V2_MAX_TENSORS || off < MLLM_V2_HEADER_BYTES || off > len ||
        (uint64_t)n > (len - off) / MLLM_V2_RECORD_BYTES) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: %u records at offset %llu do not fit in the file", label, n,
                        (unsigned long long)off);
    }
    ix->e = mllm_calloc(n ? n : 1, sizeof *ix->e);
    if (!ix->e) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
    uint64_t table_end = off + (uint64_t)n * MLLM_V2_RECORD_BYTES;
    for (uint32_t i = 0; i < n; i++) {
        ix->n = i + 1;
        mllm_status st = parse_v2_record(b + off + (uint64_t)i * MLLM_V2_RECORD_BYTES, label, i, &ix->e[i],
                                         MLLM_V2_HEADER_BYTES, len);
        if (st) return st;
        /* The table may sit before or after the data, never under it. */
        if (ix->e[i].size && ix->e[i].offset < table_end && ix->e[i].offset + ix->e[i].size > off) {
            return bad(label, i, ix->e[i].name, "data overlaps the record table");
        }
    }
    return MLLM_OK;
}

mllm_status mllm_v1v2_parse(const void *buf, size_t len, const char *label, mllm_v1v2_index *out) {
    memset(out, 0, sizeof *out);
    int v = mllm_v1v2_sniff(buf, len);
    if (!v) return mllm_err(MLLM_ERR_FORMAT, "%s: not an MLLM v1/v2 file (bad magic or version)", label);
    out->version = v;
    mllm_status st = v == 1 ? parse_v1(buf, len, label, out) : parse_v2(buf, len, label, out);
    if (!st) st = check_overlaps(label, out);
    if (st) mllm_v1v2_index_free(out);
    return st;
}

/* A config.json field as a dimension in [1, 2^24], or 0. */
static int64_t cfg_dim(const mllm_meta *cfg, const char *key, int64_t def) {
    int64_t v;
    if (!mllm_meta_get_int(cfg, key, &v)) return def;
    return v >= 1 && v <= (1 << 24) ? v : 0;
}

bool mllm_v1v2_shape_from_config(const char *g, const mllm_meta *cfg, int *n_dims, int64_t ne[4]) {
    const int64_t E = cfg_dim(cfg, "hidden_size", 0), V = cfg_dim(cfg, "vocab_size", 0);
    const int64_t F = cfg_dim(cfg, "intermediate_size", 0), H = cfg_dim(cfg, "num_attention_heads", 0);
    const int64_t Hkv = cfg_dim(cfg, "num_key_value_heads", H), D = cfg_dim(cfg, "head_dim", H ? E / H : 0);
    if (!E || !V || !F || !H || !Hkv || !D) return false; /* the size check after this names the tensor */
    const int64_t QD = H * D, KD = Hkv * D;
    static const struct { const char *suffix; int what; } layer[] = {
        {"attn_norm.weight", 0},  {"ffn_norm.weight", 0},   {"attn_q.weight", 1},      {"attn_k.weight", 2},
        {"attn_v.weight", 2},     {"attn_output.weight", 3}, {"ffn_gate.weight", 4},   {"ffn_up.weight", 4},
        {"ffn_down.weight", 5},   {"attn_q.bias", 6},        {"attn_k.bias", 7},       {"attn_v.bias", 7},
        {"attn_q_norm.weight", 8}, {"attn_k_norm.weight", 8},
    };
    const int64_t shapes[][2] = {{E, 0}, {E, QD}, {E, KD}, {QD, E}, {E, F}, {F, E}, {QD, 0}, {KD, 0}, {D, 0}};
    int what = -1;
    if (!strcmp(g, "token_embd.weight") || !strcmp(g, "output.weight")) {
        ne[0] = E, ne[1] = V, ne[2] = ne[3] = 1;
        *n_dims = 2;
        return true;
    }
    if (!strcmp(g, "output_norm.weight")) what = 0;
    const char *dot = !strncmp(g, "blk.", 4) ? strchr(g + 4, '.') : NULL;
    for (size_t i = 0; dot && i < sizeof layer / sizeof *layer; i++) {
        if (!strcmp(dot + 1, layer[i].suffix)) what = layer[i].what;
    }
    if (what < 0) return false;
    ne[0] = shapes[what][0];
    ne[1] = shapes[what][1] ? shapes[what][1] : 1;
    ne[2] = ne[3] = 1;
    *n_dims = shapes[what][1] ? 2 : 1;
    return true;
}
