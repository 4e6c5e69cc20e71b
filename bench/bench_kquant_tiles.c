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
   KQ_TILE_W=n (1..8, default 4) in the environment: the new tiles run in
   tiles of up to n activation rows (mllm_mul_mat_packed_tiles_n). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/repack.h"
#include "backends/cpu/type_kernels.h"
#include "backends/cpu/x86/repack_kquant_avx2.h"
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

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s q4_K|q5_K|q6_K rows K M...\n", argv[0]);
        return 2;
    }
    mllm_cpu_init();
    const mllm_dtype plain = !strcmp(argv[1], "q6_K")   ? MLLM_DTYPE_Q6_K
                             : !strcmp(argv[1], "q5_K") ? MLLM_DTYPE_Q5_K
                                                        : MLLM_DTYPE_Q4_K;
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
#ifdef KQ_AB_OLD
        ab(t, P, ws, K, X, xs, M, Y, rows);
        continue;
#endif
        double s[SAMPLES];
        int reps = 1;
        for (int i = 0; i < SAMPLES; i++) {
            double d;
            for (;;) {
                const double t0 = now_s();
                for (int r = 0; r < reps; r++)
                    if (tile_w() == MLLM_PACKED_TILE_N)
                        mllm_cpu_mul_mat(t, P, ws, K, X, xs, M, Y, (size_t)rows, 0, rows);
                    else
                        mllm_mul_mat_packed_tiles_n(mllm_kquant_x8_tiles8_avx2(t), tile_w(), t, P, ws, K, X, xs, M, Y,
                                                    (size_t)rows, 0, rows);
                d = now_s() - t0;
                if (d >= 0.02) break;
                reps *= 2;
            }
            s[i] = d / reps;
        }
        qsort(s, SAMPLES, sizeof s[0], cmp_d);
        const double med = s[SAMPLES / 2];
        printf("  M=%lld %.0f us %.1f GB/s", (long long)M, med * 1e6, (double)(ws * (size_t)rows) / med / 1e9);
        fflush(stdout);
    }
    printf("\n");
    mllm_free_aligned(W), mllm_free_aligned(P), mllm_free_aligned(X);
    mllm_free(src), mllm_free(Y);
    return 0;
}
