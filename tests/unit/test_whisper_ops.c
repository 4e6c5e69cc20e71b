/* Whisper's threaded helpers against the plain code they replace, bit for
   bit: the four-rows-at-a-time LayerNorm (mllm_cpu_layernorm_rows, the graph's) against
   mllm_layernorm_generic row by row, on odd widths and row counts; the
   log-mel on a thread pool against the same call on one thread; and the
   frame pairs that skip their FFT (all-zero samples) against the value an
   FFT of zeros gives, log10 of the floor. */
#include "testutil.h"
#include "audio/mel.h"
#include "backends/cpu/kernels.h"
#include "core/threadpool.h"
#include "models/whisper/whisper_internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_layernorm_rows(void **state) {
    (void)state;
    const mllm_cpu_ops *g = mllm_cpu_ops_generic();
    static const int dims[] = {1, 7, 384, 385};
    static const int64_t rows[] = {1, 3, 4, 5, 9, 64};
    for (size_t di = 0; di < 4; di++)
        for (size_t ri = 0; ri < 6; ri++)
            for (int affine = 0; affine < 2; affine++) {
                const int dim = dims[di];
                const int64_t M = rows[ri];
                const size_t n = (size_t)M * (size_t)dim;
                float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)), *r = malloc(n * sizeof(float));
                float *gamma = malloc((size_t)dim * sizeof(float)), *beta = malloc((size_t)dim * sizeof(float));
                tu_fill_random(x, n, 3 + di * 10 + ri);
                for (size_t i = 0; i < n; i++) x[i] = x[i] * 7.0f + 3.0f; /* an offset: the mean matters */
                tu_fill_random(gamma, (size_t)dim, 5);
                tu_fill_random(beta, (size_t)dim, 6);
                const float *gm = affine ? gamma : NULL, *bt = affine ? beta : NULL;
                for (int64_t m = 0; m < M; m++)
                    g->layernorm(r + (size_t)m * dim, x + (size_t)m * dim, gm, bt, dim, 1e-5f);
                mllm_cpu_layernorm_rows(y, x, gm, bt, M, dim, 1e-5f);
                assert_memory_equal(y, r, n * sizeof(float));
                free(x), free(y), free(r), free(gamma), free(beta);
            }
}

/* 1.5 s of noise, then zeros to the end of the window: the frames past it
   skip the FFT. */
static void test_mel_pool(void **state) {
    (void)state;
    const size_t n = 24000, nout = (size_t)80 * MLLM_MEL_N_FRAMES;
    float *pcm = malloc(n * sizeof(float)), *a = malloc(nout * sizeof(float)), *b = malloc(nout * sizeof(float));
    tu_fill_random(pcm, n, 17);
    for (size_t i = 0; i < n; i++) pcm[i] *= 0.3f;
    mllm_pool *pool = mllm_pool_new(3);
    assert_non_null(pool);
    assert_int_equal(mllm_mel_compute(pcm, n, 80, a), MLLM_OK);
    assert_int_equal(mllm_mel_compute_pool(pcm, n, 80, b, pool), MLLM_OK);
    assert_memory_equal(a, b, nout * sizeof(float));
    /* frame t sees samples [t * 160 - 200, t * 160 + 200): from t = 152 on,
       zeros only; an FFT of zeros gives power 0, so log10(1e-10) = -10
       before the clamp to max - 8 and (v + 4) / 4 */
    float max = -INFINITY;
    for (size_t i = 0; i < nout; i++) max = a[i] > max ? a[i] : max;
    const float lo_scaled = (float)(max * 4.0f - 4.0f - 8.0f); /* max_log - 8, in the output's units */
    const float lo = lo_scaled > -10.0f ? lo_scaled : -10.0f;
    const float want = (lo + 4.0f) / 4.0f;
    for (int m = 0; m < 80; m++)
        for (int t = 160; t < MLLM_MEL_N_FRAMES; t++) assert_true(fabsf(a[(size_t)m * MLLM_MEL_N_FRAMES + t] - want) < 1e-5f);
    /* a whole window of audio (no frame skipped), pooled and not */
    float *full = malloc((size_t)MLLM_MEL_CHUNK_SAMPLES * sizeof(float));
    tu_fill_random(full, MLLM_MEL_CHUNK_SAMPLES, 19);
    assert_int_equal(mllm_mel_compute(full, MLLM_MEL_CHUNK_SAMPLES, 80, a), MLLM_OK);
    assert_int_equal(mllm_mel_compute_pool(full, MLLM_MEL_CHUNK_SAMPLES, 80, b, pool), MLLM_OK);
    assert_memory_equal(a, b, nout * sizeof(float));
    mllm_pool_free(pool);
    free(pcm), free(a), free(b), free(full);
}

int main(void) {
    mllm_cpu_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm_rows),
        cmocka_unit_test(test_mel_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
