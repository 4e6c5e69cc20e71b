/* The launches of ocl.h: each checks its sizes against the buffers, sets
   the kernel's arguments and enqueues it (no wait: mllm_ocl_finish or a
   blocking read orders the host after the device). */
#include <math.h>

#include "backends/opencl/ocl_internal.h"
#include "backends/device_checks.h"
#include "core/alloc.h"

static mllm_status need(const mllm_ocl_buf *b, size_t bytes, const char *op, const char *what) {
    return mllm_dev_need("opencl", op, what, b != NULL, b ? b->size : 0, bytes);
}

static mllm_status dims_ok(const char *op, int64_t a, int64_t b, int64_t c) { return mllm_dev_dims("opencl", op, a, b, c); }

/* Arguments in order: each call names its size and value. */
typedef struct {
    size_t size;
    const void *ptr;
} karg;
#define ARG(x) ((karg){sizeof(x), &(x)})
#define MEM(b) ((karg){sizeof(cl_mem), &(b)->mem})

static mllm_status launch(mllm_ocl *c, mllm_ocl_kernel k, const karg *args, int n_args, int dims, const size_t *global,
                          const size_t *local, const char *op) {
    for (int i = 0; i < n_args; i++) {
        cl_int e = clSetKernelArg(c->k[k], (cl_uint)i, args[i].size, args[i].ptr);
        if (e != CL_SUCCESS) return mllm_ocl_fail(e, op);
    }
    cl_int e = clEnqueueNDRangeKernel(c->q, c->k[k], (cl_uint)dims, NULL, global, local, 0, NULL, NULL);
    return e == CL_SUCCESS ? MLLM_OK : mllm_ocl_fail(e, op);
}

/* Reads the T int32 values of b (ids or positions from a graph input) and
   checks each is in [0, limit): the kernels index with them. */
static mllm_status check_i32(const mllm_ocl_buf *b, int64_t T, int64_t limit, const char *op, const char *what) {
    int32_t *h = mllm_malloc((size_t)T * sizeof *h);
    if (!h) return mllm_err(MLLM_ERR_NOMEM, "opencl %s: out of memory", op);
    mllm_status st = mllm_ocl_buf_get(b, 0, h, (size_t)T * 4);
    if (!st) st = mllm_dev_ids("opencl", op, what, h, T, limit);
    mllm_free(h);
    return st;
}

static int matmul_kernel(mllm_dtype t) {
    switch (t) {
    case MLLM_DTYPE_F32: return MLLM_OCL_K_MM_F32;
    case MLLM_DTYPE_F16: return MLLM_OCL_K_MM_F16;
    case MLLM_DTYPE_Q8_0: return MLLM_OCL_K_MM_Q8_0;
    case MLLM_DTYPE_Q4_0: return MLLM_OCL_K_MM_Q4_0;
    case MLLM_DTYPE_Q4_K: return MLLM_OCL_K_MM_Q4_K;
    case MLLM_DTYPE_Q6_K: return MLLM_OCL_K_MM_Q6_K;
    default: return -1;
    }
}

static int get_rows_kernel(mllm_dtype t) {
    switch (t) {
    case MLLM_DTYPE_F32: return MLLM_OCL_K_GR_F32;
    case MLLM_DTYPE_F16: return MLLM_OCL_K_GR_F16;
    case MLLM_DTYPE_Q8_0: return MLLM_OCL_K_GR_Q8_0;
    case MLLM_DTYPE_Q4_0: return MLLM_OCL_K_GR_Q4_0;
    default: return -1;
    }
}

bool mllm_ocl_supports_matmul(mllm_dtype t) { return matmul_kernel(t) >= 0; }
bool mllm_ocl_supports_get_rows(mllm_dtype t) { return get_rows_kernel(t) >= 0; }

mllm_status mllm_ocl_mul_mat(mllm_ocl *c, mllm_dtype wt, const mllm_ocl_buf *W, int64_t K, int64_t N,
                             const mllm_ocl_buf *X, int64_t T, mllm_ocl_buf *Y, const mllm_ocl_buf *bias) {
    const char *op = "matmul";
    const int k = matmul_kernel(wt);
    size_t rb = 0;
    mllm_status st = mllm_dev_rows("opencl", op, "weights", wt, k >= 0, K, N, T, &rb);
    if (st) return st;
    if ((st = need(W, rb * (size_t)N, op, "W")) || (st = need(X, (size_t)(K * T) * 4, op, "X")) ||
        (st = need(Y, (size_t)(N * T) * 4, op, "Y")) || (bias && (st = need(bias, (size_t)N * 4, op, "bias"))))
        return st;
    const cl_ulong rbl = rb;
    const cl_int Ki = (cl_int)K, Ni = (cl_int)N, has_bias = bias != NULL;
    const mllm_ocl_buf *bb = bias ? bias : Y; /* any valid buffer when unused */
    const karg a[] = {MEM(W), ARG(rbl), ARG(Ki), ARG(Ni), MEM(X), MEM(Y), MEM(bb), ARG(has_bias)};
    const size_t g[2] = {(size_t)N * MLLM_OCL_LWS, (size_t)T}, l[2] = {MLLM_OCL_LWS, 1};
    return launch(c, (mllm_ocl_kernel)k, a, 8, 2, g, l, op);
}

mllm_status mllm_ocl_get_rows(mllm_ocl *c, mllm_dtype wt, const mllm_ocl_buf *W, int64_t K, int64_t n_rows,
                              const mllm_ocl_buf *ids, int64_t T, mllm_ocl_buf *Y) {
    const char *op = "get_rows";
    const int k = get_rows_kernel(wt);
    size_t rb = 0;
    mllm_status st = mllm_dev_rows("opencl", op, "tables", wt, k >= 0, K, n_rows, T, &rb);
    if (st) return st;
    if ((st = need(W, rb * (size_t)n_rows, op, "table")) || (st = need(ids, (size_t)T * 4, op, "ids")) ||
        (st = need(Y, (size_t)(K * T) * 4, op, "Y")))
        return st;
    /* The ids come from the tokenizer or a graph input: the kernel reads the row each names. */
    if ((st = check_i32(ids, T, n_rows, op, "id"))) return st;
    const cl_ulong rbl = rb;
    const cl_int Ki = (cl_int)K;
    const karg a[] = {MEM(W), ARG(rbl), ARG(Ki), MEM(ids), MEM(Y)};
    const size_t g[2] = {(size_t)K, (size_t)T};
    return launch(c, (mllm_ocl_kernel)k, a, 5, 2, g, NULL, op);
}

mllm_status mllm_ocl_rmsnorm(mllm_ocl *c, const mllm_ocl_buf *X, const mllm_ocl_buf *w, mllm_ocl_buf *Y, int64_t n,
                             int64_t rows, float eps) {
    const char *op = "rmsnorm";
    mllm_status st = dims_ok(op, n, rows, 1);
    if (st || (st = need(X, (size_t)(n * rows) * 4, op, "X")) || (st = need(Y, (size_t)(n * rows) * 4, op, "Y")) ||
        (w && (st = need(w, (size_t)n * 4, op, "w"))))
        return st;
    const cl_int has_w = w != NULL, ni = (cl_int)n;
    const mllm_ocl_buf *ww = w ? w : X;
    const karg a[] = {MEM(X), MEM(ww), ARG(has_w), MEM(Y), ARG(ni), ARG(eps)};
    const size_t g = (size_t)rows * MLLM_OCL_LWS, l = MLLM_OCL_LWS;
    return launch(c, MLLM_OCL_K_RMSNORM, a, 6, 1, &g, &l, op);
}

mllm_status mllm_ocl_layernorm(mllm_ocl *c, const mllm_ocl_buf *X, const mllm_ocl_buf *w, const mllm_ocl_buf *b,
                               mllm_ocl_buf *Y, int64_t n, int64_t rows, float eps) {
    const char *op = "layernorm";
    mllm_status st = dims_ok(op, n, rows, 1);
    if (st || (st = need(X, (size_t)(n * rows) * 4, op, "X")) || (st = need(Y, (size_t)(n * rows) * 4, op, "Y")) ||
        (w && (st = need(w, (size_t)n * 4, op, "w"))) || (b && (st = need(b, (size_t)n * 4, op, "b"))))
        return st;
    const cl_int flags = (w ? 1 : 0) | (b ? 2 : 0), ni = (cl_int)n;
    const mllm_ocl_buf *ww = w ? w : X, *bb = b ? b : X;
    const karg a[] = {MEM(X), MEM(ww), MEM(bb), ARG(flags), MEM(Y), ARG(ni), ARG(eps)};
    const size_t g = (size_t)rows * MLLM_OCL_LWS, l = MLLM_OCL_LWS;
    return launch(c, MLLM_OCL_K_LAYERNORM, a, 7, 1, &g, &l, op);
}

mllm_status mllm_ocl_softmax(mllm_ocl *c, mllm_ocl_buf *X, int64_t n, int64_t rows, float scale) {
    const char *op = "softmax";
    mllm_status st = dims_ok(op, n, rows, 1);
    if (st || (st = need(X, (size_t)(n * rows) * 4, op, "X"))) return st;
    const cl_int ni = (cl_int)n;
    const karg a[] = {MEM(X), ARG(ni), ARG(scale)};
    const size_t g = (size_t)rows * MLLM_OCL_LWS, l = MLLM_OCL_LWS;
    return launch(c, MLLM_OCL_K_SOFTMAX, a, 3, 1, &g, &l, op);
}

mllm_status mllm_ocl_rope(mllm_ocl *c, const mllm_ocl_buf *X, mllm_ocl_buf *Y, const mllm_ocl_buf *cs,
                          const mllm_ocl_buf *sn, int64_t D, int64_t H, int64_t T, int n_rot, bool neox) {
    const char *op = "rope";
    mllm_status st = dims_ok(op, D, H, T);
    if (st) return st;
    if (n_rot <= 0 || n_rot % 2 || n_rot > D)
        return mllm_err(MLLM_ERR_INVALID_ARG, "opencl rope: n_rot %d must be even and within D = %lld", n_rot, (long long)D);
    const size_t tab = (size_t)T * (size_t)(n_rot / 2) * 4;
    if ((st = need(X, (size_t)(D * H * T) * 4, op, "X")) || (st = need(Y, (size_t)(D * H * T) * 4, op, "Y")) ||
        (st = need(cs, tab, op, "cos table")) || (st = need(sn, tab, op, "sin table")))
        return st;
    const cl_int nr = n_rot, nx = neox;
    const karg a[] = {MEM(X), MEM(Y), MEM(cs), MEM(sn), ARG(nr), ARG(nx)};
    const size_t g[3] = {(size_t)D, (size_t)H, (size_t)T};
    return launch(c, MLLM_OCL_K_ROPE, a, 6, 3, g, NULL, op);
}

mllm_status mllm_ocl_elementwise_op(mllm_ocl *c, mllm_ocl_elementwise eop, const mllm_ocl_buf *a,
                                    const mllm_ocl_buf *b, mllm_ocl_buf *y, int64_t n, float p) {
    const char *op = "elementwise";
    mllm_status st = dims_ok(op, n, 1, 1);
    if (st) return st;
    const size_t bytes = (size_t)n * 4;
    const bool binary = eop == MLLM_OCL_ADD || eop == MLLM_OCL_SILU_MUL || eop == MLLM_OCL_GELU_MUL;
    if ((st = need(a, bytes, op, "a")) || (st = need(y, bytes, op, "y")) || (binary && (st = need(b, bytes, op, "b"))))
        return st;
    const size_t g = (size_t)n;
    switch (eop) {
    case MLLM_OCL_ADD:
    case MLLM_OCL_SILU_MUL:
    case MLLM_OCL_GELU_MUL: {
        const karg args[] = {MEM(a), MEM(b), MEM(y)};
        const mllm_ocl_kernel k = eop == MLLM_OCL_ADD ? MLLM_OCL_K_ADD : eop == MLLM_OCL_SILU_MUL ? MLLM_OCL_K_SILU_MUL
                                                                                                 : MLLM_OCL_K_GELU_MUL;
        return launch(c, k, args, 3, 1, &g, NULL, op);
    }
    case MLLM_OCL_GELU:
    case MLLM_OCL_GELU_TANH: {
        const karg args[] = {MEM(a), MEM(y)};
        return launch(c, eop == MLLM_OCL_GELU ? MLLM_OCL_K_GELU : MLLM_OCL_K_GELU_TANH, args, 2, 1, &g, NULL, op);
    }
    case MLLM_OCL_SCALE:
    case MLLM_OCL_SOFTCAP: {
        if (eop == MLLM_OCL_SOFTCAP && !(p > 0)) return mllm_err(MLLM_ERR_INVALID_ARG, "opencl softcap: cap %g must be > 0", p);
        const karg args[] = {MEM(a), MEM(y), ARG(p)};
        return launch(c, eop == MLLM_OCL_SCALE ? MLLM_OCL_K_SCALE : MLLM_OCL_K_SOFTCAP, args, 3, 1, &g, NULL, op);
    }
    }
    return mllm_err(MLLM_ERR_INVALID_ARG, "opencl elementwise: unknown op %d", (int)eop);
}

size_t mllm_ocl_attention_scratch(int64_t H, int64_t T, int64_t n_keys) {
    return (size_t)H * (size_t)T * (size_t)n_keys * sizeof(float);
}

mllm_status mllm_ocl_attention(mllm_ocl *c, const mllm_ocl_buf *Q, const mllm_ocl_buf *Kc, const mllm_ocl_buf *Vc,
                               const mllm_ocl_buf *pos, mllm_ocl_buf *O, mllm_ocl_buf *scratch, int64_t D, int64_t H,
                               int64_t Hkv, int64_t T, int64_t n_keys, float scale, int window, bool causal) {
    const char *op = "attention";
    mllm_status st = dims_ok(op, D, H, T);
    if (st || (st = dims_ok(op, Hkv, n_keys, 1))) return st;
    if (H % Hkv) return mllm_err(MLLM_ERR_INVALID_ARG, "opencl attention: %lld heads over %lld KV heads", (long long)H, (long long)Hkv);
    const size_t q_bytes = (size_t)(D * H * T) * 4, kv_bytes = (size_t)(n_keys * Hkv * D) * 4;
    if ((st = need(Q, q_bytes, op, "Q")) || (st = need(O, q_bytes, op, "O")) || (st = need(Kc, kv_bytes, op, "K cache")) ||
        (st = need(Vc, kv_bytes, op, "V cache")) || (st = need(pos, (size_t)T * 4, op, "positions")) ||
        (st = need(scratch, mllm_ocl_attention_scratch(H, T, n_keys), op, "scratch")))
        return st;
    /* Causal: a token at a position past the stored keys would read keys
       that do not exist; the positions are checked on the host. */
    if (causal && (st = check_i32(pos, T, n_keys, op, "position"))) return st;
    const float sc = scale > 0 ? scale : 1.0f / sqrtf((float)D);
    const cl_int Di = (cl_int)D, Hi = (cl_int)H, Hkvi = (cl_int)Hkv, nk = (cl_int)n_keys, win = window, ca = causal;
    const karg a1[] = {MEM(Q), MEM(Kc), MEM(scratch), MEM(pos), ARG(Di), ARG(Hi), ARG(Hkvi), ARG(nk), ARG(sc), ARG(win), ARG(ca)};
    const size_t g1[3] = {(size_t)n_keys, (size_t)H, (size_t)T};
    if ((st = launch(c, MLLM_OCL_K_ATTN_SCORES, a1, 11, 3, g1, NULL, op))) return st;
    if ((st = mllm_ocl_softmax(c, scratch, n_keys, H * T, 1.0f))) return st;
    const karg a3[] = {MEM(scratch), MEM(Vc), MEM(O), ARG(Hi), ARG(Hkvi), ARG(nk)};
    const size_t g3[3] = {(size_t)D, (size_t)H, (size_t)T};
    return launch(c, MLLM_OCL_K_ATTN_PV, a3, 6, 3, g3, NULL, op);
}

mllm_status mllm_ocl_im2col(mllm_ocl *c, const mllm_ocl_buf *X, mllm_ocl_buf *Y, int64_t C, int64_t T_in, int k,
                            int stride, int pad) {
    const char *op = "im2col";
    const int64_t T_out = mllm_dev_conv_out(T_in, k, stride, pad);
    mllm_status st = dims_ok(op, C * (k > 0 ? k : 0), T_in, T_out);
    if (st || (st = need(X, (size_t)(C * T_in) * 4, op, "X")) || (st = need(Y, (size_t)(C * k * T_out) * 4, op, "Y")))
        return st;
    const cl_int Ci = (cl_int)C, Ti = (cl_int)T_in;
    const karg a[] = {MEM(X), MEM(Y), ARG(Ci), ARG(Ti), ARG(k), ARG(stride), ARG(pad)};
    const size_t g[2] = {(size_t)(C * k), (size_t)T_out};
    return launch(c, MLLM_OCL_K_IM2COL, a, 7, 2, g, NULL, op);
}

mllm_status mllm_ocl_attention_enc(mllm_ocl *c, const mllm_ocl_buf *Q, const mllm_ocl_buf *K, const mllm_ocl_buf *V,
                                   const mllm_ocl_buf *segs, mllm_ocl_buf *O, const mllm_dev_enc_attn *at) {
    const char *op = "encoder attention";
    const bool has[5] = {Q != NULL, K != NULL, V != NULL, O != NULL, segs != NULL};
    const size_t size[5] = {Q ? Q->size : 0, K ? K->size : 0, V ? V->size : 0, O ? O->size : 0,
                            segs ? segs->size : 0};
    mllm_status st = mllm_dev_enc_attn_fits("opencl", at, has, size);
    if (st) return st;
    const cl_int Di = (cl_int)at->D, nk = (cl_int)at->n_k, ns = (cl_int)at->n_segs;
    const cl_long qs = at->q_stride, ks = at->k_stride, vs = at->v_stride;
    const mllm_ocl_buf *sg = at->n_segs > 0 ? segs : O; /* any valid buffer when unused */
    const karg a[] = {MEM(Q),  MEM(K),  MEM(V),  MEM(sg), MEM(O),  ARG(Di),
                      ARG(nk), ARG(qs), ARG(ks), ARG(vs), ARG(ns), ARG(at->scale)};
    const size_t g[2] = {(size_t)at->H, (size_t)at->n_q};
    return launch(c, MLLM_OCL_K_ATTN_ENC, a, 12, 2, g, NULL, op);
}
