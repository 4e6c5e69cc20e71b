/* Audio input in a build without libsndfile and libsamplerate
   (cmake -DMLLM_AUDIO=OFF; every wasm32-wasi build): the same entry points
   as audio.c, each an MLLM_ERR_UNSUPPORTED error that says why. Whisper
   models still load; only decoding an audio file is missing. CMake compiles
   this file instead of audio.c. */
#include "audio/audio.h"
#include "core/error.h"
#include <stddef.h>

static mllm_status no_audio(const char *what, const char *label, float **samples, size_t *n_samples) {
    if (samples) *samples = NULL;
    if (n_samples) *n_samples = 0;
    return mllm_err(MLLM_ERR_UNSUPPORTED,
                    "%s: %s: this build of mllm has no audio input (configured with -DMLLM_AUDIO=OFF, "
                    "as every wasm32-wasi build is: libsndfile and libsamplerate are not linked)",
                    what, label ? label : "<memory>");
}

mllm_status mllm_audio_load_memory(const void *buf, size_t len, const char *label, int out_rate, float **samples,
                                   size_t *n_samples, mllm_audio_info *info) {
    (void)buf, (void)len, (void)out_rate, (void)info;
    return no_audio("mllm_audio_load_memory", label, samples, n_samples);
}

mllm_status mllm_audio_load(const char *path, int out_rate, float **samples, size_t *n_samples,
                            mllm_audio_info *info) {
    (void)out_rate, (void)info;
    return no_audio("mllm_audio_load", path, samples, n_samples);
}
