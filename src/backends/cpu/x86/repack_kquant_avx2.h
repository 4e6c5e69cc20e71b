/* The AVX2 k-quant tiles of repack_kquant_avx2.c as sets of 8 (tiles of
   1..8 activation rows, indexed by RN - 1), for a driver of width up to 8
   (mllm_mul_mat_packed_tiles_n, repack.h): q4_Kx8, q5_Kx8, q6_Kx8, NULL for
   other types. Every output is one tile's whatever its width (the float
   steps per lane do not depend on RN), so widths do not change results.
   Only *_avx2.c files and tests / benchmarks built for x86 may use it. */
#ifndef MLLM_BACKENDS_CPU_X86_REPACK_KQUANT_AVX2_H
#define MLLM_BACKENDS_CPU_X86_REPACK_KQUANT_AVX2_H
#include "backends/cpu/repack.h"

const mllm_packed_group_fn *mllm_kquant_x8_tiles8_avx2(mllm_dtype t);

#endif
