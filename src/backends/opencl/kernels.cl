/* OpenCL C kernels of the OpenCL backend (OpenCL C 1.2: what PoCL and phone
   GPU drivers take). Each mirrors the generic C kernel of the same op in
   src/backends/cpu (ops_generic.c, quant_generic.c, kquant_generic.c) and
   the graph op's meaning in src/graph/graph.h; the host side is ocl_ops.c,
   and tests/unit/test_opencl_ops.c checks every kernel against the CPU.
   Accumulation is in float: phone GPUs often have no double. Reductions
   run over a work-group of LWS items in local memory, pairwise, which is
   closer to the exact sum than one long serial float sum. */

#define LWS 64

/* Sums part[0..LWS) into part[0]; every item of the group must call it. */
static void group_sum(local float *part, int lid) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = LWS / 2; o > 0; o >>= 1) {
        if (lid < o) part[lid] += part[lid + o];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

static void group_max(local float *part, int lid) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = LWS / 2; o > 0; o >>= 1) {
        if (lid < o) part[lid] = fmax(part[lid], part[lid + o]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* ---- dot products of one weight row with f32 activations ---------------
   A work item takes elements (or blocks) lid, lid + LWS, ...; the group
   adds the parts. Block layouts are GGUF's (src/core/dtype_blocks.h). */

static float dot_f32(global const uchar *row, int K, global const float *x, int lid) {
    global const float *w = (global const float *)row;
    float s = 0.0f;
    for (int k = lid; k < K; k += LWS) s += w[k] * x[k];
    return s;
}

static float dot_f16(global const uchar *row, int K, global const float *x, int lid) {
    global const half *w = (global const half *)row;
    float s = 0.0f;
    for (int k = lid; k < K; k += LWS) s += vload_half(k, w) * x[k];
    return s;
}

/* q8_0: 34 bytes: f16 d, 32 x int8; value d * q */
static float dot_q8_0(global const uchar *row, int K, global const float *x, int lid) {
    float s = 0.0f;
    for (int b = lid; b < K / 32; b += LWS) {
        global const uchar *blk = row + 34 * b;
        global const char *q = (global const char *)(blk + 2);
        global const float *xb = x + 32 * b;
        float t = 0.0f;
        for (int j = 0; j < 32; j++) t += (float)q[j] * xb[j];
        s += vload_half(0, (global const half *)blk) * t;
    }
    return s;
}

/* q4_0: 18 bytes: f16 d, 16 bytes; element j is the low nibble of byte j,
   element j + 16 its high nibble; value d * (q - 8) */
static float dot_q4_0(global const uchar *row, int K, global const float *x, int lid) {
    float s = 0.0f;
    for (int b = lid; b < K / 32; b += LWS) {
        global const uchar *blk = row + 18 * b;
        global const float *xb = x + 32 * b;
        float t = 0.0f;
        for (int j = 0; j < 16; j++) {
            const uchar q = blk[2 + j];
            t += (float)((int)(q & 15) - 8) * xb[j] + (float)((int)(q >> 4) - 8) * xb[j + 16];
        }
        s += vload_half(0, (global const half *)blk) * t;
    }
    return s;
}

/* q4_K's 6-bit scale and min of sub-block j (kquants.h kq_scale_min) */
static void scale_min_k4(int j, global const uchar *s, float *sc, float *m) {
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
static float dot_q4_K(global const uchar *row, int K, global const float *x, int lid) {
    float s = 0.0f;
    for (int b = lid; b < K / 256; b += LWS) {
        global const uchar *blk = row + 144 * b;
        const float d = vload_half(0, (global const half *)blk), dmin = vload_half(1, (global const half *)blk);
        global const uchar *sc = blk + 4, *qs = blk + 16;
        global const float *xb = x + 256 * b;
        for (int c = 0; c < 4; c++) {
            float s1, m1, s2, m2;
            scale_min_k4(2 * c, sc, &s1, &m1);
            scale_min_k4(2 * c + 1, sc, &s2, &m2);
            float q1 = 0.0f, x1 = 0.0f, q2 = 0.0f, x2 = 0.0f;
            for (int l = 0; l < 32; l++) {
                const uchar q = qs[32 * c + l];
                const float a = xb[64 * c + l], bb = xb[64 * c + 32 + l];
                q1 += (float)(q & 15) * a;
                x1 += a;
                q2 += (float)(q >> 4) * bb;
                x2 += bb;
            }
            s += d * s1 * q1 - dmin * m1 * x1 + d * s2 * q2 - dmin * m2 * x2;
        }
    }
    return s;
}

/* q6_K: 210 bytes per 256: ql[128], qh[64], int8 scales[16], f16 d.
   Value e = 128h + 32k + l: low 4 bits nibble (k >= 2) of ql[64h + 32(k&1)
   + l], high 2 bits bits 2k..2k+1 of qh[32h + l]; d * scales[e/16] * (q - 32) */
static float dot_q6_K(global const uchar *row, int K, global const float *x, int lid) {
    float s = 0.0f;
    for (int b = lid; b < K / 256; b += LWS) {
        global const uchar *blk = row + 210 * b;
        global const uchar *ql = blk, *qh = blk + 128;
        global const char *scales = (global const char *)(blk + 192);
        const float d = vload_half(104, (global const half *)blk);
        global const float *xb = x + 256 * b;
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++) {
                float t0 = 0.0f, t1 = 0.0f; /* the two 16-value scale groups */
                for (int l = 0; l < 32; l++) {
                    const uchar lo = ql[64 * h + 32 * (k & 1) + l];
                    const int low4 = k < 2 ? (lo & 15) : (lo >> 4);
                    const int high2 = (qh[32 * h + l] >> (2 * k)) & 3;
                    const float v = (float)((low4 | (high2 << 4)) - 32) * xb[128 * h + 32 * k + l];
                    if (l < 16) t0 += v;
                    else t1 += v;
                }
                const int e = 128 * h + 32 * k;
                s += d * ((float)scales[e / 16] * t0 + (float)scales[e / 16 + 1] * t1);
            }
    }
    return s;
}

/* Y[t][n] = dot(W row n, X[t]) (+ bias[n]): W is N rows of row_bytes, X is
   T rows of K floats. Global size (N * LWS, T), local (LWS, 1). */
#define MUL_MAT(NAME, DOT)                                                                                    \
    kernel void NAME(global const uchar *W, ulong row_bytes, int K, int N, global const float *X,            \
                     global float *Y, global const float *bias, int has_bias) {                               \
        const int n = get_group_id(0), t = get_global_id(1), lid = get_local_id(0);                           \
        local float part[LWS];                                                                                \
        part[lid] = DOT(W + (ulong)n * row_bytes, K, X + (ulong)t * (ulong)K, lid);                           \
        group_sum(part, lid);                                                                                 \
        if (lid == 0) Y[(ulong)t * (ulong)N + n] = has_bias ? part[0] + bias[n] : part[0];                    \
    }

MUL_MAT(mul_mat_f32, dot_f32)
MUL_MAT(mul_mat_f16, dot_f16)
MUL_MAT(mul_mat_q8_0, dot_q8_0)
MUL_MAT(mul_mat_q4_0, dot_q4_0)
MUL_MAT(mul_mat_q4_K, dot_q4_K)
MUL_MAT(mul_mat_q6_K, dot_q6_K)

/* ---- rows of an embedding table (GET_ROWS) -----------------------------
   Y[t][k] = value k of row ids[t]; global size (K, T). */
kernel void get_rows_f32(global const uchar *W, ulong row_bytes, int K, global const int *ids, global float *Y) {
    const int k = get_global_id(0), t = get_global_id(1);
    Y[(ulong)t * K + k] = ((global const float *)(W + (ulong)ids[t] * row_bytes))[k];
}

kernel void get_rows_f16(global const uchar *W, ulong row_bytes, int K, global const int *ids, global float *Y) {
    const int k = get_global_id(0), t = get_global_id(1);
    Y[(ulong)t * K + k] = vload_half(k, (global const half *)(W + (ulong)ids[t] * row_bytes));
}

kernel void get_rows_q8_0(global const uchar *W, ulong row_bytes, int K, global const int *ids, global float *Y) {
    const int k = get_global_id(0), t = get_global_id(1);
    global const uchar *blk = W + (ulong)ids[t] * row_bytes + 34 * (k / 32);
    Y[(ulong)t * K + k] = vload_half(0, (global const half *)blk) * (float)((global const char *)(blk + 2))[k % 32];
}

kernel void get_rows_q4_0(global const uchar *W, ulong row_bytes, int K, global const int *ids, global float *Y) {
    const int k = get_global_id(0), t = get_global_id(1), j = k % 32;
    global const uchar *blk = W + (ulong)ids[t] * row_bytes + 18 * (k / 32);
    const uchar q = blk[2 + (j & 15)];
    Y[(ulong)t * K + k] = vload_half(0, (global const half *)blk) * (float)((int)(j < 16 ? q & 15 : q >> 4) - 8);
}

/* ---- row ops ------------------------------------------------------------ */

/* Per row of n: x / sqrt(mean(x^2) + eps), times w when has_w (the scale
   applied before the weight, as ops_generic.c). One group per row. */
kernel void rmsnorm(global const float *X, global const float *w, int has_w, global float *Y, int n, float eps) {
    const int r = get_group_id(0), lid = get_local_id(0);
    global const float *x = X + (ulong)r * n;
    global float *y = Y + (ulong)r * n;
    local float part[LWS];
    float s = 0.0f;
    for (int i = lid; i < n; i += LWS) s += x[i] * x[i];
    part[lid] = s;
    group_sum(part, lid);
    const float scale = 1.0f / sqrt(part[0] / (float)n + eps);
    for (int i = lid; i < n; i += LWS) y[i] = has_w ? (x[i] * scale) * w[i] : x[i] * scale;
}

/* (x - mean) / sqrt(var + eps) * w + b; w, b optional (flags bit 0, 1) */
kernel void layernorm(global const float *X, global const float *w, global const float *b, int flags,
                      global float *Y, int n, float eps) {
    const int r = get_group_id(0), lid = get_local_id(0);
    global const float *x = X + (ulong)r * n;
    global float *y = Y + (ulong)r * n;
    local float part[LWS];
    float s = 0.0f;
    for (int i = lid; i < n; i += LWS) s += x[i];
    part[lid] = s;
    group_sum(part, lid);
    const float mean = part[0] / (float)n;
    barrier(CLK_LOCAL_MEM_FENCE);
    float v = 0.0f;
    for (int i = lid; i < n; i += LWS) v += (x[i] - mean) * (x[i] - mean);
    part[lid] = v;
    group_sum(part, lid);
    const float scale = 1.0f / sqrt(part[0] / (float)n + eps);
    for (int i = lid; i < n; i += LWS) {
        const float u = (x[i] - mean) * scale;
        y[i] = ((flags & 1) ? u * w[i] : u) + ((flags & 2) ? b[i] : 0.0f);
    }
}

/* In place, per row of n: softmax(x * scale); a row with every entry -inf
   (all masked) becomes zeros, as ops_generic.c. One group per row. */
kernel void softmax(global float *X, int n, float scale) {
    const int r = get_group_id(0), lid = get_local_id(0);
    global float *x = X + (ulong)r * n;
    local float part[LWS];
    float m = -INFINITY;
    for (int i = lid; i < n; i += LWS) m = fmax(m, x[i] * scale);
    part[lid] = m;
    group_max(part, lid);
    /* A row masked entirely (every entry -inf) becomes zeros: each exp is
       then 0 and so is the sum. No early return: PoCL 3.1 on AVX-512 CPUs
       crashed in this kernel's work-group loop when a return came between
       its barriers. */
    const float mx = part[0] == -INFINITY ? 0.0f : part[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    float s = 0.0f;
    for (int i = lid; i < n; i += LWS) {
        const float e = exp(x[i] * scale - mx);
        x[i] = e;
        s += e;
    }
    part[lid] = s;
    group_sum(part, lid);
    const float inv = part[0] > 0.0f ? 1.0f / part[0] : 0.0f;
    for (int i = lid; i < n; i += LWS) x[i] *= inv;
}

/* RoPE over X (D x H x T): the host computes the cos/sin table (T rows of
   n_rot/2 each, ggml's arithmetic: graph/compute.c rope_table, YaRN and
   M-RoPE included), the kernel rotates the pairs; dimensions past n_rot
   are copied. neox: pairs (i, i + n_rot/2), else (2i, 2i + 1).
   Global size (D, H, T). */
kernel void rope(global const float *X, global float *Y, global const float *cs, global const float *sn, int n_rot,
                 int neox) {
    const int i = get_global_id(0), h = get_global_id(1), t = get_global_id(2);
    const int D = get_global_size(0), H = get_global_size(1), half_rot = n_rot / 2;
    const ulong base = ((ulong)t * H + h) * D;
    if (i >= n_rot) {
        Y[base + i] = X[base + i];
        return;
    }
    int j, i0, i1;
    if (neox) {
        j = i < half_rot ? i : i - half_rot;
        i0 = j, i1 = j + half_rot;
    } else {
        j = i / 2;
        i0 = 2 * j, i1 = 2 * j + 1;
    }
    const float c = cs[(ulong)t * half_rot + j], s = sn[(ulong)t * half_rot + j];
    const float x0 = X[base + i0], x1 = X[base + i1];
    Y[base + i] = i == i0 ? x0 * c - x1 * s : x0 * s + x1 * c;
}

/* ---- elementwise (global size n) --------------------------------------- */
kernel void add_f32(global const float *a, global const float *b, global float *y) {
    const ulong i = get_global_id(0);
    y[i] = a[i] + b[i];
}

kernel void silu_mul(global const float *g, global const float *u, global float *y) {
    const ulong i = get_global_id(0);
    y[i] = g[i] / (1.0f + exp(-g[i])) * u[i];
}

/* GeGLU: gelu_tanh(g) * u */
kernel void gelu_mul(global const float *g, global const float *u, global float *y) {
    const ulong i = get_global_id(0);
    const float x = g[i];
    y[i] = 0.5f * x * (1.0f + tanh(0.7978845608028654f * (x + 0.044715f * x * x * x))) * u[i];
}

/* gelu, erf form (BERT) */
kernel void gelu_erf(global const float *x, global float *y) {
    const ulong i = get_global_id(0);
    y[i] = 0.5f * x[i] * (1.0f + erf(x[i] * 0.70710678118654752f));
}

kernel void scale_f32(global const float *x, global float *y, float p) {
    const ulong i = get_global_id(0);
    y[i] = x[i] * p;
}

/* logit soft-cap: p * tanh(x / p) */
kernel void softcap(global const float *x, global float *y, float p) {
    const ulong i = get_global_id(0);
    y[i] = p * tanh(x[i] / p);
}

/* ---- attention ----------------------------------------------------------
   Q is T x H x D; the cache holds K and V as n_ctx rows of Hkv * D
   (position-major, not the CPU cache's transposed V). Token t sits at
   position pos[t]; causal: it sees keys [lo, pos[t]] with lo = pos[t] + 1
   - window when a window is set; not causal: keys [0, n_keys). Three
   kernels: scores into S (T x H x n_keys, -inf where masked), the softmax
   kernel over its rows, then P x V. */
kernel void attn_scores(global const float *Q, global const float *Kc, global float *S, global const int *pos,
                        int D, int H, int Hkv, int n_keys, float scale, int window, int causal) {
    const int j = get_global_id(0), h = get_global_id(1), t = get_global_id(2);
    const ulong srow = ((ulong)t * H + h) * (ulong)n_keys;
    const int p = pos[t];
    const int hi = causal ? p : n_keys - 1;
    const int lo = causal && window > 0 && p + 1 > window ? p + 1 - window : 0;
    if (j > hi || j < lo) {
        S[srow + j] = -INFINITY;
        return;
    }
    const int kvh = h / (H / Hkv);
    global const float *q = Q + ((ulong)t * H + h) * D;
    global const float *k = Kc + (ulong)j * (ulong)(Hkv * D) + (ulong)kvh * D;
    float s = 0.0f;
    for (int d = 0; d < D; d++) s += q[d] * k[d];
    S[srow + j] = s * scale;
}

/* out[t][h][d] = sum_j P[t][h][j] V[j][kvh][d]; global size (D, H, T) */
kernel void attn_pv(global const float *P, global const float *Vc, global float *O, int H, int Hkv, int n_keys) {
    const int d = get_global_id(0), h = get_global_id(1), t = get_global_id(2);
    const int D = get_global_size(0);
    const int kvh = h / (H / Hkv);
    global const float *p = P + ((ulong)t * H + h) * (ulong)n_keys;
    float s = 0.0f;
    for (int j = 0; j < n_keys; j++) s += p[j] * Vc[(ulong)j * (ulong)(Hkv * D) + (ulong)kvh * D + d];
    O[((ulong)t * H + h) * D + d] = s;
}

/* ---- the encoders' ops -------------------------------------------------- */

/* gelu, tanh form (SigLIP's MLP) */
kernel void gelu_tanh(global const float *x, global float *y) {
    const ulong i = get_global_id(0);
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

/* The columns of a 1-D convolution (graph.h mllm_op_im2col): X holds T_in
   rows of C channels; Y row r, column c * k + j, is X[r * stride + j - pad][c]
   (0 outside). Global size (C * k, T_out). */
kernel void im2col(global const float *X, global float *Y, int C, int T_in, int k, int stride, int pad) {
    const int e = get_global_id(0), r = get_global_id(1);
    const int c = e / k, j = e % k, ti = r * stride + j - pad;
    Y[(ulong)r * get_global_size(0) + e] = ti >= 0 && ti < T_in ? X[(ulong)ti * C + c] : 0.0f;
}

/* Largest head an encoder attention item accumulates (ENC_MAX_D in
   device_checks.h, MLLM_DEV_ENC_ATTN_MAX_D). */
#define ENC_MAX_D 128

/* Attention of an encoder over K and V given as tensors (graph.h
   mllm_op_attention_full and mllm_op_attention_segments): one item per
   (head h, query i), over keys [lo, hi) with a running softmax (the
   largest score so far subtracted, the sums rescaled when it grows), so
   no scores are stored. Rows of Q, K, V are qs, ks, vs floats apart, each
   H heads of D side by side; O is contiguous. n_segs 0: keys [0, n_k);
   else the query's segment of segs (the last valid one holding it, as
   the CPU writes them in order; none: its row is left as it was).
   Global size (H, n_q). */
kernel void attn_enc(global const float *Q, global const float *K, global const float *V, global const int *segs,
                     global float *O, int D, int n_k, long qs, long ks, long vs, int n_segs, float scale) {
    const int h = get_global_id(0), i = get_global_id(1), H = get_global_size(0);
    int lo = 0, hi = n_k;
    if (n_segs > 0) {
        lo = hi = -1;
        for (int s = 0; s < n_segs; s++) {
            const int a = segs[s], b = segs[s + 1];
            if (a >= 0 && b > a && b <= n_k && i >= a && i < b) lo = a, hi = b;
        }
        if (lo < 0) return;
    }
    global const float *q = Q + i * qs + (long)h * D;
    float acc[ENC_MAX_D];
    for (int d = 0; d < D; d++) acc[d] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int j = lo; j < hi; j++) {
        global const float *k = K + j * ks + (long)h * D;
        float s = 0.0f;
        for (int d = 0; d < D; d++) s += q[d] * k[d];
        s *= scale;
        const float mn = fmax(m, s), corr = exp(m - mn), p = exp(s - mn);
        l = l * corr + p;
        global const float *v = V + j * vs + (long)h * D;
        for (int d = 0; d < D; d++) acc[d] = acc[d] * corr + p * v[d];
        m = mn;
    }
    global float *o = O + ((ulong)i * H + h) * D;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    for (int d = 0; d < D; d++) o[d] = acc[d] * inv;
}
