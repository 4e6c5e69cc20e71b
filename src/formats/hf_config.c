/* config.json reader: flattens the JSON object into generic metadata. */
#include "formats/hf_config.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/file_open.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define HF_MAX_CONFIG (16u << 20)

static mllm_status put_array(const cJSON *a, const char *key, const char *label, mllm_meta *m) {
    int n = cJSON_GetArraySize(a);
    if (n > MLLM_META_MAX_ARRAY) return mllm_meta_set_arr_len(m, key, (size_t)n);
    bool nums = true, strs = true;
    for (const cJSON *e = a->child; e; e = e->next) {
        nums = nums && cJSON_IsNumber(e);
        strs = strs && cJSON_IsString(e);
    }
    if (n == 0 || nums) {
        double *v = mllm_malloc((size_t)(n ? n : 1) * sizeof *v);
        if (!v) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
        int i = 0;
        for (const cJSON *e = a->child; e; e = e->next) v[i++] = e->valuedouble;
        mllm_status st = mllm_meta_set_arr_num(m, key, v, (size_t)n);
        mllm_free(v);
        return st;
    }
    if (!strs) return mllm_meta_set_arr_len(m, key, (size_t)n); /* mixed or nested: length only */
    const char **s = mllm_malloc((size_t)n * sizeof *s);
    size_t *lens = mllm_malloc((size_t)n * sizeof *lens);
    mllm_status st = s && lens ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
    int i = 0;
    for (const cJSON *e = a->child; e && !st; e = e->next, i++) {
        s[i] = e->valuestring;
        lens[i] = strlen(e->valuestring);
    }
    if (!st) st = mllm_meta_set_arr_str(m, key, s, lens, (size_t)n);
    mllm_free(s);
    mllm_free(lens);
    return st;
}

static mllm_status flatten(const cJSON *obj, const char *prefix, int depth, const char *label, mllm_meta *m) {
    if (depth > MLLM_HF_CONFIG_MAX_DEPTH)
        return mllm_err(MLLM_ERR_FORMAT, "%s: objects nested deeper than %d levels", label, MLLM_HF_CONFIG_MAX_DEPTH);
    char key[MLLM_META_MAX_KEY + 1];
    for (const cJSON *j = obj->child; j; j = j->next) {
        if (!j->string) continue;
        int kn = snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", j->string);
        if (kn < 0 || kn >= (int)sizeof key)
            return mllm_err(MLLM_ERR_FORMAT, "%s: field name '%.40s...' is too long", label, j->string);
        mllm_status st = MLLM_OK;
        if (cJSON_IsObject(j)) {
            st = flatten(j, key, depth + 1, label, m);
        } else if (cJSON_IsNumber(j)) {
            double v = j->valuedouble;
            st = isfinite(v) && v == floor(v) && fabs(v) < 9e15 ? mllm_meta_set_int(m, key, (int64_t)v)
                                                                : mllm_meta_set_float(m, key, v);
        } else if (cJSON_IsBool(j)) {
            st = mllm_meta_set_bool(m, key, cJSON_IsTrue(j));
        } else if (cJSON_IsString(j)) {
            st = mllm_meta_set_str(m, key, j->valuestring, strlen(j->valuestring));
        } else if (cJSON_IsArray(j)) {
            st = put_array(j, key, label, m);
        } /* null: the field takes its default */
        if (st) return st;
    }
    return MLLM_OK;
}

mllm_status mllm_hf_config_parse(const char *json, size_t len, const char *label, mllm_meta *out) {
    if (!json || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_hf_config_parse: NULL argument");
    if (!label) label = "config.json";
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) return mllm_err(MLLM_ERR_FORMAT, "%s: not valid JSON", label);
    mllm_status st = cJSON_IsObject(root) ? flatten(root, "", 0, label, out)
                                          : mllm_err(MLLM_ERR_FORMAT, "%s: not a JSON object", label);
    cJSON_Delete(root);
    return st;
}

mllm_status mllm_hf_config_load(const char *path, mllm_meta *out) {
    FILE *f = mllm_file_fopen(path);
    if (!f) return MLLM_ERR_IO; /* the message names the file and why */
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size < 0 || size > (long)HF_MAX_CONFIG || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return mllm_err(MLLM_ERR_FORMAT, "%s: unreadable or larger than %u bytes", path, HF_MAX_CONFIG);
    }
    char *buf = mllm_malloc((size_t)size + 1);
    if (!buf) {
        fclose(f);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    }
    size_t n = fread(buf, 1, (size_t)size, f);
    fclose(f);
    mllm_status st = n != (size_t)size ? mllm_err(MLLM_ERR_IO, "%s: short read", path)
                                       : mllm_hf_config_parse(buf, n, path, out);
    mllm_free(buf);
    return st;
}
