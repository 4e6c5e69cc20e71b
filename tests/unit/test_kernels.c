/* vec_dot and mul_mat: every AVX2 kernel against the generic one, and both
   against a double-precision reference computed from dequantized values.
   Tolerances (normalised MSE over all outputs of a case):
     int-dot paths (q8_0, q4_0, q4_1, q5_0, q5_1): SIMD vs generic < 1e-10 (block sums are
       exact; only float summation order differs), vs double reference < 1e-10;
     float paths (f32, f16, bf16): SIMD vs generic < 1e-10, vs reference < 1e-10;
     except q4_1 / q5_1 vs reference < 1e-5: its min term uses q8_1's s = d*sum(q)
       stored as f16 (as in GGUF/ggml), not the dequantized activations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "core/dtype.h"
#include "testutil.h"

static const mllm_dtype k_weight_types[] = {MLLM_DTYPE_F32,  MLLM_DTYPE_F16,  MLLM_DTYPE_BF16, MLLM_DTYPE_Q8_0,
                                            MLLM_DTYPE_Q4_0, MLLM_DTYPE_Q4_1, MLLM_DTYPE_Q5_0, MLLM_DTYPE_Q5_1};

static bool is_int_path(mllm_dtype t) { return mllm_dtype_get(t)->quantized; }
static double simd_tol(mllm_dtype t) { (void)t; return 1e-10; }
static double ref_tol(mllm_dtype t) { return t == MLLM_DTYPE_Q4_1 || t == MLLM_DTYPE_Q5_1 ? 1e-5 : 1e-10; }

static bool have_avx2(void) {
    if (mllm_cpu_has_avx2()) return true;
    printf("SKIPPED: this CPU has no AVX2+FMA+F16C\n");
    return false;
}

/* A row of n random values in the dtype, plus its exact float image. */
static void *make_row(mllm_dtype t, const float *src, int64_t n, float *image) {
    const mllm_cpu_type *ktr = mllm_cpu_type_get(t);
    void *q = malloc(mllm_dtype_row_size(t, n) + 64);
    ktr->from_float(src, q, n);
    ktr->to_float(q, image, n);
    return q;
}

static double dot_double(const float *a, const float *b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)a[i] * (double)b[i];
    return s;
}

/* Lengths: whole blocks for quantized types (1, 3 and 127 blocks), and
   ragged lengths for the float types. */
static const int k_len_q[] = {32, 96, 4064};
static const int k_len_f[] = {1, 7, 32, 33, 96, 4064, 4065};

static void check_vec_dot_type(mllm_dtype t, bool simd) {
    const mllm_dtype_traits *tr = mllm_dtype_get(t);
    const mllm_dtype vt = tr->vec_dot_type;
    const bool q = tr->quantized;
    const int *lens = q ? k_len_q : k_len_f;
    const int nlens = q ? 3 : 7;
    enum { TRIALS = 24 };
    for (int li = 0; li < nlens; li++) {
        const int n = lens[li];
        float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
        float *ai = malloc(n * sizeof(float)), *bi = malloc(n * sizeof(float));
        float got_gen[TRIALS], got_simd[TRIALS], ref[TRIALS];
        for (int trial = 0; trial < TRIALS; trial++) {
            tu_fill_random(a, n, 1000 + trial * 7 + li);
            tu_fill_random(b, n, 5000 + trial * 13 + li);
            /* Uneven magnitudes so blocks get different scales. */
            for (int i = 0; i < n; i++) a[i] *= (float)(1 + (i / 32) % 5);
            void *x = make_row(t, a, n, ai);
            void *y = make_row(vt, b, n, bi);
            mllm_cpu_vec_dot_for(t, "generic")(n, &got_gen[trial], x, y);
            if (simd) mllm_cpu_vec_dot_for(t, "avx2")(n, &got_simd[trial], x, y);
            ref[trial] = (float)dot_double(ai, bi, n);
            free(x), free(y);
        }
        const double e_ref = tu_nmse(got_gen, ref, TRIALS);
        if (e_ref > ref_tol(t)) printf("%s n=%d generic vs reference nmse %.3g\n", tr->name, n, e_ref);
        assert_true(e_ref <= ref_tol(t));
        if (simd) {
            const double e = tu_nmse(got_simd, got_gen, TRIALS);
            if (e > simd_tol(t)) printf("%s n=%d avx2 vs generic nmse %.3g\n", tr->name, n, e);
            assert_true(e <= simd_tol(t));
        }
        free(a), free(b), free(ai), free(bi);
    }
}

static void test_vec_dot_generic(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof k_weight_types / sizeof k_weight_types[0]; i++)
        check_vec_dot_type(k_weight_types[i], false);
}

static void test_vec_dot_avx2(void **state) {
    (void)state;
    if (!have_avx2()) return;
    for (size_t i = 0; i < sizeof k_weight_types / sizeof k_weight_types[0]; i++)
        check_vec_dot_type(k_weight_types[i], true);
}

/* q4_1 x q8_1 by hand: x = ramp 0..31 (d = 31/15, m = 0), y = all ones
   (d = 1/127, every q = 127, s = 32). dot = sum(q4 * 127) * d_x * d_y + 0. */
static void test_vec_dot_known(void **state) {
    (void)state;
    float x[32], ones[32];
    for (int j = 0; j < 32; j++) x[j] = (float)j, ones[j] = 1.0f;
    mllm_block_q4_1 bx;
    mllm_block_q8_1 by;
    mllm_cpu_type_get(MLLM_DTYPE_Q4_1)->from_float(x, &bx, 32);
    mllm_cpu_type_get(MLLM_DTYPE_Q8_1)->from_float(ones, &by, 32);
    /* nibbles: 0,0,1,1,...,15,15 -> sum 240 */
    const float dx = mllm_f16_to_f32(0x4022), dy = mllm_f16_to_f32(by.d);
    const float want = (dx * dy) * (float)(240 * 127);
    float got;
    mllm_vec_dot_q4_1_generic(32, &got, &bx, &by);
    assert_true(got == want);
#if MLLM_HAVE_X86_KERNELS
    if (mllm_cpu_has_avx2()) {
        mllm_vec_dot_q4_1_avx2(32, &got, &bx, &by);
        assert_true(got == want);
    }
#endif
}

/* One mul_mat case: n_rows weight rows of K, M activation rows, computing
   rows [r0, r1) into a padded Y. Checks against the double reference, and
   (simd) against the generic loop. */
static void check_mul_mat(mllm_dtype t, int64_t n_rows, int64_t K, int64_t M, int64_t r0,
                          int64_t r1) {
    const mllm_dtype_traits *tr = mllm_dtype_get(t);
    const mllm_cpu_type *ktr = mllm_cpu_type_get(t);
    const mllm_dtype vt = tr->vec_dot_type;
    const size_t w_stride = mllm_dtype_row_size(t, K) + 16; /* padded rows */
    const size_t x_stride = mllm_dtype_row_size(vt, K) + 64;
    const size_t y_stride = (size_t)n_rows + 5;
    char *W = calloc((size_t)n_rows, w_stride), *X = calloc((size_t)M, x_stride);
    float *wimg = malloc((size_t)(n_rows * K) * sizeof(float)), *ximg = malloc((size_t)(M * K) * sizeof(float));
    float *src = malloc((size_t)K * sizeof(float));
    for (int64_t r = 0; r < n_rows; r++) {
        tu_fill_random(src, (size_t)K, 77 + (uint64_t)r);
        ktr->from_float(src, W + (size_t)r * w_stride, K);
        ktr->to_float(W + (size_t)r * w_stride, wimg + r * K, K);
    }
    for (int64_t m = 0; m < M; m++) {
        tu_fill_random(src, (size_t)K, 900 + (uint64_t)m);
        mllm_cpu_quantize_row(vt, src, X + (size_t)m * x_stride, K);
        mllm_cpu_type_get(vt)->to_float(X + (size_t)m * x_stride, ximg + m * K, K);
    }
    const size_t ny = (size_t)M * y_stride;
    float *Y = malloc(ny * sizeof(float)), *Yg = malloc(ny * sizeof(float));
    float *got = malloc(ny * sizeof(float)), *ref = malloc(ny * sizeof(float)), *gen = malloc(ny * sizeof(float));
    for (size_t i = 0; i < ny; i++) Y[i] = Yg[i] = -12345.0f;
    mllm_cpu_mul_mat(t, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1);
    mllm_mul_mat_generic(mllm_cpu_vec_dot_for(t, "generic"), W, w_stride, K, X, x_stride, M, Yg,
                         y_stride, r0, r1);
    size_t k = 0;
    for (int64_t m = 0; m < M; m++) {
        for (int64_t r = 0; r < (int64_t)y_stride; r++) {
            const float v = Y[(size_t)m * y_stride + r];
            if (r < r0 || r >= r1) { /* untouched outside the range */
                assert_true(v == -12345.0f);
                continue;
            }
            got[k] = v;
            gen[k] = Yg[(size_t)m * y_stride + r];
            ref[k] = (float)dot_double(wimg + r * K, ximg + m * K, K);
            k++;
        }
    }
    const double e_ref = tu_nmse(got, ref, k), e_gen = tu_nmse(got, gen, k);
    if (e_ref > ref_tol(t) || e_gen > simd_tol(t))
        printf("mul_mat %s rows=%lld K=%lld M=%lld [%lld,%lld): vs ref %.3g, vs generic %.3g\n",
               tr->name, (long long)n_rows, (long long)K, (long long)M, (long long)r0,
               (long long)r1, e_ref, e_gen);
    assert_true(e_ref <= ref_tol(t));
    assert_true(e_gen <= simd_tol(t));
    free(W), free(X), free(wimg), free(ximg), free(src), free(Y), free(Yg), free(got), free(ref), free(gen);
}

static void test_mul_mat(void **state) {
    (void)state;
    static const int64_t Ms[] = {1, 3, 7};
    static const struct { int64_t rows, r0, r1; } ranges[] = {{1, 0, 1}, {5, 0, 5}, {13, 2, 11}, {16, 0, 16}};
    for (size_t ti = 0; ti < sizeof k_weight_types / sizeof k_weight_types[0]; ti++) {
        const mllm_dtype t = k_weight_types[ti];
        const int64_t Ks[] = {32, 96, is_int_path(t) ? 4064 : 4065};
        for (int ki = 0; ki < 3; ki++)
            for (int mi = 0; mi < 3; mi++)
                for (size_t ri = 0; ri < sizeof ranges / sizeof ranges[0]; ri++)
                    check_mul_mat(t, ranges[ri].rows, Ks[ki], Ms[mi], ranges[ri].r0, ranges[ri].r1);
    }
}

/* Prefill-sized case: many rows and activation rows, through the chunked
   loop (more weight rows than fit one chunk). */
static void test_mul_mat_large(void **state) {
    (void)state;
    check_mul_mat(MLLM_DTYPE_Q4_0, 203, 4096, 10, 0, 203);
    check_mul_mat(MLLM_DTYPE_F16, 101, 4096, 5, 3, 100);
    /* 16+ activation rows: the float GEMM (packed panels, K in blocks of
       1024) with ragged panels, odd K and row counts off its 6 x 16 tile */
    check_mul_mat(MLLM_DTYPE_F16, 101, 2085, 23, 3, 100);
    check_mul_mat(MLLM_DTYPE_BF16, 37, 1030, 16, 0, 37);
    check_mul_mat(MLLM_DTYPE_F32, 50, 777, 31, 5, 50); /* f32 stays on the tiles */
}

/* mllm_cpu_mul_mat's rows [r0, r1) of W (n_rows of K) against the M rows of
   X, and on x86 the AVX2 and avx512 kernels the CPU has, into Y / Y2 / Y5
   (n_rows apart); returns which of Y2 / Y5 were computed (bit 1 / 2). */
static int mul_mat_paths(mllm_dtype t, const char *W, size_t ws, int64_t K, const char *X, size_t xs, int64_t M,
                         float *Y, float *Y2, float *Y5, int64_t n_rows, int64_t r0, int64_t r1) {
    mllm_cpu_mul_mat(t, W, ws, K, X, xs, M, Y, (size_t)n_rows, r0, r1);
    int got = 0;
#if MLLM_HAVE_X86_KERNELS
    if (mllm_cpu_has_avx2() && mllm_mul_mat_avx2(t, W, ws, K, X, xs, M, Y2, (size_t)n_rows, r0, r1)) got |= 1;
    if (mllm_cpu_isa_available(MLLM_CPU_ISA_AVX512) &&
        mllm_mul_mat_small_avx512(t, W, ws, K, X, xs, M, Y5, (size_t)n_rows, r0, r1))
        got |= 2;
#else
    (void)Y2, (void)Y5;
#endif
    return got;
}

/* f16 / bf16 weights with 2-15 activation rows (a server's decode step):
   each row's outputs are the same bits whatever the batch holds besides it
   (a greedy request answers the same alone in a batch of 2 or of 8), and
   the same on the AVX2 and the avx512 paths. Row ranges that end on whole
   tiles and on single rows of both, K with a tail and without. */
static void test_mul_mat_small_batch_invariant(void **state) {
    (void)state;
    static const mllm_dtype types[] = {MLLM_DTYPE_F16, MLLM_DTYPE_BF16};
    static const int64_t Ms[] = {2, 3, 5, 8, 15}, Ks[] = {96, 1030}, ranges[][2] = {{2, 35}, {0, 37}};
    const int64_t n_rows = 37;
    const size_t ny = 15 * (size_t)n_rows;
    float *all = malloc(ny * sizeof(float)), *Y = malloc(ny * sizeof(float));
    float *Y2 = malloc(ny * sizeof(float)), *Y5 = malloc(ny * sizeof(float));
    for (size_t ti = 0; ti < 2; ti++)
        for (size_t ki = 0; ki < 2; ki++) {
            const mllm_dtype t = types[ti], vt = mllm_dtype_get(t)->vec_dot_type;
            const int64_t K = Ks[ki];
            const size_t ws = mllm_dtype_row_size(t, K), xs = mllm_dtype_row_size(vt, K);
            char *W = malloc((size_t)n_rows * ws), *X = malloc(15 * xs);
            float *src = malloc((size_t)K * sizeof(float));
            for (int64_t r = 0; r < n_rows; r++) {
                tu_fill_random(src, (size_t)K, 300 + (uint64_t)r);
                mllm_cpu_type_get(t)->from_float(src, W + (size_t)r * ws, K);
            }
            for (int64_t m = 0; m < 15; m++) {
                tu_fill_random(src, (size_t)K, 700 + (uint64_t)m);
                mllm_cpu_quantize_row(vt, src, X + (size_t)m * xs, K);
            }
            for (size_t ri = 0; ri < 2; ri++) {
                const int64_t r0 = ranges[ri][0], r1 = ranges[ri][1];
                const size_t n = (size_t)(r1 - r0) * sizeof(float);
                mllm_cpu_mul_mat(t, W, ws, K, X, xs, 15, all, (size_t)n_rows, r0, r1);
                for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
                    const int64_t M = Ms[mi], m0 = 15 - M; /* the last M rows, at other places in their tiles */
                    const int got = mul_mat_paths(t, W, ws, K, X + (size_t)m0 * xs, xs, M, Y, Y2, Y5, n_rows, r0, r1);
                    for (int64_t m = 0; m < M; m++) {
                        const float *want = all + (m0 + m) * n_rows + r0;
                        assert_memory_equal(Y + m * n_rows + r0, want, n);
                        if (got & 1) assert_memory_equal(Y2 + m * n_rows + r0, want, n);
                        if (got & 2) assert_memory_equal(Y5 + m * n_rows + r0, want, n);
                    }
                }
            }
            free(W), free(X), free(src);
        }
    free(all), free(Y), free(Y2), free(Y5);
}

/* mllm_cpu_gemm (f32 and f16 weights, f32 activations) and the pre-packed
   f32 GEMM against a double reference on the same (f16-rounded) values:
   only the summation order differs, NMSE < 1e-10. Shapes with partial
   panels (N % 16), K over one panel block (1024) and M over one 6-row tile. */
static void test_gemm_f32_entry_points(void **state) {
    (void)state;
    const int64_t shapes[][3] = {{64, 37, 50}, {1500, 21, 64}, {384, 48, 100}, {7, 3, 9}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t K = shapes[si][0], M = shapes[si][1], N = shapes[si][2];
        float *W = malloc((size_t)(N * K) * sizeof(float)), *X = malloc((size_t)(M * K) * sizeof(float));
        mllm_f16 *W16 = malloc((size_t)(N * K) * sizeof(mllm_f16));
        tu_fill_random(W, (size_t)(N * K), 11 + si);
        tu_fill_random(X, (size_t)(M * K), 22 + si);
        mllm_row_float_to_f16(W, W16, N * K);
        float *Y = malloc((size_t)(M * N) * sizeof(float)), *R = malloc((size_t)(M * N) * sizeof(float));
        float *P = malloc(mllm_cpu_gemm_f32_packed_size(K, N) * sizeof(float) + 64);
        float *Pa = (float *)(((uintptr_t)P + 31) & ~(uintptr_t)31);
        for (int pass = 0; pass < 3; pass++) {
            float *wrow = malloc((size_t)K * sizeof(float));
            for (int64_t m = 0; m < M; m++)
                for (int64_t r = 0; r < N; r++) {
                    if (pass == 1) mllm_row_f16_to_float(W16 + r * K, wrow, K);
                    else memcpy(wrow, W + r * K, (size_t)K * sizeof(float));
                    double s = 0;
                    for (int64_t k = 0; k < K; k++) s += (double)wrow[k] * X[m * K + k];
                    R[m * N + r] = (float)s;
                }
            free(wrow);
            if (pass == 0) mllm_cpu_gemm(MLLM_DTYPE_F32, W, (size_t)K * 4, K, X, (size_t)K * 4, M, Y, (size_t)N, 0, N);
            if (pass == 1) mllm_cpu_gemm(MLLM_DTYPE_F16, W16, (size_t)K * 2, K, X, (size_t)K * 4, M, Y, (size_t)N, 0, N);
            if (pass == 2) {
                mllm_cpu_gemm_f32_pack(W, (size_t)K * 4, K, N, Pa);
                mllm_cpu_gemm_f32_packed(Pa, K, N, X, (size_t)K * 4, M, Y, (size_t)N);
            }
            const double e = tu_nmse(Y, R, (size_t)(M * N));
            printf("gemm pass %d K %lld M %lld N %lld: NMSE %.3g\n", pass, (long long)K, (long long)M, (long long)N, e);
            assert_true(e < 1e-10);
        }
        free(W), free(X), free(W16), free(Y), free(R), free(P);
    }
}

/* The avx512 path's float GEMM tile (12 x 16 on zmm) against the AVX2 one
   (6 x 16): the same FMA chain per output value, so bit-identical (memcmp),
   on ragged panels (nr < 16), row counts off both tiles, one value of K to
   a full panel block, writing and adding. */
static void test_gemm_tile_avx512(void **state) {
    (void)state;
#if MLLM_HAVE_X86_KERNELS
    if (!mllm_cpu_isa_available(MLLM_CPU_ISA_AVX512)) {
        printf("SKIPPED avx512 float GEMM tile: this CPU has no AVX-512\n");
        return;
    }
    static const int Ks[] = {1, 7, 64, 1024}, Ms[] = {1, 5, 12, 13, 37}, Ns[] = {16, 9};
    for (size_t ki = 0; ki < 4; ki++)
        for (size_t mi = 0; mi < 5; mi++)
            for (size_t ni = 0; ni < 2; ni++)
                for (int add = 0; add < 2; add++) {
                    const int K = Ks[ki], M = Ms[mi], nr = Ns[ni];
                    const size_t lda = (size_t)K + 3, ys = 16 + 5, ny = (size_t)M * ys;
                    float *P = malloc(mllm_cpu_gemm_f32_packed_size(K, 16) * sizeof(float) + 64);
                    float *Pa = (float *)(((uintptr_t)P + 63) & ~(uintptr_t)63);
                    float *W = malloc((size_t)16 * K * sizeof(float)), *A = malloc((size_t)M * lda * sizeof(float));
                    float *y2 = malloc(ny * sizeof(float)), *y5 = malloc(ny * sizeof(float));
                    tu_fill_random(W, (size_t)16 * K, 31 + ki);
                    tu_fill_random(A, (size_t)M * lda, 41 + mi);
                    tu_fill_random(y2, ny, 51);
                    memcpy(y5, y2, ny * sizeof(float));
                    mllm_cpu_gemm_f32_pack(W, (size_t)K * sizeof(float), K, nr, Pa);
                    mllm_gemm_panel_rows_avx2(Pa, nr, A, lda, 0, K, M, y2, ys, 2, add);
                    mllm_gemm_panel_rows_avx512(Pa, nr, A, lda, 0, K, M, y5, ys, 2, add);
                    assert_memory_equal(y2, y5, ny * sizeof(float));
                    free(P), free(W), free(A), free(y2), free(y5);
                }
#else
    printf("SKIPPED avx512 float GEMM tile: not an x86 build\n");
#endif
}

/* The avx512 path's 12 x 32 tile over two adjacent packed panels against
   two calls of the AVX2 tile (one per panel): bit-identical (memcmp), for
   row counts off the tile, K from one value to a full panel block, writing
   and adding; and mllm_cpu_gemm_f32_pack_t (from W^T) against
   mllm_cpu_gemm_f32_pack (from W), memcmp, on ragged N and K over 1024. */
static void test_gemm_tile2_avx512(void **state) {
    (void)state;
    static const int64_t pk[][2] = {{1, 1}, {7, 16}, {64, 37}, {1500, 64}, {2049, 9}};
    for (size_t si = 0; si < sizeof pk / sizeof pk[0]; si++) {
        const int64_t K = pk[si][0], N = pk[si][1];
        const size_t ws = (size_t)N + 3; /* W^T row stride, values */
        float *W = malloc((size_t)(N * K) * sizeof(float)), *Wt = malloc((size_t)K * ws * sizeof(float));
        tu_fill_random(W, (size_t)(N * K), 61 + si);
        for (int64_t r = 0; r < N; r++)
            for (int64_t k = 0; k < K; k++) Wt[(size_t)k * ws + (size_t)r] = W[r * K + k];
        const size_t np = mllm_cpu_gemm_f32_packed_size(K, N);
        float *p1 = malloc(np * sizeof(float)), *p2 = malloc(np * sizeof(float));
        memset(p2, 0x7f, np * sizeof(float)); /* every value written, padding too */
        mllm_cpu_gemm_f32_pack(W, (size_t)K * sizeof(float), K, N, p1);
        mllm_cpu_gemm_f32_pack_t(Wt, ws * sizeof(float), K, N, p2);
        assert_memory_equal(p1, p2, np * sizeof(float));
        free(W), free(Wt), free(p1), free(p2);
    }
#if MLLM_HAVE_X86_KERNELS
    if (!mllm_cpu_isa_available(MLLM_CPU_ISA_AVX512)) {
        printf("SKIPPED avx512 12 x 32 GEMM tile: this CPU has no AVX-512\n");
        return;
    }
    static const int Ks[] = {1, 7, 64, 1024}, Ms[] = {1, 5, 12, 13, 37};
    for (size_t ki = 0; ki < 4; ki++)
        for (size_t mi = 0; mi < 5; mi++)
            for (int add = 0; add < 2; add++) {
                const int K = Ks[ki], M = Ms[mi];
                const size_t lda = (size_t)K + 3, ys = 32 + 5, ny = (size_t)M * ys;
                float *P = malloc(mllm_cpu_gemm_f32_packed_size(K, 32) * sizeof(float) + 64);
                float *Pa = (float *)(((uintptr_t)P + 63) & ~(uintptr_t)63);
                float *W = malloc((size_t)32 * K * sizeof(float)), *A = malloc((size_t)M * lda * sizeof(float));
                float *y2 = malloc(ny * sizeof(float)), *y5 = malloc(ny * sizeof(float));
                tu_fill_random(W, (size_t)32 * K, 71 + ki);
                tu_fill_random(A, (size_t)M * lda, 81 + mi);
                tu_fill_random(y2, ny, 91);
                memcpy(y5, y2, ny * sizeof(float));
                mllm_cpu_gemm_f32_pack(W, (size_t)K * sizeof(float), K, 32, Pa); /* K <= 1024: one block */
                mllm_gemm_panel_rows_avx2(Pa, 16, A, lda, 0, K, M, y2, ys, 2, add);
                mllm_gemm_panel_rows_avx2(Pa + (size_t)K * 16, 16, A, lda, 0, K, M, y2, ys, 18, add);
                mllm_gemm_panel2_rows_avx512(Pa, A, lda, 0, K, M, y5, ys, 2, add);
                assert_memory_equal(y2, y5, ny * sizeof(float));
                free(P), free(W), free(A), free(y2), free(y5);
            }
#else
    printf("SKIPPED avx512 12 x 32 GEMM tile: not an x86 build\n");
#endif
}

int main(void) {
    mllm_cpu_init();
    printf("cpu path: %s\n", mllm_cpu_path());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vec_dot_generic), cmocka_unit_test(test_vec_dot_avx2),
        cmocka_unit_test(test_vec_dot_known),   cmocka_unit_test(test_mul_mat),
        cmocka_unit_test(test_mul_mat_large),  cmocka_unit_test(test_mul_mat_small_batch_invariant),
        cmocka_unit_test(test_gemm_f32_entry_points),
        cmocka_unit_test(test_gemm_tile_avx512), cmocka_unit_test(test_gemm_tile2_avx512),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
