/* Chooses the kernel path once per process: the best one this CPU runs, or
   the one MLLM_CPU=generic|avx2|avx512 asks for. Asking for a path the CPU
   (or this build) cannot run falls back to the best available, with one
   warning on stderr. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/fp4.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/kquants.h"
#include "backends/cpu/quant5.h"
#include "backends/cpu/repack.h"
#include "core/cpu_features.h"

/* AVX-512 kernels are not written yet: the path exists in the contract only. */
#define MLLM_HAVE_AVX512_KERNELS 0

static const char *g_path = "generic";
static pthread_once_t g_path_once = PTHREAD_ONCE_INIT;

bool mllm_cpu_has_avx2(void) { return mllm_cpu_features_avx2_path(); }
bool mllm_cpu_has_avx512(void) { return MLLM_HAVE_AVX512_KERNELS && mllm_cpu_features_avx512_path(); }

static void choose_path(void) {
    const char *best = mllm_cpu_has_avx512() ? "avx512" : mllm_cpu_has_avx2() ? "avx2" : "generic";
    const char *want = getenv("MLLM_CPU");
    g_path = best;
    if (!want || !*want) return;
    if (strcmp(want, "generic") == 0) {
        g_path = "generic";
    } else if (strcmp(want, "avx2") == 0 && mllm_cpu_has_avx2()) {
        g_path = "avx2";
    } else if (strcmp(want, "avx512") == 0 && mllm_cpu_has_avx512()) {
        g_path = "avx512";
    } else {
        fprintf(stderr, "mllm: MLLM_CPU=%s is not available on this CPU/build; using %s\n", want,
                best);
    }
}

const char *mllm_cpu_path(void) {
    pthread_once(&g_path_once, choose_path);
    return g_path;
}

const mllm_cpu_ops *mllm_cpu_ops_avx512(void) { return NULL; }

const mllm_cpu_ops *mllm_cpu_ops_get(void) {
    const char *p = mllm_cpu_path();
    if (strcmp(p, "avx2") == 0) {
        const mllm_cpu_ops *o = mllm_cpu_ops_avx2();
        if (o) return o;
    }
    return mllm_cpu_ops_generic();
}

mllm_vec_dot_fn mllm_cpu_vec_dot_for(mllm_dtype t, const char *path) {
    const bool avx2 = path && strcmp(path, "avx2") == 0 && mllm_cpu_has_avx2();
    switch (t) {
    case MLLM_DTYPE_F32: return avx2 ? mllm_vec_dot_f32_avx2 : mllm_vec_dot_f32_generic;
    case MLLM_DTYPE_F16: return avx2 ? mllm_vec_dot_f16_avx2 : mllm_vec_dot_f16_generic;
    case MLLM_DTYPE_BF16: return avx2 ? mllm_vec_dot_bf16_avx2 : mllm_vec_dot_bf16_generic;
    case MLLM_DTYPE_Q8_0: return avx2 ? mllm_vec_dot_q8_0_avx2 : mllm_vec_dot_q8_0_generic;
    case MLLM_DTYPE_Q4_0: return avx2 ? mllm_vec_dot_q4_0_avx2 : mllm_vec_dot_q4_0_generic;
    case MLLM_DTYPE_Q4_1: return avx2 ? mllm_vec_dot_q4_1_avx2 : mllm_vec_dot_q4_1_generic;
    case MLLM_DTYPE_Q8_1: return mllm_vec_dot_q8_1_generic;
    case MLLM_DTYPE_Q5_0: return avx2 ? mllm_vec_dot_q5_0_avx2 : mllm_vec_dot_q5_0_generic;
    case MLLM_DTYPE_Q5_1: return avx2 ? mllm_vec_dot_q5_1_avx2 : mllm_vec_dot_q5_1_generic;
    case MLLM_DTYPE_Q4_K: return avx2 ? mllm_vec_dot_q4_k_avx2 : mllm_vec_dot_q4_k_generic;
    case MLLM_DTYPE_Q5_K: return avx2 ? mllm_vec_dot_q5_k_avx2 : mllm_vec_dot_q5_k_generic;
    case MLLM_DTYPE_Q6_K: return avx2 ? mllm_vec_dot_q6_k_avx2 : mllm_vec_dot_q6_k_generic;
    case MLLM_DTYPE_Q8_K: return mllm_vec_dot_q8_k_generic;
    case MLLM_DTYPE_MXFP4: return avx2 ? mllm_vec_dot_mxfp4_avx2 : mllm_vec_dot_mxfp4_generic;
    case MLLM_DTYPE_W4A32_G32: return avx2 ? mllm_vec_dot_w4a32_g32_avx2 : mllm_vec_dot_w4a32_g32_generic;
    case MLLM_DTYPE_W4A32_G64: return avx2 ? mllm_vec_dot_w4a32_g64_avx2 : mllm_vec_dot_w4a32_g64_generic;
    default: return NULL;
    }
}

void mllm_cpu_quantize_row(mllm_dtype t, const float *x, void *y, int64_t n) {
    const bool avx2 = strcmp(mllm_cpu_path(), "generic") != 0;
    switch (t) {
    case MLLM_DTYPE_Q8_0:
        (avx2 ? mllm_quantize_row_q8_0_act_avx2 : mllm_quantize_row_q8_0_act_generic)(x, y, n);
        return;
    case MLLM_DTYPE_Q8_0S:
        (avx2 ? mllm_quantize_row_q8_0s_avx2 : mllm_quantize_row_q8_0s_generic)(x, y, n);
        return;
    case MLLM_DTYPE_Q8_K32:
        (avx2 ? mllm_quantize_row_q8_k32_avx2 : mllm_quantize_row_q8_k32_generic)(x, y, n);
        return;
    case MLLM_DTYPE_Q8_1:
        (avx2 ? mllm_quantize_row_q8_1_act_avx2 : mllm_quantize_row_q8_1_act_generic)(x, y, n);
        return;
    case MLLM_DTYPE_F16:
        (avx2 ? mllm_row_float_to_f16_avx2 : mllm_row_float_to_f16)(x, y, n);
        return;
    default: {
        const mllm_cpu_type *ct = mllm_cpu_type_get(t);
        if (ct->from_float) ct->from_float(x, y, n);
    }
    }
}
