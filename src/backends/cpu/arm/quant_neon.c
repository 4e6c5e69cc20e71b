/* NEON activation quantizers (q8_0 / q8_1 / q8_K32 as llama.cpp's run-time
   ones, and f16): the same bytes as the generic ones; and f16 / bf16 rows
   widened to f32 (exact conversions, the same values as to_float). amax through FMAXNM
   (fmaxf's NaN rule), x * id rounded by FCVTNS (to nearest even, = rintf in
   the default rounding mode), f16 by FCVTN (round to nearest even, = the
   exact conversion of mllm_row_float_to_f16). */
#include <math.h>

#include "backends/cpu/arm/arm_kernels.h"
#include "backends/cpu/arm/neon_util.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/kquants.h"
#include "backends/cpu/repack.h"

/* 32 values: the amax and the quants q = round(x * 127 / amax). */
static inline float quant32(const float *x, int8_t *q) {
    float32x4_t v[8], m = vdupq_n_f32(0.0f);
    for (int k = 0; k < 8; k++) {
        v[k] = vld1q_f32(x + 4 * k);
        m = vmaxnmq_f32(m, vabsq_f32(v[k]));
    }
    const float amax = vmaxnmvq_f32(m);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int k = 0; k < 8; k += 2) {
        const int16x8_t h = vcombine_s16(vmovn_s32(vcvtnq_s32_f32(vmulq_n_f32(v[k], id))),
                                         vmovn_s32(vcvtnq_s32_f32(vmulq_n_f32(v[k + 1], id))));
        vst1_s8(q + 4 * k, vmovn_s16(h));
    }
    return amax;
}

static void q8_0_act(const float *src, void *dst, int64_t n) {
    mllm_block_q8_0 *y = dst;
    for (int64_t i = 0; i < n / MLLM_QK8_0; i++) y[i].d = mllm_f32_to_f16(quant32(src + 32 * i, y[i].qs) / 127.0f);
}

static void q8_1_act(const float *src, void *dst, int64_t n) {
    mllm_block_q8_1 *y = dst;
    for (int64_t i = 0; i < n / MLLM_QK8_1; i++) {
        const float d = quant32(src + 32 * i, y[i].qs) / 127.0f;
        const int sum = vaddlvq_s8(vld1q_s8(y[i].qs)) + vaddlvq_s8(vld1q_s8(y[i].qs + 16));
        y[i].d = mllm_f32_to_f16(d);
        y[i].s = mllm_f32_to_f16(d * (float)sum);
    }
}

static void q8_k32(const float *src, void *dst, int64_t n) {
    mllm_block_q8_k32 *y = dst;
    for (int64_t i = 0; i < n / MLLM_QK_K; i++) {
        for (int j = 0; j < 8; j++) y[i].d[j] = quant32(src + MLLM_QK_K * i + 32 * j, y[i].qs + 32 * j) / 127.0f;
        for (int g = 0; g < MLLM_QK_K / 16; g++) y[i].bsums[g] = (int16_t)vaddlvq_s8(vld1q_s8(y[i].qs + 16 * g));
    }
}

static void f32_to_f16(const float *src, void *dst, int64_t n) {
    mllm_f16 *y = dst;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1_u16(y + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(src + i))));
    if (i < n) mllm_row_float_to_f16(src + i, y + i, n - i);
}

void mllm_widen_row_neon(mllm_dtype t, const void *src, float *dst, int64_t n) {
    const uint16_t *x = src;
    int64_t i = 0;
    if (t == MLLM_DTYPE_F16)
        for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, neon_load_f16x4(x + i));
    else
        for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, neon_load_bf16x4(x + i));
    for (; i < n; i++) dst[i] = t == MLLM_DTYPE_F16 ? mllm_f16_to_f32(x[i]) : mllm_bf16_to_f32(x[i]);
}

bool mllm_quantize_row_arm(mllm_dtype t, const float *x, void *y, int64_t n) {
    switch (t) {
    case MLLM_DTYPE_Q8_0: q8_0_act(x, y, n); return true;
    case MLLM_DTYPE_Q8_0S: /* the q8_0 bytes, regrouped */
        q8_0_act(x, y, n);
        mllm_q8_0_to_q8_0s_in_place(y, n);
        return true;
    case MLLM_DTYPE_Q8_1: q8_1_act(x, y, n); return true;
    case MLLM_DTYPE_Q8_K32: q8_k32(x, y, n); return true;
    case MLLM_DTYPE_F16: f32_to_f16(x, y, n); return true;
    default: return false; /* the rest: generic */
    }
}
