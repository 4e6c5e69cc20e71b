/* Whisper's log-mel front end: 16 kHz mono samples in, the (n_mels, 3000)
   log-mel spectrogram of one 30-second window out, computed as OpenAI's
   whisper and transformers' WhisperFeatureExtractor do:

     1. the samples are zero-padded (or trimmed) to 30 s = 480,000;
     2. reflect padding of n_fft/2 = 200 on each side (centred frames);
     3. a 400-point periodic Hann window every 160 samples, the FFT's power
        |X[k]|^2 for k = 0..200; 3001 frames, the last one dropped;
     4. a Slaney-style mel filterbank (librosa's default, htk = False,
        norm = "slaney"), 0..8 kHz, 80 bins (128 for large-v3);
     5. log10(max(mel, 1e-10)), clamped to (its max - 8), then (x + 4) / 4.

   The filters are computed here in double precision (no table shipped);
   the FFT is a small mixed-radix one for n = 400 = 4 x 4 x 5 x 5. */
#ifndef MLLM_AUDIO_MEL_H
#define MLLM_AUDIO_MEL_H
#include <mllm/mllm.h>
#include <stddef.h>

#define MLLM_MEL_SAMPLE_RATE 16000
#define MLLM_MEL_N_FFT 400
#define MLLM_MEL_HOP 160
#define MLLM_MEL_N_BINS (MLLM_MEL_N_FFT / 2 + 1)   /* 201 frequency bins */
#define MLLM_MEL_CHUNK_SAMPLES (30 * MLLM_MEL_SAMPLE_RATE)
#define MLLM_MEL_N_FRAMES (MLLM_MEL_CHUNK_SAMPLES / MLLM_MEL_HOP) /* 3000 */
/* Whisper's largest filterbank (large-v3); other sizes are refused. */
#define MLLM_MEL_MAX_MELS 128

/* The Slaney mel filterbank: filters is (n_mels, MLLM_MEL_N_BINS) row-major,
   each row a triangle scaled to unit area (norm = "slaney"). n_mels must be
   80 or 128 (MLLM_ERR_INVALID_ARG otherwise). */
mllm_status mllm_mel_filters(int n_mels, float *filters);

/* The log-mel of samples[0..n) (16 kHz mono; n may be 0, and samples NULL
   then), padded or trimmed to one 30-s window: out is (n_mels,
   MLLM_MEL_N_FRAMES) row-major, mel-major, as Whisper's encoder takes it.
   Errors: MLLM_ERR_INVALID_ARG (n_mels not 80 or 128, NULL out),
   MLLM_ERR_FORMAT (a NaN or infinite sample), MLLM_ERR_NOMEM. */
mllm_status mllm_mel_compute(const float *samples, size_t n, int n_mels, float *out);
/* The same values, the frames shared out over pool (NULL: this thread). */
typedef struct mllm_pool mllm_pool;
mllm_status mllm_mel_compute_pool(const float *samples, size_t n, int n_mels, float *out, mllm_pool *pool);

#endif
