/* CUDA C kernels of the CUDA device layer and their launchers (cu_launch.h).
   Each mirrors the OpenCL kernel of the same op (src/backends/opencl/
   kernels.cl) and so the generic C kernel (src/backends/cpu); the
   arithmetic is cu_math.h's, shared with the host test
   (tests/unit/test_cuda_math.c). Reductions: one block of MLLM_CU_LWS
   threads per output row; lane l takes elements l, l + LWS, ..., and the
   parts are added pairwise in shared memory (block_sum's order is the one
   the host test replays). No fast-math: the kernels round as the C kernels
   do (nvcc's default -prec-div/-prec-sqrt, no --use_fast_math). */
#include <cuda_runtime.h>

#include "backends/cuda/cu_launch.h"
#include "backends/cuda/cu_math.h"

#define LWS MLLM_CU_LWS
/* Threads per block of the elementwise kernels. */
#define EW_THREADS 256
/* The most blocks an elementwise grid takes; each thread strides past it. */
#define EW_MAX_BLOCKS 65535u
/* gridDim.y's limit; the matmul's token loop strides past it. */
#define GRID_Y_MAX 65535

/* Sums part[0..LWS) into part[0] pairwise: at each step o = LWS/2, ..., 1
   lane l < o adds part[l + o]. Every thread of the block must call it. */
__device__ static void block_sum(float *part, int lid) {
    __syncthreads();
    for (int o = LWS / 2; o > 0; o >>= 1) {
        if (lid < o) part[lid] += part[lid + o];
        __syncthreads();
    }
}

__device__ static void block_max(float *part, int lid) {
    __syncthreads();
    for (int o = LWS / 2; o > 0; o >>= 1) {
        if (lid < o) part[lid] = fmaxf(part[lid], part[lid + o]);
        __syncthreads();
    }
}

/* ---- matmul: Y[t][n] = dot(W row n, X[t]) (+ bias[n]) --------------------
   grid (N, min(T, GRID_Y_MAX)), block LWS. */

template <int TYPE> __device__ static float row_dot(const uint8_t *row, int K, const float *x, int lane) {
    switch (TYPE) {
    case MLLM_CU_F32: return mllm_cu_dot_f32(row, K, x, lane, LWS);
    case MLLM_CU_F16: return mllm_cu_dot_f16(row, K, x, lane, LWS);
    case MLLM_CU_Q8_0: return mllm_cu_dot_q8_0(row, K, x, lane, LWS);
    case MLLM_CU_Q4_0: return mllm_cu_dot_q4_0(row, K, x, lane, LWS);
    case MLLM_CU_Q4_K: return mllm_cu_dot_q4_K(row, K, x, lane, LWS);
    default: return mllm_cu_dot_q6_K(row, K, x, lane, LWS);
    }
}

template <int TYPE>
__global__ static void k_mul_mat(const uint8_t *W, size_t row_bytes, int K, int N, const float *X, int T, float *Y,
                                 const float *bias) {
    __shared__ float part[LWS];
    const int n = blockIdx.x, lid = threadIdx.x;
    for (int t = blockIdx.y; t < T; t += gridDim.y) {
        part[lid] = row_dot<TYPE>(W + (size_t)n * row_bytes, K, X + (size_t)t * (size_t)K, lid);
        block_sum(part, lid);
        if (lid == 0) Y[(size_t)t * (size_t)N + n] = bias ? part[0] + bias[n] : part[0];
        __syncthreads(); /* part[0] is read before the next token overwrites it */
    }
}

/* ---- get_rows: Y[t][k] = value k of row ids[t]; one thread per output --- */
template <int TYPE> __device__ static float row_value(const uint8_t *row, int k) {
    switch (TYPE) {
    case MLLM_CU_F32: return mllm_cu_f32_at(row + 4 * (size_t)k);
    case MLLM_CU_F16: return mllm_cu_f16_at(row + 2 * (size_t)k);
    case MLLM_CU_Q8_0: return mllm_cu_q8_0_value(row + 34 * (size_t)(k / 32), k % 32);
    case MLLM_CU_Q4_0: return mllm_cu_q4_0_value(row + 18 * (size_t)(k / 32), k % 32);
    case MLLM_CU_Q4_K: return mllm_cu_q4_K_value(row + 144 * (size_t)(k / 256), k % 256);
    default: return mllm_cu_q6_K_value(row + 210 * (size_t)(k / 256), k % 256);
    }
}

template <int TYPE>
__global__ static void k_get_rows(const uint8_t *W, size_t row_bytes, int K, const int32_t *ids, int T, float *Y) {
    const size_t total = (size_t)K * (size_t)T;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const size_t t = i / (size_t)K;
        Y[i] = row_value<TYPE>(W + (size_t)ids[t] * row_bytes, (int)(i % (size_t)K));
    }
}

/* ---- row ops: one block per row --------------------------------------------- */
__global__ static void k_rmsnorm(const float *X, const float *w, float *Y, int n, float eps) {
    __shared__ float part[LWS];
    const int lid = threadIdx.x;
    const float *x = X + (size_t)blockIdx.x * n;
    float *y = Y + (size_t)blockIdx.x * n;
    part[lid] = mllm_cu_sumsq_part(x, n, lid, LWS);
    block_sum(part, lid);
    const float scale = mllm_cu_norm_scale(part[0], n, eps);
    for (int i = lid; i < n; i += LWS) y[i] = mllm_cu_rms_out(x[i], scale, w, i);
}

__global__ static void k_layernorm(const float *X, const float *w, const float *b, float *Y, int n, float eps) {
    __shared__ float part[LWS];
    const int lid = threadIdx.x;
    const float *x = X + (size_t)blockIdx.x * n;
    float *y = Y + (size_t)blockIdx.x * n;
    part[lid] = mllm_cu_sum_part(x, n, lid, LWS);
    block_sum(part, lid);
    const float mean = part[0] / (float)n;
    __syncthreads(); /* everyone has read part[0] */
    part[lid] = mllm_cu_var_part(x, n, mean, lid, LWS);
    block_sum(part, lid);
    const float scale = mllm_cu_norm_scale(part[0], n, eps);
    for (int i = lid; i < n; i += LWS) y[i] = mllm_cu_ln_out(x[i], mean, scale, w, b, i);
}

/* In place, per row of n: softmax(x * scale); a row with every entry -inf
   (all masked) becomes zeros, as ops_generic.c. */
__global__ static void k_softmax(float *X, int n, float scale) {
    __shared__ float part[LWS];
    const int lid = threadIdx.x;
    float *x = X + (size_t)blockIdx.x * n;
    part[lid] = mllm_cu_max_part(x, n, scale, lid, LWS);
    block_max(part, lid);
    const float mx = part[0];
    __syncthreads();
    if (mx == -INFINITY) { /* the same for every thread of the block: no barrier is skipped by some only */
        for (int i = lid; i < n; i += LWS) x[i] = 0.0f;
        return;
    }
    float s = 0.0f;
    for (int i = lid; i < n; i += LWS) {
        const float e = mllm_cu_softmax_exp(x[i], scale, mx);
        x[i] = e;
        s += e;
    }
    part[lid] = s;
    block_sum(part, lid);
    const float inv = 1.0f / part[0];
    for (int i = lid; i < n; i += LWS) x[i] *= inv;
}

/* RoPE of X (T x H x D) into Y with the host's cos/sin tables (T rows of
   n_rot/2); one thread per output value. */
__global__ static void k_rope(const float *X, float *Y, const float *cs, const float *sn, int D, int H, int T,
                              int n_rot, int neox) {
    const size_t total = (size_t)D * H * T;
    const int half = n_rot / 2;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const size_t head = i / (size_t)D, t = head / (size_t)H;
        Y[i] = mllm_cu_rope_value(X + head * D, (int)(i % (size_t)D), n_rot, neox, cs + t * half, sn + t * half);
    }
}

__global__ static void k_elementwise(int op, const float *a, const float *b, float *y, size_t n, float p) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        switch (op) {
        case MLLM_CU_EW_ADD: y[i] = a[i] + b[i]; break;
        case MLLM_CU_EW_SILU_MUL: y[i] = mllm_cu_silu_mul(a[i], b[i]); break;
        case MLLM_CU_EW_GELU_MUL: y[i] = mllm_cu_gelu_mul(a[i], b[i]); break;
        case MLLM_CU_EW_GELU: y[i] = mllm_cu_gelu_erf(a[i]); break;
        case MLLM_CU_EW_SCALE: y[i] = a[i] * p; break;
        case MLLM_CU_EW_GELU_TANH: y[i] = mllm_cu_gelu_tanh(a[i]); break;
        default: y[i] = mllm_cu_softcap(a[i], p); break;
        }
    }
}

/* ---- attention: Q (T x H x D), K and V position-major rows of Hkv * D --- */
__global__ static void k_attn_scores(const float *Q, const float *Kc, float *S, const int32_t *pos, int D, int H,
                                     int Hkv, int T, int n_keys, float scale, int window, int causal) {
    const size_t total = (size_t)n_keys * H * T;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const int j = (int)(i % (size_t)n_keys);
        const size_t th = i / (size_t)n_keys; /* t * H + h */
        const int h = (int)(th % (size_t)H), t = (int)(th / (size_t)H);
        int lo, hi;
        mllm_cu_attn_range(pos[t], n_keys, window, causal, &lo, &hi);
        if (j > hi || j < lo) {
            S[i] = -INFINITY;
            continue;
        }
        const float *k = Kc + (size_t)j * (size_t)Hkv * D + (size_t)mllm_cu_kv_head(h, H, Hkv) * D;
        S[i] = mllm_cu_dot_serial(Q + th * D, k, D) * scale;
    }
}

/* O[t][h][d] = sum_j P[t][h][j] V[j][kvh][d] */
__global__ static void k_attn_pv(const float *P, const float *Vc, float *O, int D, int H, int Hkv, int T, int n_keys) {
    const size_t total = (size_t)D * H * T;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const int d = (int)(i % (size_t)D);
        const size_t th = i / (size_t)D;
        const int h = (int)(th % (size_t)H);
        const float *p = P + th * (size_t)n_keys;
        const float *v = Vc + (size_t)mllm_cu_kv_head(h, H, Hkv) * D + d;
        float s = 0.0f;
        for (int j = 0; j < n_keys; j++) s += p[j] * v[(size_t)j * (size_t)Hkv * D];
        O[i] = s;
    }
}

/* ---- the encoders' ops (kernels.cl's im2col and attn_enc) ----------------- */

__global__ static void k_im2col(const float *X, float *Y, int C, int T_in, int k, int stride, int pad, int T_out) {
    const size_t row = (size_t)C * k, total = row * (size_t)T_out;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x)
        Y[i] = mllm_cu_im2col_at(X, C, T_in, k, stride, pad, (int)(i / row), (int)(i % row));
}

/* One thread per (query i, head h); a query in no valid segment keeps its row. */
__global__ static void k_attn_enc(const float *Q, const float *K, const float *V, const int32_t *segs, float *O, int D,
                                  int H, int n_q, int n_k, int64_t qs, int64_t ks, int64_t vs, int n_segs,
                                  float scale) {
    const size_t total = (size_t)H * n_q;
    for (size_t id = (size_t)blockIdx.x * blockDim.x + threadIdx.x; id < total; id += (size_t)gridDim.x * blockDim.x) {
        const int h = (int)(id % (size_t)H), i = (int)(id / (size_t)H);
        int lo, hi;
        if (!mllm_cu_enc_range(segs, n_segs, n_k, i, &lo, &hi)) continue;
        mllm_cu_attn_enc_row(Q + i * qs + (int64_t)h * D, K + (int64_t)h * D, V + (int64_t)h * D, ks, vs, D, lo, hi,
                             scale, O + ((size_t)i * H + h) * D);
    }
}

/* ---- launchers -------------------------------------------------------------- */

static unsigned ew_blocks(size_t n) {
    const size_t b = (n + EW_THREADS - 1) / EW_THREADS;
    return b > EW_MAX_BLOCKS ? EW_MAX_BLOCKS : (unsigned)b;
}

extern "C" cudaError_t mllm_cu_probe(void) {
    cudaFuncAttributes a;
    return cudaFuncGetAttributes(&a, k_softmax);
}

template <int TYPE>
static void mul_mat_t(cudaStream_t s, const uint8_t *W, size_t rb, int K, int N, const float *X, int T, float *Y,
                      const float *bias) {
    const dim3 grid((unsigned)N, (unsigned)(T < GRID_Y_MAX ? T : GRID_Y_MAX));
    k_mul_mat<TYPE><<<grid, LWS, 0, s>>>(W, rb, K, N, X, T, Y, bias);
}

extern "C" cudaError_t mllm_cu_mul_mat(cudaStream_t s, mllm_cu_wtype t, const uint8_t *W, size_t row_bytes, int K,
                                       int N, const float *X, int T, float *Y, const float *bias) {
    switch (t) {
    case MLLM_CU_F32: mul_mat_t<MLLM_CU_F32>(s, W, row_bytes, K, N, X, T, Y, bias); break;
    case MLLM_CU_F16: mul_mat_t<MLLM_CU_F16>(s, W, row_bytes, K, N, X, T, Y, bias); break;
    case MLLM_CU_Q8_0: mul_mat_t<MLLM_CU_Q8_0>(s, W, row_bytes, K, N, X, T, Y, bias); break;
    case MLLM_CU_Q4_0: mul_mat_t<MLLM_CU_Q4_0>(s, W, row_bytes, K, N, X, T, Y, bias); break;
    case MLLM_CU_Q4_K: mul_mat_t<MLLM_CU_Q4_K>(s, W, row_bytes, K, N, X, T, Y, bias); break;
    case MLLM_CU_Q6_K: mul_mat_t<MLLM_CU_Q6_K>(s, W, row_bytes, K, N, X, T, Y, bias); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t mllm_cu_get_rows(cudaStream_t s, mllm_cu_wtype t, const uint8_t *W, size_t row_bytes, int K,
                                        const int32_t *ids, int T, float *Y) {
    const unsigned g = ew_blocks((size_t)K * (size_t)T);
    switch (t) {
    case MLLM_CU_F32: k_get_rows<MLLM_CU_F32><<<g, EW_THREADS, 0, s>>>(W, row_bytes, K, ids, T, Y); break;
    case MLLM_CU_F16: k_get_rows<MLLM_CU_F16><<<g, EW_THREADS, 0, s>>>(W, row_bytes, K, ids, T, Y); break;
    case MLLM_CU_Q8_0: k_get_rows<MLLM_CU_Q8_0><<<g, EW_THREADS, 0, s>>>(W, row_bytes, K, ids, T, Y); break;
    case MLLM_CU_Q4_0: k_get_rows<MLLM_CU_Q4_0><<<g, EW_THREADS, 0, s>>>(W, row_bytes, K, ids, T, Y); break;
    case MLLM_CU_Q4_K: k_get_rows<MLLM_CU_Q4_K><<<g, EW_THREADS, 0, s>>>(W, row_bytes, K, ids, T, Y); break;
    case MLLM_CU_Q6_K: k_get_rows<MLLM_CU_Q6_K><<<g, EW_THREADS, 0, s>>>(W, row_bytes, K, ids, T, Y); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t mllm_cu_rmsnorm(cudaStream_t s, const float *X, const float *w, float *Y, int n, int rows,
                                       float eps) {
    k_rmsnorm<<<(unsigned)rows, LWS, 0, s>>>(X, w, Y, n, eps);
    return cudaGetLastError();
}

extern "C" cudaError_t mllm_cu_layernorm(cudaStream_t s, const float *X, const float *w, const float *b, float *Y,
                                         int n, int rows, float eps) {
    k_layernorm<<<(unsigned)rows, LWS, 0, s>>>(X, w, b, Y, n, eps);
    return cudaGetLastError();
}

extern "C" cudaError_t mllm_cu_softmax(cudaStream_t s, float *X, int n, int rows, float scale) {
    k_softmax<<<(unsigned)rows, LWS, 0, s>>>(X, n, scale);
    return cudaGetLastError();
}

extern "C" cudaError_t mllm_cu_rope(cudaStream_t s, const float *X, float *Y, const float *cs, const float *sn, int D,
                                    int H, int T, int n_rot, int neox) {
    k_rope<<<ew_blocks((size_t)D * H * T), EW_THREADS, 0, s>>>(X, Y, cs, sn, D, H, T, n_rot, neox);
    return cudaGetLastError();
}

extern "C" cudaError_t mllm_cu_elementwise(cudaStream_t s, mllm_cu_ew op, const float *a, const float *b, float *y,
                                           int64_t n, float p) {
    k_elementwise<<<ew_blocks((size_t)n), EW_THREADS, 0, s>>>((int)op, a, b, y, (size_t)n, p);
    return cudaGetLastError();
}

extern "C" cudaError_t mllm_cu_attn_scores(cudaStream_t s, const float *Q, const float *Kc, float *S,
                                           const int32_t *pos, int D, int H, int Hkv, int T, int n_keys, float scale,
                                           int window, int causal) {
    k_attn_scores<<<ew_blocks((size_t)n_keys * H * T), EW_THREADS, 0, s>>>(Q, Kc, S, pos, D, H, Hkv, T, n_keys, scale,
                                                                           window, causal);
    return cudaGetLastError();
}

extern "C" cudaError_t mllm_cu_attn_pv(cudaStream_t s, const float *P, const float *Vc, float *O, int D, int H, int Hkv,
                                       int T, int n_keys) {
    k_attn_pv<<<ew_blocks((size_t)D * H * T), EW_THREADS, 0, s>>>(P, Vc, O, D, H, Hkv, T, n_keys);
    return cudaGetLastError();
}

extern "C" cudaError_t mllm_cu_attn_enc(cudaStream_t s, const float *Q, const float *K, const float *V,
                                        const int32_t *segs, float *O, int D, int H, int n_q, int n_k, int64_t qs,
                                        int64_t ks, int64_t vs, int n_segs, float scale) {
    k_attn_enc<<<ew_blocks((size_t)H * n_q), EW_THREADS, 0, s>>>(Q, K, V, segs, O, D, H, n_q, n_k, qs, ks, vs, n_segs,
                                                                 scale);
    return cudaGetLastError();
}

extern "C" cudaError_t mllm_cu_im2col(cudaStream_t s, const float *X, float *Y, int C, int T_in, int k, int stride,
                                      int pad, int T_out) {
    k_im2col<<<ew_blocks((size_t)C * k * T_out), EW_THREADS, 0, s>>>(X, Y, C, T_in, k, stride, pad, T_out);
    return cudaGetLastError();
}
