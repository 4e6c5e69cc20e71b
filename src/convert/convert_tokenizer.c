/* The source's tokenizer, stored as the source had it: GGUF tokenizer.*
   keys as a tensor-less GGUF image, or the tokenizer.json and
   tokenizer_config.json bytes. Also copies GGUF keys for the exporter. */
#include "convert/convert_internal.h"
#include "formats/gguf.h"
#include "formats/gguf_internal.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/file_open.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CV_MAX_TOKENIZER_FILE (256u << 20)

static mllm_status read_all(const char *path, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    FILE *fp = mllm_file_fopen(path);
    if (!fp) return MLLM_ERR_IO; /* the message names the file and why */
    size_t cap = 1 << 16, n = 0;
    char *buf = mllm_malloc(cap);
    mllm_status st = buf ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    /* Read to EOF (the file may be an in-memory /proc/self/fd file). */
    while (!st) {
        if (n == cap) {
            char *nb = cap >= CV_MAX_TOKENIZER_FILE ? NULL : mllm_realloc(buf, cap * 2);
            if (!nb) {
                st = mllm_err(MLLM_ERR_NOMEM, "%s: too large or out of memory", path);
                break;
            }
            buf = nb, cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - n, fp);
        n += k;
        if (k == 0) break;
    }
    if (!st && ferror(fp)) st = mllm_err(MLLM_ERR_IO, "%s: read error", path);
    fclose(fp);
    if (st) {
        mllm_free(buf);
        return st;
    }
    *out = buf;
    *len = n;
    return MLLM_OK;
}

static mllm_status copy_kv(const mllm_gguf *g, mllm_gguf_writer *w, uint64_t i, const char *key) {
    const mllm_gguf_kv *kv = &g->kv[i];
    const void *v = kv->val;
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; uint64_t u64; int64_t i64;
            float f32; double f64; } x;
    size_t ts = mllm_gguf_type_size(kv->type);
    if (ts && ts <= sizeof x) memcpy(&x, v, ts);
    switch (kv->type) {
    case MLLM_GGUF_UINT8: return mllm_gguf_writer_add_u8(w, key, x.u8);
    case MLLM_GGUF_INT8: return mllm_gguf_writer_add_i8(w, key, x.i8);
    case MLLM_GGUF_UINT16: return mllm_gguf_writer_add_u16(w, key, x.u16);
    case MLLM_GGUF_INT16: return mllm_gguf_writer_add_i16(w, key, x.i16);
    case MLLM_GGUF_UINT32: return mllm_gguf_writer_add_u32(w, key, x.u32);
    case MLLM_GGUF_INT32: return mllm_gguf_writer_add_i32(w, key, x.i32);
    case MLLM_GGUF_UINT64: return mllm_gguf_writer_add_u64(w, key, x.u64);
    case MLLM_GGUF_INT64: return mllm_gguf_writer_add_i64(w, key, x.i64);
    case MLLM_GGUF_FLOAT32: return mllm_gguf_writer_add_f32(w, key, x.f32);
    case MLLM_GGUF_FLOAT64: return mllm_gguf_writer_add_f64(w, key, x.f64);
    case MLLM_GGUF_BOOL: return mllm_gguf_writer_add_bool(w, key, x.u8 != 0);
    case MLLM_GGUF_STRING: {
        mllm_gguf_str s;
        mllm_gguf_get_str(g, key, &s);
        return mllm_gguf_writer_add_strn(w, key, s.ptr, (size_t)s.len);
    }
    case MLLM_GGUF_ARRAY: break;
    }
    if (kv->elem == MLLM_GGUF_STRING) {
        const char **ptrs = mllm_malloc((kv->n ? kv->n : 1) * sizeof *ptrs);
        size_t *lens = mllm_malloc((kv->n ? kv->n : 1) * sizeof *lens);
        mllm_status st = (!ptrs || !lens) ? mllm_err(MLLM_ERR_NOMEM, "out of memory") : MLLM_OK;
        for (uint64_t j = 0; j < kv->n && !st; j++) ptrs[j] = kv->strs[j].ptr, lens[j] = (size_t)kv->strs[j].len;
        if (!st) st = mllm_gguf_writer_add_arr_str(w, key, ptrs, lens, kv->n);
        mllm_free(ptrs);
        mllm_free(lens);
        return st;
    }
    mllm_gguf_type elem;
    uint64_t n;
    const void *data;
    if (kv->elem == MLLM_GGUF_ARRAY || !mllm_gguf_get_arr(g, key, &elem, &n, &data)) {
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: key '%s': nested arrays cannot be copied", mllm_gguf_path(g), key);
    }
    return mllm_gguf_writer_add_arr(w, key, elem, data, n);
}

mllm_status cv_copy_kvs(const mllm_gguf *g, mllm_gguf_writer *w, const char *prefix) {
    char key[512];
    for (uint64_t i = 0; i < mllm_gguf_n_kv(g); i++) {
        mllm_gguf_str k = mllm_gguf_kv_key(g, i);
        if (k.len >= sizeof key) continue; /* no tokenizer key is that long */
        memcpy(key, k.ptr, (size_t)k.len);
        key[k.len] = 0;
        if (prefix && strncmp(key, prefix, strlen(prefix)) != 0) continue;
        mllm_status st = copy_kv(g, w, i, key);
        if (st) return st;
    }
    return MLLM_OK;
}

/* tokenizer.* keys -> a GGUF image in memory (written through the GGUF
   writer to a scratch file, read back, removed). */
static mllm_status gguf_section(const mllm_model_file *f, const char *tmp_base, void **data, size_t *len,
                                char **tmpl) {
    mllm_gguf_writer *w = NULL;
    mllm_status st = mllm_gguf_writer_new(&w);
    if (st) return st;
    st = cv_copy_kvs(f->gguf, w, "tokenizer.");
    char path[4200];
    snprintf(path, sizeof path, "%s.tokenizer.%ld", tmp_base, (long)getpid());
    if (!st) st = mllm_gguf_writer_write(w, path);
    mllm_gguf_writer_free(w);
    if (!st) {
        st = read_all(path, (char **)data, len);
        unlink(path);
    }
    mllm_gguf_str s;
    if (!st && mllm_gguf_get_str(f->gguf, "tokenizer.chat_template", &s)) {
        *tmpl = mllm_strndup(s.ptr, (size_t)s.len);
        if (!*tmpl) st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    return st;
}

/* The chat_template string of tokenizer_config.json, if any. */
static mllm_status hf_template(const char *cfg, size_t len, char **tmpl) {
    cJSON *root = cJSON_ParseWithLength(cfg, len);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "chat_template");
    mllm_status st = MLLM_OK;
    if (cJSON_IsString(t)) {
        *tmpl = mllm_strndup(t->valuestring, strlen(t->valuestring));
        if (!*tmpl) st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    cJSON_Delete(root);
    return st;
}

static mllm_status hf_section(const mllm_model_file *f, void **data, size_t *len, char **tmpl) {
    char *js = NULL, *cfg = NULL;
    size_t nj = 0, nc = 0;
    mllm_status st = read_all(f->tokenizer_json, &js, &nj);
    if (!st && f->tokenizer_config) st = read_all(f->tokenizer_config, &cfg, &nc);
    if (!st && nj == 0) st = mllm_err(MLLM_ERR_FORMAT, "%s: empty tokenizer.json", f->tokenizer_json);
    uint8_t *blob = st ? NULL : mllm_malloc(16 + nj + nc);
    if (!st && !blob) st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
    if (!st) {
        uint64_t a = nj, b = nc;
        memcpy(blob, &a, 8);
        memcpy(blob + 8, &b, 8);
        memcpy(blob + 16, js, nj);
        if (nc) memcpy(blob + 16 + nj, cfg, nc);
        *data = blob;
        *len = 16 + nj + nc;
        if (nc) st = hf_template(cfg, nc, tmpl);
    }
    mllm_free(js);
    mllm_free(cfg);
    return st;
}

mllm_status cv_tokenizer_section(const mllm_model_file *f, const char *tmp_base, mllm_tok_kind *kind, void **data,
                                 size_t *len, char **tmpl) {
    *kind = MLLM_TOK_NONE, *data = NULL, *len = 0, *tmpl = NULL;
    if (f->kind == MLLM_FILE_GGUF && f->gguf) {
        *kind = MLLM_TOK_GGUF_KV;
        return gguf_section(f, tmp_base, data, len, tmpl);
    }
    if (f->kind == MLLM_FILE_HF && f->tokenizer_json) {
        *kind = MLLM_TOK_HF_JSON;
        return hf_section(f, data, len, tmpl);
    }
    return MLLM_OK; /* llama2.c checkpoints: the tokenizer comes with --tokenizer */
}
