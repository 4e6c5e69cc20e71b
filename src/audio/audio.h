/* Audio input: a WAV, FLAC, OGG (Vorbis, Opus) or MP3 file in, mono f32
   samples at one rate out (16 kHz for speech models).

   Decoding is libsndfile's (sf_open_virtual over our own reads, so a file is
   opened only through core/file_open.h and memory images work the same);
   resampling is libsamplerate's; channels are averaged. Before libsndfile
   sees a byte, the first bytes must be one of the containers above (RIFF /
   RIFX / RF64 WAV, Wave64, AIFF, fLaC, OggS, an ID3 tag or an MPEG frame
   sync), so the other two dozen formats libsndfile parses are never
   reached from untrusted input. Every header field is checked against the
   limits below; truncated files, NaN, infinite or absurdly loud samples and absurd sizes
   are errors whose message names the file. */
#ifndef MLLM_AUDIO_AUDIO_H
#define MLLM_AUDIO_AUDIO_H
#include <mllm/mllm.h>
#include <stddef.h>
#include <stdint.h>

/* What Whisper (and most speech models) expect. */
#define MLLM_AUDIO_SAMPLE_RATE 16000
/* Longest audio read: 3 hours, 691 MB of f32 at 16 kHz. */
#define MLLM_AUDIO_MAX_SECONDS (3 * 3600)
/* Source rates accepted (telephony's 8 kHz down to a margin; studio up). */
#define MLLM_AUDIO_MIN_RATE 1000
#define MLLM_AUDIO_MAX_RATE 768000
/* More channels than any real recording (3rd-order ambisonics is 16). */
#define MLLM_AUDIO_MAX_CHANNELS 64
/* Largest sample magnitude (full scale is 1.0): float files may overshoot a
   little; 60 dB over full scale is a broken file, and bounding it keeps the
   channel sums and the resampler's output finite. */
#define MLLM_AUDIO_MAX_SAMPLE 1000.0f
/* Largest input file (RF64 / W64 can be larger; nothing of 3 hours is). */
#define MLLM_AUDIO_MAX_FILE_BYTES ((uint64_t)8 << 30)

typedef struct {
    int source_rate;       /* the file's sample rate */
    int channels;          /* the file's channel count (mixed to mono) */
    uint64_t source_frames; /* frames decoded at source_rate */
    char format[16];       /* "WAV", "FLAC", "OGG", "MP3", ... */
} mllm_audio_info;

/* Decodes the regular file at path to mono f32 at out_rate (a rate in
   MIN_RATE..MAX_RATE, normally MLLM_AUDIO_SAMPLE_RATE). *samples is
   allocated with mllm_malloc (free with mllm_free), *n_samples its count;
   info may be NULL. Errors: MLLM_ERR_IO (cannot open, not a regular file,
   read error), MLLM_ERR_FORMAT (not a known container, libsndfile cannot
   decode it, a header field out of range, truncated, NaN/Inf samples or
   ones over MLLM_AUDIO_MAX_SAMPLE),
   MLLM_ERR_UNSUPPORTED (over a limit above), MLLM_ERR_INVALID_ARG,
   MLLM_ERR_NOMEM. On error *samples is NULL and *n_samples 0. */
mllm_status mllm_audio_load(const char *path, int out_rate, float **samples, size_t *n_samples,
                            mllm_audio_info *info);
/* The same from an in-memory file image (not copied); label names it in
   messages. */
mllm_status mllm_audio_load_memory(const void *buf, size_t len, const char *label, int out_rate, float **samples,
                                   size_t *n_samples, mllm_audio_info *info);

#endif
