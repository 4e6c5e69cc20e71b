/* What code outside src/backends (model loaders, the samplers' search) uses
   of the CPU backend, without reaching into backends/cpu: preparing
   weights at load in the layouts and roundings its kernels read, and the
   numerics of a search over logits on the host. Each is the CPU backend's
   own function (backends/cpu/kernels.h, repack.h), so results are the
   same bits as before this interface. */
#ifndef MLLM_BACKENDS_HOST_H
#define MLLM_BACKENDS_HOST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

/* n values of a plain row of dtype t as floats (mllm_cpu_to_float). */
void mllm_host_to_float(mllm_dtype t, const void *src, float *dst, int64_t n);
/* A row of n floats into dtype t as the CPU's activation quantizer rounds
   it (mllm_cpu_quantize_row: q8_0 ties to even, as ggml's SIMD does). */
void mllm_host_quantize_row(mllm_dtype t, const float *x, void *y, int64_t n);
/* Whether the CPU's float kernels (f32, f16, bf16) read rows of a
   multiple of 8 values at any address (the x86 paths: unaligned vector
   loads, no scalar tail), so unaligned file data can be used in place. */
bool mllm_host_reads_unaligned_rows(void);
/* The layout of 8-row groups the CPU's kernels read a (K x N) matrix of t
   in (a *_X8 dtype), or -1 to keep it plain (mllm_repack_type_for). */
int mllm_host_packed_type(mllm_dtype t, int64_t K, int64_t N);
/* One group of 8 plain rows of K values (row stride the plain type's row
   size) into the packed layout at dst. */
void mllm_host_pack_group(mllm_dtype packed, const void *src, void *dst, int64_t K);
/* sum over i < n of exp(x[i] - mx), and *ts_sum (if not NULL) the same
   over [ts_from, n): a log-softmax's normaliser (mllm_cpu_sum_exp). */
double mllm_host_sum_exp(const float *x, int n, float mx, int ts_from, double *ts_sum);

#endif
