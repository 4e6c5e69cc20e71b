/* Whisper from a .mllm v3 file written by `mllm convert` (convert_whisper.c):
   the config section says {"arch": "whisper", "whisper_weights": DTYPE,
   "suppress_ids": [...], "suppress_ids_begin": [...]}, the tokenizer
   section holds tokenizer.json, and the tensors carry CTranslate2's
   WhisperSpec names, every matrix as (rows, columns) in its final dtype
   (the x8 kernel layouts for q8_0 / q4_0), the vectors f32, the head count
   as a one-value i32 "encoder/num_heads" / "decoder/num_heads". The
   tensors become a WhisperSpec view over the file's mapping, so the one
   loader (whisper_load.c) checks every shape, and the matrices are used in
   place from the mapping: nothing is converted or copied but the f32
   vectors. */
#include <cjson/cJSON.h>
#include <string.h>
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "formats/ctranslate2.h"
#include "formats/mllmfile.h"
#include "models/whisper/whisper_internal.h"
#include "models/whisper/whisper_open.h"

/* The stored weight type named by a config section that says arch
   "whisper"; -1 when it is no Whisper config, -2 when the type is not one
   of f16, f32, q8_0, q4_0. */
static int config_type(const char *json, size_t len) {
    cJSON *j = len ? cJSON_ParseWithLength(json, len) : NULL;
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(j, "arch");
    const cJSON *wt = cJSON_GetObjectItemCaseSensitive(j, "whisper_weights");
    int t = -1;
    if (cJSON_IsString(arch) && !strcmp(arch->valuestring, "whisper")) {
        t = -2;
        if (cJSON_IsString(wt)) {
            static const int ok[] = {MLLM_DTYPE_F16, MLLM_DTYPE_F32, MLLM_DTYPE_Q8_0, MLLM_DTYPE_Q4_0};
            for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
                if (!strcmp(wt->valuestring, mllm_dtype_name(ok[i]))) t = ok[i];
        }
    }
    cJSON_Delete(j);
    return t;
}

bool mllm_whisper_mllm_config(const char *json, size_t len) { return config_type(json, len) != -1; }

/* The file's tensors as WhisperSpec variables (dims in file order, the
   outermost first); a one-value i32 is a scalar. */
static mllm_status view_of(const mllm_mllmfile *mf, const char *path, mllm_ct2 **out) {
    const size_t n = mllm_mllmfile_n_tensors(mf);
    mllm_ct2_tensor *v = mllm_calloc(n ? n : 1, sizeof *v);
    if (!v) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    mllm_status st = MLLM_OK;
    size_t made = 0;
    for (; made < n && st == MLLM_OK; made++) {
        const mllm_mllmfile_tensor *t = mllm_mllmfile_tensor_at(mf, made);
        mllm_ct2_tensor *c = &v[made];
        c->name = mllm_strndup(t->name, t->name_len);
        if (!c->name) {
            st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
            break;
        }
        c->dtype = t->dtype;
        c->rank = t->n_dims == 1 && t->ne[0] == 1 && t->dtype == MLLM_DTYPE_I32 ? 0 : t->n_dims;
        c->n_elements = 1;
        for (int d = 0; d < MLLM_CT2_MAX_RANK; d++) c->dims[d] = 1;
        for (int d = 0; d < t->n_dims; d++) {
            if (t->ne[d] > UINT32_MAX) st = mllm_err(MLLM_ERR_FORMAT, "%s: %s is too large for Whisper", path, c->name);
            c->dims[c->rank ? t->n_dims - 1 - d : 0] = (uint32_t)t->ne[d];
            c->n_elements *= (uint64_t)t->ne[d];
        }
        /* the conv weights, (d, c * 3) here, are (d, c, 3) in the spec */
        const size_t nl = strlen(c->name);
        if (c->rank == 2 && c->dims[1] % 3 == 0 && nl > 12 &&
            (!strcmp(c->name + nl - 12, "conv1/weight") || !strcmp(c->name + nl - 12, "conv2/weight"))) {
            c->rank = 3;
            c->dims[1] /= 3;
            c->dims[2] = 3;
        }
        c->data = t->data;
        c->size = t->size;
        c->scale = -1;
    }
    if (st == MLLM_OK) st = mllm_ct2_view_new(path, "WhisperSpec", v, n, out);
    for (size_t i = 0; i < n; i++) mllm_free(v[i].name);
    mllm_free(v);
    return st;
}

mllm_status mllm_whisper_load_mllm(const char *path, const mllm_whisper_params *p, mllm_whisper **out) {
    *out = NULL;
    mllm_mllmfile *mf = NULL;
    mllm_status st = mllm_mllmfile_open(path, &mf);
    if (st != MLLM_OK) return st;
    size_t cfg_len = 0, tok_len = 0, tcfg_len = 0;
    const char *cfg = mllm_mllmfile_config(mf, &cfg_len), *tok = NULL, *tcfg = NULL;
    const int type = config_type(cfg, cfg_len);
    if (type == -1) st = mllm_err(MLLM_ERR_FORMAT, "%s: not a Whisper .mllm file (its config says another arch)", path);
    else if (type < 0) st = mllm_err(MLLM_ERR_FORMAT, "%s: whisper_weights is not one of f16, f32, q8_0, q4_0", path);
    else if (p && p->weight_type_given && p->weight_type != type)
        st = mllm_err(MLLM_ERR_INVALID_ARG, "%s: this converted file stores %s weights, used as they are; --weights %s "
                                            "applies to CTranslate2 and Hugging Face folders (or convert again with --quant)",
                      path, mllm_dtype_name(type), mllm_dtype_name(p->weight_type));
    if (st == MLLM_OK) st = mllm_mllmfile_hf_tokenizer(mf, &tok, &tok_len, &tcfg, &tcfg_len);
    if (st == MLLM_OK && !tok_len) st = mllm_err(MLLM_ERR_FORMAT, "%s: no tokenizer.json in the file", path);
    mllm_ct2 *c = NULL;
    if (st == MLLM_OK) st = view_of(mf, path, &c);
    if (st != MLLM_OK) {
        mllm_mllmfile_close(mf);
        return st;
    }
    const wh_source src = {.tokenizer_path = path, .tokenizer_json = tok, .tokenizer_len = tok_len, .stored = true,
                           .stored_type = type, .file = mf};
    return wh_load(c, path, cfg, cfg_len, &src, p, out); /* takes c and mf */
}
