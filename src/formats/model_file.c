/* mllm_model_file_open: detects the format (folder = Hugging Face, "GGUF"
   magic = GGUF, otherwise a llama2.c checkpoint whose size matches its
   header) and hands over to the per-format opener. */
#include "formats/model_file_internal.h"
#include "formats/gguf.h"
#include "formats/mllmfile.h"
#include "formats/mllmfile_model.h"
#include "formats/safetensors.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/file_open.h"
#include "core/file_map.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

size_t mllm_weight_align(int dtype) {
    const mllm_dtype_traits *t = mllm_dtype_get(dtype);
    size_t a = 4;
    while (t && a > 1 && t->type_size % a) a /= 2;
    return a;
}

mllm_status mllm_model_file_add_weight(mllm_model_file *f, const char *name, int dtype, int n_dims,
                                       const int64_t *ne, const void *data, size_t size) {
    mllm_model_file_priv *p = f->priv;
    if (f->n_weights == p->weights_cap) {
        size_t cap = p->weights_cap ? 2 * p->weights_cap : 64;
        mllm_weight *nw = mllm_realloc(f->weights, cap * sizeof *nw);
        if (!nw) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", f->path);
        f->weights = nw;
        p->weights_cap = cap;
    }
    mllm_weight *w = &f->weights[f->n_weights];
    memset(w, 0, sizeof *w);
    w->name = mllm_strndup(name, strlen(name));
    if (!w->name) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", f->path);
    w->dtype = dtype;
    w->n_dims = n_dims;
    for (int d = 0; d < 4; d++) w->ne[d] = d < n_dims ? ne[d] : 1;
    w->data = data;
    w->size = size;
    if (size && ((uintptr_t)data & (mllm_weight_align(dtype) - 1))) {
        void **nc = mllm_realloc(p->copies, (p->n_copies + 1) * sizeof *nc);
        void *copy = nc ? mllm_malloc_aligned(size) : NULL;
        if (nc) p->copies = nc;
        if (!copy) {
            mllm_free(w->name);
            return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory copying misaligned tensor '%s'", f->path, name);
        }
        memcpy(copy, data, size);
        p->copies[p->n_copies++] = copy;
        w->data = copy;
    }
    f->n_weights++;
    return MLLM_OK;
}

void mllm_model_file_mark_mapped(mllm_model_file *f) {
    mllm_model_file_priv *p = f->priv;
    mllm_weight *w = &f->weights[f->n_weights - 1];
    w->mapped = !(p->n_copies && w->data == p->copies[p->n_copies - 1]);
}

mllm_status mllm_model_file_own(mllm_model_file *f, void *ptr) {
    mllm_model_file_priv *p = f->priv;
    void **nc = mllm_realloc(p->copies, (p->n_copies + 1) * sizeof *nc);
    if (!nc) {
        mllm_free_aligned(ptr);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", f->path);
    }
    p->copies = nc;
    p->copies[p->n_copies++] = ptr;
    return MLLM_OK;
}

const mllm_weight *mllm_model_file_find(const mllm_model_file *f, const char *name) {
    if (!f || !name) return NULL;
    for (size_t i = 0; i < f->n_weights; i++) {
        if (strcmp(f->weights[i].name, name) == 0) return &f->weights[i];
    }
    return NULL;
}

mllm_status mllm_model_file_check_intact(const mllm_model_file *f) {
    if (!f) return MLLM_OK;
    bool bad = mllm_gguf_damaged(f->gguf);
    const mllm_model_file_priv *p = f->priv;
    for (size_t i = 0; p && !bad && i < p->n_shards; i++) bad = mllm_safetensors_damaged(p->shards[i]);
    for (size_t i = 0; p && !bad && i < p->n_splits; i++) bad = mllm_gguf_damaged(p->splits[i]);
    if (!bad && p && p->map) bad = mllm_file_map_damaged(p->map);
    if (!bad) return MLLM_OK;
    return mllm_err(MLLM_ERR_IO, "%s: the model file shrank while in use (truncated or rewritten in place); "
                                 "what was read past its new end is zeros, so this result is void: reload the model",
                    f->path);
}

void mllm_model_file_close(mllm_model_file *f) {
    if (!f) return;
    for (size_t i = 0; i < f->n_weights; i++) mllm_free(f->weights[i].name);
    mllm_free(f->weights);
    mllm_gguf_close(f->gguf);
    mllm_model_file_priv *p = f->priv;
    if (p) {
        for (size_t i = 0; i < p->n_shards; i++) mllm_safetensors_close(p->shards[i]);
        mllm_free(p->shards);
        for (size_t i = 0; i < p->n_splits; i++) mllm_gguf_close(p->splits[i]);
        mllm_free(p->splits);
        for (size_t i = 0; i < p->n_copies; i++) mllm_free_aligned(p->copies[i]);
        mllm_free(p->copies);
        if (p->map && f->kind == MLLM_FILE_HF) mllm_model_file_release_native(f); /* .mllm: fds, copies */
        if (p->map) mllm_file_unmap(p->map, p->map_size);
        mllm_free(p);
    }
    mllm_meta_free(&f->meta);
    mllm_free(f->tokenizer_json);
    mllm_free(f->tokenizer_config);
    mllm_free(f->path);
    mllm_free(f);
}

mllm_status mllm_model_file_open(const char *path, mllm_model_file **out) {
    if (!path || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_model_file_open: NULL argument");
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0) return mllm_err(MLLM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    mllm_model_file *f = mllm_calloc(1, sizeof *f);
    mllm_model_file_priv *p = mllm_calloc(1, sizeof *p);
    char *name = mllm_strndup(path, strlen(path));
    if (!f || !p || !name) {
        mllm_free(f);
        mllm_free(p);
        mllm_free(name);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    }
    f->path = name;
    f->priv = p;
    mllm_status st;
    if (S_ISDIR(sb.st_mode)) {
        f->kind = MLLM_FILE_HF;
        st = mllm_model_file_open_hf(f);
    } else {
        char magic[8] = {0};
        FILE *fp = mllm_file_fopen(path);
        if (!fp) {
            st = MLLM_ERR_IO; /* the message names the file and why */
        } else {
            size_t got = fread(magic, 1, 8, fp);
            fclose(fp);
            if (got >= 4 && memcmp(magic, "GGUF", 4) == 0) {
                f->kind = MLLM_FILE_GGUF;
                st = mllm_model_file_open_gguf(f);
            } else if (mllm_native_sniff(magic, got)) {
                st = mllm_model_file_open_native(f); /* .mllm v1/v2/v3; sets kind */
            } else {
                f->kind = MLLM_FILE_LLAMA2C;
                st = mllm_model_file_open_llama2c(f);
            }
        }
    }
    if (st) {
        mllm_model_file_close(f);
        return st;
    }
    *out = f;
    return MLLM_OK;
}

void mllm_model_file_fingerprint(const mllm_model_file *f, mllm_xxh64_state *h) {
    const uint32_t kind = (uint32_t)f->kind;
    const uint64_t nw = f->n_weights;
    mllm_xxh64_update(h, &kind, sizeof kind);
    mllm_xxh64_update(h, &nw, sizeof nw);
    for (size_t i = 0; i < f->n_weights; i++) {
        const mllm_weight *w = &f->weights[i];
        const int32_t meta[2] = {w->dtype, w->n_dims};
        const uint64_t size = w->size;
        mllm_xxh64_update(h, w->name, strlen(w->name) + 1);
        mllm_xxh64_update(h, meta, sizeof meta);
        mllm_xxh64_update(h, w->ne, sizeof w->ne);
        mllm_xxh64_update(h, &size, sizeof size);
        const uint8_t *d = w->data;
        if (!d) continue;
        const size_t head = w->size < 4096 ? w->size : 4096;
        mllm_xxh64_update(h, d, head);
        if (w->size > 4096 + 256)
            for (size_t k = 0; k < 16; k++) mllm_xxh64_update(h, d + 4096 + (w->size - 4096 - 256) / 15 * k, 256);
    }
}
