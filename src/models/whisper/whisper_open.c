/* Which Whisper layout a path holds (whisper_open.h). */
#include "models/whisper/whisper_open.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>
#include "core/error.h"
#include "core/file_map.h"
#include "formats/mllmfile.h"
#include "models/whisper/whisper_load_hf.h"

static bool is_file(const char *dir, const char *name) {
    char p[4096];
    struct stat sb;
    return (size_t)snprintf(p, sizeof p, "%s/%s", dir, name) < sizeof p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* A .mllm v3 file whose config section says arch "whisper". */
static bool is_whisper_mllm(const char *path) {
    unsigned char head[8] = {0};
    FILE *f = fopen(path, "rb");
    const size_t got = f ? fread(head, 1, sizeof head, f) : 0;
    if (f) fclose(f);
    if (!mllm_mllmfile_sniff(head, got)) return false;
    mllm_mllmfile *mf = NULL;
    if (mllm_mllmfile_open(path, &mf) != MLLM_OK) {
        mllm_err_clear(); /* a damaged file: the LLM reader reports it */
        return false;
    }
    size_t len = 0;
    const char *cfg = mllm_mllmfile_config(mf, &len);
    const bool yes = mllm_whisper_mllm_config(cfg, len);
    mllm_mllmfile_close(mf);
    return yes;
}

mllm_whisper_layout mllm_whisper_probe(const char *path) {
    struct stat sb;
    if (!path || stat(path, &sb) != 0) return MLLM_WHISPER_NONE;
    if (S_ISREG(sb.st_mode)) return is_whisper_mllm(path) ? MLLM_WHISPER_MLLM : MLLM_WHISPER_NONE;
    if (!S_ISDIR(sb.st_mode)) return MLLM_WHISPER_NONE;
    /* A CTranslate2 folder: model.bin beside config.json, no safetensors. */
    if (is_file(path, "model.bin") && !is_file(path, "model.safetensors")) return MLLM_WHISPER_CT2;
    /* A Hugging Face folder whose config.json says model_type "whisper". */
    char cfg[4096];
    if (!is_file(path, "model.safetensors") || (size_t)snprintf(cfg, sizeof cfg, "%s/config.json", path) >= sizeof cfg)
        return MLLM_WHISPER_NONE;
    void *base = NULL;
    size_t size = 0;
    if (mllm_file_map(cfg, 2, "too short for JSON", &base, &size) != MLLM_OK) {
        mllm_err_clear();
        return MLLM_WHISPER_NONE;
    }
    cJSON *j = size <= (1u << 20) ? cJSON_ParseWithLength(base, size) : NULL;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "model_type");
    const bool whisper = cJSON_IsString(mt) && !strcmp(mt->valuestring, "whisper");
    cJSON_Delete(j);
    mllm_file_unmap(base, size);
    return whisper ? MLLM_WHISPER_HF : MLLM_WHISPER_NONE;
}

mllm_status mllm_whisper_open(const char *path, const mllm_whisper_params *p, mllm_whisper **out) {
    *out = NULL;
    switch (mllm_whisper_probe(path)) {
    case MLLM_WHISPER_CT2: return mllm_whisper_load(path, p, out);
    case MLLM_WHISPER_HF: return mllm_whisper_load_hf(path, p, out);
    case MLLM_WHISPER_MLLM: return mllm_whisper_load_mllm(path, p, out);
    default: break;
    }
    return mllm_err(MLLM_ERR_FORMAT, "%s: not a Whisper model (a CTranslate2 folder with model.bin, a Hugging Face folder with model_type whisper, or a .mllm file converted from one)", path);
}
