/* WebAssembly SIMD128 dot products (vec_dot_simd128.c, kquant_simd128.c), compiled only in
   wasm32-wasi builds with MLLM_WASM_SIMD=ON (-msimd128): type_kernels.c
   puts them in the dtype table in place of the generic ones at build time,
   unless MLLM_CPU=generic asks for the reference. Each is tested against
   the generic kernel of its dtype by tests/wasm/test_simd128.c. */
#ifndef MLLM_BACKENDS_CPU_WASM_SIMD128_H
#define MLLM_BACKENDS_CPU_WASM_SIMD128_H
#include "backends/cpu.h"
#include "core/dtype.h"

void mllm_vec_dot_f32_simd128(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q8_0_simd128(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q4_0_simd128(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q4_1_simd128(int n, float *s, const void *x, const void *y);
/* k-quants, y in q8_K32 (kquant_simd128.c) */
void mllm_vec_dot_q4_k_simd128(int n, float *s, const void *x, const void *y);
void mllm_vec_dot_q6_k_simd128(int n, float *s, const void *x, const void *y);
/* The SIMD128 vec_dot of dtype t, NULL where there is none (the generic
   one stays). */
mllm_vec_dot_fn mllm_vec_dot_simd128_for(mllm_dtype t);

#endif
