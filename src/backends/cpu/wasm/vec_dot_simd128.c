/* SIMD128 dot products (see simd128.h). The quantized ones compute each
   block's integer sum exactly, as the generic kernels do, and then the very
   same float expression in the same order, so they return the generic
   result bit for bit. The f32 one sums in double in another order than the
   generic one: it differs by the rounding of a double sum only (NMSE bound
   in tests/wasm/test_simd128.c). */
#include "backends/cpu/wasm/simd128.h"
#include "backends/cpu/wasm/simd128_util.h"
#include <wasm_simd128.h>
#include "backends/cpu/kernels_internal.h"

/* As the generic one: each float product widened to double and summed in
   double (8 partial sums here, one there), rounded to float once. */
void mllm_vec_dot_f32_simd128(int n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    v128_t a0 = wasm_f64x2_splat(0.0), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const v128_t p0 = wasm_f32x4_mul(wasm_v128_load(x + i), wasm_v128_load(y + i));
        const v128_t p1 = wasm_f32x4_mul(wasm_v128_load(x + i + 4), wasm_v128_load(y + i + 4));
        a0 = wasm_f64x2_add(a0, wasm_f64x2_promote_low_f32x4(p0));
        a1 = wasm_f64x2_add(a1, wasm_f64x2_promote_low_f32x4(wasm_i64x2_shuffle(p0, p0, 1, 0)));
        a2 = wasm_f64x2_add(a2, wasm_f64x2_promote_low_f32x4(p1));
        a3 = wasm_f64x2_add(a3, wasm_f64x2_promote_low_f32x4(wasm_i64x2_shuffle(p1, p1, 1, 0)));
    }
    const v128_t a = wasm_f64x2_add(wasm_f64x2_add(a0, a1), wasm_f64x2_add(a2, a3));
    double sum = wasm_f64x2_extract_lane(a, 0) + wasm_f64x2_extract_lane(a, 1);
    for (; i < n; i++) sum += (double)(x[i] * y[i]);
    *s = (float)sum;
}

void mllm_vec_dot_q8_0_simd128(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q8_0 *x = vx, *y = vy;
    const int nb = n / MLLM_QK8_0;
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        const v128_t d = wasm_i32x4_add(mllm_dot_i8x16(wasm_v128_load(x[i].qs), wasm_v128_load(y[i].qs)),
                                        mllm_dot_i8x16(wasm_v128_load(x[i].qs + 16), wasm_v128_load(y[i].qs + 16)));
        const int sumi = mllm_hsum_i32x4(d);
        sum += (float)sumi * (mllm_f16_to_f32(x[i].d) * mllm_f16_to_f32(y[i].d));
    }
    *s = sum;
}

void mllm_vec_dot_q4_0_simd128(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q4_0 *x = vx;
    const mllm_block_q8_0 *y = vy;
    const int nb = n / MLLM_QK4_0;
    const v128_t low4 = wasm_i8x16_splat(0x0f), eight = wasm_i8x16_splat(8);
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        const v128_t q = wasm_v128_load(x[i].qs);
        const v128_t lo = wasm_i8x16_sub(wasm_v128_and(q, low4), eight); /* values 0..15 - 8 */
        const v128_t hi = wasm_i8x16_sub(wasm_u8x16_shr(q, 4), eight);
        const v128_t d = wasm_i32x4_add(mllm_dot_i8x16(lo, wasm_v128_load(y[i].qs)),
                                        mllm_dot_i8x16(hi, wasm_v128_load(y[i].qs + MLLM_QK4_0 / 2)));
        const int sumi = mllm_hsum_i32x4(d);
        sum += (float)sumi * mllm_f16_to_f32(x[i].d) * mllm_f16_to_f32(y[i].d);
    }
    *s = sum;
}

void mllm_vec_dot_q4_1_simd128(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q4_1 *x = vx;
    const mllm_block_q8_1 *y = vy;
    const int nb = n / MLLM_QK4_1;
    const v128_t low4 = wasm_i8x16_splat(0x0f);
    float sum = 0.0f;
    for (int i = 0; i < nb; i++) {
        const v128_t q = wasm_v128_load(x[i].qs);
        const v128_t lo = wasm_v128_and(q, low4), hi = wasm_u8x16_shr(q, 4); /* 0..15: as int8 too */
        const v128_t d = wasm_i32x4_add(mllm_dot_i8x16(lo, wasm_v128_load(y[i].qs)),
                                        mllm_dot_i8x16(hi, wasm_v128_load(y[i].qs + MLLM_QK4_1 / 2)));
        const int sumi = mllm_hsum_i32x4(d);
        sum += (mllm_f16_to_f32(x[i].d) * mllm_f16_to_f32(y[i].d)) * (float)sumi +
               mllm_f16_to_f32(x[i].m) * mllm_f16_to_f32(y[i].s);
    }
    *s = sum;
}

mllm_vec_dot_fn mllm_vec_dot_simd128_for(mllm_dtype t) {
    switch (t) {
    case MLLM_DTYPE_F32: return mllm_vec_dot_f32_simd128;
    case MLLM_DTYPE_Q8_0: return mllm_vec_dot_q8_0_simd128;
    case MLLM_DTYPE_Q4_0: return mllm_vec_dot_q4_0_simd128;
    case MLLM_DTYPE_Q4_1: return mllm_vec_dot_q4_1_simd128;
    case MLLM_DTYPE_Q4_K: return mllm_vec_dot_q4_k_simd128;
    case MLLM_DTYPE_Q6_K: return mllm_vec_dot_q6_k_simd128;
    default: return NULL;
    }
}
