/* The CPU's conversions per dtype (the reference row converters: GGUF's
   quantize_row_*_ref for weights) and, filled once by mllm_cpu_init(), the
   vec_dot of the kernel path this CPU runs. Kernel layouts (q4_0x8, ...) have
   no row here: the packed matmul computes them, mllm_cpu_get_row reads them. */
#include "backends/cpu.h"

#include <pthread.h>

#include "backends/cpu/fp4.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/kquants.h"
#include "backends/cpu/quant5.h"
#include "backends/cpu/repack.h"
#if MLLM_HAVE_WASM_SIMD128
#include <stdlib.h>
#include <string.h>
#include "backends/cpu/wasm/simd128.h"
#endif

static mllm_cpu_type g_types[MLLM_DTYPE_COUNT] = {
    [MLLM_DTYPE_F32] = {.to_float = mllm_row_f32_to_float, .from_float = mllm_row_float_to_f32},
    [MLLM_DTYPE_F16] = {.to_float = mllm_row_f16_to_float, .from_float = mllm_row_float_to_f16},
    [MLLM_DTYPE_BF16] = {.to_float = mllm_row_bf16_to_float, .from_float = mllm_row_float_to_bf16},
    [MLLM_DTYPE_Q4_0] = {.to_float = mllm_dequantize_row_q4_0, .from_float = mllm_quantize_row_q4_0},
    [MLLM_DTYPE_Q4_1] = {.to_float = mllm_dequantize_row_q4_1, .from_float = mllm_quantize_row_q4_1},
    [MLLM_DTYPE_Q8_0] = {.to_float = mllm_dequantize_row_q8_0, .from_float = mllm_quantize_row_q8_0},
    [MLLM_DTYPE_Q8_1] = {.to_float = mllm_dequantize_row_q8_1, .from_float = mllm_quantize_row_q8_1},
    [MLLM_DTYPE_Q5_0] = {.to_float = mllm_dequantize_row_q5_0, .from_float = mllm_quantize_row_q5_0},
    [MLLM_DTYPE_Q5_1] = {.to_float = mllm_dequantize_row_q5_1, .from_float = mllm_quantize_row_q5_1},
    [MLLM_DTYPE_Q4_K] = {.to_float = mllm_dequantize_row_q4_k, .from_float = mllm_quantize_row_q4_k},
    [MLLM_DTYPE_Q5_K] = {.to_float = mllm_dequantize_row_q5_k, .from_float = mllm_quantize_row_q5_k},
    [MLLM_DTYPE_Q6_K] = {.to_float = mllm_dequantize_row_q6_k, .from_float = mllm_quantize_row_q6_k},
    [MLLM_DTYPE_Q8_K] = {.to_float = mllm_dequantize_row_q8_k, .from_float = mllm_quantize_row_q8_k},
    [MLLM_DTYPE_MXFP4] = {.to_float = mllm_dequantize_row_mxfp4, .from_float = mllm_quantize_row_mxfp4},
    [MLLM_DTYPE_W4A32_G32] = {.to_float = mllm_dequantize_row_w4a32_g32, .from_float = mllm_quantize_row_w4a32_g32},
    [MLLM_DTYPE_W4A32_G64] = {.to_float = mllm_dequantize_row_w4a32_g64, .from_float = mllm_quantize_row_w4a32_g64},
    [MLLM_DTYPE_Q8_0S] = {.to_float = mllm_dequantize_row_q8_0s, .from_float = mllm_quantize_row_q8_0s_generic},
    [MLLM_DTYPE_Q8_K32] = {.to_float = mllm_dequantize_row_q8_k32, .from_float = mllm_quantize_row_q8_k32_generic},
};

static const mllm_cpu_type g_none; /* types the CPU has no code for */
static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;

static void init_kernels(void) {
    const char *path = mllm_cpu_path();
    for (int t = 0; t < MLLM_DTYPE_COUNT; t++) {
        const mllm_dtype_traits *tr = mllm_dtype_get(t);
        if (tr && tr->supported) g_types[t].vec_dot = mllm_cpu_vec_dot_for((mllm_dtype)t, path);
#if MLLM_HAVE_WASM_SIMD128
        /* wasm: the SIMD128 kernels, chosen at build time (docs/wasm.md) */
        const char *want = getenv("MLLM_CPU");
        const mllm_vec_dot_fn simd = mllm_vec_dot_simd128_for((mllm_dtype)t);
        if (tr && tr->supported && simd && !(want && strcmp(want, "generic") == 0)) g_types[t].vec_dot = simd;
#endif
    }
}

void mllm_cpu_init(void) { pthread_once(&g_init_once, init_kernels); }

const mllm_cpu_type *mllm_cpu_type_get(int t) {
    mllm_cpu_init();
    if (t < 0 || t >= MLLM_DTYPE_COUNT) return &g_none;
    return &g_types[t];
}
