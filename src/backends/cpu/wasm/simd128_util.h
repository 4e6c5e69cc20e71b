/* Integer helpers shared by the SIMD128 dot products (vec_dot_simd128.c,
   kquant_simd128.c); included only by files built with -msimd128. */
#ifndef MLLM_BACKENDS_CPU_WASM_SIMD128_UTIL_H
#define MLLM_BACKENDS_CPU_WASM_SIMD128_UTIL_H
#include <stdint.h>
#include <wasm_simd128.h>

/* sum(a[k] * b[k]) over 16 signed bytes (a may also be unsigned below 128),
   exact, as 4 int32 lanes. */
static inline v128_t mllm_dot_i8x16(v128_t a, v128_t b) {
    return wasm_i32x4_add(wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_extmul_low_i8x16(a, b)),
                          wasm_i32x4_extadd_pairwise_i16x8(wasm_i16x8_extmul_high_i8x16(a, b)));
}

static inline int32_t mllm_hsum_i32x4(v128_t v) {
    return wasm_i32x4_extract_lane(v, 0) + wasm_i32x4_extract_lane(v, 1) + wasm_i32x4_extract_lane(v, 2) +
           wasm_i32x4_extract_lane(v, 3);
}

#endif
