/* mllm_model_file_open: detects the format (folder = Hugging Face, "GGUF"
   magic = GGUF, otherwise a llama2.c checkpoint whose size matches its
   header) and hands over to the per-format opener. */
#include "formats/model_file_internal.h"
#include "formats/gguf.h"
#include "formats/mllmfile_model.h"
#include "formats/safetensors.h"
#include "core/alloc.h"
#include "core/error.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

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
    f->n_weights++;
    return MLLM_OK;
}

const mllm_weight *mllm_model_file_find(const mllm_model_file *f, const char *name) {
    if (!f || !name) return NULL;
    for (size_t i = 0; i < f->n_weights; i++) {
        if (strcmp(f->weights[i].name, name) == 0) return &f->weights[i];
    }
    return NULL;
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
        if (p->map && f->kind == MLLM_FILE_HF) mllm_model_file_release_native(f); /* .mllm: fds, copies */
        if (p->map) munmap(p->map, p->map_size);
        mllm_free(p);
    }
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
        FILE *fp = fopen(path, "rb");
        if (!fp) {
            st = mllm_err(MLLM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
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
    if (!st) st = mllm_model_file_check(f);
    if (st) {
        mllm_model_file_close(f);
        return st;
    }
    *out = f;
    return MLLM_OK;
}
