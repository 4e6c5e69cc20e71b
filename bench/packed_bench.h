/* What bench_packed_tiles.c and bench_kquant_tiles.c share: thread CPU
   time, a median's sort, and one packed matrix with its quantized
   activations (activations quantized once, outside any timing). */
#ifndef MLLM_BENCH_PACKED_BENCH_H
#define MLLM_BENCH_PACKED_BENCH_H
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/repack.h"
#include "backends/cpu.h"
#include "core/alloc.h"
#include "core/dtype.h"

/* CPU time of this thread: the machine may be shared, wall time is noisy. */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    mllm_dtype t, vt;  /* the packed type and its activations' */
    int64_t rows, K;
    size_t ws, xs;     /* bytes per weight row, per activation row */
    char *W, *P, *X;   /* plain and packed weights, Mmax activation rows */
    float *src, *Y;
} packed_bench;

/* rows x K of dtype plain, packed, and Mmax activation rows; 0, or 2 with
   a message when the shape has no packed layout. */
static int packed_bench_setup(packed_bench *b, mllm_dtype plain, int64_t rows, int64_t K, int64_t Mmax) {
    const int pt = mllm_repack_type_for(plain, K, rows);
    if (pt < 0) {
        fprintf(stderr, "no packed layout for that shape\n");
        return 2;
    }
    b->t = (mllm_dtype)pt, b->vt = mllm_dtype_get(b->t)->vec_dot_type, b->rows = rows, b->K = K;
    b->ws = mllm_dtype_row_size(plain, K), b->xs = mllm_dtype_row_size(b->vt, K);
    b->W = mllm_malloc_aligned(b->ws * (size_t)rows), b->P = mllm_malloc_aligned(b->ws * (size_t)rows);
    b->X = mllm_malloc_aligned(b->xs * (size_t)Mmax + 64);
    b->src = mllm_malloc(sizeof(float) * (size_t)(K * Mmax)), b->Y = mllm_malloc(sizeof(float) * (size_t)(rows * Mmax));
    for (int64_t i = 0; i < K * Mmax; i++) b->src[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    for (int64_t r = 0; r < rows; r++) { /* rows differ a little */
        b->src[r % K] += 0.01f;
        mllm_cpu_type_get(plain)->from_float(b->src, b->W + (size_t)r * b->ws, K);
    }
    mllm_repack_groups(b->t, b->W, b->P, K, 0, rows / 8);
    for (int64_t m = 0; m < Mmax; m++) mllm_cpu_quantize_row(b->vt, b->src + m * K, b->X + (size_t)m * b->xs, K);
    return 0;
}

static void packed_bench_free(packed_bench *b) {
    mllm_free_aligned(b->W), mllm_free_aligned(b->P), mllm_free_aligned(b->X);
    mllm_free(b->src), mllm_free(b->Y);
}

/* The median over n samples (n <= 16) of the seconds one run(b, M, arg)
   takes, each sample >= 20 ms of thread CPU time (runs doubled until). */
static double packed_bench_median(int n, void (*run)(const packed_bench *, int64_t, int), const packed_bench *b,
                                  int64_t M, int arg) {
    double s[16];
    int reps = 1;
    if (n > 16) n = 16;
    for (int i = 0; i < n; i++) {
        double d;
        for (;;) {
            const double t0 = now_s();
            for (int r = 0; r < reps; r++) run(b, M, arg);
            d = now_s() - t0;
            if (d >= 0.02) break;
            reps *= 2;
        }
        s[i] = d / reps;
    }
    qsort(s, (size_t)n, sizeof s[0], cmp_d);
    return s[n / 2];
}

/* The largest M of argv[first..argc). */
static int64_t packed_bench_mmax(int argc, char **argv, int first) {
    int64_t Mmax = 1;
    for (int a = first; a < argc; a++)
        if (atoll(argv[a]) > Mmax) Mmax = atoll(argv[a]);
    return Mmax;
}
#endif
