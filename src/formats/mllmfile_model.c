/* .mllm v3 -> mllm_model_file (see mllmfile_model.h for the design). */
#define _GNU_SOURCE /* memfd_create */
#include "formats/mllmfile_model.h"
#include "formats/mllm_v1v2.h"
#include "formats/mllmfile.h"
#include "formats/gguf.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/file_open.h"
#include "core/file_map.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

bool mllm_native_sniff(const void *head, size_t n) {
    return mllm_mllmfile_sniff(head, n) || mllm_v1v2_sniff(head, n) != 0;
}

void mllm_model_file_release_native(mllm_model_file *f) {
    mllm_native_priv *p = f->priv;
    for (int i = 0; i < 2; i++) {
        if (p->tok_fd[i] >= 0) close(p->tok_fd[i]);
        p->tok_fd[i] = -1;
    }
    mllm_free_aligned(p->owned);
    p->owned = NULL;
}

mllm_status mllm_native_priv_extend(mllm_model_file *f) {
    mllm_native_priv *p = mllm_realloc(f->priv, sizeof *p);
    if (!p) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", f->path);
    f->priv = p;
    p->tok_fd[0] = p->tok_fd[1] = -1;
    p->owned = NULL;
    return MLLM_OK;
}

/* An anonymous in-memory file holding text, and its /proc path: how the
   embedded tokenizer.json reaches a loader that reads paths. */
static mllm_status memfile(mllm_model_file *f, int slot, const char *name, const char *text, size_t len, char **path) {
#ifdef __wasi__
    (void)slot, (void)text, (void)len, (void)path;
    return mllm_err(MLLM_ERR_UNSUPPORTED,
                    "%s: the embedded %s needs an in-memory file (memfd_create), which wasm32-wasi lacks: "
                    "not supported in this build yet", f->path, name);
#else
    mllm_native_priv *p = f->priv;
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) return mllm_err(MLLM_ERR_IO, "%s: cannot create an in-memory %s: %s", f->path, name, strerror(errno));
    p->tok_fd[slot] = fd;
    for (size_t off = 0; off < len;) {
        ssize_t k = write(fd, text + off, len - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return mllm_err(MLLM_ERR_IO, "%s: cannot write the in-memory %s", f->path, name);
        off += (size_t)k;
    }
    char buf[64];
    snprintf(buf, sizeof buf, "/proc/self/fd/%d", fd);
    *path = mllm_strndup(buf, strlen(buf));
    return *path ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", f->path);
#endif
}

static mllm_status open_tokenizer(mllm_model_file *f, const mllm_mllmfile *m) {
    mllm_tok_kind kind;
    size_t len;
    const void *tok = mllm_mllmfile_tokenizer(m, &kind, &len);
    char label[4200];
    snprintf(label, sizeof label, "%s:tokenizer", f->path);
    if (kind == MLLM_TOK_GGUF_KV) {
        f->kind = MLLM_FILE_GGUF;
        return mllm_gguf_open_memory(tok, len, label, &f->gguf);
    }
    if (kind == MLLM_TOK_NONE) {
        f->kind = MLLM_FILE_LLAMA2C; /* the caller must pass --tokenizer */
        return MLLM_OK;
    }
    mllm_status st = mllm_native_priv_extend(f);
    if (st) return st;
    f->kind = MLLM_FILE_HF; /* only now: close() takes kind HF + map as "extended priv" */
    const char *json = NULL, *cfg = NULL;
    size_t nj = 0, nc = 0;
    if (!st) st = mllm_mllmfile_hf_tokenizer(m, &json, &nj, &cfg, &nc);
    if (!st) st = memfile(f, 0, "tokenizer.json", json, nj, &f->tokenizer_json);
    if (!st && nc) st = memfile(f, 1, "tokenizer_config.json", cfg, nc, &f->tokenizer_config);
    return st;
}

static mllm_status open_v3(mllm_model_file *f) {
    mllm_model_file_priv *p = f->priv;
    void *map = NULL;
    size_t size = 0;
    mllm_status st0 = mllm_file_map(f->path, MLLM_FILE_HEADER_BYTES, "shorter than the .mllm header", &map, &size);
    if (st0) return st0;
    p->map = map;
    p->map_size = size;
    mllm_mllmfile *m = NULL;
    mllm_status st = mllm_mllmfile_open_memory(map, p->map_size, f->path, &m);
    size_t cl = 0;
    const char *cfg = st ? NULL : mllm_mllmfile_config(m, &cl);
    if (!st) st = mllm_mllmfile_config_parse(cfg, cl, f->path, &f->meta);
    char name[MLLM_FILE_MAX_NAME + 1];
    for (size_t i = 0; !st && i < mllm_mllmfile_n_tensors(m); i++) {
        const mllm_mllmfile_tensor *t = mllm_mllmfile_tensor_at(m, i);
        memcpy(name, t->name, t->name_len);
        name[t->name_len] = 0;
        st = mllm_model_file_add_weight(f, name, t->dtype, t->n_dims, t->ne, t->data, (size_t)t->size);
        if (!st) mllm_model_file_mark_mapped(f);
    }
    if (!st) st = open_tokenizer(f, m);
    mllm_mllmfile_close(m); /* the weights point into p->map, not into m */
    return st;
}

mllm_status mllm_model_file_open_native(mllm_model_file *f) {
    uint8_t head[8] = {0};
    FILE *fp = mllm_file_fopen(f->path);
    size_t got = fp ? fread(head, 1, sizeof head, fp) : 0;
    if (fp) fclose(fp);
    if (mllm_mllmfile_sniff(head, got)) return open_v3(f);
    if (mllm_v1v2_sniff(head, got)) {
        mllm_status st = mllm_native_priv_extend(f);
        if (st) return st;
        f->kind = MLLM_FILE_HF;
        return mllm_v1v2_open_model(f, NULL);
    }
    return mllm_err(MLLM_ERR_FORMAT, "%s: not a .mllm file", f->path);
}
