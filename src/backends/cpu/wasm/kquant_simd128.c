/* SIMD128 dots of the k-quants q4_K and q6_K with q8_K32 activations (see
   simd128.h). The integer part -- each sub-block's exact int32 sum -- is
   vectorized; the float part is kq32_combine, the generic kernels' own
   (kquants.h), so the result equals the generic one bit for bit. */
#include <wasm_simd128.h>
#include "backends/cpu/kquants.h"
#include "backends/cpu/wasm/simd128.h"
#include "backends/cpu/wasm/simd128_util.h"

void mllm_vec_dot_q4_k_simd128(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q4_k *x = vx;
    const mllm_block_q8_k32 *y = vy;
    const v128_t low4 = wasm_i8x16_splat(0x0f);
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        int32_t a[8], b[8];
        for (int c = 0; c < 4; c++) { /* 32 bytes: sub-block 2c (low nibbles), 2c + 1 (high) */
            const v128_t q0 = wasm_v128_load(x[i].qs + 32 * c), q1 = wasm_v128_load(x[i].qs + 32 * c + 16);
            const int8_t *yq = y[i].qs + 64 * c;
            const v128_t lo = wasm_i32x4_add(mllm_dot_i8x16(wasm_v128_and(q0, low4), wasm_v128_load(yq)),
                                             mllm_dot_i8x16(wasm_v128_and(q1, low4), wasm_v128_load(yq + 16)));
            const v128_t hi = wasm_i32x4_add(mllm_dot_i8x16(wasm_u8x16_shr(q0, 4), wasm_v128_load(yq + 32)),
                                             mllm_dot_i8x16(wasm_u8x16_shr(q1, 4), wasm_v128_load(yq + 48)));
            const int32_t dot[2] = {mllm_hsum_i32x4(lo), mllm_hsum_i32x4(hi)};
            for (int h = 0; h < 2; h++) {
                const int j = 2 * c + h;
                uint8_t sc, m;
                kq_scale_min(j, x[i].scales, &sc, &m);
                a[j] = sc * dot[h];
                b[j] = m * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
            }
        }
        sum += kq32_combine(a, b, y[i].d, mllm_f16_to_f32(x[i].d), mllm_f16_to_f32(x[i].dmin));
    }
    *s = sum;
}

/* q6_K's layout (kquant_generic.c, q6_k_unpack): value 128h + 32k + l has
   its low 4 bits in nibble (k >= 2) of ql[64h + 32(k & 1) + l] and its high
   2 bits at bits 2k..2k+1 of qh[32h + l]; minus 32. */
void mllm_vec_dot_q6_k_simd128(int n, float *s, const void *vx, const void *vy) {
    const mllm_block_q6_k *x = vx;
    const mllm_block_q8_k32 *y = vy;
    static const int32_t zero[8];
    const v128_t low4 = wasm_i8x16_splat(0x0f), three = wasm_i8x16_splat(3), off = wasm_i8x16_splat(32);
    float sum = 0.0f;
    for (int i = 0; i < n / MLLM_QK_K; i++) {
        int32_t a[8];
        for (int h = 0; h < 2; h++) {
            for (int k = 0; k < 4; k++) { /* 32 values: 16-value groups g, g + 1 of sub-block j */
                const int e = 128 * h + 32 * k, g = e / 16, j = e / 32;
                int32_t acc = 0;
                for (int half = 0; half < 2; half++) {
                    const int l = 16 * half;
                    const v128_t ql = wasm_v128_load(x[i].ql + 64 * h + 32 * (k & 1) + l);
                    const v128_t qh = wasm_v128_load(x[i].qh + 32 * h + l);
                    const v128_t low = k < 2 ? wasm_v128_and(ql, low4) : wasm_u8x16_shr(ql, 4);
                    const v128_t high = wasm_v128_and(wasm_u8x16_shr(qh, 2 * k), three);
                    const v128_t q = wasm_i8x16_sub(wasm_v128_or(low, wasm_i8x16_shl(high, 4)), off);
                    acc += x[i].scales[g + half] * mllm_hsum_i32x4(mllm_dot_i8x16(q, wasm_v128_load(y[i].qs + e + l)));
                }
                a[j] = acc;
            }
        }
        sum += kq32_combine(a, zero, y[i].d, mllm_f16_to_f32(x[i].d), 0.0f);
    }
    *s = sum;
}
