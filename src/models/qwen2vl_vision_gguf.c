/* The Qwen2.5-VL vision tower from an mmproj GGUF (llama.cpp's clip.* keys). */
#include "core/error.h"
#include "models/qwen2vl_vision_internal.h"

mllm_status mllm_qwen2vl_vision_open_gguf(const char *path, int n_threads, mllm_qwen2vl_vision **out) {
    (void)n_threads;
    *out = NULL;
    return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: mmproj GGUF files are not read yet", path);
}
