/* One packed matmul (q4_0x8, q4_1x8, q5_0x8, q8_0x8 or a k-quant x8 layout) over a whole matrix, one
   thread, for a few activation counts M: the tiles alone (activations are
   quantized once, outside the timing), as ns per call and GMAC/s. For
   comparing two builds of the tiles: link this file against each build's
   libmllm.a and run the binaries alternately. Not part of ctest. E.g.:
     cc -O2 -std=c17 -Iinclude -Isrc bench/bench_packed_tiles.c build/<dir>/libmllm.a \
        -lpcre2-8 -lcjson -lutf8proc -lmicrohttpd -lsndfile -lsamplerate -lz -lpthread -lm -o bench_packed_tiles
   Usage: bench_packed_tiles q4_1|q4_0|q5_0|q8_0|q4_k|q5_k|q6_k rows K M...   (MLLM_CPU picks the path)
   Each M: the median over 9 samples of >= 20 ms each of thread CPU time. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <string.h>

#include "packed_bench.h"

#define SAMPLES 9

static void run_matmul(const packed_bench *b, int64_t M, int unused) {
    (void)unused;
    mllm_cpu_mul_mat(b->t, b->P, b->ws, b->K, b->X, b->xs, M, b->Y, (size_t)b->rows, 0, b->rows);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s q4_1|q4_0|q5_0|q8_0|q4_k|q5_k|q6_k rows K M...\n", argv[0]);
        return 2;
    }
    mllm_cpu_init();
    const mllm_dtype plain = !strcmp(argv[1], "q4_0")   ? MLLM_DTYPE_Q4_0
                             : !strcmp(argv[1], "q5_0") ? MLLM_DTYPE_Q5_0
                             : !strcmp(argv[1], "q8_0") ? MLLM_DTYPE_Q8_0
                             : !strcmp(argv[1], "q4_k") ? MLLM_DTYPE_Q4_K
                             : !strcmp(argv[1], "q5_k") ? MLLM_DTYPE_Q5_K
                             : !strcmp(argv[1], "q6_k") ? MLLM_DTYPE_Q6_K
                                                        : MLLM_DTYPE_Q4_1;
    packed_bench b;
    if (packed_bench_setup(&b, plain, atoll(argv[2]), atoll(argv[3]), packed_bench_mmax(argc, argv, 4))) return 2;
    const mllm_dtype t = b.t;
    const int64_t rows = b.rows, K = b.K;
    printf("path %s, %s %lld x %lld, 1 thread:", mllm_cpu_path(), mllm_dtype_name(t), (long long)rows, (long long)K);
    for (int a = 4; a < argc; a++) {
        const int64_t M = atoll(argv[a]);
        if (M < 1) continue;
        const double med = packed_bench_median(SAMPLES, run_matmul, &b, M, 0);
        printf("  M=%lld %.0f ns %.2f GMAC/s", (long long)M, med * 1e9, (double)(rows * K * M) / med / 1e9);
        fflush(stdout);
    }
    printf("\n");
    packed_bench_free(&b);
    return 0;
}
