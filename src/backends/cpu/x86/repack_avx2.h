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

/* One mllm_packed_group_fn calling T(RN, block *, nb, X, xs, Y, ys): T##_RN. */
#define PACKED_GROUP_FN(T, BT, RN)                                                                  \
    static void T##_##RN(const void *w, int64_t nb, const char *X, size_t xs, float *Y, size_t ys) { \
        T(RN, (const BT *)w, nb, X, xs, Y, ys);                                                    \
    }

/* T for RN = 1..4 as the table T##_set of mllm_packed_group_fn, indexed by
   RN - 1; PACKED_GROUP_SET8: RN = 1..8 as T##_set8 (a driver with tile_n
   up to 8). */
#define PACKED_GROUP_SET(T, BT)                                                           \
    PACKED_GROUP_FN(T, BT, 1) PACKED_GROUP_FN(T, BT, 2) PACKED_GROUP_FN(T, BT, 3)         \
    PACKED_GROUP_FN(T, BT, 4)                                                             \
    static const mllm_packed_group_fn T##_set[PACKED_TILE_N] = {T##_1, T##_2, T##_3, T##_4};
#define PACKED_GROUP_SET8(T, BT)                                                          \
    PACKED_GROUP_FN(T, BT, 1) PACKED_GROUP_FN(T, BT, 2) PACKED_GROUP_FN(T, BT, 3)         \
    PACKED_GROUP_FN(T, BT, 4) PACKED_GROUP_FN(T, BT, 5) PACKED_GROUP_FN(T, BT, 6)         \
    PACKED_GROUP_FN(T, BT, 7) PACKED_GROUP_FN(T, BT, 8)                                   \
    static const mllm_packed_group_fn T##_set8[8] = {T##_1, T##_2, T##_3, T##_4,          \
                                                     T##_5, T##_6, T##_7, T##_8};

/* Makes v a register value at this point. Integer adds reassociate freely,
   so without it GCC collects a tile's whole chain of int16 sums at their
   last use: every maddubs product of the block live at once, spilled to
   the stack (tile_q4_1x8 with 4 rows: ~60 stack accesses per block). */
#define KEEP_IN_REG(v) __asm__("" : "+x"(v))

#endif
