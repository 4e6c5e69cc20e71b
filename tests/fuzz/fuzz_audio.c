/* Fuzz target: an audio file image (WAV, FLAC, OGG, MP3, AIFF or anything
   else) decoded in memory through libsndfile's virtual I/O, mixed to mono
   and resampled. Input: a mode byte (bit 0: 8 kHz out instead of 16 kHz),
   then the file. A success must hand out finite samples, at most the
   duration limit's worth, and a header within the limits. */
#include "fuzz_util.h"
#include "audio/audio.h"
#include "core/alloc.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    int rate = fz_take_u8(&in) & 1 ? 8000 : MLLM_AUDIO_SAMPLE_RATE;
    void *img = fz_dup(in.p, in.n);
    float *x = NULL;
    size_t n = 0;
    mllm_audio_info info;
    mllm_status st = mllm_audio_load_memory(img, in.n, "fuzz.audio", rate, &x, &n, &info);
    fz_check_status(st);
    if (st) {
        FZ_CHECK(x == NULL && n == 0);
    } else {
        FZ_CHECK(x != NULL);
        FZ_CHECK(n <= (size_t)MLLM_AUDIO_MAX_SECONDS * (size_t)rate + 1024);
        FZ_CHECK(info.channels >= 1 && info.channels <= MLLM_AUDIO_MAX_CHANNELS);
        FZ_CHECK(info.source_rate >= MLLM_AUDIO_MIN_RATE && info.source_rate <= MLLM_AUDIO_MAX_RATE);
        FZ_CHECK(memchr(info.format, '\0', sizeof info.format) != NULL);
        for (size_t i = 0; i < n; i++) FZ_CHECK(isfinite(x[i]));
        mllm_free(x);
    }
    free(img);
    return 0;
}
