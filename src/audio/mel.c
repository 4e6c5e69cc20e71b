/* Whisper log-mel: reflect-padded frames, a 400-point mixed-radix FFT (two
   real frames per complex transform), a sparse Slaney filterbank, log10 and
   Whisper's clamp and scale. Double precision inside, f32 out. Pairs of
   frames are shared out over a thread pool (each frame's values do not
   depend on who computes it, and the max is exact in any order), and a pair
   whose samples are all zero (the padding of a window shorter than 30 s:
   two thirds of jfk.wav's) skips its FFT, whose output would be exactly
   zero. */
#include "audio/mel.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/threadpool.h"
#include <math.h>
#include <stdbool.h>
#include <string.h>

#define MEL_PI 3.14159265358979323846
#define MEL_PAD (MLLM_MEL_N_FFT / 2)
/* Whisper's floor before log10, and the dynamic range kept below the max. */
#define MEL_FLOOR 1e-10
#define MEL_RANGE 8.0

typedef struct {
    double re, im;
} cpx;

/* 400 = 4 x 4 x 5 x 5: each stage is a naive p-point DFT over p sub-FFTs,
   n x p complex multiply-adds per stage. Not the fastest FFT there is, but
   3000 frames take a few tens of milliseconds (README: measured). */
static const int k_factors[] = {4, 4, 5, 5, 1};

typedef struct {
    cpx tw[MLLM_MEL_N_FFT]; /* e^(-2 pi i k / N) */
    double window[MLLM_MEL_N_FFT];
} fft_plan;

static void plan_init(fft_plan *p) {
    for (int k = 0; k < MLLM_MEL_N_FFT; k++) {
        double a = -2.0 * MEL_PI * k / MLLM_MEL_N_FFT;
        p->tw[k] = (cpx){cos(a), sin(a)};
        /* Periodic Hann (torch.hann_window / window_function default). */
        p->window[k] = 0.5 - 0.5 * cos(2.0 * MEL_PI * k / MLLM_MEL_N_FFT);
    }
}

/* out[0..n) = DFT of in[0], in[stride], ... (n points), decimation in time. */
static void fft_rec(const fft_plan *p, const cpx *in, int stride, cpx *out, int n, const int *factors) {
    if (n == 1) {
        out[0] = in[0];
        return;
    }
    int r = factors[0], m = n / r;
    for (int q = 0; q < r; q++) fft_rec(p, in + q * stride, stride * r, out + q * m, m, factors + 1);
    int tw_step = MLLM_MEL_N_FFT / n;
    cpx t[5];
    for (int k = 0; k < m; k++) {
        for (int q = 0; q < r; q++) t[q] = out[q * m + k];
        for (int s = 0; s < r; s++) {
            int kk = k + s * m; /* output index */
            cpx acc = {0, 0};
            /* twiddle index q * kk mod n, stepped (a division per term
               was most of the FFT's time) */
            for (int q = 0, e = 0; q < r; q++, e = e + kk < n ? e + kk : e + kk - n) {
                cpx w = p->tw[e * tw_step];
                acc.re += t[q].re * w.re - t[q].im * w.im;
                acc.im += t[q].re * w.im + t[q].im * w.re;
            }
            out[kk] = acc;
        }
    }
}

/* ---- Slaney mel scale (librosa htk = False) ------------------------------ */
#define SLANEY_F_SP (200.0 / 3.0)
#define SLANEY_MIN_LOG_HZ 1000.0
#define SLANEY_MIN_LOG_MEL (SLANEY_MIN_LOG_HZ / SLANEY_F_SP) /* 15 */
#define SLANEY_LOGSTEP (log(6.4) / 27.0)

static double hz_to_mel(double f) {
    return f < SLANEY_MIN_LOG_HZ ? f / SLANEY_F_SP : SLANEY_MIN_LOG_MEL + log(f / SLANEY_MIN_LOG_HZ) / SLANEY_LOGSTEP;
}

static double mel_to_hz(double m) {
    return m < SLANEY_MIN_LOG_MEL ? m * SLANEY_F_SP : SLANEY_MIN_LOG_HZ * exp(SLANEY_LOGSTEP * (m - SLANEY_MIN_LOG_MEL));
}

static bool mels_ok(int n_mels) { return n_mels == 80 || n_mels == MLLM_MEL_MAX_MELS; }

mllm_status mllm_mel_filters(int n_mels, float *filters) {
    if (!mels_ok(n_mels)) return mllm_err(MLLM_ERR_INVALID_ARG, "mel filters: %d bins (80 or 128)", n_mels);
    if (!filters) return mllm_err(MLLM_ERR_INVALID_ARG, "mel filters: NULL output");
    double hz[MLLM_MEL_MAX_MELS + 2];
    double top = hz_to_mel(MLLM_MEL_SAMPLE_RATE / 2.0);
    for (int i = 0; i < n_mels + 2; i++) hz[i] = mel_to_hz(top * i / (n_mels + 1));
    for (int m = 0; m < n_mels; m++) {
        double enorm = 2.0 / (hz[m + 2] - hz[m]);
        for (int k = 0; k < MLLM_MEL_N_BINS; k++) {
            double f = (double)k * MLLM_MEL_SAMPLE_RATE / MLLM_MEL_N_FFT;
            double down = (f - hz[m]) / (hz[m + 1] - hz[m]);
            double up = (hz[m + 2] - f) / (hz[m + 2] - hz[m + 1]);
            double w = fmin(down, up);
            filters[m * MLLM_MEL_N_BINS + k] = (float)(w > 0 ? w * enorm : 0);
        }
    }
    return MLLM_OK;
}

typedef struct {
    int lo, hi;                   /* non-zero bins [lo, hi) */
    double w[MLLM_MEL_N_BINS];
} mel_row;

/* Frame pairs per job chunk: 3000 frames in 30 chunks. */
#define MEL_CHUNK_FRAMES 100
#define MEL_N_CHUNKS ((MLLM_MEL_N_FRAMES + MEL_CHUNK_FRAMES - 1) / MEL_CHUNK_FRAMES)
_Static_assert(MEL_CHUNK_FRAMES % 2 == 0, "frames go in pairs");

typedef struct {
    const float *x;
    const fft_plan *plan;
    const mel_row *rows;
    int n_mels;
    float *out;
    int next;                       /* the next chunk to take */
    double chunk_max[MEL_N_CHUNKS]; /* each chunk's largest log10 */
} mel_job;

static bool all_zero(const float *a, int n) {
    for (int i = 0; i < n; i++)
        if (a[i] != 0.0f) return false;
    return true;
}

/* Two real frames per complex FFT: z = a + i b, then
   A[k] = (Z[k] + conj Z[N-k]) / 2, B[k] = (Z[k] - conj Z[N-k]) / 2i. */
static void frames_fn(void *arg, int ith, int nth) {
    (void)ith;
    (void)nth;
    mel_job *j = arg;
    const fft_plan *plan = j->plan;
    cpx z[MLLM_MEL_N_FFT], Z[MLLM_MEL_N_FFT];
    double pw[2][MLLM_MEL_N_BINS];
    for (int c; (c = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < MEL_N_CHUNKS;) {
        double max_log = -INFINITY;
        const int t1 = (c + 1) * MEL_CHUNK_FRAMES < MLLM_MEL_N_FRAMES ? (c + 1) * MEL_CHUNK_FRAMES : MLLM_MEL_N_FRAMES;
        for (int t = c * MEL_CHUNK_FRAMES; t < t1; t += 2) {
            const float *a = j->x + (size_t)t * MLLM_MEL_HOP, *b = a + MLLM_MEL_HOP;
            if (all_zero(a, MLLM_MEL_HOP + MLLM_MEL_N_FFT)) { /* both frames: the FFT would give zeros */
                memset(pw, 0, sizeof pw);
            } else {
                for (int i = 0; i < MLLM_MEL_N_FFT; i++) z[i] = (cpx){a[i] * plan->window[i], b[i] * plan->window[i]};
                fft_rec(plan, z, 1, Z, MLLM_MEL_N_FFT, k_factors);
                for (int k = 0; k < MLLM_MEL_N_BINS; k++) {
                    cpx p = Z[k], q = Z[(MLLM_MEL_N_FFT - k) % MLLM_MEL_N_FFT];
                    double ar = 0.5 * (p.re + q.re), ai = 0.5 * (p.im - q.im);
                    double br = 0.5 * (p.im + q.im), bi = -0.5 * (p.re - q.re);
                    pw[0][k] = ar * ar + ai * ai;
                    pw[1][k] = br * br + bi * bi;
                }
            }
            for (int f = 0; f < 2; f++) {
                for (int m = 0; m < j->n_mels; m++) {
                    const mel_row *r = &j->rows[m];
                    double s = 0;
                    for (int k = r->lo; k < r->hi; k++) s += r->w[k] * pw[f][k];
                    double l = log10(s > MEL_FLOOR ? s : MEL_FLOOR);
                    if (l > max_log) max_log = l;
                    j->out[(size_t)m * MLLM_MEL_N_FRAMES + (size_t)(t + f)] = (float)l;
                }
            }
        }
        j->chunk_max[c] = max_log;
    }
}

mllm_status mllm_mel_compute(const float *samples, size_t n, int n_mels, float *out) {
    return mllm_mel_compute_pool(samples, n, n_mels, out, NULL);
}

mllm_status mllm_mel_compute_pool(const float *samples, size_t n, int n_mels, float *out, mllm_pool *pool) {
    if (!mels_ok(n_mels)) return mllm_err(MLLM_ERR_INVALID_ARG, "log-mel: %d bins (80 or 128)", n_mels);
    if (!out || (!samples && n)) return mllm_err(MLLM_ERR_INVALID_ARG, "log-mel: NULL argument");
    if (n > MLLM_MEL_CHUNK_SAMPLES) n = MLLM_MEL_CHUNK_SAMPLES;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(samples[i])) {
            return mllm_err(MLLM_ERR_FORMAT, "log-mel: sample %zu is %s", i, isnan(samples[i]) ? "NaN" : "infinite");
        }
    }
    /* x: the window of samples, zero-padded, reflect-padded by 200 each side:
       (MLLM_MEL_CHUNK_SAMPLES + MLLM_MEL_N_FFT) */
    const size_t len = MLLM_MEL_CHUNK_SAMPLES;
    float *x = mllm_calloc(len + 2 * MEL_PAD, sizeof *x);
    fft_plan *plan = mllm_malloc(sizeof *plan);
    mel_row *rows = mllm_malloc((size_t)n_mels * sizeof *rows);
    float *filters = mllm_malloc((size_t)n_mels * MLLM_MEL_N_BINS * sizeof *filters);
    if (!x || !plan || !rows || !filters) {
        mllm_free(x);
        mllm_free(plan);
        mllm_free(rows);
        mllm_free(filters);
        return mllm_err(MLLM_ERR_NOMEM, "log-mel: out of memory");
    }
    if (n) memcpy(x + MEL_PAD, samples, n * sizeof *x);
    for (int j = 1; j <= MEL_PAD; j++) {
        x[MEL_PAD - j] = x[MEL_PAD + j];
        x[MEL_PAD + len - 1 + j] = x[MEL_PAD + len - 1 - j];
    }
    plan_init(plan);
    mllm_mel_filters(n_mels, filters);
    for (int m = 0; m < n_mels; m++) {
        mel_row *r = &rows[m];
        r->lo = MLLM_MEL_N_BINS;
        r->hi = 0;
        for (int k = 0; k < MLLM_MEL_N_BINS; k++) {
            r->w[k] = filters[m * MLLM_MEL_N_BINS + k];
            if (r->w[k] != 0) {
                if (k < r->lo) r->lo = k;
                r->hi = k + 1;
            }
        }
    }
    mel_job j = {.x = x, .plan = plan, .rows = rows, .n_mels = n_mels, .out = out};
    if (pool && mllm_pool_size(pool) > 1) mllm_pool_run_help(pool, frames_fn, &j);
    else frames_fn(&j, 0, 1);
    double max_log = -INFINITY;
    for (int c = 0; c < MEL_N_CHUNKS; c++) max_log = j.chunk_max[c] > max_log ? j.chunk_max[c] : max_log;
    float lo = (float)(max_log - MEL_RANGE);
    for (size_t i = 0; i < (size_t)n_mels * MLLM_MEL_N_FRAMES; i++) {
        float v = out[i] > lo ? out[i] : lo;
        out[i] = (v + 4.0f) / 4.0f;
    }
    mllm_free(x);
    mllm_free(plan);
    mllm_free(rows);
    mllm_free(filters);
    return MLLM_OK;
}
