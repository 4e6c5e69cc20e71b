/* Prefill matmul for f16 / bf16 (and, for Whisper's attention, f32)
   weights, AVX2 + FMA: an
   outer-product kernel on packed weight panels, the usual BLAS blocking.
   A panel is 16 weight rows x up to 1024 values of K, widened to f32 and
   stored k-major (16 floats per k), packed once and then used by every
   block of 6 activation rows. (Measured on the 0.6B f16 model, pp512:
   K blocks of 128 / 256 / 512 / 1024 values gave 137 / 146 / 162 / 168
   tokens/s; fewer passes over the output beat an L1-sized panel here.) The 6 x 16 output tile lives in 12
   registers; per k, 2 panel loads and 6 broadcasts feed 12 multiply-adds,
   against 7 loads for the dot-product tiles, and no horizontal sums. */
#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/x86/gemm_panel_rows.h"
#include "backends/cpu/x86/simd_avx2.h"

#include <string.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define NR MLLM_GEMM_NR /* weight rows per panel */
#define MR 6   /* activation rows per tile */
_Static_assert(MR <= MLLM_GEMM_MR_MAX, "gemm_panel_rows.h scratch tile");
#define KC MLLM_GEMM_KC /* values of K per panel */

/* 8 floats of row i of the panel's source, widened. */
static inline __m256 load8(mllm_dtype wt, const char *row, int64_t k) {
    if (wt == MLLM_DTYPE_F32) return _mm256_loadu_ps((const float *)row + k);
    if (wt == MLLM_DTYPE_F16) return load_f16x8((const mllm_f16 *)row + k);
    return load_bf16x8((const mllm_bf16 *)row + k);
}

static inline float load1(mllm_dtype wt, const char *row, int64_t k) {
    if (wt == MLLM_DTYPE_F32) return ((const float *)row)[k];
    if (wt == MLLM_DTYPE_F16) return f16_to_f32_hw(((const mllm_f16 *)row)[k]);
    return mllm_bf16_to_f32(((const mllm_bf16 *)row)[k]);
}

/* Transposes 8 rows of 8 floats: out[j] = (r[0][j], ..., r[7][j]). */
static inline void transpose8(__m256 r[8]) {
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20), r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20), r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20), r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20), r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* Panel: rows [r, r + nr) of W (nr <= 16, missing rows zero), values
   [k0, k0 + kc), as p[k * 16 + i]: widened and transposed 8 x 8 at a time. */
static void pack_panel(mllm_dtype wt, const char *W, size_t w_stride, int64_t r, int nr, int64_t k0,
                       int kc, float *p) {
    for (int h = 0; h < 2; h++) { /* rows 8h .. 8h + 7 go to columns 8h .. 8h + 7 */
        const char *rows[8];
        for (int i = 0; i < 8; i++) rows[i] = 8 * h + i < nr ? W + (size_t)(r + 8 * h + i) * w_stride : NULL;
        int k = 0;
        for (; k + 8 <= kc; k += 8) {
            __m256 v[8];
            for (int i = 0; i < 8; i++) v[i] = rows[i] ? load8(wt, rows[i], k0 + k) : _mm256_setzero_ps();
            transpose8(v);
            for (int j = 0; j < 8; j++) _mm256_store_ps(p + (size_t)(k + j) * NR + 8 * h, v[j]);
        }
        for (; k < kc; k++)
            for (int i = 0; i < 8; i++) p[(size_t)k * NR + 8 * h + i] = rows[i] ? load1(wt, rows[i], k0 + k) : 0.0f;
    }
}

/* C[i][0..16) (+)= sum over k < kc of A[i][k] * panel[k][0..16), i < RM. */
ALWAYS_INLINE void kernel(int RM, const float *p, const float *A, size_t lda, int kc, float *C,
                          size_t ldc, bool add) {
    __m256 c[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < RM; i++) c[i][0] = c[i][1] = _mm256_setzero_ps();
    for (int k = 0; k < kc; k++) {
        const __m256 w0 = _mm256_load_ps(p + (size_t)k * NR), w1 = _mm256_load_ps(p + (size_t)k * NR + 8);
#pragma GCC unroll 6
        for (int i = 0; i < RM; i++) {
            const __m256 a = _mm256_broadcast_ss(A + (size_t)i * lda + k);
            c[i][0] = _mm256_fmadd_ps(a, w0, c[i][0]);
            c[i][1] = _mm256_fmadd_ps(a, w1, c[i][1]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < RM; i++) {
        float *ci = C + (size_t)i * ldc;
        if (add) {
            c[i][0] = _mm256_add_ps(c[i][0], _mm256_loadu_ps(ci));
            c[i][1] = _mm256_add_ps(c[i][1], _mm256_loadu_ps(ci + 8));
        }
        _mm256_storeu_ps(ci, c[i][0]);
        _mm256_storeu_ps(ci + 8, c[i][1]);
    }
}

#define KERN(RM)                                                                                       \
    static void kern_##RM(const float *p, const float *A, size_t lda, int kc, float *C, size_t ldc, \
                          bool add) {                                                                 \
        kernel(RM, p, A, lda, kc, C, ldc, add);                                                       \
    }
KERN(1) KERN(2) KERN(3) KERN(4) KERN(5) KERN(6)
static const mllm_gemm_kern_fn k_kern[MR] = {kern_1, kern_2, kern_3, kern_4, kern_5, kern_6};

/* Y[m][r .. r + nr) (+)= A rows m < M (values k0 .. k0 + kc) times one panel. */
void mllm_gemm_panel_rows_avx2(const float *panel, int nr, const float *A, size_t lda, int64_t k0, int kc, int64_t M,
                       float *Y, size_t y_stride, int64_t r, bool add) {
    mllm_gemm_panel_rows_with(k_kern, MR, panel, nr, A, lda, k0, kc, M, Y, y_stride, r, add);
}

typedef void (*rows_fn)(const float *panel, int nr, const float *A, size_t lda, int64_t k0, int kc, int64_t M,
                        float *Y, size_t y_stride, int64_t r, bool add);

/* The avx512 path's tile where it runs (the same values, twice as wide). */
static rows_fn rows_for_path(void) {
    return mllm_cpu_isa_get() == MLLM_CPU_ISA_AVX512 ? mllm_gemm_panel_rows_avx512 : mllm_gemm_panel_rows_avx2;
}

void mllm_gemm_float_avx2(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const float *A,
                          size_t lda, int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1,
                          float *panel) {
    const rows_fn rows = rows_for_path();
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        const int kc = (int)(K - k0 < KC ? K - k0 : KC);
        for (int64_t r = r0; r < r1; r += NR) {
            const int nr = (int)(r1 - r < NR ? r1 - r : NR);
            pack_panel(wt, W, w_stride, r, nr, k0, kc, panel);
            rows(panel, nr, A, lda, k0, kc, M, Y, y_stride, r, k0 > 0);
        }
    }
}

void mllm_gemm_f32_packed_avx2(const float *P, int64_t K, int64_t N, const float *A, size_t lda, int64_t M,
                               float *Y, size_t y_stride) {
    const rows_fn rows = rows_for_path();
    const bool wide = mllm_cpu_isa_get() == MLLM_CPU_ISA_AVX512;
    const int64_t n_pan = (N + NR - 1) / NR;
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        const int kc = (int)(K - k0 < KC ? K - k0 : KC);
        const float *blk = P + (size_t)k0 * NR * (size_t)n_pan;
        for (int64_t pn = 0; pn < n_pan;) {
            const int64_t r = pn * NR;
            if (wide && N - r >= 2 * NR) { /* two full panels, 12 x 32 tiles */
                mllm_gemm_panel2_rows_avx512(blk + (size_t)pn * (size_t)kc * NR, A, lda, k0, kc, M, Y, y_stride, r,
                                             k0 > 0);
                pn += 2;
                continue;
            }
            rows(blk + (size_t)pn * (size_t)kc * NR, (int)(N - r < NR ? N - r : NR), A, lda, k0, kc, M, Y,
                       y_stride, r, k0 > 0);
            pn++;
        }
    }
}
