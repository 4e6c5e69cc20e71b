/* The config section of a .mllm file: the model's generic metadata as JSON,
   {"format":"mllm-meta","keys":{key: value, ...}} (numbers, booleans,
   strings, arrays of numbers or strings). Files written before the model
   registry hold {"format":"mllm-llama-config", ...}, a fixed set of Llama
   fields; those are read into the same keys a GGUF of the model has. */
#include "formats/mllmfile_model.h"
#include "formats/hf_config.h"
#include "core/alloc.h"
#include "core/error.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static cJSON *entry_json(const mllm_meta_entry *e) {
    switch (e->type) {
    case MLLM_META_INT: return cJSON_CreateNumber((double)e->i);
    case MLLM_META_FLOAT: return cJSON_CreateNumber(e->f);
    case MLLM_META_BOOL: return cJSON_CreateBool(e->i != 0);
    case MLLM_META_STR: return cJSON_CreateString(e->s);
    case MLLM_META_ARR_NUM: {
        cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; a && i < e->len; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(e->num[i]));
        return a;
    }
    case MLLM_META_ARR_STR: {
        cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; a && i < e->len; i++) cJSON_AddItemToArray(a, cJSON_CreateString(e->str[i]));
        return a;
    }
    default: return NULL; /* ARR_LEN: nothing to store */
    }
}

mllm_status mllm_mllmfile_config_to_json(const mllm_meta *m, char **out, size_t *len) {
    *out = NULL;
    cJSON *root = cJSON_CreateObject(), *keys = cJSON_CreateObject();
    bool ok = root && keys && cJSON_AddStringToObject(root, "format", "mllm-meta");
    if (ok) cJSON_AddItemToObject(root, "keys", keys);
    else cJSON_Delete(keys);
    for (size_t i = 0; ok && i < m->n; i++) {
        cJSON *v = entry_json(&m->e[i]);
        if (v) cJSON_AddItemToObject(keys, m->e[i].key, v);
    }
    char *s = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!s) return mllm_err(MLLM_ERR_NOMEM, "out of memory writing the config section");
    *len = strlen(s);
    *out = mllm_strndup(s, *len);
    cJSON_free(s);
    return *out ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "out of memory writing the config section");
}

/* {"format":"mllm-meta"}: values as the HF reader types them. */
static mllm_status parse_meta(const cJSON *keys, const char *label, mllm_meta *m) {
    if (!cJSON_IsObject(keys)) return mllm_err(MLLM_ERR_FORMAT, "%s: config section: 'keys' is not an object", label);
    char *txt = cJSON_PrintUnformatted(keys);
    if (!txt) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
    /* Reuses the config.json flattener: the keys are already flat. */
    mllm_status st = mllm_hf_config_parse(txt, strlen(txt), label, m);
    cJSON_free(txt);
    return st;
}

/* The pre-registry fields, each required and type-checked. */
static mllm_status legacy_num(const cJSON *root, const char *label, const char *field, bool integer, double *v) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, field);
    if (!j) return mllm_err(MLLM_ERR_FORMAT, "%s: config section: missing field '%s'", label, field);
    if (!cJSON_IsNumber(j) || (integer && !(j->valuedouble >= INT32_MIN && j->valuedouble <= INT32_MAX &&
                                            j->valuedouble == floor(j->valuedouble))))
        return mllm_err(MLLM_ERR_FORMAT, "%s: config section: field '%s' must be a %s", label, field,
                        integer ? "32-bit integer" : "number");
    *v = j->valuedouble;
    return MLLM_OK;
}

static mllm_status parse_legacy(const cJSON *root, const char *label, mllm_meta *m) {
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "arch");
    if (!cJSON_IsString(arch) || strlen(arch->valuestring) >= 32 || !arch->valuestring[0])
        return mllm_err(MLLM_ERR_FORMAT, "%s: config section: field 'arch' must be a string under 32 bytes", label);
    const char *a = arch->valuestring;
    static const struct { const char *field, *key; bool integer; } F[] = {
        {"n_vocab", "vocab_size", true},
        {"n_embd", "embedding_length", true},
        {"n_layer", "block_count", true},
        {"n_head", "attention.head_count", true},
        {"n_head_kv", "attention.head_count_kv", true},
        {"head_dim", "attention.key_length", true},
        {"n_ff", "feed_forward_length", true},
        {"n_ctx_train", "context_length", true},
        {"n_rot", "rope.dimension_count", true},
        {"rope_orig_ctx", "rope.scaling.original_context_length", true},
        {"rope_theta", "rope.freq_base", false},
        {"rope_factor", "rope.scaling.factor", false},
        {"rope_low_freq_factor", "rope.scaling.low_freq_factor", false},
        {"rope_high_freq_factor", "rope.scaling.high_freq_factor", false},
        {"rms_eps", "attention.layer_norm_rms_epsilon", false},
    };
    char key[96];
    mllm_status st = mllm_meta_set_str(m, "general.architecture", a, strlen(a));
    for (size_t i = 0; i < sizeof F / sizeof *F && !st; i++) {
        double v = 0;
        if ((st = legacy_num(root, label, F[i].field, F[i].integer, &v))) break;
        snprintf(key, sizeof key, "%s.%s", a, F[i].key);
        st = F[i].integer ? mllm_meta_set_int(m, key, (int64_t)v) : mllm_meta_set_float(m, key, v);
    }
    const cJSON *neox = cJSON_GetObjectItemCaseSensitive(root, "rope_neox");
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    if (!st && !cJSON_IsBool(neox))
        st = mllm_err(MLLM_ERR_FORMAT, "%s: config section: field 'rope_neox' must be a boolean", label);
    if (!st) st = mllm_meta_set_bool(m, "mllm.rope.neox", cJSON_IsTrue(neox));
    if (!st && (!cJSON_IsString(sc) || (strcmp(sc->valuestring, "none") && strcmp(sc->valuestring, "linear") &&
                                        strcmp(sc->valuestring, "llama3"))))
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: config section: rope scaling must be none, linear or llama3", label);
    if (!st && strcmp(sc->valuestring, "none")) {
        snprintf(key, sizeof key, "%s.rope.scaling.type", a);
        st = mllm_meta_set_str(m, key, sc->valuestring, strlen(sc->valuestring));
    }
    return st;
}

mllm_status mllm_mllmfile_config_parse(const char *json, size_t len, const char *label, mllm_meta *m) {
    if (len == 0) return mllm_err(MLLM_ERR_FORMAT, "%s: no config section", label);
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return mllm_err(MLLM_ERR_FORMAT, "%s: config section is not a JSON object", label);
    }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    mllm_status st;
    if (cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "mllm-meta"))
        st = parse_meta(cJSON_GetObjectItemCaseSensitive(root, "keys"), label, m);
    else if (cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "mllm-llama-config"))
        st = parse_legacy(root, label, m);
    else
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: config section format '%.32s' is not mllm-meta (or mllm-llama-config)",
                      label, cJSON_IsString(fmt) ? fmt->valuestring : "?");
    cJSON_Delete(root);
    return st;
}
