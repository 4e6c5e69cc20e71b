/* mul_mat speed per weight dtype, one thread: decode (M = 1, memory-bound:
   GB/s of weights streamed) and prefill (M = 64, compute-bound: GFLOP/s).
   Not part of ctest. Build against the static library, e.g.:
     cc -O2 -std=c17 -Iinclude -Isrc bench/bench_kernels.c build/<dir>/libmllm.a \
        -lpcre2-8 -lcjson -lutf8proc -lmicrohttpd -lsndfile -lsamplerate -lz -lpthread -lm -o bench_kernels
   Usage: bench_kernels [rows K [M...]]   (MLLM_CPU=generic|avx2|avx512 picks
   the path). With M values (at most 64 each), the packed layouts and f16 /
   bf16 (which are not packed), one column of GFLOP/s per M: the small
   batches of a server's decode step. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void fill(float *x, size_t n, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
}

/* Seconds per call, the best of repeated samples over at least min_s; the
   activation row conversion is timed with the matmul (part of every call).
   A sample is enough calls to take 1 ms or more: the thread CPU clock is
   too coarse for one small call (a few microseconds). */
static double time_call(mllm_dtype t, const void *W, size_t ws, int64_t K, const float *src, void *X, size_t xs,
                        int64_t M, float *Y, int64_t rows, double min_s) {
    const mllm_dtype vt = mllm_dtype_get(t)->vec_dot_type;
    const double start = now_s();
    double best = 1e30, t1;
    int reps = 1;
    do {
        const double t0 = now_s();
        for (int r = 0; r < reps; r++) {
            if (vt != MLLM_DTYPE_F32)
                for (int64_t m = 0; m < M; m++) mllm_cpu_quantize_row(vt, src + m * K, (char *)X + (size_t)m * xs, K);
            mllm_cpu_mul_mat(t, W, ws, K, vt == MLLM_DTYPE_F32 ? (const void *)src : X,
                             vt == MLLM_DTYPE_F32 ? (size_t)K * 4 : xs, M, Y, (size_t)rows, 0, rows);
        }
        t1 = now_s();
        if (t1 - t0 < 1e-3) {
            reps *= 2;
            continue;
        }
        if ((t1 - t0) / reps < best) best = (t1 - t0) / reps;
    } while (t1 - start < min_s || best == 1e30);
    return best;
}

int main(int argc, char **argv) {
    const int64_t rows = argc > 2 ? atoll(argv[1]) : 4096, K = argc > 2 ? atoll(argv[2]) : 4096;
    const int64_t M_prefill = 64;
    static const mllm_dtype types[] = {MLLM_DTYPE_Q4_0, MLLM_DTYPE_Q4_1, MLLM_DTYPE_Q5_0, MLLM_DTYPE_Q8_0,
                                       MLLM_DTYPE_Q4_K, MLLM_DTYPE_Q5_K, MLLM_DTYPE_Q6_K, MLLM_DTYPE_F16,
                                       MLLM_DTYPE_BF16, MLLM_DTYPE_F32};
    mllm_cpu_init();
    int64_t Ms[16];
    int n_ms = 0;
    for (int a = 3; a < argc && n_ms < 16; a++) {
        const int64_t m = atoll(argv[a]);
        if (m >= 1 && m <= M_prefill) Ms[n_ms++] = m;
    }
    printf("path %s, W %lld x %lld, 1 thread, best-of thread CPU time (activation conversion included)\n",
           mllm_cpu_path(), (long long)rows, (long long)K);
    if (n_ms) {
        printf("%-9s %-7s", "dtype", "act");
        for (int i = 0; i < n_ms; i++) printf("  M=%-2lld GFLOP/s", (long long)Ms[i]);
        printf("\n");
    } else {
        printf("%-9s %-7s %12s %12s %18s\n", "dtype", "act", "decode GB/s", "decode ms", "prefill64 GFLOP/s");
    }
    float *src = mllm_malloc((size_t)(K > M_prefill ? K : M_prefill) * (size_t)K * sizeof(float));
    float *Y = mllm_malloc((size_t)(rows * M_prefill) * sizeof(float));
    /* the plain types, then the packed x8 layouts the models run (repacked
       here from the plain matrix; rows must be a multiple of 8) */
    for (size_t ti = 0; ti < 2 * sizeof types / sizeof types[0]; ti++) {
        const bool packed = ti >= sizeof types / sizeof types[0];
        const mllm_dtype plain = types[ti % (sizeof types / sizeof types[0])];
        const int pt = packed ? mllm_repack_type_for(plain, K, rows) : (int)plain;
        /* (with M values: f16 / bf16, never packed, run plain) */
        const bool half = plain == MLLM_DTYPE_F16 || plain == MLLM_DTYPE_BF16;
        if (pt < 0 || mllm_dtype_row_size(plain, K) == 0 || (n_ms && !packed && !half) || (n_ms && packed && half))
            continue;
        const mllm_dtype t = (mllm_dtype)pt;
        const mllm_dtype_traits *tr = mllm_dtype_get(t);
        const size_t ws = mllm_dtype_row_size(plain, K), xs = mllm_dtype_row_size(tr->vec_dot_type, K);
        char *W = mllm_malloc_aligned(ws * (size_t)rows), *X = mllm_malloc_aligned(xs * (size_t)M_prefill + 64);
        fill(src, (size_t)K, 1);
        for (int64_t r = 0; r < rows; r++) {
            src[r % K] += 0.5f; /* rows differ a little; quantizing every row is slow enough */
            mllm_cpu_type_get(plain)->from_float(src, W + (size_t)r * ws, K);
        }
        if (packed) {
            char *P = mllm_malloc_aligned(ws * (size_t)rows);
            mllm_repack_groups(t, W, P, K, 0, rows / 8);
            mllm_free_aligned(W);
            W = P;
        }
        fill(src, (size_t)(M_prefill * K), 2);
        if (n_ms) {
            printf("%-9s %-7s", tr->name, mllm_dtype_name(tr->vec_dot_type));
            for (int i = 0; i < n_ms; i++) {
                const double tm = time_call(t, W, ws, K, src, X, xs, Ms[i], Y, rows, 0.5);
                printf("  %14.2f", 2.0 * (double)rows * (double)K * (double)Ms[i] / tm / 1e9);
            }
            printf("\n");
            mllm_free_aligned(W), mllm_free_aligned(X);
            continue;
        }
        const double td = time_call(t, W, ws, K, src, X, xs, 1, Y, rows, 0.5);
        const double tp = time_call(t, W, ws, K, src, X, xs, M_prefill, Y, rows, 1.0);
        printf("%-9s %-7s %12.2f %12.3f %18.2f\n", tr->name, mllm_dtype_name(tr->vec_dot_type),
               (double)(ws * (size_t)rows) / td / 1e9, td * 1e3,
               2.0 * (double)rows * (double)K * (double)M_prefill / tp / 1e9);
        mllm_free_aligned(W), mllm_free_aligned(X);
    }
    mllm_free(src), mllm_free(Y);
    return 0;
}
