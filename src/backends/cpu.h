/* The CPU backend's face to the rest of the library (ggml-cpu.h's role):
   what the loaders, converters and quantizers above the backends need of
   the CPU's code per dtype and of its weight layouts. Everything else of
   the CPU backend (its kernels, op functions, dispatch tables) is private
   to src/backends/cpu and reached only through backends/backend.h. */
#ifndef MLLM_BACKENDS_CPU_H
#define MLLM_BACKENDS_CPU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"

/* Converts n values (n a multiple of the block size) of one row. */
typedef void (*mllm_to_float_fn)(const void *src, float *dst, int64_t n);
typedef void (*mllm_from_float_fn)(const float *src, void *dst, int64_t n);
/* *s = dot(x[0..n), y[0..n)); x in the row's dtype, y in its vec_dot_type. */
typedef void (*mllm_vec_dot_fn)(int n, float *s, const void *x, const void *y);

/* The CPU's code per dtype (the dtype table, core/dtype.h, only describes
   formats; this is what the CPU does with them). */
typedef struct {
    mllm_to_float_fn to_float;     /* NULL: no row conversion (kernel layouts) */
    mllm_from_float_fn from_float; /* the reference quantizer (GGUF's _ref) */
    mllm_vec_dot_fn vec_dot;       /* for this CPU's path, chosen at mllm_cpu_init() */
} mllm_cpu_type;

/* Picks the kernel path for this CPU (MLLM_CPU=generic|avx2|avx512|neon|
   neon-dotprod|neon-i8mm forces one) and fills the vec_dot of every row.
   Idempotent and thread-safe; every entry point that computes calls it. */
void mllm_cpu_init(void);
/* Never NULL: a row of NULL pointers for a type the CPU has no code for.
   Calls mllm_cpu_init() itself. */
const mllm_cpu_type *mllm_cpu_type_get(int t);
/* The name of the path that runs now ("generic", "avx2", "neon-dotprod", ...). */
const char *mllm_cpu_path(void);

/* A row of weights into dtype t: the bytes of its reference quantizer
   (mllm_cpu_type_get(t)->from_float, GGUF's), through SIMD where this CPU
   path has a bit-identical one (q4_0 on x86). t must have a quantizer. */
void mllm_cpu_quantize_weight_row(mllm_dtype t, const float *x, void *y, int64_t n);
/* n values of a plain row of dtype t as floats: F16C for f16 / bf16 on
   AVX2 (the same values as the dtype's to_float, faster), to_float else. */
void mllm_cpu_to_float(mllm_dtype t, const void *src, float *dst, int64_t n);
/* Converts one activation row of n floats to dtype t (a vec_dot_type) the
   way llama.cpp's CPU backend does at run time, so our logits track its own:
   q8_0/q8_1 use id = 127/amax and round half to even (ggml's SIMD
   quantize_row_q8_*), which differs from the dtype table's reference
   from_float (= GGUF's quantize_row_*_ref, for weights) in rare ties; f16
   and the others are the same as from_float. */
void mllm_cpu_quantize_row(mllm_dtype t, const float *x, void *y, int64_t n);
/* sum over i < n of exp((double)(x[i] - mx)) (x[i] = -inf adds 0; mx is
   meant to be the max, so every term is at most 1), and *ts_sum (if not
   NULL) the same over [ts_from, n): the log-softmax normaliser. The
   generic path is libm's exp in index order; x86 a 4-lane double exp
   within about 1 ulp of it, summed in another order (terms under 1e-307
   count as 0). */
double mllm_cpu_sum_exp(const float *x, int n, float mx, int ts_from, double *ts_sum);
/* Whether the float kernels (f32, f16, bf16) read rows of a multiple of 8
   values at any address (the x86 paths: unaligned vector loads, no scalar
   tail), so unaligned file data can be used in place. */
bool mllm_cpu_reads_unaligned_rows(void);

/* The kernel layouts ("x8", backends/cpu/repack.h: the rows of each group
   of 8 interleaved for the SIMD matmuls; same bytes per row as the plain
   type). The packed type for a (K x N) matrix of dtype t, or -1 when t has
   none or the shape does not allow it (N % 8, K % 32). */
int mllm_repack_type_for(mllm_dtype t, int64_t K, int64_t N);
/* The plain type a packed type came from (t itself when not packed). */
mllm_dtype mllm_repack_plain_type(mllm_dtype t);
/* Packs / unpacks groups [g0, g1) of 8 rows of K values. src and dst are
   both laid out with row stride row_size(plain, K); they must not overlap.
   Byte-exact inverses of each other. */
void mllm_repack_groups(mllm_dtype packed, const void *src, void *dst, int64_t K, int64_t g0, int64_t g1);
void mllm_unpack_groups(mllm_dtype packed, const void *src, void *dst, int64_t K, int64_t g0, int64_t g1);

/* The repacked-weights buffer type ("cpu_repack"): host memory holding
   kernel layouts, which the CPU backend alone knows how to read. A loader
   asks it to take the matmul weights it keeps on the CPU: */
const mllm_buffer_type *mllm_cpu_repack_buffer_type(void);

typedef struct {
    /* 1: pack every matrix that has a packed type (MLLM_REPACK=1); 0: pack
       none (MLLM_REPACK=0); -1: only when this CPU path has SIMD kernels for
       the packed layouts (AVX2, NEON), and only into the packed types it
       has kernels for (the generic path computes packed layouts too, but
       as a reference, slower than its plain loops). */
    int repack;
    /* -1, or the dtype a plain matrix whose rows take more bytes is first
       requantized to, row by row through f32 (a draft's --draft-quant), in
       groups of 8 rows of whole blocks; packed after when it can be. */
    int requant;
    /* Packing threads (MLLM_PACK_THREADS); 0: one per CPU, at most 8. */
    int n_threads;
} mllm_cpu_repack_params;

/* Moves the matrices ts[0..n) (2-D, host memory) that p packs or
   requantizes into one buffer of the repacked-weights type, at *buf: each
   such tensor's data, dtype, shape (requantized), buffer and buffer_offs
   then point there. drop_source[i] (may be NULL): ts[i]'s data is a
   read-only file mapping whose pages are dropped as they are packed, so
   resident memory stays about one copy of the weights. *saved (may be
   NULL) += the bytes requantizing saved. Nothing to move: MLLM_OK with
   buf->type NULL. On failure no tensor has changed. */
mllm_status mllm_cpu_repack_weights(mllm_tensor *const *ts, const bool *drop_source, int n,
                                    const mllm_cpu_repack_params *p, mllm_buffer *buf, size_t *saved);

#endif
