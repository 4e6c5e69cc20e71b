/* Quantization pipeline rules (see pipeline.h): parsed from JSON, regexes
   compiled once with PCRE2. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "backends/cpu.h"
#include "convert/pipeline.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/file_open.h"
#include <cjson/cJSON.h>
#include <ctype.h>
#include <pcre2.h>
#include <stdio.h>
#include <string.h>

#define PL_MAX_RULES 1024
#define PL_MAX_FILE (1u << 20)

typedef struct {
    pcre2_code *re;
    int dtype;
} pl_rule;

struct mllm_pipeline {
    pl_rule *rules;
    int n;
    int def;
};

void mllm_pipeline_free(mllm_pipeline *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) pcre2_code_free(p->rules[i].re);
    mllm_free(p->rules);
    mllm_free(p);
}

mllm_status mllm_pipeline_check_dtype(int dtype, const char *label, const char *what) {
    if (dtype == MLLM_PIPELINE_KEEP) return MLLM_OK;
    const mllm_dtype_traits *tr = mllm_dtype_get(dtype);
    if (tr && mllm_cpu_type_get(dtype)->from_float) return MLLM_OK;
    char have[512] = "";
    size_t n = 0;
    for (int t = 0; t < MLLM_DTYPE_COUNT && n < sizeof have - 16; t++) {
        const mllm_dtype_traits *x = mllm_dtype_get(t);
        if (x && mllm_cpu_type_get(t)->from_float) n += (size_t)snprintf(have + n, sizeof have - n, " %s", x->name);
    }
    return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: %s: dtype '%s' has no quantizer in this build (can produce:%s)", label,
                    what, tr ? tr->name : "?", have);
}

/* "Q4_K" / "q4_k" / "keep" -> dtype; -2 if unknown. */
static int parse_dtype(const char *s) {
    char low[32];
    size_t n = strlen(s);
    if (n == 0 || n >= sizeof low) return -2;
    for (size_t i = 0; i <= n; i++) low[i] = (char)tolower((unsigned char)s[i]);
    if (!strcmp(low, "keep")) return MLLM_PIPELINE_KEEP;
    int t = mllm_dtype_from_name(low);
    return t >= 0 ? t : -2;
}

static mllm_status add_rule(mllm_pipeline *p, const char *label, const char *pattern, const char *dtype_name) {
    char what[96];
    snprintf(what, sizeof what, "rule %d ('%.40s')", p->n + 1, pattern);
    if (p->n >= PL_MAX_RULES) return mllm_err(MLLM_ERR_FORMAT, "%s: more than %d rules", label, PL_MAX_RULES);
    int dt = parse_dtype(dtype_name);
    if (dt == -2) return mllm_err(MLLM_ERR_FORMAT, "%s: %s: unknown dtype '%.32s'", label, what, dtype_name);
    mllm_status st = mllm_pipeline_check_dtype(dt, label, what);
    if (st) return st;
    int err;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &err, &at, NULL);
    if (!re) {
        PCRE2_UCHAR msg[128];
        pcre2_get_error_message(err, msg, sizeof msg);
        return mllm_err(MLLM_ERR_FORMAT, "%s: %s: bad regex at offset %zu: %s", label, what, (size_t)at, (char *)msg);
    }
    p->rules[p->n].re = re;
    p->rules[p->n].dtype = dt;
    p->n++;
    return MLLM_OK;
}

static mllm_status parse_ours(mllm_pipeline *p, const cJSON *root, const char *label) {
    const cJSON *def = cJSON_GetObjectItemCaseSensitive(root, "default");
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(root, "rules");
    if (def) {
        if (!cJSON_IsString(def) || (p->def = parse_dtype(def->valuestring)) == -2) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: \"default\" must name a dtype (or \"keep\")", label);
        }
        mllm_status st = mllm_pipeline_check_dtype(p->def, label, "default");
        if (st) return st;
    }
    if (!cJSON_IsArray(rules)) return mllm_err(MLLM_ERR_FORMAT, "%s: \"rules\" must be an array", label);
    int i = 0;
    for (const cJSON *r = rules->child; r; r = r->next, i++) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(r, "pattern");
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(r, "dtype");
        if (!cJSON_IsString(pat) || !cJSON_IsString(dt)) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: rule %d needs string \"pattern\" and \"dtype\"", label, i + 1);
        }
        mllm_status st = add_rule(p, label, pat->valuestring, dt->valuestring);
        if (st) return st;
    }
    return MLLM_OK;
}

/* MLLM's quantization config: {regex: {"hints": {"quant_method": "gguf",
   "gguf_type": "Q4_K"}}}. */
static mllm_status parse_mllm(mllm_pipeline *p, const cJSON *root, const char *label) {
    for (const cJSON *e = root->child; e; e = e->next) {
        const cJSON *hints = cJSON_GetObjectItemCaseSensitive(e, "hints");
        const cJSON *qm = cJSON_GetObjectItemCaseSensitive(hints, "quant_method");
        const cJSON *gt = cJSON_GetObjectItemCaseSensitive(hints, "gguf_type");
        if (!cJSON_IsObject(hints) || !cJSON_IsString(qm) || !cJSON_IsString(gt)) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: entry '%.40s' needs {\"hints\": {\"quant_method\", \"gguf_type\"}}",
                            label, e->string);
        }
        if (strcmp(qm->valuestring, "gguf") != 0) {
            return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: entry '%.40s': quant_method '%.32s' is not supported (gguf)",
                            label, e->string, qm->valuestring);
        }
        mllm_status st = add_rule(p, label, e->string, gt->valuestring);
        if (st) return st;
    }
    return MLLM_OK;
}

mllm_status mllm_pipeline_parse(const char *json, size_t len, const char *label, mllm_pipeline **out) {
    *out = NULL;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return mllm_err(MLLM_ERR_FORMAT, "%s: not a JSON object", label);
    }
    mllm_pipeline *p = mllm_calloc(1, sizeof *p);
    int n = cJSON_GetArraySize(root);
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(root, "rules");
    if (cJSON_IsArray(rules)) n += cJSON_GetArraySize(rules);
    if (p) p->rules = mllm_calloc((size_t)(n ? n : 1), sizeof *p->rules);
    mllm_status st = (!p || !p->rules) ? mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label) : MLLM_OK;
    if (!st) {
        p->def = MLLM_PIPELINE_KEEP;
        st = rules ? parse_ours(p, root, label) : parse_mllm(p, root, label);
    }
    cJSON_Delete(root);
    if (st) {
        mllm_pipeline_free(p);
        return st;
    }
    *out = p;
    return MLLM_OK;
}

mllm_status mllm_pipeline_load(const char *path, mllm_pipeline **out) {
    *out = NULL;
    FILE *fp = mllm_file_fopen(path);
    if (!fp) return MLLM_ERR_IO; /* the message names the file and why */
    char *buf = mllm_malloc(PL_MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, PL_MAX_FILE + 1, fp) : 0;
    fclose(fp);
    if (!buf) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    mllm_status st = n > PL_MAX_FILE ? mllm_err(MLLM_ERR_FORMAT, "%s: larger than 1 MiB", path)
                                     : mllm_pipeline_parse(buf, n, path, out);
    mllm_free(buf);
    return st;
}

mllm_status mllm_pipeline_uniform(int dtype, mllm_pipeline **out) {
    *out = NULL;
    mllm_status st = mllm_pipeline_check_dtype(dtype, "--quant", "target");
    if (st) return st;
    mllm_pipeline *p = mllm_calloc(1, sizeof *p);
    if (!p) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    p->def = dtype;
    *out = p;
    return MLLM_OK;
}

static bool matches(const pcre2_code *re, const char *s) {
    if (!s) return false;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md) return false;
    int rc = pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL);
    pcre2_match_data_free(md);
    return rc >= 0;
}

int mllm_pipeline_pick(const mllm_pipeline *p, const char *gguf_name, const char *hf_name, int *rule) {
    for (int i = 0; i < p->n; i++) {
        if (matches(p->rules[i].re, gguf_name) || matches(p->rules[i].re, hf_name)) {
            if (rule) *rule = i;
            return p->rules[i].dtype;
        }
    }
    if (rule) *rule = -1;
    return p->def;
}
