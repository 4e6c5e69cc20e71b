/* Packed q4_1x8 matmul over small row slices taken in a shuffled order, one
   thread: what a batched server step does (each of its threads runs 96-768
   rows of a matrix, then moves to another matrix), unlike bench_kernels'
   single call over one matrix, where the hardware prefetcher sees one long
   stream. The 65536 x 576 matrix (21 MB) does not fit in L2. Not part of
   ctest. Build against the static library, e.g.:
     cc -O2 -std=c17 -Iinclude -Isrc bench/bench_packed_slices.c build/<dir>/libmllm.a \
        -lpcre2-8 -lcjson -lutf8proc -lmicrohttpd -lsndfile -lsamplerate -lz -lpthread -lm -o bench_packed_slices
   Usage: bench_packed_slices [M [slice_rows]]   (defaults 8 and 288; MLLM_CPU picks the path) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
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

int main(int argc, char **argv) {
    mllm_cpu_init();
    const int64_t K = 576, rows = 65536;
    const int64_t M = argc > 1 ? atoll(argv[1]) : 8, slice = argc > 2 ? atoll(argv[2]) : 288;
    if (M < 1 || slice < 8 || slice % 8 != 0 || slice > rows) {
        fprintf(stderr, "M >= 1; slice_rows a multiple of 8, at most %lld\n", (long long)rows);
        return 2;
    }
    const mllm_dtype plain = MLLM_DTYPE_Q4_1, t = (mllm_dtype)mllm_repack_type_for(plain, K, rows);
    const mllm_dtype vt = mllm_dtype_get(t)->vec_dot_type;
    const size_t ws = mllm_dtype_row_size(plain, K), xs = mllm_dtype_row_size(vt, K);
    char *W = mllm_malloc_aligned(ws * (size_t)rows), *P = mllm_malloc_aligned(ws * (size_t)rows);
    char *X = mllm_malloc_aligned(xs * (size_t)M);
    float *src = mllm_malloc(sizeof(float) * (size_t)(K * M)), *Y = mllm_malloc(sizeof(float) * (size_t)(rows * M));
    for (int64_t i = 0; i < K * M; i++) src[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    for (int64_t r = 0; r < rows; r++) { /* rows differ a little */
        src[r % K] += 0.01f;
        mllm_cpu_type_get(plain)->from_float(src, W + (size_t)r * ws, K);
    }
    mllm_repack_groups(t, W, P, K, 0, rows / 8);
    for (int64_t m = 0; m < M; m++) mllm_cpu_quantize_row(vt, src + m * K, X + (size_t)m * xs, K);
    /* slices in a fixed shuffled order (xorshift), so no stream runs on; the
       rows past the last whole slice are left out */
    const int64_t ns = rows / slice;
    int64_t *order = mllm_malloc(sizeof(int64_t) * (size_t)ns);
    for (int64_t i = 0; i < ns; i++) order[i] = i;
    uint64_t s = 88172645463325252ull;
    for (int64_t i = ns - 1; i > 0; i--) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        const int64_t j = (int64_t)(s % (uint64_t)(i + 1)), v = order[i];
        order[i] = order[j], order[j] = v;
    }
    double best = 1e30;
    for (int rep = 0; rep < 15; rep++) {
        const double t0 = now_s();
        for (int64_t i = 0; i < ns; i++)
            mllm_cpu_mul_mat(t, P, ws, K, X, xs, M, Y, (size_t)rows, order[i] * slice, (order[i] + 1) * slice);
        const double d = now_s() - t0;
        if (d < best) best = d;
    }
    printf("path %s, q4_1x8 %lld x %lld, M=%lld, %lld-row slices shuffled: %.1f GFLOP/s\n", mllm_cpu_path(),
           (long long)rows, (long long)K, (long long)M, (long long)slice, 2.0 * (double)(ns * slice * K * M) / best / 1e9);
    mllm_free_aligned(W), mllm_free_aligned(P), mllm_free_aligned(X);
    mllm_free(src), mllm_free(Y), mllm_free(order);
    return 0;
}
