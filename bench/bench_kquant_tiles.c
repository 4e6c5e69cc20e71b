/* One k-quant packed matmul (q4_Kx8, q5_Kx8 or q6_Kx8 against q8_K32) over a
   whole matrix, one thread, for a few activation counts M: the tiles alone
   (activations are quantized once, outside the timing), as ns per call and
   GB/s of weights read. For comparing two builds of the tiles: link this
   file against each build's libmllm.a and run the binaries alternately. Not
   part of ctest. E.g.:
     cc -O2 -std=c17 -Iinclude -Isrc bench/bench_kquant_tiles.c build/<dir>/libmllm.a \
        -lpcre2-8 -lcjson -lutf8proc -lmicrohttpd -lsndfile -lsamplerate -lz -lpthread -lm -o bench_kquant_tiles
   Usage: bench_kquant_tiles q4_K|q5_K|q6_K rows K M...   (MLLM_CPU picks the path)
   Qwen2.5-1.5B's shapes: q4_K 8960 1536 (ffn_up / gate), q6_K 1536 8960
   (ffn_down), q6_K 151936 1536 (the output matrix).
   Each M: the median over 7 samples of >= 20 ms each of thread CPU time.
   A/B in one process (less noise on a shared machine): build with
   -DKQ_AB_OLD and link a second copy of repack_kquant_avx2.c compiled with
   -Dmllm_kquant_x8_tiles_avx2=kq_old_tiles (e.g. from git show REV:path);
   then each sample times old and new calls alternately (ABAB...), and the
   line gives both medians and the median of the per-sample ratios new/old.
   KQ_TILE_W=n (1..8) in the environment, n != 4: the tiles run in tiles of
   up to n activation rows (mllm_mul_mat_packed_tiles_n); unset or 4: the
   library's matmul as it runs (repack_avx2.c's KQ_TILE_W). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <string.h>

#include "packed_bench.h"
#include "backends/cpu/x86/repack_kquant_avx2.h"

#define SAMPLES 7

static int tile_w(void) {
    const char *e = getenv("KQ_TILE_W");
    const int w = e ? atoi(e) : MLLM_PACKED_TILE_N;
    return w >= 1 && w <= 8 ? w : MLLM_PACKED_TILE_N;
}

#ifdef KQ_AB_OLD
const mllm_packed_group_fn *kq_old_tiles(mllm_dtype t);
#define AB_SAMPLES 15
/* ns per call of the old and the new tiles, alternated call by call. */
static void ab(mllm_dtype t, const char *P, size_t ws, int64_t K, const char *X, size_t xs, int64_t M, float *Y,
               int64_t rows) {
    const mllm_packed_group_fn *set[2] = {kq_old_tiles(t), mllm_kquant_x8_tiles8_avx2(t)};
    const int width[2] = {MLLM_PACKED_TILE_N, tile_w()};
    double s[2][AB_SAMPLES], q[AB_SAMPLES];
    int reps = 1;
    for (int i = 0; i < AB_SAMPLES; i++) {
        for (;;) {
            double d[2] = {0, 0};
            for (int r = 0; r < reps; r++)
                for (int k = 0; k < 2; k++) {
                    const double t0 = now_s();
                    mllm_mul_mat_packed_tiles_n(set[k], width[k], t, P, ws, K, X, xs, M, Y, (size_t)rows, 0, rows);
                    d[k] += now_s() - t0;
                }
            if (d[0] + d[1] >= 0.04) {
                s[0][i] = d[0] / reps, s[1][i] = d[1] / reps, q[i] = d[1] / d[0];
                break;
            }
            reps *= 2;
        }
    }
    qsort(s[0], AB_SAMPLES, sizeof(double), cmp_d), qsort(s[1], AB_SAMPLES, sizeof(double), cmp_d);
    qsort(q, AB_SAMPLES, sizeof(double), cmp_d);
    printf("  M=%lld old %.0f new %.0f us (new/old %.3f)", (long long)M, s[0][AB_SAMPLES / 2] * 1e6,
           s[1][AB_SAMPLES / 2] * 1e6, q[AB_SAMPLES / 2]);
    fflush(stdout);
}
#endif

/* The library's matmul (its own tile width: 5 on GCC, 4 on clang) or,
   with KQ_TILE_W set to another width than 4, the sets of 8 at it. */
static void run_tiles(const packed_bench *b, int64_t M, int width) {
    if (width == MLLM_PACKED_TILE_N)
        mllm_cpu_mul_mat(b->t, b->P, b->ws, b->K, b->X, b->xs, M, b->Y, (size_t)b->rows, 0, b->rows);
    else
        mllm_mul_mat_packed_tiles_n(mllm_kquant_x8_tiles8_avx2(b->t), width, b->t, b->P, b->ws, b->K, b->X, b->xs,
                                    M, b->Y, (size_t)b->rows, 0, b->rows);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s q4_K|q5_K|q6_K rows K M...\n", argv[0]);
        return 2;
    }
    mllm_cpu_init();
    const mllm_dtype plain = !strcmp(argv[1], "q6_K")   ? MLLM_DTYPE_Q6_K
                             : !strcmp(argv[1], "q5_K") ? MLLM_DTYPE_Q5_K
                                                        : MLLM_DTYPE_Q4_K;
    packed_bench b;
    if (packed_bench_setup(&b, plain, atoll(argv[2]), atoll(argv[3]), packed_bench_mmax(argc, argv, 4))) return 2;
    const mllm_dtype t = b.t;
    const int64_t rows = b.rows, K = b.K;
    printf("path %s, %s %lld x %lld, 1 thread:", mllm_cpu_path(), mllm_dtype_name(t), (long long)rows, (long long)K);
    for (int a = 4; a < argc; a++) {
        const int64_t M = atoll(argv[a]);
        if (M < 1) continue;
#ifdef KQ_AB_OLD
        ab(t, b.P, b.ws, K, b.X, b.xs, M, b.Y, rows);
        continue;
#endif
        const double med = packed_bench_median(SAMPLES, run_tiles, &b, M, tile_w());
        printf("  M=%lld %.0f us %.1f GB/s", (long long)M, med * 1e6, (double)(b.ws * (size_t)rows) / med / 1e9);
        fflush(stdout);
    }
    printf("\n");
    packed_bench_free(&b);
    return 0;
}
