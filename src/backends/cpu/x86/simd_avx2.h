/* Small AVX2 helpers shared by the *_avx2.c files (only they may include this:
   it needs -mavx2 -mfma -mf16c). */
#ifndef MLLM_BACKENDS_CPU_SIMD_AVX2_H
#define MLLM_BACKENDS_CPU_SIMD_AVX2_H
#include <immintrin.h>
#include <string.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

static inline float mm256_hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float f16_to_f32_hw(mllm_f16 h) { return _cvtsh_ss(h); }

/* One f16 scale to 8 float lanes (vpbroadcastw + vcvtph2ps). */
static inline __m256 broadcast_f16(const mllm_f16 *p) {
    return _mm256_cvtph_ps(_mm_set1_epi16((short)*p));
}

/* 32 nibbles -> 32 bytes in [0, 15]: bytes 0..15 from the low nibbles
   (elements 0..15), bytes 16..31 from the high nibbles (elements 16..31). */
static inline __m256i unpack_nibbles_32(const uint8_t *qs) {
    const __m128i v = _mm_loadu_si128((const __m128i *)qs);
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

/* 8 int32 lanes of sum(x*y) over 32 signed bytes (|x| <= 127 or x = -128 with
   |y| <= 127: the pairwise int16 sums cannot saturate). */
static inline __m256i dot_i8_lanes(__m256i x, __m256i y) {
    const __m256i ax = _mm256_sign_epi8(x, x);
    const __m256i sy = _mm256_sign_epi8(y, x);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1));
}

/* Same for unsigned x in [0, 15] (q4_1 quants). */
static inline __m256i dot_u8_i8_lanes(__m256i ux, __m256i y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ux, y), _mm256_set1_epi16(1));
}

/* Lane j = the sum of the 8 int32 lanes of v[j] (exact, 6 hadds). */
static inline __m256i mm256_hsum8_epi32(const __m256i v[8]) {
    const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
    const __m256i q0 = _mm256_hadd_epi32(h01, h23), q1 = _mm256_hadd_epi32(h45, h67);
    return _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20), _mm256_permute2x128_si256(q0, q1, 0x31));
}

/* 8 bf16 -> 8 floats: bf16 is the top half of a float. */
static inline __m256 load_bf16x8(const mllm_bf16 *p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

static inline __m256 load_f16x8(const mllm_f16 *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* Software prefetch of a weight stream, MLLM_PF_AHEAD bytes ahead of p:
   decode is one long sequential read that the hardware prefetcher alone
   leaves stalling on the first load of each block (measured on the q6_Kx8
   tile: ~45% of its samples on that load, and 2.2x the tokens/s with this).
   The address goes through uintptr_t: computed as a pointer past the end of
   the weights, GCC 12 drops the prefetch as if it were undefined behaviour. */
#define MLLM_PF_AHEAD 2048
static inline void prefetch_ahead(const void *p, size_t bytes) {
    const uintptr_t a = (uintptr_t)p + MLLM_PF_AHEAD;
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)(a + o), _MM_HINT_T0);
}

/* 32 bits -> 32 bytes, 0xff where the bit is set (byte j <- bit j): q5's
   fifth bits (quant5_avx2.c, mul_mat_avx2.c). */
static inline __m256i bits_to_bytes(const uint8_t *qh) {
    uint32_t v;
    memcpy(&v, qh, 4);
    const __m256i pick = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)v), pick);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
}

#endif
