/* One packed matmul (q4_0x8, q4_1x8, q5_0x8 or q8_0x8) over a whole matrix, one
   thread, for a few activation counts M: the tiles alone (activations are
   quantized once, outside the timing), as ns per call and GMAC/s. For
   comparing two builds of the tiles: link this file against each build's
   libmllm.a and run the binaries alternately. Not part of ctest. E.g.:
     cc -O2 -std=c17 -Iinclude -Isrc bench/bench_packed_tiles.c build/<dir>/libmllm.a \
        -lpcre2-8 -lcjson -lutf8proc -lmicrohttpd -lsndfile -lsamplerate -lz -lpthread -lm -o bench_packed_tiles
   Usage: bench_packed_tiles q4_1|q4_0|q5_0|q8_0 rows K M...   (MLLM_CPU picks the path)
   Each M: the median over 9 samples of >= 20 ms each of thread CPU time. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/repack.h"
#include "backends/cpu/type_kernels.h"
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

#define SAMPLES 9

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s q4_1|q4_0|q5_0|q8_0 rows K M...\n", argv[0]);
        return 2;
    }
    mllm_cpu_init();
    const mllm_dtype plain = !strcmp(argv[1], "q4_0")   ? MLLM_DTYPE_Q4_0
                             : !strcmp(argv[1], "q5_0") ? MLLM_DTYPE_Q5_0
                             : !strcmp(argv[1], "q8_0") ? MLLM_DTYPE_Q8_0
                                                        : MLLM_DTYPE_Q4_1;
    const int64_t rows = atoll(argv[2]), K = atoll(argv[3]);
    const int pt = mllm_repack_type_for(plain, K, rows);
    if (pt < 0) {
        fprintf(stderr, "no packed layout for that shape\n");
        return 2;
    }
    const mllm_dtype t = (mllm_dtype)pt, vt = mllm_dtype_get(t)->vec_dot_type;
    int64_t Mmax = 1;
    for (int a = 4; a < argc; a++)
        if (atoll(argv[a]) > Mmax) Mmax = atoll(argv[a]);
    const size_t ws = mllm_dtype_row_size(plain, K), xs = mllm_dtype_row_size(vt, K);
    char *W = mllm_malloc_aligned(ws * (size_t)rows), *P = mllm_malloc_aligned(ws * (size_t)rows);
    char *X = mllm_malloc_aligned(xs * (size_t)Mmax + 64);
    float *src = mllm_malloc(sizeof(float) * (size_t)(K * Mmax)), *Y = mllm_malloc(sizeof(float) * (size_t)(rows * Mmax));
    for (int64_t i = 0; i < K * Mmax; i++) src[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    for (int64_t r = 0; r < rows; r++) { /* rows differ a little */
        src[r % K] += 0.01f;
        mllm_cpu_type_get(plain)->from_float(src, W + (size_t)r * ws, K);
    }
    mllm_repack_groups(t, W, P, K, 0, rows / 8);
    for (int64_t m = 0; m < Mmax; m++) mllm_cpu_quantize_row(vt, src + m * K, X + (size_t)m * xs, K);
    printf("path %s, %s %lld x %lld, 1 thread:", mllm_cpu_path(), mllm_dtype_name(t), (long long)rows, (long long)K);
    for (int a = 4; a < argc; a++) {
        const int64_t M = atoll(argv[a]);
        if (M < 1) continue;
        double s[SAMPLES];
        int reps = 1;
        for (int i = 0; i < SAMPLES; i++) {
            double d;
            for (;;) {
                const double t0 = now_s();
                for (int r = 0; r < reps; r++) mllm_cpu_mul_mat(t, P, ws, K, X, xs, M, Y, (size_t)rows, 0, rows);
                d = now_s() - t0;
                if (d >= 0.02) break;
                reps *= 2;
            }
            s[i] = d / reps;
        }
        qsort(s, SAMPLES, sizeof s[0], cmp_d);
        const double med = s[SAMPLES / 2];
        printf("  M=%lld %.0f ns %.2f GMAC/s", (long long)M, med * 1e9, (double)(rows * K * M) / med / 1e9);
        fflush(stdout);
    }
    printf("\n");
    mllm_free_aligned(W), mllm_free_aligned(P), mllm_free_aligned(X);
    mllm_free(src), mllm_free(Y);
    return 0;
}
