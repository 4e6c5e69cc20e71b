/* CPU kernels behind the ops. The plain-C versions (*_generic.c) are the
   specification; *_avx2.c / *_avx512.c (x86 builds) and arm/ (arm64 builds:
   NEON, NEON+dotprod, NEON+i8mm) hold intrinsics and are chosen at run time
   (MLLM_CPU=generic|avx2|avx512|neon|neon-dotprod|neon-i8mm forces a path).
   Every SIMD kernel is tested against the generic one
   (tests/unit/test_kernels_*.c). */
#ifndef MLLM_BACKENDS_CPU_KERNELS_H
#define MLLM_BACKENDS_CPU_KERNELS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "backends/cpu.h"
#include "core/dtype.h"

/* The kernel paths. On arm64 each NEON path implies the ones before it. */
typedef enum {
    MLLM_CPU_ISA_GENERIC,
    MLLM_CPU_ISA_AVX2,         /* + FMA + F16C */
    MLLM_CPU_ISA_AVX512,       /* avx2 + AVX-512 F/BW/VL/DQ/VNNI kernels where written */
    MLLM_CPU_ISA_NEON,         /* AdvSIMD, every arm64 CPU */
    MLLM_CPU_ISA_NEON_DOTPROD, /* + SDOT (Armv8.2 dotprod) */
    MLLM_CPU_ISA_NEON_I8MM,    /* + SMMLA (Armv8.6 i8mm) */
    MLLM_CPU_ISA_COUNT
} mllm_cpu_isa;

typedef struct {
    const char *name; /* "generic", "avx2", "neon", ... */
    /* y = x / sqrt(mean(x^2) + eps) * w   (w may be NULL: no weight) */
    void (*rmsnorm)(float *y, const float *x, const float *w, int n, float eps);
    /* y = (x - mean(x)) / sqrt(var(x) + eps) * w + b  (w, b may be NULL: 1 and 0).
       Generic only (NULL in the SIMD tables; the graph calls the generic one). */
    void (*layernorm)(float *y, const float *x, const float *w, const float *b, int n, float eps);
    /* y = silu(g) * u  (SwiGLU) */
    void (*silu_mul)(float *y, const float *g, const float *u, int n);
    /* y = gelu_tanh(g) * u  (GeGLU; GELU in its tanh form, as Gemma uses) */
    void (*gelu_mul)(float *y, const float *g, const float *u, int n);
    /* y = gelu(x) = 0.5 x (1 + erf(x / sqrt 2)), the exact form BERT's
       hidden_act "gelu" is (and Whisper's). The AVX2 one is a vector erfc
       (NMSE ~1e-14 vs the generic libm erff); the graph calls the generic
       one, Whisper the one of this CPU. */
    void (*gelu_erf)(float *y, const float *x, int n);
    /* x = softmax(x * scale) in place, over n values; -INFINITY entries give 0 */
    void (*softmax)(float *x, int n, float scale);
    /* Rotates one head of n_rot dims by the angles whose cos/sin are given
       (n_rot/2 each). neox: pairs (i, i + n_rot/2); else pairs (2i, 2i+1). */
    void (*rope)(float *x, int n_rot, const float *cos_t, const float *sin_t, bool neox);
    float (*dot_f32)(const float *a, const float *b, int n);
    /* y += a * x */
    void (*axpy_f32)(float *y, float a, const float *x, int n);
    /* y = a + b */
    void (*add_f32)(float *y, const float *a, const float *b, int n);
    /* dst[d * stride + j] = rows[j][d] for j < 8, d < n: eight rows into
       eight adjacent columns (the paged cache's V^T gather). Moves values
       only, so every table gives the same bytes. */
    void (*transpose8)(float *dst, size_t stride, const float *const *rows, int n);
    /* out[m * out_stride + d] for d < n_out, m < n_p: the f32 matmul's
       dot (mllm_cpu_mul_mat, F32: the same bits) of p[m * p_stride, + n)
       with row d of a matrix whose columns lie in segments of seg: columns
       [s seg, s seg + seg) of row d at segs[s] + d * d_stride. A NULL
       segment, and columns from n_valid on, read as zeros. n and seg are
       multiples of 8. The paged V^T of the ordered attention, read where it
       lies, for a group of query heads. NULL in a table whose f32 matmul it
       does not mirror (the caller gathers the rows). */
    void (*dot_f32_segments)(float *out, size_t out_stride, int n_out, const float *const *segs, size_t d_stride,
                             int seg, int n, int n_valid, const float *p, size_t p_stride, int n_p);
} mllm_cpu_ops;

/* The generic LayerNorm (mllm_cpu_ops_generic()->layernorm) on M
   contiguous rows of dim values, the same values, several rows side by
   side (layernorm_rows.c): what the graph's LAYERNORM runs. */
void mllm_cpu_layernorm_rows(float *Y, const float *X, const float *gamma, const float *beta, int64_t M, int dim,
                             float eps);

/* The generic transpose8 (the NEON table uses it too). */
void mllm_transpose8_generic(float *dst, size_t stride, const float *const *rows, int n);

/* The ops for this CPU (or forced by MLLM_CPU). Never NULL. */
const mllm_cpu_ops *mllm_cpu_ops_get(void);
const mllm_cpu_ops *mllm_cpu_ops_generic(void);
/* NULL when the CPU lacks the ISA. */
const mllm_cpu_ops *mllm_cpu_ops_avx2(void);
const mllm_cpu_ops *mllm_cpu_ops_avx512(void);
mllm_cpu_isa mllm_cpu_isa_get(void);
/* Whether this CPU and this build run the path (generic: always). */
bool mllm_cpu_isa_available(mllm_cpu_isa isa);
const char *mllm_cpu_isa_name(mllm_cpu_isa isa);
/* The path named name (mllm_cpu_isa_name's spelling), -1 if none. */
int mllm_cpu_isa_parse(const char *name);
bool mllm_cpu_isa_is_arm(mllm_cpu_isa isa);
/* avx2 or avx512: the paths that run the AVX2 kernels (avx512 puts its own
   in front of some). */
bool mllm_cpu_isa_is_x86(mllm_cpu_isa isa);
/* Whether the path that runs has SIMD kernels for the packed weight layouts
   (repack.h): AVX2 (all of them) and the NEON paths (some). Loaders repack
   weights only then, and only into the packed types
   mllm_cpu_has_packed_kernel says yes to (packed: a *_X8 dtype). */
bool mllm_cpu_has_packed_kernels(void);
bool mllm_cpu_has_packed_kernel(mllm_dtype packed);
bool mllm_cpu_has_avx2(void);
bool mllm_cpu_has_avx512(void);


/* The matmul hot spot: Y[m][r] = dot(W row r, X row m) for r in [r0, r1),
   m in [0, M). W: n_rows rows of K values of dtype wt, row stride w_stride
   bytes. X: M rows already converted to the vec_dot_type of wt (see
   mllm_dtype_traits), row stride x_stride bytes. Y: row stride y_stride
   floats. Threads split [0, n_rows) into [r0, r1). */
void mllm_cpu_mul_mat(mllm_dtype wt, const void *W, size_t w_stride, int64_t K,
                      const void *X, size_t x_stride, int64_t M,
                      float *Y, size_t y_stride, int64_t r0, int64_t r1);
/* The same product with X as float32 rows, whatever wt is: each weight row
   is dequantized into row (K floats, the caller's) and dotted in f32 with
   every activation row. No activation rounding: the float32 answer on the
   file's weights (mllm_load_params.exact). */
void mllm_cpu_mul_mat_exact(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X,
                            size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1,
                            float *row);

/* mllm_cpu_mul_mat for float weights (f32, f16, bf16) with f32 activation
   rows (strides in bytes), through the packed-panel GEMM where the CPU has
   it: with many activation rows ~1.7x the f32 dot tiles, and no per-call
   widening of the activations (what mllm_cpu_mul_mat does for f16). The
   sums run in another order, so a row's result depends on the batch: for
   callers that do not need batch invariance (Whisper's encoder). Without
   AVX2: the f32 tiles for f32, else the exact dequantize-and-dot loop. */
void mllm_cpu_gemm(mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const float *X, size_t x_stride,
                   int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1);

/* The same product on weights packed once (N rows of K f32 values, stride
   w_stride bytes) into the GEMM's panel layout, for weights that meet many
   activation blocks (Whisper's per-head K and V): for each block of 1024
   values of K, for each 16 rows (zero-padded), the panel k-major.
   mllm_cpu_gemm_f32_packed_size gives its floats; Y[m][r] for every r < N.
   The generic path runs a plain loop over the same layout. */
size_t mllm_cpu_gemm_f32_packed_size(int64_t K, int64_t N);
void mllm_cpu_gemm_f32_pack(const float *W, size_t w_stride, int64_t K, int64_t N, float *dst);
/* The same packing of W given as its transpose: W[r][k] at
   Wt + k * wt_stride bytes, value r (Whisper's V^T from the V rows). */
void mllm_cpu_gemm_f32_pack_t(const float *Wt, size_t wt_stride, int64_t K, int64_t N, float *dst);
void mllm_cpu_gemm_f32_packed(const float *P, int64_t K, int64_t N, const float *X, size_t x_stride, int64_t M,
                              float *Y, size_t y_stride);



/* Row `row` of a (K x n) matrix of dtype t with the given row stride, as K
   floats: plain rows through the dtype's to_float, packed layouts
   (repack.h) through their lane. */
void mllm_cpu_get_row(mllm_dtype t, const void *data, size_t row_stride, int64_t K, int64_t row,
                      float *dst);

#endif
