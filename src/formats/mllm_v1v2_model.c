/* MLLM v1/v2 file -> mllm_model_file: config.json (beside the file or
   given), HF names mapped to GGUF's like the HF loader, v1 shapes from the
   config. Tensors whose data is not 64-byte aligned (all of v1's, usually)
   are copied once into aligned memory; aligned ones stay zero-copy views. */
#include "formats/mllm_v1v2.h"
#include "formats/mllmfile_model.h"
#include "formats/hf_config.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/file_map.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define V_ALIGN 64

/* dir of path + "/" + name, or NULL. */
static char *beside(const char *path, const char *name) {
    const char *slash = strrchr(path, '/');
    size_t dl = slash ? (size_t)(slash - path) : 1;
    const char *dir = slash ? path : ".";
    size_t n = dl + strlen(name) + 2;
    char *p = mllm_malloc(n);
    if (p) snprintf(p, n, "%.*s/%s", (int)dl, dir, name);
    return p;
}

static mllm_status map_file(mllm_model_file *f) {
    mllm_model_file_priv *p = f->priv;
    void *map = NULL;
    size_t size = 0;
    mllm_status st = mllm_file_map(f->path, 1, "empty", &map, &size);
    if (st) return st;
    p->map = map;
    p->map_size = size;
    return MLLM_OK;
}

static mllm_status load_config(mllm_model_file *f, const char *config_path) {
    char *cp = config_path ? NULL : beside(f->path, "config.json");
    const char *use = config_path ? config_path : cp;
    if (!use) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", f->path);
    mllm_status st = access(use, R_OK) == 0
                         ? mllm_hf_config_load(use, &f->meta)
                         : mllm_err(MLLM_ERR_FORMAT, "%s: an MLLM v1/v2 file needs its config.json (%s not found; "
                                                     "pass --config)", f->path, use);
    mllm_free(cp);
    return st;
}

/* Final shape and GGUF name of entry e. */
static mllm_status resolve(const mllm_model_file *f, mllm_v1v2_entry *e, char *gname, size_t cap) {
    const char *use = mllm_hf_name_to_gguf(e->name, gname, cap) ? gname : e->name;
    if (use != gname) snprintf(gname, cap, "%s", e->name);
    if (e->n_dims > 0) return MLLM_OK;
    if (!mllm_v1v2_shape_from_config(gname, &f->meta, &e->n_dims, e->ne)) {
        /* Unknown tensor in a shapeless v1 file: keep it as a vector. */
        const mllm_dtype_traits *tr = mllm_dtype_get(e->dtype);
        e->n_dims = 1;
        e->ne[0] = (int64_t)(e->size / tr->type_size) * tr->block_size;
        e->ne[1] = e->ne[2] = e->ne[3] = 1;
    }
    size_t row = mllm_dtype_row_size((mllm_dtype)e->dtype, e->ne[0]);
    if (!row || row * (uint64_t)e->ne[1] != e->size) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%s' has %llu bytes, but its config shape {%lld, %lld} in %s "
                                         "needs %llu", f->path, e->name, (unsigned long long)e->size,
                        (long long)e->ne[0], (long long)e->ne[1], mllm_dtype_name(e->dtype),
                        (unsigned long long)(row * (uint64_t)e->ne[1]));
    }
    return MLLM_OK;
}

static mllm_status add_weights(mllm_model_file *f, mllm_v1v2_index *ix) {
    mllm_native_priv *np = f->priv;
    const uint8_t *base = np->base.map;
    size_t owned_size = 0;
    for (size_t i = 0; i < ix->n; i++) {
        if ((uintptr_t)(base + ix->e[i].offset) % V_ALIGN) owned_size += (ix->e[i].size + V_ALIGN - 1) / V_ALIGN * V_ALIGN;
    }
    uint8_t *owned = NULL;
    if (owned_size) {
        owned = mllm_malloc_aligned(owned_size);
        if (!owned) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory (%zu bytes)", f->path, owned_size);
        np->owned = owned;
    }
    char gname[300];
    mllm_status st = MLLM_OK;
    for (size_t i = 0; i < ix->n && !st; i++) {
        mllm_v1v2_entry *e = &ix->e[i];
        if ((st = resolve(f, e, gname, sizeof gname))) break;
        const void *data = base + e->offset;
        if ((uintptr_t)data % V_ALIGN) {
            memcpy(owned, data, (size_t)e->size);
            data = owned;
            owned += (e->size + V_ALIGN - 1) / V_ALIGN * V_ALIGN;
        }
        if (mllm_model_file_find(f, gname)) {
            st = mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%s' appears twice", f->path, e->name);
        } else {
            st = mllm_model_file_add_weight(f, gname, e->dtype, e->n_dims, e->ne, data, (size_t)e->size);
        }
    }
    return st;
}

static mllm_status find_tokenizer(mllm_model_file *f) {
    char *tj = beside(f->path, "tokenizer.json"), *tc = beside(f->path, "tokenizer_config.json");
    if (!tj || !tc) {
        mllm_free(tj);
        mllm_free(tc);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", f->path);
    }
    if (access(tj, R_OK) == 0) f->tokenizer_json = tj; else mllm_free(tj);
    if (access(tc, R_OK) == 0) f->tokenizer_config = tc; else mllm_free(tc);
    return MLLM_OK;
}

mllm_status mllm_v1v2_open_model(mllm_model_file *f, const char *config_path) {
    mllm_status st = map_file(f);
    if (!st) st = load_config(f, config_path);
    if (st) return st;
    mllm_model_file_priv *p = f->priv;
    mllm_v1v2_index ix;
    if ((st = mllm_v1v2_parse(p->map, p->map_size, f->path, &ix))) return st;
    st = add_weights(f, &ix);
    mllm_v1v2_index_free(&ix);
    if (st) return st;
    return find_tokenizer(f);
}

mllm_status mllm_v1v2_model_open(const char *path, const char *config_path, mllm_model_file **out) {
    *out = NULL;
    mllm_model_file *f = mllm_calloc(1, sizeof *f);
    mllm_native_priv *p = mllm_calloc(1, sizeof *p);
    char *name = mllm_strndup(path, strlen(path));
    if (!f || !p || !name) {
        mllm_free(f);
        mllm_free(p);
        mllm_free(name);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    }
    p->tok_fd[0] = p->tok_fd[1] = -1;
    f->path = name;
    f->priv = p;
    f->kind = MLLM_FILE_HF;
    mllm_status st = mllm_v1v2_open_model(f, config_path);
    if (st) {
        mllm_model_file_close(f);
        return st;
    }
    *out = f;
    return MLLM_OK;
}
