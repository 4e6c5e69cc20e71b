/* Where a model keeps its chat template: GGUF metadata or a Hugging Face
   folder's tokenizer_config.json / chat_template.jinja. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "core/alloc.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "template/template.h"
#include "core/file_open.h"

enum { MAX_TEMPLATE_FILE = 64 << 20 };

static mllm_status read_file(const char *path, char **out, size_t *len) {
    FILE *f = mllm_file_fopen(path);
    if (!f) return MLLM_ERR_IO; /* the message names the file and why */
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (cap - n < 4096) {
            cap = cap ? cap * 2 : 65536;
            if (cap > MAX_TEMPLATE_FILE) { fclose(f); mllm_free(buf); return mllm_err(MLLM_ERR_FORMAT, "%s: larger than %d MiB", path, MAX_TEMPLATE_FILE >> 20); }
            char *nb = mllm_realloc(buf, cap);
            if (!nb) { fclose(f); mllm_free(buf); return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path); }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    bool err = ferror(f);
    fclose(f);
    if (err) { mllm_free(buf); return mllm_err(MLLM_ERR_IO, "%s: read error", path); }
    buf[n] = 0;
    *out = buf;
    if (len) *len = n;
    return MLLM_OK;
}

static char *dup_str(const char *s, size_t n) { return mllm_strndup(s, n); }

/* A special token in tokenizer_config.json: "text", {"content": "text"} or null. */
static char *token_text(const cJSON *v) {
    if (cJSON_IsString(v)) return dup_str(v->valuestring, strlen(v->valuestring));
    if (cJSON_IsObject(v)) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(v, "content");
        if (cJSON_IsString(c)) return dup_str(c->valuestring, strlen(c->valuestring));
    }
    return NULL;
}

static mllm_status from_tokenizer_config(const char *path, const char *text, mllm_template_model *out) {
    cJSON *j = cJSON_Parse(text);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return mllm_err(MLLM_ERR_FORMAT, "%s: not a JSON object", path);
    }
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(j, "chat_template");
    const char *src = NULL;
    if (cJSON_IsString(ct)) src = ct->valuestring;
    else if (cJSON_IsArray(ct)) { /* [{"name": "default", "template": "..."}, ...] */
        const cJSON *it;
        cJSON_ArrayForEach(it, ct) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
            const cJSON *tp = cJSON_GetObjectItemCaseSensitive(it, "template");
            if (!cJSON_IsString(tp)) continue;
            if (!src || (cJSON_IsString(name) && !strcmp(name->valuestring, "default"))) src = tp->valuestring;
        }
    }
    if (src && !(out->source = dup_str(src, strlen(src)))) { cJSON_Delete(j); return mllm_err(MLLM_ERR_NOMEM, "out of memory"); }
    out->bos_token = token_text(cJSON_GetObjectItemCaseSensitive(j, "bos_token"));
    out->eos_token = token_text(cJSON_GetObjectItemCaseSensitive(j, "eos_token"));
    cJSON_Delete(j);
    return MLLM_OK;
}

static char *gguf_token(const mllm_gguf *g, const char *id_key) {
    uint32_t id;
    mllm_gguf_str s;
    if (!mllm_gguf_get_u32(g, id_key, &id) || !mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", id, &s))
        return NULL;
    return dup_str(s.ptr, (size_t)s.len);
}

static mllm_status from_gguf(const char *path, mllm_template_model *out) {
    mllm_gguf *g = NULL;
    mllm_status st = mllm_gguf_open(path, &g);
    if (st != MLLM_OK) return st;
    mllm_gguf_str s;
    if (mllm_gguf_get_str(g, "tokenizer.chat_template", &s) && !(out->source = dup_str(s.ptr, (size_t)s.len))) {
        mllm_gguf_close(g);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    out->bos_token = gguf_token(g, "tokenizer.ggml.bos_token_id");
    out->eos_token = gguf_token(g, "tokenizer.ggml.eos_token_id");
    mllm_gguf_close(g);
    return MLLM_OK;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

mllm_status mllm_template_model_load(const char *path, mllm_template_model *out) {
    memset(out, 0, sizeof *out);
    struct stat sb;
    if (!path || stat(path, &sb) != 0) return mllm_err(MLLM_ERR_IO, "%s: no such file or folder", path ? path : "(null)");
    mllm_status st;
    char *text = NULL;
    if (S_ISDIR(sb.st_mode)) {
        char p[4096];
        snprintf(p, sizeof p, "%s/tokenizer_config.json", path);
        if (stat(p, &sb) == 0) {
            if ((st = read_file(p, &text, NULL)) != MLLM_OK) return st;
            st = from_tokenizer_config(p, text, out);
            mllm_free(text);
            if (st != MLLM_OK) { mllm_template_model_free(out); return st; }
        }
        snprintf(p, sizeof p, "%s/chat_template.jinja", path);
        if (!out->source && stat(p, &sb) == 0 && (st = read_file(p, &out->source, NULL)) != MLLM_OK) {
            mllm_template_model_free(out);
            return st;
        }
    } else if (ends_with(path, ".json")) {
        if ((st = read_file(path, &text, NULL)) != MLLM_OK) return st;
        st = from_tokenizer_config(path, text, out);
        mllm_free(text);
        if (st != MLLM_OK) { mllm_template_model_free(out); return st; }
    } else if (ends_with(path, ".gguf")) {
        if ((st = from_gguf(path, out)) != MLLM_OK) { mllm_template_model_free(out); return st; }
    } else {
        return read_file(path, &out->source, NULL); /* a template file (.jinja) */
    }
    if (!out->source) {
        mllm_template_model_free(out);
        return mllm_err(MLLM_ERR_FORMAT, "%s: the model carries no chat template (use --chat-template NAME|FILE)", path);
    }
    return MLLM_OK;
}

void mllm_template_model_free(mllm_template_model *m) {
    if (!m) return;
    mllm_free(m->source);
    mllm_free(m->bos_token);
    mllm_free(m->eos_token);
    memset(m, 0, sizeof *m);
}

char *mllm_template_model_defaults(const mllm_template_model *m) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    if (m->bos_token) cJSON_AddStringToObject(j, "bos_token", m->bos_token);
    if (m->eos_token) cJSON_AddStringToObject(j, "eos_token", m->eos_token);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s) return NULL;
    char *r = mllm_strndup(s, strlen(s));
    cJSON_free(s);
    return r;
}
