/* Shared by the AVX2 tiles of the packed layouts (repack_avx2.c,
   repack_kquant_avx2.c); only *_avx2.c files may include it. */
#ifndef MLLM_BACKENDS_CPU_REPACK_AVX2_H
#define MLLM_BACKENDS_CPU_REPACK_AVX2_H
#include <string.h>

#include "backends/cpu/repack.h"
#include "backends/cpu/x86/simd_avx2.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define PACKED_TILE_N MLLM_PACKED_TILE_N /* activation rows per tile */

/* 4 bytes at p to all 8 lanes (one vpbroadcastd from memory). */
static inline __m256i bcast4(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* T(RN, block *, nb, X, xs, Y, ys) for RN = 1..4 as the table T##_set of
   mllm_packed_group_fn, indexed by RN - 1. */
#define PACKED_GROUP_SET(T, BT)                                                                  \
    static void T##_1(const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) { \
        T(1, (const BT *)w, nb, X, xs, Y, ys);                                                  \
    }                                                                                           \
    static void T##_2(const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) { \
        T(2, (const BT *)w, nb, X, xs, Y, ys);                                                  \
    }                                                                                           \
    static void T##_3(const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) { \
        T(3, (const BT *)w, nb, X, xs, Y, ys);                                                  \
    }                                                                                           \
    static void T##_4(const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) { \
        T(4, (const BT *)w, nb, X, xs, Y, ys);                                                  \
    }                                                                                           \
    static const mllm_packed_group_fn T##_set[PACKED_TILE_N] = {T##_1, T##_2, T##_3, T##_4};

#endif
