/* Which Whisper layout a path holds (whisper_open.h). */
#include "models/whisper_open.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "core/error.h"

static bool is_file(const char *dir, const char *name) {
    char p[4096];
    struct stat sb;
    return (size_t)snprintf(p, sizeof p, "%s/%s", dir, name) < sizeof p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

mllm_whisper_layout mllm_whisper_probe(const char *path) {
    struct stat sb;
    if (!path || stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) return MLLM_WHISPER_NONE;
    /* A CTranslate2 folder: model.bin beside config.json, no safetensors. */
    if (is_file(path, "model.bin") && !is_file(path, "model.safetensors")) return MLLM_WHISPER_CT2;
    return MLLM_WHISPER_NONE;
}

mllm_status mllm_whisper_open(const char *path, const mllm_whisper_params *p, mllm_whisper **out) {
    *out = NULL;
    switch (mllm_whisper_probe(path)) {
    case MLLM_WHISPER_CT2: return mllm_whisper_load(path, p, out);
    default: break;
    }
    return mllm_err(MLLM_ERR_FORMAT, "%s: not a Whisper model (a CTranslate2 folder with model.bin)", path);
}
