/* config.json reader. Only the fields the Llama-family graph needs are read;
   every one is type-checked. */
#include "formats/hf_config.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/file_open.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define HF_MAX_CONFIG (16u << 20)
#define HF_DEFAULT_CTX 2048

typedef struct {
    const cJSON *root;
    const char *label;
} cfgdoc;

static const cJSON *field(const cfgdoc *d, const cJSON *obj, const char *name) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj ? obj : d->root, name);
    return cJSON_IsNull(j) ? NULL : j; /* null means "use the default" in HF configs */
}

/* Positive int32; def < 0 makes it required. */
static mllm_status get_int(const cfgdoc *d, const cJSON *obj, const char *name, int64_t def, int32_t *out) {
    const cJSON *j = field(d, obj, name);
    if (!j) {
        if (def < 0) return mllm_err(MLLM_ERR_FORMAT, "%s: missing field '%s'", d->label, name);
        *out = (int32_t)def;
        return MLLM_OK;
    }
    double v = cJSON_IsNumber(j) ? j->valuedouble : -1;
    /* Huge values skip the integer test (casting them is undefined) and
       fail the range test below. */
    if (!cJSON_IsNumber(j) || (v > -9e18 && v < 9e18 && v != (double)(int64_t)v)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: field '%s' must be an integer", d->label, name);
    }
    if (v <= 0 || v > INT32_MAX) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: field '%s' = %.0f is out of range", d->label, name, v);
    }
    *out = (int32_t)v;
    return MLLM_OK;
}

static mllm_status get_float(const cfgdoc *d, const cJSON *obj, const char *name, float def, float *out) {
    const cJSON *j = field(d, obj, name);
    if (!j) {
        *out = def;
        return MLLM_OK;
    }
    if (!cJSON_IsNumber(j)) return mllm_err(MLLM_ERR_FORMAT, "%s: field '%s' must be a number", d->label, name);
    *out = (float)j->valuedouble;
    return MLLM_OK;
}

static mllm_status get_bool(const cfgdoc *d, const char *name, bool def, bool *out) {
    const cJSON *j = field(d, NULL, name);
    if (!j) {
        *out = def;
        return MLLM_OK;
    }
    if (!cJSON_IsBool(j)) return mllm_err(MLLM_ERR_FORMAT, "%s: field '%s' must be true or false", d->label, name);
    *out = cJSON_IsTrue(j);
    return MLLM_OK;
}

static mllm_status read_arch(const cfgdoc *d, mllm_llama_config *c) {
    static const struct { const char *type, *cls; } known[] = {
        {"llama", "LlamaForCausalLM"}, {"qwen2", "Qwen2ForCausalLM"}, {"qwen3", "Qwen3ForCausalLM"}};
    const cJSON *mt = field(d, NULL, "model_type");
    const cJSON *archs = field(d, NULL, "architectures");
    const cJSON *a0 = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
    if (mt && !cJSON_IsString(mt)) return mllm_err(MLLM_ERR_FORMAT, "%s: field 'model_type' must be a string", d->label);
    if (!mt && !cJSON_IsString(a0)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: missing field 'model_type' (and no 'architectures')", d->label);
    }
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        if (mt ? !strcmp(mt->valuestring, known[i].type) : !strcmp(a0->valuestring, known[i].cls)) {
            snprintf(c->arch, sizeof c->arch, "%s", known[i].type);
            return MLLM_OK;
        }
    }
    return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: model_type '%.64s' is not supported (llama, qwen2, qwen3)", d->label,
                    mt ? mt->valuestring : a0->valuestring);
}

static mllm_status read_rope_scaling(const cfgdoc *d, mllm_llama_config *c) {
    const cJSON *rs = field(d, NULL, "rope_scaling");
    c->rope_scaling = MLLM_ROPE_SCALING_NONE;
    c->rope_factor = 1.0f;
    if (!rs) return MLLM_OK;
    if (!cJSON_IsObject(rs)) return mllm_err(MLLM_ERR_FORMAT, "%s: field 'rope_scaling' must be an object", d->label);
    const cJSON *type = field(d, rs, "rope_type");
    if (!type) type = field(d, rs, "type");
    if (!cJSON_IsString(type)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: field 'rope_scaling.rope_type' must be a string", d->label);
    }
    mllm_status st;
    if (!strcmp(type->valuestring, "default")) return MLLM_OK;
    if (!strcmp(type->valuestring, "linear")) {
        c->rope_scaling = MLLM_ROPE_SCALING_LINEAR;
        return get_float(d, rs, "factor", 1.0f, &c->rope_factor);
    }
    if (!strcmp(type->valuestring, "llama3")) {
        c->rope_scaling = MLLM_ROPE_SCALING_LLAMA3;
        if ((st = get_float(d, rs, "factor", 8.0f, &c->rope_factor))) return st;
        if ((st = get_float(d, rs, "low_freq_factor", 1.0f, &c->rope_low_freq_factor))) return st;
        if ((st = get_float(d, rs, "high_freq_factor", 4.0f, &c->rope_high_freq_factor))) return st;
        return get_int(d, rs, "original_max_position_embeddings", 8192, &c->rope_orig_ctx);
    }
    return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: rope_scaling type '%.32s' is not supported (linear, llama3)", d->label,
                    type->valuestring);
}

static mllm_status read_all(const cfgdoc *d, mllm_llama_config *c) {
    mllm_status st;
    memset(c, 0, sizeof *c);
    if ((st = read_arch(d, c))) return st;
    if ((st = get_int(d, NULL, "hidden_size", -1, &c->n_embd))) return st;
    if ((st = get_int(d, NULL, "intermediate_size", -1, &c->n_ff))) return st;
    if ((st = get_int(d, NULL, "num_hidden_layers", -1, &c->n_layer))) return st;
    if ((st = get_int(d, NULL, "num_attention_heads", -1, &c->n_head))) return st;
    if ((st = get_int(d, NULL, "num_key_value_heads", c->n_head, &c->n_head_kv))) return st;
    if ((st = get_int(d, NULL, "head_dim", c->n_embd / c->n_head, &c->head_dim))) return st;
    if ((st = get_int(d, NULL, "vocab_size", -1, &c->n_vocab))) return st;
    if ((st = get_int(d, NULL, "max_position_embeddings", HF_DEFAULT_CTX, &c->n_ctx_train))) return st;
    if ((st = get_float(d, NULL, "rms_norm_eps", 1e-6f, &c->rms_eps))) return st;
    /* transformers >= 5 moves rope_theta into rope_parameters. */
    const cJSON *rp = field(d, NULL, "rope_parameters");
    if (!field(d, NULL, "rope_theta") && cJSON_IsObject(rp)) {
        if ((st = get_float(d, rp, "rope_theta", 10000.0f, &c->rope_theta))) return st;
    } else if ((st = get_float(d, NULL, "rope_theta", 10000.0f, &c->rope_theta))) {
        return st;
    }
    if ((st = read_rope_scaling(d, c))) return st;
    if ((st = get_bool(d, "tie_word_embeddings", false, &c->tied_embd))) return st;
    bool bias;
    if ((st = get_bool(d, "attention_bias", false, &bias))) return st;
    c->n_rot = c->head_dim;
    c->rope_neox = true;
    c->qkv_bias = bias || !strcmp(c->arch, "qwen2"); /* Qwen2 always has q/k/v biases */
    c->qk_norm = !strcmp(c->arch, "qwen3");
    return MLLM_OK;
}

mllm_status mllm_hf_config_parse(const char *json, size_t len, const char *label, mllm_llama_config *cfg) {
    if (!json || !cfg) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_hf_config_parse: NULL argument");
    if (!label) label = "config.json";
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) return mllm_err(MLLM_ERR_FORMAT, "%s: not valid JSON", label);
    mllm_status st;
    if (!cJSON_IsObject(root)) {
        st = mllm_err(MLLM_ERR_FORMAT, "%s: not a JSON object", label);
    } else {
        cfgdoc d = {root, label};
        st = read_all(&d, cfg);
    }
    cJSON_Delete(root);
    return st;
}

mllm_status mllm_hf_config_load(const char *path, mllm_llama_config *cfg) {
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
                                       : mllm_hf_config_parse(buf, n, path, cfg);
    mllm_free(buf);
    return st;
}
