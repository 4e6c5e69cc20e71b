/* sentence-transformers' folder files -> what pooling and normalisation an
   embedding model wants (st_config.h). */
#include "formats/st_config.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "core/alloc.h"
#include "core/error.h"
#include "core/file_open.h"

#define ST_MAX_JSON (1u << 20)

static bool flag(const cJSON *o, const char *key) {
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static mllm_status parse_pooling(const char *js, const char *label, mllm_st_config *out) {
    cJSON *p = cJSON_Parse(js);
    if (!cJSON_IsObject(p)) {
        cJSON_Delete(p);
        return mllm_err(MLLM_ERR_FORMAT, "%s: the Pooling module's config.json is not a JSON object", label);
    }
    static const char *const unsupported[] = {"pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                                              "pooling_mode_weightedmean_tokens"};
    mllm_status st = MLLM_OK;
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported && !st; i++)
        if (flag(p, unsupported[i]))
            st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: pooling '%s' is not supported (mean, cls, lasttoken)", label,
                          unsupported[i]);
    int n = flag(p, "pooling_mode_mean_tokens") + flag(p, "pooling_mode_cls_token") + flag(p, "pooling_mode_lasttoken");
    if (!st && n > 1)
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: several pooling modes at once (concatenated) are not supported", label);
    out->pooling = flag(p, "pooling_mode_cls_token")   ? MLLM_ST_POOL_CLS
                 : flag(p, "pooling_mode_lasttoken") ? MLLM_ST_POOL_LAST
                                                     : MLLM_ST_POOL_MEAN;
    cJSON_Delete(p);
    return st;
}

/* modules.json: which modules, in order; *pool_path the Pooling module's folder. */
static mllm_status parse_modules(const char *js, const char *label, mllm_st_config *out, char *pool_path,
                                 size_t cap) {
    cJSON *m = cJSON_Parse(js);
    if (!cJSON_IsArray(m)) {
        cJSON_Delete(m);
        return mllm_err(MLLM_ERR_FORMAT, "%s: modules.json is not a JSON array", label);
    }
    mllm_status st = MLLM_OK;
    const cJSON *e;
    int idx = 0;
    cJSON_ArrayForEach(e, m) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(e, "type");
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(e, "path");
        if (!cJSON_IsString(ty)) {
            st = mllm_err(MLLM_ERR_FORMAT, "%s: modules.json entry %d has no \"type\" string", label, idx);
            break;
        }
        const char *t = ty->valuestring;
        const char *dot = strrchr(t, '.');
        const char *name = dot ? dot + 1 : t;
        if (!strcmp(name, "Transformer")) {
            if (idx != 0) st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: the Transformer module is not the first", label);
        } else if (!strcmp(name, "Pooling")) {
            const char *pp = cJSON_IsString(path) ? path->valuestring : "";
            /* a folder name inside the model's folder */
            if (strstr(pp, "..") || pp[0] == '/' || strlen(pp) + 1 > cap)
                st = mllm_err(MLLM_ERR_FORMAT, "%s: the Pooling module's path '%.64s' is not a folder inside the model's",
                              label, pp);
            else
                memcpy(pool_path, pp, strlen(pp) + 1);
        } else if (!strcmp(name, "Normalize")) {
            out->normalize = true;
        } else {
            st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: sentence-transformers module '%.64s' is not supported "
                                                "(Transformer, Pooling, Normalize)", label, t);
        }
        if (st) break;
        idx++;
    }
    cJSON_Delete(m);
    return st;
}

static mllm_status parse_sbert(const char *js, const char *label, mllm_st_config *out) {
    cJSON *s = cJSON_Parse(js);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(s, "max_seq_length");
    mllm_status st = MLLM_OK;
    if (!cJSON_IsObject(s)) st = mllm_err(MLLM_ERR_FORMAT, "%s: sentence_bert_config.json is not a JSON object", label);
    else if (n && !(cJSON_IsNumber(n) && n->valuedouble >= 1 && n->valuedouble <= (1 << 24)))
        st = mllm_err(MLLM_ERR_FORMAT, "%s: max_seq_length must be an integer in 1..%d", label, 1 << 24);
    else if (n) out->max_seq_length = (int)n->valuedouble;
    cJSON_Delete(s);
    return st;
}

mllm_status mllm_st_config_parse(const char *modules_json, const char *pooling_json, const char *sbert_json,
                                 const char *label, mllm_st_config *out) {
    memset(out, 0, sizeof *out);
    char pool_path[256] = "";
    mllm_status st = MLLM_OK;
    if (modules_json) {
        out->found = true;
        st = parse_modules(modules_json, label, out, pool_path, sizeof pool_path);
    }
    if (!st && pooling_json) st = parse_pooling(pooling_json, label, out);
    if (!st && sbert_json) st = parse_sbert(sbert_json, label, out);
    return st;
}

/* dir/name read into *out, or NULL when there is no such file. */
static mllm_status read_opt(const char *dir, const char *name, char **out) {
    char path[4096];
    size_t len;
    *out = NULL;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: path too long", dir);
    if (access(path, F_OK) != 0) return MLLM_OK;
    return mllm_file_read_all(path, ST_MAX_JSON, out, &len);
}

mllm_status mllm_st_config_load(const char *dir, mllm_st_config *out) {
    char *modules = NULL, *pooling = NULL, *sbert = NULL;
    memset(out, 0, sizeof *out);
    mllm_status st = read_opt(dir, "modules.json", &modules);
    if (!st) st = read_opt(dir, "sentence_bert_config.json", &sbert);
    if (!st && modules) {
        /* the Pooling module's folder, from modules.json */
        mllm_st_config tmp;
        char pool_path[256] = "";
        st = parse_modules(modules, dir, &tmp, pool_path, sizeof pool_path);
        char rel[300];
        if (!st && pool_path[0]) {
            snprintf(rel, sizeof rel, "%s/config.json", pool_path);
            st = read_opt(dir, rel, &pooling);
        }
    }
    if (!st) st = mllm_st_config_parse(modules, pooling, sbert, dir, out);
    mllm_free(modules);
    mllm_free(pooling);
    mllm_free(sbert);
    return st;
}
