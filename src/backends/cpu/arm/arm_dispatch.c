/* Which arm64 kernel runs for each dtype on each NEON path: SDOT kernels
   from neon-dotprod up, SMMLA tiles (q8_0, q4_0, q4_1 matmuls) on neon-i8mm.
   Every x8 packed layout runs NEON tiles (SDOT by element from
   neon-dotprod up); on neon-i8mm, q4_0x8, q4_1x8, q5_0x8 and q8_0x8
   matmuls of 2+ activation rows run SMMLA tiles (repack_i8mm.c; the
   k-quant layouts keep the SDOT ones). Dtypes without an entry (q8_1 and
   q8_K rows, mxfp4, w4a32) run the generic C kernels on every NEON path. */
#include "backends/cpu/arm/arm_kernels.h"

mllm_vec_dot_fn mllm_vec_dot_arm(mllm_dtype t, mllm_cpu_isa isa) {
    const bool dp = isa == MLLM_CPU_ISA_NEON_DOTPROD || isa == MLLM_CPU_ISA_NEON_I8MM;
    switch (t) {
    case MLLM_DTYPE_F32: return mllm_vec_dot_f32_neon;
    case MLLM_DTYPE_F16: return mllm_vec_dot_f16_neon;
    case MLLM_DTYPE_BF16: return mllm_vec_dot_bf16_neon;
    case MLLM_DTYPE_Q8_0: return dp ? mllm_vec_dot_q8_0_dotprod : mllm_vec_dot_q8_0_neon;
    case MLLM_DTYPE_Q4_0: return dp ? mllm_vec_dot_q4_0_dotprod : mllm_vec_dot_q4_0_neon;
    case MLLM_DTYPE_Q4_1: return dp ? mllm_vec_dot_q4_1_dotprod : mllm_vec_dot_q4_1_neon;
    case MLLM_DTYPE_Q5_0: return dp ? mllm_vec_dot_q5_0_dotprod : mllm_vec_dot_q5_0_neon;
    case MLLM_DTYPE_Q5_1: return dp ? mllm_vec_dot_q5_1_dotprod : mllm_vec_dot_q5_1_neon;
    case MLLM_DTYPE_Q4_K: return dp ? mllm_vec_dot_q4_k_dotprod : mllm_vec_dot_q4_k_neon;
    case MLLM_DTYPE_Q5_K: return dp ? mllm_vec_dot_q5_k_dotprod : mllm_vec_dot_q5_k_neon;
    case MLLM_DTYPE_Q6_K: return dp ? mllm_vec_dot_q6_k_dotprod : mllm_vec_dot_q6_k_neon;
    default: return NULL;
    }
}

bool mllm_mul_mat_arm(mllm_cpu_isa isa, mllm_dtype wt, const void *W, size_t w_stride, int64_t K, const void *X,
                      size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0, int64_t r1) {
    if (isa != MLLM_CPU_ISA_NEON_I8MM || M < 2) return false; /* decode: the vec_dot loop */
    return mllm_mul_mat_i8mm(wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1);
}

bool mllm_mul_mat_packed_arm(mllm_cpu_isa isa, mllm_dtype wt, const void *W, size_t w_stride, int64_t K,
                             const void *X, size_t x_stride, int64_t M, float *Y, size_t y_stride, int64_t r0,
                             int64_t r1) {
    const mllm_packed_group_fn *set = NULL;
    if (isa == MLLM_CPU_ISA_NEON_I8MM && M >= 2) set = mllm_packed_tiles_i8mm(wt); /* decode: SDOT */
    if (!set) set = isa == MLLM_CPU_ISA_NEON ? mllm_packed_tiles_neon(wt) : mllm_packed_tiles_dotprod(wt);
    return mllm_mul_mat_packed_tiles(set, wt, W, w_stride, K, X, x_stride, M, Y, y_stride, r0, r1);
}
