/* k-quant quantizers: q4_K, q5_K, q6_K from floats, step for step as ggml's
   quantize_row_q{4,5,6}_K_ref (what llama-quantize writes when it has no
   importance matrix), so our files are byte-identical to llama.cpp's.

   Bit-exactness depends on doing every float operation in ggml's order and
   type (float, not double; no fused multiply-add): this file is compiled
   without ISA flags, so the compiler cannot contract a*b+c into an FMA. */
#include <math.h>
#include <string.h>

#include "backends/cpu/kquants.h"

#define KQ_GROUP_MAX_EPS 1e-15f /* ggml's GROUP_MAX_EPS: "all zero" below it */

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }

/* Asymmetric search (ggml's make_qkx2_quants): quants L in [0, nmax] with
   x ~ scale*L - the_min. Starts from the min/max grid, then tries nstep+1
   stretched grids, keeping the weighted-error best least-squares fit. */
static float make_qkx2(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                       float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        const int l = kq_nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)imax(0, imin(nmax, l));
        float diff = scale * (float)L[i] + min - x[i];
        diff = diff * diff;
        best_error += weights[i] * diff;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = kq_nearest_int(iscale * (x[i] - min));
            l = imax(0, imin(nmax, l));
            Laux[i] = (uint8_t)l;
            const float w = weights[i];
            sum_l += w * (float)l;
            sum_l2 += w * (float)l * (float)l;
            sum_xl += w * (float)l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * (float)Laux[i] + this_min - x[i];
                diff = diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/* Symmetric search (ggml's make_qx_quants with rmse_type 1, weights x^2):
   L = l + nmax, l in [-nmax, nmax-1]; tries 18 scales around -nmax/max. */
static float make_qx(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = fabsf(x[i]);
        if (ax > amax) amax = ax, max = x[i];
    }
    if (amax < KQ_GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = kq_nearest_int(iscale * x[i]);
        l = imax(-nmax, imin(nmax - 1, l));
        L[i] = (int8_t)(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = kq_nearest_int(iscale * x[i]);
            l = imax(-nmax, imin(nmax - 1, l));
            const float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                const int l = kq_nearest_int(iscale * x[i]);
                L[i] = (int8_t)(nmax + imax(-nmax, imin(nmax - 1, l)));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Shared by q4_K and q5_K: per sub-block of 32, fit (scale, min) with
   weights av_x + |x|; quantize the 8 scales and 8 mins to 6 bits against the
   largest of each; pack them; requantize every value with the rounded
   scales. L gets the quants in value order (0..nmax). */
static void kq_fit_scales_mins(const float *x, int nmax, float rmin, float rdelta, int nstep,
                               uint8_t *scales12, mllm_f16 *d_out, mllm_f16 *dmin_out, uint8_t *L) {
    uint8_t Laux[32];
    float weights[32], mins[8], scales[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = make_qkx2(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, rdelta, nstep);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    memset(scales12, 0, 12);
    for (int j = 0; j < 8; ++j) {
        uint8_t ls = (uint8_t)kq_nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)kq_nearest_int(inv_min * mins[j]);
        if (ls > 63) ls = 63;
        if (lm > 63) lm = 63;
        if (j < 4) {
            scales12[j] = ls;
            scales12[j + 4] = lm;
        } else {
            scales12[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
            scales12[j - 4] |= (uint8_t)((ls >> 4) << 6);
            scales12[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *d_out = mllm_f32_to_f16(max_scale / 63.f);
    *dmin_out = mllm_f32_to_f16(max_min / 63.f);
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        kq_scale_min(j, scales12, &sc, &m);
        const float d = mllm_f16_to_f32(*d_out) * (float)sc;
        if (d == 0) continue; /* keep the search's quants, as ggml does */
        const float dm = mllm_f16_to_f32(*dmin_out) * (float)m;
        for (int ii = 0; ii < 32; ++ii) {
            const int l = kq_nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = (uint8_t)imax(0, imin(nmax, l));
        }
    }
}

void mllm_quantize_row_q4_k(const float *src, void *dst, int64_t n) {
    mllm_block_q4_k *y = dst;
    uint8_t L[MLLM_QK_K];
    for (int64_t i = 0; i < n / MLLM_QK_K; i++) {
        const float *x = src + i * MLLM_QK_K;
        kq_fit_scales_mins(x, 15, -1.f, 0.1f, 20, y[i].scales, &y[i].d, &y[i].dmin, L);
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; ++l)
                y[i].qs[32 * c + l] = (uint8_t)(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
    }
}

void mllm_quantize_row_q5_k(const float *src, void *dst, int64_t n) {
    mllm_block_q5_k *y = dst;
    uint8_t L[MLLM_QK_K];
    for (int64_t i = 0; i < n / MLLM_QK_K; i++) {
        const float *x = src + i * MLLM_QK_K;
        kq_fit_scales_mins(x, 31, -0.5f, 0.1f, 15, y[i].scales, &y[i].d, &y[i].dmin, L);
        memset(y[i].qh, 0, sizeof y[i].qh);
        for (int c = 0; c < 4; c++) {
            for (int l = 0; l < 32; ++l) {
                const int l1 = L[64 * c + l], l2 = L[64 * c + 32 + l];
                y[i].qs[32 * c + l] = (uint8_t)((l1 & 0xF) | ((l2 & 0xF) << 4));
                y[i].qh[l] |= (uint8_t)(((l1 >> 4) << (2 * c)) | ((l2 >> 4) << (2 * c + 1)));
            }
        }
    }
}

void mllm_quantize_row_q6_k(const float *src, void *dst, int64_t n) {
    mllm_block_q6_k *y = dst;
    int8_t L[MLLM_QK_K];
    float scales[MLLM_QK_K / 16];
    for (int64_t i = 0; i < n / MLLM_QK_K; i++) {
        const float *x = src + i * MLLM_QK_K;
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < MLLM_QK_K / 16; ++ib) {
            const float scale = make_qx(16, 32, x + 16 * ib, L + 16 * ib);
            scales[ib] = scale;
            if (fabsf(scale) > max_abs_scale) max_abs_scale = fabsf(scale), max_scale = scale;
        }
        if (max_abs_scale < KQ_GROUP_MAX_EPS) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -128.f / max_scale;
        y[i].d = mllm_f32_to_f16(1 / iscale);
        for (int ib = 0; ib < MLLM_QK_K / 16; ++ib)
            y[i].scales[ib] = (int8_t)imin(127, kq_nearest_int(iscale * scales[ib]));
        for (int j = 0; j < MLLM_QK_K / 16; ++j) {
            const float d = mllm_f16_to_f32(y[i].d) * (float)y[i].scales[j];
            if (d == 0) continue;
            for (int ii = 0; ii < 16; ++ii) {
                const int l = kq_nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = (int8_t)(imax(-32, imin(31, l)) + 32);
            }
        }
        /* Layout as q6_k_unpack in kquant_generic.c reads it. */
        for (int h = 0; h < 2; h++) {
            const int8_t *Lh = L + 128 * h;
            for (int l = 0; l < 32; ++l) {
                y[i].ql[64 * h + l] = (uint8_t)((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
                y[i].ql[64 * h + 32 + l] = (uint8_t)((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
                y[i].qh[32 * h + l] = (uint8_t)((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) |
                                                ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6));
            }
        }
    }
}
