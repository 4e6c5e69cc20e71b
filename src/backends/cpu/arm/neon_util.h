/* Small NEON helpers shared by the arm64 kernels (the .c files of arm/ only). */
#ifndef MLLM_BACKENDS_CPU_ARM_NEON_UTIL_H
#define MLLM_BACKENDS_CPU_ARM_NEON_UTIL_H
#include <arm_neon.h>
#include <stdint.h>

#include "core/dtype.h"

/* acc += the 4 partial sums of a . b over 16 int8 lanes, without SDOT:
   widening multiplies into int16 (|q*q'| <= 16384), pairwise added into
   int32. The total over the 16 lanes is exact, as SDOT's is. */
static inline int32x4_t neon_dot_s8(int32x4_t acc, int8x16_t a, int8x16_t b) {
    const int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    const int16x8_t hi = vmull_high_s8(a, b);
    return vpadalq_s16(vpadalq_s16(acc, lo), hi);
}

/* 4 / 8 f16 values (unaligned) widened to f32: FCVTL is baseline Armv8. */
static inline float32x4_t neon_load_f16x4(const mllm_f16 *p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

/* bf16 is the high half of an f32. */
static inline float32x4_t neon_load_bf16x4(const mllm_bf16 *p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

/* The 32 low / high nibbles of 16 bytes as int8 lanes. */
static inline int8x16_t neon_lo_nibbles(uint8x16_t v) { return vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0f))); }
static inline int8x16_t neon_hi_nibbles(uint8x16_t v) { return vreinterpretq_s8_u8(vshrq_n_u8(v, 4)); }

/* Bit k of each byte at bit 4, the other bits 0 (k a literal after
   inlining: the shifts take immediates); the
   fifth bits of q5_0 / q5_K, in the SDOT and the SMMLA tiles alike. */
static inline __attribute__((always_inline)) uint8x16_t mllm_neon_bit_to_4(uint8x16_t v, int k) {
    const uint8x16_t b4 = vdupq_n_u8(0x10);
    switch (k) {
    case 0: return vandq_u8(vshlq_n_u8(v, 4), b4);
    case 1: return vandq_u8(vshlq_n_u8(v, 3), b4);
    case 2: return vandq_u8(vshlq_n_u8(v, 2), b4);
    case 3: return vandq_u8(vshlq_n_u8(v, 1), b4);
    case 4: return vandq_u8(v, b4);
    case 5: return vandq_u8(vshrq_n_u8(v, 1), b4);
    case 6: return vandq_u8(vshrq_n_u8(v, 2), b4);
    default: return vandq_u8(vshrq_n_u8(v, 3), b4);
    }
}

#endif
