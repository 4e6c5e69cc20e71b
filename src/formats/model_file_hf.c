/* Hugging Face folder -> mllm_model_file: config.json, model.safetensors or
   the shards listed in model.safetensors.index.json, tensor names mapped to
   GGUF's, tokenizer files noted. Weights stay zero-copy views of the shards. */
#include "formats/model_file_internal.h"
#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/file_open.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HF_MAX_INDEX (64u << 20)

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = mllm_malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static bool exists(const char *path) { return access(path, R_OK) == 0; }

static mllm_status add_shard(mllm_model_file *f, const char *file) {
    mllm_model_file_priv *p = f->priv;
    char *path = join(f->path, file);
    if (!path) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", f->path);
    mllm_safetensors **ns = mllm_realloc(p->shards, (p->n_shards + 1) * sizeof *ns);
    if (!ns) {
        mllm_free(path);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", f->path);
    }
    p->shards = ns;
    mllm_safetensors *s = NULL;
    mllm_status st = mllm_safetensors_open(path, &s);
    mllm_free(path);
    if (st) return st;
    p->shards[p->n_shards++] = s;
    /* Names stay Hugging Face's: the model registry renames them per family. */
    for (size_t i = 0; i < mllm_safetensors_n_tensors(s); i++) {
        const mllm_st_tensor *t = mllm_safetensors_tensor_at(s, i);
        const char *use = t->name;
        if (mllm_model_file_find(f, use)) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: tensor '%s' appears in two shards", f->path, t->name);
        }
        if ((st = mllm_model_file_add_weight(f, use, t->dtype, t->n_dims, t->ne, t->data, t->size))) return st;
        mllm_model_file_mark_mapped(f);
    }
    return MLLM_OK;
}

/* A shard name from the index must be a plain file name in the folder. */
static bool safe_file_name(const char *s) {
    return s[0] && s[0] != '.' && !strchr(s, '/') && !strchr(s, '\\') && strlen(s) < 256;
}

static mllm_status open_sharded(mllm_model_file *f, const char *index_path) {
    size_t len;
    FILE *fp = mllm_file_fopen(index_path);
    if (!fp) return MLLM_ERR_IO; /* the message names the file and why */
    long size = fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
    if (size < 0 || size > (long)HF_MAX_INDEX || fseek(fp, 0, SEEK_SET) != 0) {
        fclose(fp);
        return mllm_err(MLLM_ERR_FORMAT, "%s: unreadable or too large", index_path);
    }
    char *buf = mllm_malloc((size_t)size + 1);
    if (!buf) {
        fclose(fp);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", index_path);
    }
    len = fread(buf, 1, (size_t)size, fp);
    fclose(fp);
    cJSON *root = cJSON_ParseWithLength(buf, len);
    mllm_free(buf);
    const cJSON *map = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
    mllm_status st = MLLM_OK;
    if (!cJSON_IsObject(map)) {
        st = mllm_err(MLLM_ERR_FORMAT, "%s: no 'weight_map' object", index_path);
    }
    /* Open each distinct shard once, in order of first mention. */
    for (const cJSON *e = map ? map->child : NULL; e && !st; e = e->next) {
        if (!cJSON_IsString(e) || !safe_file_name(e->valuestring)) {
            st = mllm_err(MLLM_ERR_FORMAT, "%s: weight_map entry '%s' is not a plain file name", index_path, e->string);
            break;
        }
        bool seen = false;
        for (const cJSON *q = map->child; q != e; q = q->next) seen = seen || !strcmp(q->valuestring, e->valuestring);
        if (!seen) st = add_shard(f, e->valuestring);
    }
    cJSON_Delete(root);
    return st;
}

mllm_status mllm_model_file_open_hf(mllm_model_file *f) {
    char *cfg_path = join(f->path, "config.json");
    if (!cfg_path) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", f->path);
    mllm_status st = exists(cfg_path) ? mllm_hf_config_load(cfg_path, &f->meta)
                                      : mllm_err(MLLM_ERR_FORMAT, "%s: folder has no config.json", f->path);
    mllm_free(cfg_path);
    if (st) return st;
    char *single = join(f->path, "model.safetensors");
    char *index = join(f->path, "model.safetensors.index.json");
    if (!single || !index) {
        st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", f->path);
    } else if (exists(single)) {
        st = add_shard(f, "model.safetensors");
    } else if (exists(index)) {
        st = open_sharded(f, index);
    } else {
        st = mllm_err(MLLM_ERR_FORMAT, "%s: folder has neither model.safetensors nor model.safetensors.index.json",
                      f->path);
    }
    mllm_free(single);
    mllm_free(index);
    if (st) return st;
    char *tj = join(f->path, "tokenizer.json"), *tc = join(f->path, "tokenizer_config.json");
    if (!tj || !tc) {
        mllm_free(tj);
        mllm_free(tc);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", f->path);
    }
    if (exists(tj)) f->tokenizer_json = tj; else mllm_free(tj);
    if (exists(tc)) f->tokenizer_config = tc; else mllm_free(tc);
    return MLLM_OK;
}
