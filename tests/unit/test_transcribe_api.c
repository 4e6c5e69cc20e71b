/* mllm_transcribe's ABI 8 parts, through mllm.h alone, on Whisper tiny.en
   ($MLLM_WHISPER_TINY_DIR) and ../shared's jfk.wav: the segment callback
   sees what the transcript keeps, in order; an ABI 7 struct gets the
   defaults; abort stops before the first window; the stats and the audio
   probe say what ran; bad weight types and temperatures are refused.
   SKIPPED without the model. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int n;
    char text[4096];
    double last_end;
    int out_of_order;
} heard;

static void on_segment(void *user, const mllm_transcript_segment *s) {
    heard *h = user;
    if (s->start < h->last_end - 1e-9) h->out_of_order = 1;
    h->last_end = s->end;
    strncat(h->text, s->text, sizeof h->text - strlen(h->text) - 1);
    h->n++;
}

static int abort_now(void *user) {
    (*(int *)user)++;
    return 1;
}

typedef struct {
    mllm_model *m;
    void *wav;
    size_t len;
} fixture;

static int setup(void **state) {
    static fixture f;
    const char *dir = getenv("MLLM_WHISPER_TINY_DIR");
    const char *path = tu_shared("models/audio/jfk.wav");
    if (!dir || !path) {
        printf("SKIPPED: MLLM_WHISPER_TINY_DIR unset or jfk.wav absent\n");
        free((void *)path);
        *state = NULL;
        return 0;
    }
    f.wav = tu_read_file(path, &f.len);
    free((void *)path);
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 2;
    if (!f.wav || mllm_model_load(dir, &lp, &f.m) != MLLM_OK) return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    if (f) {
        mllm_model_free(f->m);
        free(f->wav);
    }
    return 0;
}

static void test_callback_stats_and_abi7(void **state) {
    fixture *f = *state;
    if (!f) return;
    assert_int_equal(mllm_model_can_transcribe(f->m), 1);
    assert_int_equal(mllm_model_multilingual(f->m), 0); /* tiny.en */
    heard h = {0};
    mllm_transcribe_params p;
    mllm_transcribe_default_params(&p);
    p.timestamps = 1;
    p.on_segment = on_segment;
    p.on_segment_user = &h;
    mllm_transcript *t = NULL;
    assert_int_equal(mllm_transcribe(f->m, f->wav, f->len, "jfk", &p, &t), MLLM_OK);
    assert_true(h.n >= 2); /* timestamps: jfk.wav's sentences */
    assert_int_equal(h.n, mllm_transcript_n_segments(t)); /* no segment of spaces only in jfk.wav */
    assert_false(h.out_of_order);
    const char *joined = h.text;
    while (*joined == ' ') joined++;
    assert_string_equal(joined, mllm_transcript_text(t));
    mllm_transcript_stats st = {.struct_size = sizeof st};
    assert_int_equal(mllm_transcript_get_stats(t, &st), MLLM_OK);
    assert_int_equal(st.n_windows, 1); /* 11 s */
    assert_true(st.encoder_ms > 0 && st.decoder_ms > 0 && st.mel_ms > 0);
    mllm_transcript_stats tiny = {.struct_size = 4}; /* smaller than its first counter */
    assert_int_equal(mllm_transcript_get_stats(t, &tiny), MLLM_ERR_INVALID_ARG);

    /* A caller built against ABI 7 passes the struct up to translate: the
       defaults (fallback, conditioning, no callback) then, same transcript. */
    mllm_transcribe_params old;
    mllm_transcribe_default_params(&old);
    old.timestamps = 1;
    old.on_segment = on_segment; /* beyond the old size: must not be read */
    old.on_segment_user = NULL;
    old.struct_size = (uint32_t)offsetof(mllm_transcribe_params, best_of);
    mllm_transcript *t7 = NULL;
    assert_int_equal(mllm_transcribe(f->m, f->wav, f->len, "jfk", &old, &t7), MLLM_OK);
    assert_string_equal(mllm_transcript_text(t7), mllm_transcript_text(t));
    mllm_transcript_free(t7);
    mllm_transcript_free(t);
}

static void test_abort_and_refusals(void **state) {
    fixture *f = *state;
    if (!f) return;
    int polls = 0;
    mllm_transcribe_params p;
    mllm_transcribe_default_params(&p);
    p.abort = abort_now;
    p.abort_user = &polls;
    mllm_transcript *t = NULL;
    assert_int_equal(mllm_transcribe(f->m, f->wav, f->len, "jfk", &p, &t), MLLM_ERR_CANCELLED);
    assert_null(t);
    assert_int_equal(polls, 1);

    mllm_transcribe_default_params(&p);
    p.temperature = 1.5f; /* above the fallback's 1.0 */
    assert_int_equal(mllm_transcribe(f->m, f->wav, f->len, "jfk", &p, &t), MLLM_ERR_INVALID_ARG);
    mllm_transcribe_default_params(&p);
    p.best_of = MLLM_TRANSCRIBE_MAX_BEAM + 1;
    assert_int_equal(mllm_transcribe(f->m, f->wav, f->len, "jfk", &p, &t), MLLM_ERR_INVALID_ARG);

    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.weights = "q4_1";
    mllm_model *m = NULL;
    assert_int_equal(mllm_model_load(getenv("MLLM_WHISPER_TINY_DIR"), &lp, &m), MLLM_ERR_INVALID_ARG);
    assert_null(m);
    assert_int_equal(mllm_path_can_transcribe(getenv("MLLM_WHISPER_TINY_DIR")), 1);
    assert_int_equal(mllm_path_can_transcribe(tu_datap("whisper")), 0);
}

static void test_audio_probe(void **state) {
    fixture *f = *state;
    if (!f) return;
    mllm_audio_desc d = {.struct_size = sizeof d};
    assert_int_equal(mllm_audio_probe(f->wav, f->len, "jfk", &d), MLLM_OK);
    assert_string_equal(d.format, "WAV");
    assert_int_equal(d.sample_rate, 16000);
    assert_int_equal(d.channels, 1);
    assert_true(d.duration > 10.9 && d.duration < 11.1);
    assert_int_equal(mllm_audio_probe("RIFFxxxx", 8, "bad", &d), MLLM_ERR_FORMAT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_callback_stats_and_abi7),
        cmocka_unit_test(test_abort_and_refusals),
        cmocka_unit_test(test_audio_probe),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
