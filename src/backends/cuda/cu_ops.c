/* The launches of cuda.h: each checks its sizes against the buffers, then
   calls its launcher in cu_kernels.cu (no wait: mllm_cuda_finish or a
   blocking read orders the host after the device). The same checks as the
   OpenCL layer's (src/backends/opencl/ocl_ops.c). */
#include <math.h>

#include "backends/cuda/cu_internal.h"
#include "backends/cuda/cu_math.h"
#include "backends/device_checks.h"
#include "core/alloc.h"

static mllm_status need(const mllm_cuda_buf *b, size_t bytes, const char *op, const char *what) {
    return mllm_dev_need("cuda", op, what, b != NULL, b ? b->size : 0, bytes);
}

static mllm_status dims_ok(const char *op, int64_t a, int64_t b, int64_t c) { return mllm_dev_dims("cuda", op, a, b, c); }

/* Every buffer of one call must live in that call's context. */
static mllm_status same_ctx(const mllm_cuda *c, const mllm_cuda_buf *const *bufs, int n, const char *op) {
    if (!c) return mllm_err(MLLM_ERR_INVALID_ARG, "cuda %s: NULL context", op);
    for (int i = 0; i < n; i++)
        if (bufs[i] && bufs[i]->c != c) return mllm_err(MLLM_ERR_INVALID_ARG, "cuda %s: a buffer of another context", op);
    return mllm_cuda_use(c);
}

static mllm_status launched(cudaError_t e, const char *op) { return e == cudaSuccess ? MLLM_OK : mllm_cuda_fail(e, op); }

/* Reads the T int32 values of b (ids or positions from a graph input) and
   checks each is in [0, limit): the kernels index with them. */
static mllm_status check_i32(const mllm_cuda_buf *b, int64_t T, int64_t limit, const char *op, const char *what) {
    int32_t *h = mllm_malloc((size_t)T * sizeof *h);
    if (!h) return mllm_err(MLLM_ERR_NOMEM, "cuda %s: out of memory", op);
    mllm_status st = mllm_cuda_buf_get(b, 0, h, (size_t)T * 4);
    if (!st) st = mllm_dev_ids("cuda", op, what, h, T, limit);
    mllm_free(h);
    return st;
}

/* -1: no kernel for the type */
static int wtype(mllm_dtype t) {
    switch (t) {
    case MLLM_DTYPE_F32: return MLLM_CU_F32;
    case MLLM_DTYPE_F16: return MLLM_CU_F16;
    case MLLM_DTYPE_Q8_0: return MLLM_CU_Q8_0;
    case MLLM_DTYPE_Q4_0: return MLLM_CU_Q4_0;
    case MLLM_DTYPE_Q4_K: return MLLM_CU_Q4_K;
    case MLLM_DTYPE_Q6_K: return MLLM_CU_Q6_K;
    default: return -1;
    }
}

bool mllm_cuda_supports_matmul(mllm_dtype t) { return wtype(t) >= 0; }
bool mllm_cuda_supports_get_rows(mllm_dtype t) { return wtype(t) >= 0; }

mllm_status mllm_cuda_mul_mat(mllm_cuda *c, mllm_dtype wt, const mllm_cuda_buf *W, int64_t K, int64_t N,
                              const mllm_cuda_buf *X, int64_t T, mllm_cuda_buf *Y, const mllm_cuda_buf *bias) {
    const char *op = "matmul";
    const int k = wtype(wt);
    size_t rb = 0;
    mllm_status st = mllm_dev_rows("cuda", op, "weights", wt, k >= 0, K, N, T, &rb);
    if (st) return st;
    if ((st = need(W, rb * (size_t)N, op, "W")) || (st = need(X, (size_t)(K * T) * 4, op, "X")) ||
        (st = need(Y, (size_t)(N * T) * 4, op, "Y")) || (bias && (st = need(bias, (size_t)N * 4, op, "bias"))))
        return st;
    const mllm_cuda_buf *bufs[] = {W, X, Y, bias};
    if ((st = same_ctx(c, bufs, 4, op))) return st;
    return launched(mllm_cu_mul_mat(c->stream, (mllm_cu_wtype)k, W->mem, rb, (int)K, (int)N, X->mem, (int)T, Y->mem,
                                    bias ? bias->mem : NULL),
                    op);
}

mllm_status mllm_cuda_get_rows(mllm_cuda *c, mllm_dtype wt, const mllm_cuda_buf *W, int64_t K, int64_t n_rows,
                               const mllm_cuda_buf *ids, int64_t T, mllm_cuda_buf *Y) {
    const char *op = "get_rows";
    const int k = wtype(wt);
    size_t rb = 0;
    mllm_status st = mllm_dev_rows("cuda", op, "tables", wt, k >= 0, K, n_rows, T, &rb);
    if (st) return st;
    if ((st = need(W, rb * (size_t)n_rows, op, "table")) || (st = need(ids, (size_t)T * 4, op, "ids")) ||
        (st = need(Y, (size_t)(K * T) * 4, op, "Y")))
        return st;
    const mllm_cuda_buf *bufs[] = {W, ids, Y};
    if ((st = same_ctx(c, bufs, 3, op))) return st;
    /* The ids come from the tokenizer or a graph input: the kernel reads the row each names. */
    if ((st = check_i32(ids, T, n_rows, op, "id"))) return st;
    return launched(mllm_cu_get_rows(c->stream, (mllm_cu_wtype)k, W->mem, rb, (int)K, ids->mem, (int)T, Y->mem), op);
}

mllm_status mllm_cuda_rmsnorm(mllm_cuda *c, const mllm_cuda_buf *X, const mllm_cuda_buf *w, mllm_cuda_buf *Y, int64_t n,
                              int64_t rows, float eps) {
    const char *op = "rmsnorm";
    mllm_status st = dims_ok(op, n, rows, 1);
    if (st || (st = need(X, (size_t)(n * rows) * 4, op, "X")) || (st = need(Y, (size_t)(n * rows) * 4, op, "Y")) ||
        (w && (st = need(w, (size_t)n * 4, op, "w"))))
        return st;
    const mllm_cuda_buf *bufs[] = {X, w, Y};
    if ((st = same_ctx(c, bufs, 3, op))) return st;
    return launched(mllm_cu_rmsnorm(c->stream, X->mem, w ? w->mem : NULL, Y->mem, (int)n, (int)rows, eps), op);
}

mllm_status mllm_cuda_layernorm(mllm_cuda *c, const mllm_cuda_buf *X, const mllm_cuda_buf *w, const mllm_cuda_buf *b,
                                mllm_cuda_buf *Y, int64_t n, int64_t rows, float eps) {
    const char *op = "layernorm";
    mllm_status st = dims_ok(op, n, rows, 1);
    if (st || (st = need(X, (size_t)(n * rows) * 4, op, "X")) || (st = need(Y, (size_t)(n * rows) * 4, op, "Y")) ||
        (w && (st = need(w, (size_t)n * 4, op, "w"))) || (b && (st = need(b, (size_t)n * 4, op, "b"))))
        return st;
    const mllm_cuda_buf *bufs[] = {X, w, b, Y};
    if ((st = same_ctx(c, bufs, 4, op))) return st;
    return launched(mllm_cu_layernorm(c->stream, X->mem, w ? w->mem : NULL, b ? b->mem : NULL, Y->mem, (int)n,
                                      (int)rows, eps),
                    op);
}

mllm_status mllm_cuda_softmax(mllm_cuda *c, mllm_cuda_buf *X, int64_t n, int64_t rows, float scale) {
    const char *op = "softmax";
    mllm_status st = dims_ok(op, n, rows, 1);
    if (st || (st = need(X, (size_t)(n * rows) * 4, op, "X"))) return st;
    const mllm_cuda_buf *bufs[] = {X};
    if ((st = same_ctx(c, bufs, 1, op))) return st;
    return launched(mllm_cu_softmax(c->stream, X->mem, (int)n, (int)rows, scale), op);
}

mllm_status mllm_cuda_rope(mllm_cuda *c, const mllm_cuda_buf *X, mllm_cuda_buf *Y, const mllm_cuda_buf *cs,
                           const mllm_cuda_buf *sn, int64_t D, int64_t H, int64_t T, int n_rot, bool neox) {
    const char *op = "rope";
    mllm_status st = dims_ok(op, D, H, T);
    if (st) return st;
    if (n_rot <= 0 || n_rot % 2 || n_rot > D)
        return mllm_err(MLLM_ERR_INVALID_ARG, "cuda rope: n_rot %d must be even and within D = %lld", n_rot, (long long)D);
    const size_t tab = (size_t)T * (size_t)(n_rot / 2) * 4;
    if ((st = need(X, (size_t)(D * H * T) * 4, op, "X")) || (st = need(Y, (size_t)(D * H * T) * 4, op, "Y")) ||
        (st = need(cs, tab, op, "cos table")) || (st = need(sn, tab, op, "sin table")))
        return st;
    if (X == Y) return mllm_err(MLLM_ERR_INVALID_ARG, "cuda rope: X and Y must differ (a pair is read by two threads)");
    const mllm_cuda_buf *bufs[] = {X, Y, cs, sn};
    if ((st = same_ctx(c, bufs, 4, op))) return st;
    return launched(mllm_cu_rope(c->stream, X->mem, Y->mem, cs->mem, sn->mem, (int)D, (int)H, (int)T, n_rot, neox), op);
}

mllm_status mllm_cuda_elementwise_op(mllm_cuda *c, mllm_cuda_elementwise eop, const mllm_cuda_buf *a,
                                     const mllm_cuda_buf *b, mllm_cuda_buf *y, int64_t n, float p) {
    const char *op = "elementwise";
    mllm_status st = dims_ok(op, n, 1, 1);
    if (st) return st;
    if ((int)eop < MLLM_CUDA_ADD || (int)eop > MLLM_CUDA_GELU_TANH)
        return mllm_err(MLLM_ERR_INVALID_ARG, "cuda elementwise: unknown op %d", (int)eop);
    const size_t bytes = (size_t)n * 4;
    const bool binary = eop == MLLM_CUDA_ADD || eop == MLLM_CUDA_SILU_MUL || eop == MLLM_CUDA_GELU_MUL;
    if ((st = need(a, bytes, op, "a")) || (st = need(y, bytes, op, "y")) || (binary && (st = need(b, bytes, op, "b"))))
        return st;
    if (eop == MLLM_CUDA_SOFTCAP && !(p > 0)) return mllm_err(MLLM_ERR_INVALID_ARG, "cuda softcap: cap %g must be > 0", p);
    const mllm_cuda_buf *bufs[] = {a, binary ? b : NULL, y};
    if ((st = same_ctx(c, bufs, 3, op))) return st;
    return launched(mllm_cu_elementwise(c->stream, (mllm_cu_ew)eop, a->mem, binary ? b->mem : NULL, y->mem, n, p), op);
}

size_t mllm_cuda_attention_scratch(int64_t H, int64_t T, int64_t n_keys) {
    return (size_t)H * (size_t)T * (size_t)n_keys * sizeof(float);
}

mllm_status mllm_cuda_attention(mllm_cuda *c, const mllm_cuda_buf *Q, const mllm_cuda_buf *Kc, const mllm_cuda_buf *Vc,
                                const mllm_cuda_buf *pos, mllm_cuda_buf *O, mllm_cuda_buf *scratch, int64_t D,
                                int64_t H, int64_t Hkv, int64_t T, int64_t n_keys, float scale, int window,
                                bool causal) {
    const char *op = "attention";
    mllm_status st = dims_ok(op, D, H, T);
    if (st || (st = dims_ok(op, Hkv, n_keys, 1))) return st;
    if (H % Hkv) return mllm_err(MLLM_ERR_INVALID_ARG, "cuda attention: %lld heads over %lld KV heads", (long long)H, (long long)Hkv);
    const size_t q_bytes = (size_t)(D * H * T) * 4, kv_bytes = (size_t)(n_keys * Hkv * D) * 4;
    if ((st = need(Q, q_bytes, op, "Q")) || (st = need(O, q_bytes, op, "O")) || (st = need(Kc, kv_bytes, op, "K cache")) ||
        (st = need(Vc, kv_bytes, op, "V cache")) || (st = need(pos, (size_t)T * 4, op, "positions")) ||
        (st = need(scratch, mllm_cuda_attention_scratch(H, T, n_keys), op, "scratch")))
        return st;
    const mllm_cuda_buf *bufs[] = {Q, Kc, Vc, pos, O, scratch};
    if ((st = same_ctx(c, bufs, 6, op))) return st;
    /* Causal: a token at a position past the stored keys would read keys
       that do not exist; the positions are checked on the host. */
    if (causal && (st = check_i32(pos, T, n_keys, op, "position"))) return st;
    const float sc = scale > 0 ? scale : 1.0f / sqrtf((float)D);
    if ((st = launched(mllm_cu_attn_scores(c->stream, Q->mem, Kc->mem, scratch->mem, pos->mem, (int)D, (int)H, (int)Hkv,
                                           (int)T, (int)n_keys, sc, window, causal),
                       op)))
        return st;
    if ((st = mllm_cuda_softmax(c, scratch, n_keys, H * T, 1.0f))) return st;
    return launched(mllm_cu_attn_pv(c->stream, scratch->mem, Vc->mem, O->mem, (int)D, (int)H, (int)Hkv, (int)T, (int)n_keys), op);
}

mllm_status mllm_cuda_im2col(mllm_cuda *c, const mllm_cuda_buf *X, mllm_cuda_buf *Y, int64_t C, int64_t T_in, int k,
                             int stride, int pad) {
    const char *op = "im2col";
    const int64_t T_out = mllm_dev_conv_out(T_in, k, stride, pad);
    mllm_status st = dims_ok(op, C * (k > 0 ? k : 0), T_in, T_out);
    if (st || (st = need(X, (size_t)(C * T_in) * 4, op, "X")) || (st = need(Y, (size_t)(C * k * T_out) * 4, op, "Y")))
        return st;
    const mllm_cuda_buf *bufs[] = {X, Y};
    if ((st = same_ctx(c, bufs, 2, op))) return st;
    return launched(mllm_cu_im2col(c->stream, X->mem, Y->mem, (int)C, (int)T_in, k, stride, pad, (int)T_out), op);
}

_Static_assert(MLLM_CU_ENC_MAX_D == MLLM_DEV_ENC_ATTN_MAX_D, "the kernel's head bound is the checks' one");

mllm_status mllm_cuda_attention_enc(mllm_cuda *c, const mllm_cuda_buf *Q, const mllm_cuda_buf *K,
                                    const mllm_cuda_buf *V, const mllm_cuda_buf *segs, mllm_cuda_buf *O,
                                    const mllm_dev_enc_attn *a) {
    const char *op = "encoder attention";
    const bool has[5] = {Q != NULL, K != NULL, V != NULL, O != NULL, segs != NULL};
    const size_t size[5] = {Q ? Q->size : 0, K ? K->size : 0, V ? V->size : 0, O ? O->size : 0,
                            segs ? segs->size : 0};
    mllm_status st = mllm_dev_enc_attn_fits("cuda", a, has, size);
    if (st) return st;
    const mllm_cuda_buf *bufs[] = {Q, K, V, a->n_segs > 0 ? segs : NULL, O};
    if ((st = same_ctx(c, bufs, 5, op))) return st;
    return launched(mllm_cu_attn_enc(c->stream, Q->mem, K->mem, V->mem, a->n_segs > 0 ? segs->mem : NULL, O->mem,
                                     (int)a->D, (int)a->H, (int)a->n_q, (int)a->n_k, a->q_stride, a->k_stride,
                                     a->v_stride, (int)a->n_segs, a->scale),
                    op);
}
