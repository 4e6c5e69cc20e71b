/* The config section of a .mllm file: mllm_llama_config as JSON, every field
   written (floats with 9 significant digits, which round-trip a float32
   exactly) and every field required and type-checked when read. */
#include "formats/mllmfile_model.h"
#include "core/error.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static const char *scaling_name(mllm_rope_scaling s) {
    switch (s) {
    case MLLM_ROPE_SCALING_LINEAR: return "linear";
    case MLLM_ROPE_SCALING_LLAMA3: return "llama3";
    default: return "none";
    }
}

int mllm_mllmfile_config_to_json(const mllm_llama_config *c, char *buf, size_t cap) {
#define B(x) ((x) ? "true" : "false")
    return snprintf(buf, cap,
                    "{\"format\":\"mllm-llama-config\",\"arch\":\"%s\",\"n_vocab\":%d,\"n_embd\":%d,"
                    "\"n_layer\":%d,\"n_head\":%d,\"n_head_kv\":%d,\"head_dim\":%d,\"n_ff\":%d,"
                    "\"n_ctx_train\":%d,\"n_rot\":%d,\"rope_theta\":%.9g,\"rope_neox\":%s,"
                    "\"rope_scaling\":\"%s\",\"rope_factor\":%.9g,\"rope_low_freq_factor\":%.9g,"
                    "\"rope_high_freq_factor\":%.9g,\"rope_orig_ctx\":%d,\"rms_eps\":%.9g,"
                    "\"qkv_bias\":%s,\"qk_norm\":%s,\"tied_embd\":%s}",
                    c->arch, c->n_vocab, c->n_embd, c->n_layer, c->n_head, c->n_head_kv, c->head_dim, c->n_ff,
                    c->n_ctx_train, c->n_rot, c->rope_theta, B(c->rope_neox), scaling_name(c->rope_scaling),
                    c->rope_factor, c->rope_low_freq_factor, c->rope_high_freq_factor, c->rope_orig_ctx, c->rms_eps,
                    B(c->qkv_bias), B(c->qk_norm), B(c->tied_embd));
#undef B
}

typedef struct {
    const cJSON *root;
    const char *label;
} doc;

static mllm_status item(const doc *d, const char *name, const cJSON **out) {
    *out = cJSON_GetObjectItemCaseSensitive(d->root, name);
    if (!*out) return mllm_err(MLLM_ERR_FORMAT, "%s: config section: missing field '%s'", d->label, name);
    return MLLM_OK;
}

static mllm_status get_i32(const doc *d, const char *name, int32_t *out) {
    const cJSON *j;
    mllm_status st = item(d, name, &j);
    if (st) return st;
    double v = cJSON_IsNumber(j) ? j->valuedouble : 0.5;
    /* Range first: casting a huge double to int64 is undefined. */
    if (!(v >= INT32_MIN && v <= INT32_MAX) || v != (double)(int64_t)v) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: config section: field '%s' must be a 32-bit integer", d->label, name);
    }
    *out = (int32_t)v;
    return MLLM_OK;
}

static mllm_status get_f32(const doc *d, const char *name, float *out) {
    const cJSON *j;
    mllm_status st = item(d, name, &j);
    if (st) return st;
    if (!cJSON_IsNumber(j)) return mllm_err(MLLM_ERR_FORMAT, "%s: config section: field '%s' must be a number", d->label, name);
    *out = (float)j->valuedouble;
    return MLLM_OK;
}

static mllm_status get_bool(const doc *d, const char *name, bool *out) {
    const cJSON *j;
    mllm_status st = item(d, name, &j);
    if (st) return st;
    if (!cJSON_IsBool(j)) return mllm_err(MLLM_ERR_FORMAT, "%s: config section: field '%s' must be a boolean", d->label, name);
    *out = cJSON_IsTrue(j);
    return MLLM_OK;
}

static mllm_status get_str(const doc *d, const char *name, char *out, size_t cap) {
    const cJSON *j;
    mllm_status st = item(d, name, &j);
    if (st) return st;
    if (!cJSON_IsString(j) || strlen(j->valuestring) >= cap) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: config section: field '%s' must be a string under %zu bytes", d->label,
                        name, cap);
    }
    snprintf(out, cap, "%s", j->valuestring);
    return MLLM_OK;
}

static mllm_status parse_fields(const doc *d, mllm_llama_config *c) {
    mllm_status st;
    char fmt[32], scaling[16];
    if ((st = get_str(d, "format", fmt, sizeof fmt))) return st;
    if (strcmp(fmt, "mllm-llama-config") != 0) {
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: config section format '%s' is not mllm-llama-config", d->label, fmt);
    }
    if ((st = get_str(d, "arch", c->arch, sizeof c->arch))) return st;
    if (strcmp(c->arch, "llama") && strcmp(c->arch, "qwen2") && strcmp(c->arch, "qwen3")) {
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: architecture '%s' is not supported (llama, qwen2, qwen3)", d->label,
                        c->arch);
    }
    if ((st = get_i32(d, "n_vocab", &c->n_vocab)) || (st = get_i32(d, "n_embd", &c->n_embd)) ||
        (st = get_i32(d, "n_layer", &c->n_layer)) || (st = get_i32(d, "n_head", &c->n_head)) ||
        (st = get_i32(d, "n_head_kv", &c->n_head_kv)) || (st = get_i32(d, "head_dim", &c->head_dim)) ||
        (st = get_i32(d, "n_ff", &c->n_ff)) || (st = get_i32(d, "n_ctx_train", &c->n_ctx_train)) ||
        (st = get_i32(d, "n_rot", &c->n_rot)) || (st = get_i32(d, "rope_orig_ctx", &c->rope_orig_ctx))) {
        return st;
    }
    if ((st = get_f32(d, "rope_theta", &c->rope_theta)) || (st = get_f32(d, "rope_factor", &c->rope_factor)) ||
        (st = get_f32(d, "rope_low_freq_factor", &c->rope_low_freq_factor)) ||
        (st = get_f32(d, "rope_high_freq_factor", &c->rope_high_freq_factor)) ||
        (st = get_f32(d, "rms_eps", &c->rms_eps))) {
        return st;
    }
    if ((st = get_bool(d, "rope_neox", &c->rope_neox)) || (st = get_bool(d, "qkv_bias", &c->qkv_bias)) ||
        (st = get_bool(d, "qk_norm", &c->qk_norm)) || (st = get_bool(d, "tied_embd", &c->tied_embd))) {
        return st;
    }
    if ((st = get_str(d, "rope_scaling", scaling, sizeof scaling))) return st;
    if (!strcmp(scaling, "none")) c->rope_scaling = MLLM_ROPE_SCALING_NONE;
    else if (!strcmp(scaling, "linear")) c->rope_scaling = MLLM_ROPE_SCALING_LINEAR;
    else if (!strcmp(scaling, "llama3")) c->rope_scaling = MLLM_ROPE_SCALING_LLAMA3;
    else return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: rope scaling '%s' is not supported", d->label, scaling);
    return MLLM_OK;
}

mllm_status mllm_mllmfile_config_parse(const char *json, size_t len, const char *label, mllm_llama_config *c) {
    memset(c, 0, sizeof *c);
    if (len == 0) return mllm_err(MLLM_ERR_FORMAT, "%s: no config section", label);
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return mllm_err(MLLM_ERR_FORMAT, "%s: config section is not a JSON object", label);
    }
    doc d = {root, label};
    mllm_status st = parse_fields(&d, c);
    cJSON_Delete(root);
    return st;
}
