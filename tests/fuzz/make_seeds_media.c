/* Seeds for the CTranslate2 and audio targets: tiny model.bin images in
   each binary layout, and short tones written with libsndfile in every
   container the audio reader accepts (each checked to load). */
#include "make_seeds.h"
#include "audio/audio.h"
#include "core/alloc.h"
#include "formats/ctranslate2.h"
#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put_u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void put_name(buf *b, const char *s) {
    uint16_t n = (uint16_t)(strlen(s) + 1);
    put(b, &n, 2);
    put(b, s, n);
}
/* A variable: v4+ (dtype code, byte count) or v2/v3 (item size, count). */
static void put_var(buf *b, uint32_t version, const char *name, int rank, const uint32_t *dims, uint8_t code,
                    uint32_t n_el, uint32_t item) {
    put_name(b, name);
    put_u8(b, (uint8_t)rank);
    for (int d = 0; d < rank; d++) put_u32(b, dims[d]);
    put_u8(b, version >= 4 ? code : (uint8_t)item);
    put_u32(b, version >= 4 ? n_el * item : n_el);
    for (uint32_t i = 0; i < n_el * item; i++) put_u8(b, (uint8_t)(i * 7));
}

static void ct2_seed(uint32_t version, const char *name) {
    buf b = {0};
    put_u32(&b, version);
    put_name(&b, "WhisperSpec");
    put_u32(&b, 3);
    put_u32(&b, version >= 4 ? 6 : 4);
    put_var(&b, version, "decoder/num_heads", 0, NULL, 2, 1, 2);
    put_var(&b, version, "encoder/conv1/weight", 3, (uint32_t[]){4, 2, 3}, 0, 24, 4);
    put_var(&b, version, "decoder/embeddings/weight", 2, (uint32_t[]){3, 4}, 1, 12, 1);
    put_var(&b, version, "decoder/embeddings/weight_scale", 1, (uint32_t[]){3}, 0, 3, 4);
    if (version >= 4) {
        put_var(&b, version, "decoder/layer_norm/gamma", 1, (uint32_t[]){4}, 4, 4, 2);
        put_var(&b, version, "encoder/layer_norm/beta", 1, (uint32_t[]){4}, 5, 4, 2);
    }
    if (version >= 3) {
        put_u32(&b, 1);
        put_name(&b, "decoder/projection/weight");
        put_name(&b, "decoder/embeddings/weight");
    }
    mllm_ct2 *c = NULL;
    expect_ok(name, mllm_ct2_open_memory(b.p, b.n, name, &c));
    mllm_ct2_close(c);
    save("ctranslate2", name, b.p, b.n);
    free(b.p);
}

/* 50 ms of a two-tone signal in the given container, as a fuzz input
   (mode byte 0, then the file). */
static void audio_seed(const char *name, int format, int rate, int channels) {
    char path[] = "/tmp/mllm-seed-audio.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return;
    close(fd);
    SF_INFO in = {.samplerate = rate, .channels = channels, .format = format};
    if (!sf_format_check(&in)) {
        printf("  (skipped %s: this libsndfile cannot write it)\n", name);
        unlink(path);
        return;
    }
    SNDFILE *sf = sf_open(path, SFM_WRITE, &in);
    if (!sf) {
        fprintf(stderr, "cannot write %s: %s\n", name, sf_strerror(NULL));
        exit(1);
    }
    int frames = rate / 20;
    float *x = malloc((size_t)frames * (size_t)channels * sizeof *x);
    for (int i = 0; i < frames; i++) {
        for (int c = 0; c < channels; c++) x[i * channels + c] = (float)(0.4 * sin(i * (0.05 + 0.03 * c)));
    }
    sf_writef_float(sf, x, frames);
    sf_close(sf);
    free(x);
    size_t n = 0;
    uint8_t *img = read_all(path, &n);
    unlink(path);
    float *out = NULL;
    size_t n_out = 0;
    expect_ok(name, mllm_audio_load_memory(img, n, name, MLLM_AUDIO_SAMPLE_RATE, &out, &n_out, NULL));
    mllm_free(out);
    buf b = {0};
    put_u8(&b, 0);
    put(&b, img, n);
    save("audio", name, b.p, b.n);
    free(b.p);
    free(img);
}

void media_seeds(void) {
    ct2_seed(6, "v6.bin");
    ct2_seed(4, "v4.bin");
    ct2_seed(3, "v3.bin");
    ct2_seed(2, "v2.bin");
    audio_seed("pcm16_stereo_22k.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 22050, 2);
    audio_seed("float_mono_16k.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, 1);
    audio_seed("ulaw_8k.wav", SF_FORMAT_WAV | SF_FORMAT_ULAW, 8000, 1);
    audio_seed("pcm24_48k.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_24, 48000, 2);
    audio_seed("vorbis_16k.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 1);
    audio_seed("opus_48k.ogg", SF_FORMAT_OGG | SF_FORMAT_OPUS, 48000, 1);
    audio_seed("layer3_16k.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 16000, 1);
    audio_seed("pcm16_11k.aiff", SF_FORMAT_AIFF | SF_FORMAT_PCM_16, 11025, 1);
}
