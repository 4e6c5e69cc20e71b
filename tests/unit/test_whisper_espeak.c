/* The espeak-ng clips marked "ci" in tests/data/whisper/espeak_words.json
   (made by tools/reference/whisper_espeak_reference.py, issue #40 item 1),
   regenerated here with its recipe: mllm's log-mel of each clip's content
   frames against faster-whisper's (each frame's sum over the 80 mel bins,
   and the largest value), and Whisper tiny.en's text tokens with f32
   weights, greedy and beam 5, against faster-whisper float32's, token for
   token. e2e_transcribe_espeak checks the CLI's words on the same clips;
   this pins what reaches the encoder and what the search returns.
   SKIPPED without $MLLM_WHISPER_TINY_DIR, espeak-ng or sox, or with an
   espeak-ng other than the data's (its samples depend on the version). */
#include "testutil.h"
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "audio/audio.h"
#include "audio/mel.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "models/whisper/whisper_transcribe.h"

extern char **environ;

/* faster-whisper's numpy float32 STFT against mllm's: measured at most
   7.1e-5 on a frame's sum of 80 values (mostly the data's rounding to 4
   decimals) and the same largest value to 6 decimals; a window, padding or
   clamp mistake moves sums by whole units. */
#define MEL_SUM_TOL 1e-3
#define MEL_MAX_TOL 1e-5

/* Runs argv (no shell: the sentences stay one argument) with stdout to
   /dev/null; its exit status, or -1 if it could not start. */
static int run(char *const argv[]) {
    pid_t pid;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    const int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -1;
    int ws = 0;
    if (waitpid(pid, &ws, 0) < 0) return -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

/* espeak-ng's version line without where its data is ("" if absent). */
static void espeak_version(char *out, size_t cap) {
    out[0] = 0;
    FILE *f = popen("espeak-ng --version 2>/dev/null", "r");
    if (!f) return;
    if (!fgets(out, (int)cap, f)) out[0] = 0;
    pclose(f);
    char *cut = strstr(out, "Data at");
    if (!cut) cut = out + strcspn(out, "\n");
    while (cut > out && (cut[-1] == ' ' || cut[-1] == '\n')) cut--;
    *cut = 0;
}

static int ints(const cJSON *a, int32_t *out, int cap) {
    const cJSON *e;
    int n = 0;
    cJSON_ArrayForEach(e, a) {
        assert_true(n < cap);
        out[n++] = (int32_t)e->valuedouble;
    }
    return n;
}

/* The clip's log-mel against faster-whisper's content frames. */
static void check_mel(const float *pcm, size_t n, const cJSON *ref, int clip) {
    const int frames = cJSON_GetObjectItem(ref, "mel_frames")->valueint;
    assert_int_equal(frames, (int)(n / MLLM_MEL_HOP)); /* the window's content, as transcribe() slices it */
    assert_int_equal(cJSON_GetObjectItem(ref, "n_samples")->valueint, (int)n);
    float *mel = malloc((size_t)80 * MLLM_MEL_N_FRAMES * sizeof(float));
    assert_non_null(mel);
    assert_int_equal(mllm_mel_compute(pcm, n, 80, mel), MLLM_OK);
    const cJSON *sums = cJSON_GetObjectItem(ref, "mel_frame_sums");
    assert_int_equal(cJSON_GetArraySize(sums), frames);
    double worst = 0, mx = -INFINITY;
    for (int f = 0; f < frames; f++) {
        double s = 0;
        for (int m = 0; m < 80; m++) {
            const float v = mel[(size_t)m * MLLM_MEL_N_FRAMES + (size_t)f];
            s += v;
            mx = v > mx ? v : mx;
        }
        const double d = fabs(s - cJSON_GetArrayItem(sums, f)->valuedouble);
        worst = d > worst ? d : worst;
    }
    const double want_max = cJSON_GetObjectItem(ref, "mel_max")->valuedouble;
    printf("clip %d: %d frames, largest frame-sum difference %.2e, max %.6f (faster-whisper %.6f)\n", clip, frames,
           worst, mx, want_max);
    assert_true(worst <= MEL_SUM_TOL);
    assert_true(fabs(mx - want_max) <= MEL_MAX_TOL);
    free(mel);
}

/* The text tokens of every segment, greedy or beam 5, against ref. */
static void check_tokens(mllm_whisper *w, const float *pcm, size_t n, int beam, const cJSON *ref, int clip) {
    mllm_whisper_options o;
    mllm_whisper_options_default(&o); /* faster-whisper's defaults, fallback on */
    o.beam_size = beam;
    int32_t want[256], got[256];
    const int n_want = ints(ref, want, 256);
    mllm_whisper_result r;
    assert_int_equal(mllm_whisper_transcribe(w, pcm, n, &o, &r), MLLM_OK);
    int n_got = 0;
    for (int i = 0; i < r.n_segs; i++)
        for (int k = 0; k < r.segs[i].n_tokens; k++) {
            assert_true(n_got < 256);
            got[n_got++] = r.segs[i].tokens[k];
        }
    printf("clip %d beam %d: %d tokens (faster-whisper float32 %d)\n", clip, beam, n_got, n_want);
    assert_int_equal(n_got, n_want);
    assert_memory_equal(got, want, (size_t)n_got * sizeof(int32_t));
    mllm_whisper_result_free(&r);
}

static void test_espeak_clips(void **state) {
    (void)state;
    const char *dir = getenv("MLLM_WHISPER_TINY_DIR");
    if (!dir || !*dir) {
        printf("SKIPPED: MLLM_WHISPER_TINY_DIR is not set (scripts/fetch-whisper.sh whisper-tiny.en)\n");
        return;
    }
    const char *path = tu_data("whisper/espeak_words.json");
    size_t len = 0;
    char *txt = tu_read_file(path, &len);
    assert_non_null(txt);
    cJSON *j = cJSON_ParseWithLength(txt, len), *c;
    assert_non_null(j);
    char ver[256];
    espeak_version(ver, sizeof ver);
    char *probe[] = {"sox", "--version", NULL};
    if (strcmp(ver, cJSON_GetObjectItem(j, "espeak_ng")->valuestring) || run(probe) != 0) {
        printf("SKIPPED: espeak-ng '%s' (the data's: '%s') or sox missing\n", ver,
               cJSON_GetObjectItem(j, "espeak_ng")->valuestring);
        goto out;
    }
    mllm_whisper_params p = {.n_threads = 2, .weight_type = MLLM_DTYPE_F32};
    mllm_whisper *w = NULL;
    assert_int_equal(mllm_whisper_load(dir, &p, &w), MLLM_OK);
    int clip = 0, checked = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "clips")) {
        const cJSON *ref = cJSON_GetObjectItem(c, "float32_data");
        if (!cJSON_IsTrue(cJSON_GetObjectItem(c, "ci"))) {
            clip++;
            continue;
        }
        assert_non_null(ref);
        char wpm[16], *raw = (char *)tu_tmp("raw.wav"), *wav = (char *)tu_tmp("clip.wav");
        snprintf(wpm, sizeof wpm, "%d", cJSON_GetObjectItem(c, "wpm")->valueint);
        char *speak[] = {"espeak-ng", "-v", cJSON_GetObjectItem(c, "voice")->valuestring, "-s", wpm, "-w", raw,
                         cJSON_GetObjectItem(c, "text")->valuestring, NULL};
        char *resample[] = {"sox", "-D", raw, "-r", "16000", "-c", "1", "-b", "16", wav, NULL};
        assert_int_equal(run(speak), 0);
        assert_int_equal(run(resample), 0);
        float *pcm = NULL;
        size_t n = 0;
        assert_int_equal(mllm_audio_load(wav, MLLM_AUDIO_SAMPLE_RATE, &pcm, &n, NULL), MLLM_OK);
        check_mel(pcm, n, ref, clip);
        check_tokens(w, pcm, n, 1, cJSON_GetObjectItem(ref, "tokens_greedy"), clip);
        check_tokens(w, pcm, n, 5, cJSON_GetObjectItem(ref, "tokens_beam5"), clip);
        mllm_free(pcm);
        free(raw);
        free(wav);
        clip++;
        checked++;
    }
    assert_int_equal(checked, 3);
    mllm_whisper_free(w);
out:
    cJSON_Delete(j);
    free(txt);
    free((void *)path);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_espeak_clips)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
