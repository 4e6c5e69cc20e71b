/* The CPU backend's code per dtype: row conversions and the dot product of a
   weight row with an activation row. The dtype table (core/dtype.h) only
   describes formats; this is what the CPU does with them. */
#ifndef MLLM_BACKENDS_CPU_TYPE_KERNELS_H
#define MLLM_BACKENDS_CPU_TYPE_KERNELS_H
#include <stdint.h>

#include "core/dtype.h"

/* Converts n values (n a multiple of the block size) of one row. */
typedef void (*mllm_to_float_fn)(const void *src, float *dst, int64_t n);
typedef void (*mllm_from_float_fn)(const float *src, void *dst, int64_t n);
/* *s = dot(x[0..n), y[0..n)); x in the row's dtype, y in its vec_dot_type. */
typedef void (*mllm_vec_dot_fn)(int n, float *s, const void *x, const void *y);

typedef struct {
    mllm_to_float_fn to_float;     /* NULL: no row conversion (kernel layouts) */
    mllm_from_float_fn from_float; /* the reference quantizer (GGUF's _ref) */
    mllm_vec_dot_fn vec_dot;       /* for this CPU's path, chosen at mllm_cpu_init() */
} mllm_cpu_type;

/* Picks the kernel path for this CPU (MLLM_CPU=generic|avx2|neon|neon-dotprod|
   neon-i8mm forces one) and fills the vec_dot of every row. Idempotent and thread-safe; every
   entry point that computes calls it. */
void mllm_cpu_init(void);
/* Never NULL: a row of NULL pointers for a type the CPU has no code for.
   Calls mllm_cpu_init() itself. */
const mllm_cpu_type *mllm_cpu_type_get(int t);

#endif
