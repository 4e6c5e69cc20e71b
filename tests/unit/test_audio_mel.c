/* Whisper log-mel front end vs transformers' WhisperFeatureExtractor on
   ../shared's jfk.wav (reference: tests/data/whisper/, made by
   tools/reference/whisper_mel_reference.py), 80 and 128 bins; the filterbank's
   shape; silence, a pure tone, trimming past 30 s, NaN input; and the time
   one 30-s window takes. */
#include "backends/cpu.h"
#include "testutil.h"
#include "audio/audio.h"
#include "audio/mel.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Stated bound: the NMSE of our log-mel vs the reference, over the frames
   that see the audio. The reference is stored as f16, whose rounding alone
   is about 1e-8 of these values' energy. */
#define MEL_NMSE_MAX 1e-6
/* Frames past the audio are all the floor; this is how close we get. */
#define MEL_FLOOR_TOL 1e-5

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static cJSON *load_meta(void) {
    const char *p = tu_data("whisper/jfk_mel.json");
    size_t len = 0;
    char *txt = tu_read_file(p, &len);
    assert_non_null(txt);
    cJSON *j = cJSON_ParseWithLength(txt, len);
    assert_non_null(j);
    free(txt);
    free((void *)p);
    return j;
}

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

/* Compares mel (n_mels x 3000) with the stored reference frames and the
   summary stats of the full reference array. */
static void compare(const float *mel, int n_mels, const cJSON *meta) {
    char key[16];
    snprintf(key, sizeof key, "mel%d", n_mels);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(meta, key);
    assert_non_null(m);
    int first = (int)num(m, "first_frame"), count = (int)num(m, "n_frames_stored");
    char rel[64];
    snprintf(rel, sizeof rel, "whisper/jfk_mel%d.f16", n_mels);
    const char *p = tu_data(rel);
    size_t len = 0;
    uint16_t *ref16 = tu_read_file(p, &len);
    assert_non_null(ref16);
    assert_int_equal(len, (size_t)n_mels * (size_t)count * 2);
    size_t n = (size_t)n_mels * (size_t)count;
    float *ref = malloc(n * sizeof *ref), *got = malloc(n * sizeof *got);
    double max_abs = 0;
    for (int b = 0; b < n_mels; b++) {
        for (int t = 0; t < count; t++) {
            size_t i = (size_t)b * (size_t)count + (size_t)t;
            ref[i] = mllm_f16_to_f32(ref16[i]);
            got[i] = mel[(size_t)b * MLLM_MEL_N_FRAMES + (size_t)(first + t)];
            max_abs = fmax(max_abs, fabs(got[i] - ref[i]));
        }
    }
    double nmse = tu_nmse(got, ref, n);
    double floor = num(m, "floor"), mx = num(m, "max"), mean = 0, gmax = -INFINITY, floor_err = 0;
    for (size_t i = 0; i < (size_t)n_mels * MLLM_MEL_N_FRAMES; i++) {
        mean += mel[i];
        gmax = fmax(gmax, mel[i]);
    }
    mean /= (double)n_mels * MLLM_MEL_N_FRAMES;
    /* Frames 1104.. see only the zero padding: all the floor. */
    for (int b = 0; b < n_mels; b++) {
        for (int t = 1104; t < MLLM_MEL_N_FRAMES; t++) {
            floor_err = fmax(floor_err, fabs(mel[b * MLLM_MEL_N_FRAMES + t] - floor));
        }
    }
    printf("%3d bins, frames %d..%d: NMSE %.2e (bound %.0e), max |diff| %.2e; max %.6f (ref %.6f), "
           "mean %.6f (ref %.6f), floor err %.1e\n",
           n_mels, first, first + count - 1, nmse, MEL_NMSE_MAX, max_abs, gmax, mx, mean, num(m, "mean"), floor_err);
    assert_true(nmse < MEL_NMSE_MAX);
    assert_true(fabs(gmax - mx) < 1e-4);
    assert_true(fabs(mean - num(m, "mean")) < 1e-4);
    assert_true(floor_err < MEL_FLOOR_TOL);
    free(ref);
    free(got);
    free(ref16);
    free((void *)p);
}

static void test_jfk_vs_transformers(void **state) {
    (void)state;
    const char *p = tu_shared("models/audio/jfk.wav");
    if (!p) return;
    cJSON *meta = load_meta();
    float *x = NULL;
    size_t n = 0;
    assert_int_equal(mllm_audio_load(p, MLLM_MEL_SAMPLE_RATE, &x, &n, NULL), MLLM_OK);
    assert_int_equal(n, (size_t)num(meta, "n_samples"));
    float *mel = malloc((size_t)MLLM_MEL_MAX_MELS * MLLM_MEL_N_FRAMES * sizeof *mel);
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now_s();
        assert_int_equal(mllm_mel_compute(x, n, 80, mel), MLLM_OK);
        best = fmin(best, now_s() - t0);
    }
    printf("log-mel of one 30-s window (80 bins): %.1f ms (best of 3, 1 thread)\n", best * 1e3);
    compare(mel, 80, meta);
    assert_int_equal(mllm_mel_compute(x, n, 128, mel), MLLM_OK);
    compare(mel, 128, meta);
    free(mel);
    mllm_free(x);
    cJSON_Delete(meta);
    free((void *)p);
}

/* Triangles on the Slaney scale: non-negative, peaks in order, and (norm =
   "slaney": height 2 / width) area 1 in Hz, up to sampling at 40 Hz bins. */
static void test_filters(void **state) {
    (void)state;
    float *f = malloc((size_t)MLLM_MEL_MAX_MELS * MLLM_MEL_N_BINS * sizeof *f);
    assert_int_equal(mllm_mel_filters(81, f), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_mel_filters(80, NULL), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_mel_filters(80, f), MLLM_OK);
    int prev_peak = -1;
    for (int m = 0; m < 80; m++) {
        const float *r = f + m * MLLM_MEL_N_BINS;
        int peak = 0;
        double area = 0;
        for (int k = 0; k < MLLM_MEL_N_BINS; k++) {
            assert_true(r[k] >= 0);
            if (r[k] > r[peak]) peak = k;
            area += r[k] * 40.0; /* 40 Hz per bin */
        }
        assert_true(peak >= prev_peak);
        prev_peak = peak;
        if (fabs(area - 1.0) > 0.1) fail_msg("filter %d: area %.4f", m, area);
    }
    /* The first filter: 0 to 74.5 Hz (2 x 45.25 / 81 mel, x 200/3 Hz per mel
       below 1 kHz), so only the 40 Hz bin sees it. */
    assert_true(f[0] == 0.0f);
    assert_true(f[1] > 0);
    assert_true(f[2] == 0.0f);
    free(f);
}

static void test_signals(void **state) {
    (void)state;
    float *mel = malloc((size_t)80 * MLLM_MEL_N_FRAMES * sizeof *mel);
    /* Silence: log10(1e-10) = -10 everywhere, so (-10 + 4) / 4. */
    assert_int_equal(mllm_mel_compute(NULL, 0, 80, mel), MLLM_OK);
    for (size_t i = 0; i < (size_t)80 * MLLM_MEL_N_FRAMES; i++) assert_true(mel[i] == -1.5f);
    /* A 1 kHz tone (exactly bin 25) over 40 s, trimmed to 30 s: every
       frame's loudest mel bin is the filter that weighs bin 25 and its two
       Hann-window neighbours (a quarter of the power each) the most. */
    size_t n = 40 * MLLM_MEL_SAMPLE_RATE;
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = (float)(0.5 * sin(2 * 3.14159265358979 * 1000 * (double)i / 16000));
    assert_int_equal(mllm_mel_compute(x, n, 80, mel), MLLM_OK);
    float filt[80 * MLLM_MEL_N_BINS];
    mllm_mel_filters(80, filt);
    int want = 0;
    double want_w = 0;
    for (int m = 0; m < 80; m++) {
        const float *r = filt + m * MLLM_MEL_N_BINS;
        double w = r[25] + 0.25 * (r[24] + r[26]);
        if (w > want_w) want_w = w, want = m;
    }
    for (int t = 2; t < MLLM_MEL_N_FRAMES; t += 499) { /* frames 0, 1 see the reflected edge */
        int best = 0;
        for (int m = 1; m < 80; m++) {
            if (mel[m * MLLM_MEL_N_FRAMES + t] > mel[best * MLLM_MEL_N_FRAMES + t]) best = m;
        }
        assert_int_equal(best, want);
    }
    /* The last frame reflects real samples (audio longer than the window). */
    assert_true(mel[want * MLLM_MEL_N_FRAMES + MLLM_MEL_N_FRAMES - 1] > 1.0f);
    /* NaN input and bad arguments. */
    x[12345] = NAN;
    assert_int_equal(mllm_mel_compute(x, n, 80, mel), MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "sample 12345 is NaN"));
    assert_int_equal(mllm_mel_compute(x, n, 64, mel), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_mel_compute(NULL, 5, 80, mel), MLLM_ERR_INVALID_ARG);
    free(x);
    free(mel);
}

int main(void) {
    mllm_cpu_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jfk_vs_transformers),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_signals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
