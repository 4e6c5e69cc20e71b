/* The per-element and per-row arithmetic of the CUDA kernels (cu_kernels.cu),
   as functions that compile both as CUDA (__host__ __device__) and as plain
   C17. The kernels call them on the device; tests/unit/test_cuda_math.c
   calls the very same functions on the host, in the kernels' order (lanes
   of MLLM_CU_LWS and the same pairwise tree), against the generic C
   kernels, so the math is checked on machines without a GPU. What that
   host test cannot check is the launch itself: grids, shared memory,
   barriers and the device's libm (docs/cuda.md).
   Block layouts are GGUF's (src/core/dtype_blocks.h); bytes are read one at
   a time, so no block needs any alignment. Sums are float, as the OpenCL
   kernels' (src/backends/opencl/kernels.cl). */
#ifndef MLLM_BACKENDS_CUDA_CU_MATH_H
#define MLLM_BACKENDS_CUDA_CU_MATH_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define MLLM_CU_HD __host__ __device__ static inline
#else
#define MLLM_CU_HD static inline
#endif

/* Threads per block of the reductions (one block per output row). */
#define MLLM_CU_LWS 64

MLLM_CU_HD float mllm_cu_bits_f32(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

/* IEEE half (raw bits) to float, exactly (src/core/dtype.c's rule). */
MLLM_CU_HD float mllm_cu_f16(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (e == 0x1f) return mllm_cu_bits_f32(sign | 0x7f800000u | (man << 13));
    if (e == 0) {
        const float v = (float)man * 5.9604644775390625e-8f; /* 2^-24 */
        return sign ? -v : v;
    }
    return mllm_cu_bits_f32(sign | ((e + 112) << 23) | (man << 13));
}

/* the little-endian f16 at p */
MLLM_CU_HD float mllm_cu_f16_at(const uint8_t *p) { return mllm_cu_f16((uint16_t)(p[0] | (p[1] << 8))); }

MLLM_CU_HD float mllm_cu_f32_at(const uint8_t *p) {
    return mllm_cu_bits_f32((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24));
}

/* ---- one value of a block (get_rows) ------------------------------------ */

/* q8_0: 34 bytes: f16 d, 32 x int8; value d * q */
MLLM_CU_HD float mllm_cu_q8_0_value(const uint8_t *blk, int j) {
    return mllm_cu_f16_at(blk) * (float)(int8_t)blk[2 + j];
}

/* q4_0: 18 bytes: f16 d, 16 bytes; element j < 16 is the low nibble of
   byte j, element j + 16 its high nibble; value d * (q - 8) */
MLLM_CU_HD float mllm_cu_q4_0_value(const uint8_t *blk, int j) {
    const uint8_t q = blk[2 + (j & 15)];
    return mllm_cu_f16_at(blk) * (float)((int)(j < 16 ? q & 15 : q >> 4) - 8);
}

/* q4_K's 6-bit scale and min of sub-block j (kquants.h kq_scale_min) */
MLLM_CU_HD void mllm_cu_scale_min_k4(int j, const uint8_t *s, float *sc, float *m) {
    if (j < 4) {
        *sc = (float)(s[j] & 63);
        *m = (float)(s[j + 4] & 63);
    } else {
        *sc = (float)((s[j + 4] & 15) | ((s[j - 4] >> 6) << 4));
        *m = (float)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

/* q4_K: 144 bytes per 256: f16 d, f16 dmin, 12 scale bytes, 128 nibble
   bytes; chunk c of 64 values: the low nibbles of qs[32c..32c+32) are
   sub-block 2c, the high ones 2c + 1; value d * sc * q - dmin * m */
MLLM_CU_HD float mllm_cu_q4_K_value(const uint8_t *blk, int e) {
    const int c = e / 64, l = e % 32, hi = (e / 32) & 1;
    float sc, m;
    mllm_cu_scale_min_k4(2 * c + hi, blk + 4, &sc, &m);
    const uint8_t q = blk[16 + 32 * c + l];
    return mllm_cu_f16_at(blk) * sc * (float)(hi ? q >> 4 : q & 15) - mllm_cu_f16_at(blk + 2) * m;
}

/* q6_K's 6-bit code of value e = 128h + 32k + l: low 4 bits from nibble
   (k >= 2) of ql[64h + 32(k&1) + l], high 2 bits from bits 2k..2k+1 of
   qh[32h + l]; minus 32 */
MLLM_CU_HD int mllm_cu_q6_K_code(const uint8_t *blk, int h, int k, int l) {
    const uint8_t lo = blk[64 * h + 32 * (k & 1) + l];
    const int low4 = k < 2 ? (lo & 15) : (lo >> 4);
    const int high2 = (blk[128 + 32 * h + l] >> (2 * k)) & 3;
    return (low4 | (high2 << 4)) - 32;
}

/* q6_K: 210 bytes per 256: ql[128], qh[64], int8 scales[16], f16 d;
   value d * scales[e/16] * code */
MLLM_CU_HD float mllm_cu_q6_K_value(const uint8_t *blk, int e) {
    const int h = e / 128, k = (e / 32) % 4, l = e % 32;
    return mllm_cu_f16_at(blk + 208) * ((float)(int8_t)blk[192 + e / 16] * (float)mllm_cu_q6_K_code(blk, h, k, l));
}

/* ---- dot products of one weight row with f32 activations ---------------
   Lane `lane` of `nl` takes elements (or blocks) lane, lane + nl, ...; the
   block's threads then add their parts with mllm_cu_tree_sum's order. */

MLLM_CU_HD float mllm_cu_dot_f32(const uint8_t *row, int K, const float *x, int lane, int nl) {
    float s = 0.0f;
    for (int k = lane; k < K; k += nl) s += mllm_cu_f32_at(row + 4 * k) * x[k];
    return s;
}

MLLM_CU_HD float mllm_cu_dot_f16(const uint8_t *row, int K, const float *x, int lane, int nl) {
    float s = 0.0f;
    for (int k = lane; k < K; k += nl) s += mllm_cu_f16_at(row + 2 * k) * x[k];
    return s;
}

MLLM_CU_HD float mllm_cu_q8_0_block_dot(const uint8_t *blk, const float *xb) {
    float t = 0.0f;
    for (int j = 0; j < 32; j++) t += (float)(int8_t)blk[2 + j] * xb[j];
    return mllm_cu_f16_at(blk) * t;
}

MLLM_CU_HD float mllm_cu_q4_0_block_dot(const uint8_t *blk, const float *xb) {
    float t = 0.0f;
    for (int j = 0; j < 16; j++) {
        const uint8_t q = blk[2 + j];
        t += (float)((int)(q & 15) - 8) * xb[j] + (float)((int)(q >> 4) - 8) * xb[j + 16];
    }
    return mllm_cu_f16_at(blk) * t;
}

MLLM_CU_HD float mllm_cu_q4_K_block_dot(const uint8_t *blk, const float *xb) {
    const float d = mllm_cu_f16_at(blk), dmin = mllm_cu_f16_at(blk + 2);
    const uint8_t *qs = blk + 16;
    float s = 0.0f;
    for (int c = 0; c < 4; c++) {
        float s1, m1, s2, m2;
        mllm_cu_scale_min_k4(2 * c, blk + 4, &s1, &m1);
        mllm_cu_scale_min_k4(2 * c + 1, blk + 4, &s2, &m2);
        float q1 = 0.0f, x1 = 0.0f, q2 = 0.0f, x2 = 0.0f;
        for (int l = 0; l < 32; l++) {
            const uint8_t q = qs[32 * c + l];
            const float a = xb[64 * c + l], b = xb[64 * c + 32 + l];
            q1 += (float)(q & 15) * a;
            x1 += a;
            q2 += (float)(q >> 4) * b;
            x2 += b;
        }
        s += d * s1 * q1 - dmin * m1 * x1 + d * s2 * q2 - dmin * m2 * x2;
    }
    return s;
}

MLLM_CU_HD float mllm_cu_q6_K_block_dot(const uint8_t *blk, const float *xb) {
    const float d = mllm_cu_f16_at(blk + 208);
    float s = 0.0f;
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++) {
            float t0 = 0.0f, t1 = 0.0f; /* the two 16-value scale groups */
            for (int l = 0; l < 32; l++) {
                const float v = (float)mllm_cu_q6_K_code(blk, h, k, l) * xb[128 * h + 32 * k + l];
                if (l < 16) t0 += v;
                else t1 += v;
            }
            const int g = (128 * h + 32 * k) / 16;
            s += d * ((float)(int8_t)blk[192 + g] * t0 + (float)(int8_t)blk[192 + g + 1] * t1);
        }
    return s;
}

/* A lane's part of a quantized row: blocks of `qk` values, `bytes` each. */
#define MLLM_CU_DOT_BLOCKS(NAME, QK, BYTES, BLOCK_DOT)                                                        \
    MLLM_CU_HD float NAME(const uint8_t *row, int K, const float *x, int lane, int nl) {                      \
        float s = 0.0f;                                                                                        \
        for (int b = lane; b < K / (QK); b += nl) s += BLOCK_DOT(row + (BYTES) * b, x + (QK) * b);             \
        return s;                                                                                              \
    }
MLLM_CU_DOT_BLOCKS(mllm_cu_dot_q8_0, 32, 34, mllm_cu_q8_0_block_dot)
MLLM_CU_DOT_BLOCKS(mllm_cu_dot_q4_0, 32, 18, mllm_cu_q4_0_block_dot)
MLLM_CU_DOT_BLOCKS(mllm_cu_dot_q4_K, 256, 144, mllm_cu_q4_K_block_dot)
MLLM_CU_DOT_BLOCKS(mllm_cu_dot_q6_K, 256, 210, mllm_cu_q6_K_block_dot)
#undef MLLM_CU_DOT_BLOCKS

/* ---- row ops: a lane's part, then what the row's total gives ----------- */

MLLM_CU_HD float mllm_cu_sumsq_part(const float *x, int n, int lane, int nl) {
    float s = 0.0f;
    for (int i = lane; i < n; i += nl) s += x[i] * x[i];
    return s;
}

MLLM_CU_HD float mllm_cu_sum_part(const float *x, int n, int lane, int nl) {
    float s = 0.0f;
    for (int i = lane; i < n; i += nl) s += x[i];
    return s;
}

MLLM_CU_HD float mllm_cu_var_part(const float *x, int n, float mean, int lane, int nl) {
    float s = 0.0f;
    for (int i = lane; i < n; i += nl) s += (x[i] - mean) * (x[i] - mean);
    return s;
}

/* max over the lane's entries of x * scale */
MLLM_CU_HD float mllm_cu_max_part(const float *x, int n, float scale, int lane, int nl) {
    float m = -INFINITY;
    for (int i = lane; i < n; i += nl) m = fmaxf(m, x[i] * scale);
    return m;
}

/* 1 / sqrt(total / n + eps): rmsnorm (total: sum of squares) and layernorm
   (total: sum of squared deviations) */
MLLM_CU_HD float mllm_cu_norm_scale(float total, int n, float eps) { return 1.0f / sqrtf(total / (float)n + eps); }

/* rmsnorm: the scale applied before the weight, as ops_generic.c */
MLLM_CU_HD float mllm_cu_rms_out(float x, float scale, const float *w, int i) { return w ? (x * scale) * w[i] : x * scale; }

MLLM_CU_HD float mllm_cu_ln_out(float x, float mean, float scale, const float *w, const float *b, int i) {
    const float u = (x - mean) * scale;
    return (w ? u * w[i] : u) + (b ? b[i] : 0.0f);
}

MLLM_CU_HD float mllm_cu_softmax_exp(float x, float scale, float mx) { return expf(x * scale - mx); }

/* Output i of a RoPE'd head x (D floats; D > i): pairs (j, j + n_rot/2)
   for neox, else (2j, 2j + 1), rotated by cs[j], sn[j]; i >= n_rot copies. */
MLLM_CU_HD float mllm_cu_rope_value(const float *x, int i, int n_rot, int neox, const float *cs, const float *sn) {
    if (i >= n_rot) return x[i];
    const int half = n_rot / 2;
    const int j = neox ? (i < half ? i : i - half) : i / 2;
    const int i0 = neox ? j : 2 * j, i1 = neox ? j + half : 2 * j + 1;
    const float x0 = x[i0], x1 = x[i1];
    return i == i0 ? x0 * cs[j] - x1 * sn[j] : x0 * sn[j] + x1 * cs[j];
}

/* ---- elementwise ---------------------------------------------------------- */
MLLM_CU_HD float mllm_cu_silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }

/* GeGLU: gelu_tanh(g) * u */
MLLM_CU_HD float mllm_cu_gelu_mul(float x, float u) {
    return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x))) * u;
}

/* gelu, tanh form (SigLIP's MLP) */
MLLM_CU_HD float mllm_cu_gelu_tanh(float x) {
    return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

/* gelu, erf form (BERT) */
MLLM_CU_HD float mllm_cu_gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

/* logit soft-cap */
MLLM_CU_HD float mllm_cu_softcap(float x, float p) { return p * tanhf(x / p); }

/* ---- attention -------------------------------------------------------------
   Token at position p sees keys [lo, hi]: causal: hi = p, and with a window
   lo = p + 1 - window; not causal: all n_keys. */
MLLM_CU_HD void mllm_cu_attn_range(int p, int n_keys, int window, int causal, int *lo, int *hi) {
    *hi = causal ? p : n_keys - 1;
    *lo = causal && window > 0 && p + 1 > window ? p + 1 - window : 0;
}

/* the KV head query head h reads (GQA: H / Hkv query heads per KV head) */
MLLM_CU_HD int mllm_cu_kv_head(int h, int H, int Hkv) { return h / (H / Hkv); }

MLLM_CU_HD float mllm_cu_dot_serial(const float *a, const float *b, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* ---- the encoders' ops ------------------------------------------------------ */

/* im2col's value at row r, column e = c * k + j: X[r * stride + j - pad][c], 0 outside */
MLLM_CU_HD float mllm_cu_im2col_at(const float *X, int C, int T_in, int k, int stride, int pad, int r, int e) {
    const int c = e / k, j = e % k, ti = r * stride + j - pad;
    return ti >= 0 && ti < T_in ? X[(size_t)ti * C + c] : 0.0f;
}

/* The keys [*lo, *hi) query i of an encoder attention sees: all n_k
   without segments, else those of the last valid segment holding i (the
   CPU writes the segments in order); 0 when none holds it. */
MLLM_CU_HD int mllm_cu_enc_range(const int32_t *segs, int n_segs, int n_k, int i, int *lo, int *hi) {
    *lo = 0, *hi = n_k;
    if (n_segs <= 0) return 1;
    *lo = *hi = -1;
    for (int s = 0; s < n_segs; s++) {
        const int a = segs[s], b = segs[s + 1];
        if (a >= 0 && b > a && b <= n_k && i >= a && i < b) *lo = a, *hi = b;
    }
    return *lo >= 0;
}

/* Largest head the encoder attention takes (device_checks.h's
   MLLM_DEV_ENC_ATTN_MAX_D): a thread keeps one head's sums in registers. */
#define MLLM_CU_ENC_MAX_D 128

/* One query's head q (D values) over keys [lo, hi) of K and V (rows ks and
   vs floats apart, starting at this head): a running softmax (the largest
   score so far subtracted, the sums rescaled when it grows), so no scores
   are stored; o gets D values (kernels.cl's attn_enc). */
MLLM_CU_HD void mllm_cu_attn_enc_row(const float *q, const float *K, const float *V, int64_t ks, int64_t vs, int D,
                                     int lo, int hi, float scale, float *o) {
    float acc[MLLM_CU_ENC_MAX_D];
    for (int d = 0; d < D; d++) acc[d] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int j = lo; j < hi; j++) {
        const float *k = K + j * ks, *v = V + j * vs;
        float s = 0.0f;
        for (int d = 0; d < D; d++) s += q[d] * k[d];
        s *= scale;
        const float mn = fmaxf(m, s), corr = expf(m - mn), p = expf(s - mn);
        l = l * corr + p;
        for (int d = 0; d < D; d++) acc[d] = acc[d] * corr + p * v[d];
        m = mn;
    }
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int d = 0; d < D; d++) o[d] = acc[d] * inv;
}

#endif
