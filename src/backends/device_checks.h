/* The checks a device layer (src/backends/opencl, src/backends/cuda) makes
   before it touches device memory or launches a kernel, shared so both
   refuse the same calls with the same words. `be` names the layer in the
   messages ("opencl", "cuda"). Every failure is MLLM_ERR_INVALID_ARG. */
#ifndef MLLM_BACKENDS_DEVICE_CHECKS_H
#define MLLM_BACKENDS_DEVICE_CHECKS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"

/* Sizes and counts must fit the kernels' int arguments; far above any
   model's, small enough that no product of two overflows 64 bits. */
#define MLLM_DEV_MAX_DIM ((int64_t)1 << 30)

/* A buffer an op reads or writes: present, and at least `bytes` long. */
static inline mllm_status mllm_dev_need(const char *be, const char *op, const char *what, bool present, size_t size,
                                        size_t bytes) {
    if (!present) return mllm_err(MLLM_ERR_INVALID_ARG, "%s %s: %s is NULL", be, op, what);
    if (size < bytes)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s %s: %s holds %zu bytes, %zu needed", be, op, what, size, bytes);
    return MLLM_OK;
}

/* Three sizes of an op, each in [1, MLLM_DEV_MAX_DIM]. */
static inline mllm_status mllm_dev_dims(const char *be, const char *op, int64_t a, int64_t b, int64_t c) {
    if (a <= 0 || b <= 0 || c <= 0 || a > MLLM_DEV_MAX_DIM || b > MLLM_DEV_MAX_DIM || c > MLLM_DEV_MAX_DIM)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s %s: sizes %lld x %lld x %lld out of range", be, op, (long long)a,
                        (long long)b, (long long)c);
    return MLLM_OK;
}

/* The weights of a matmul or the table of a row lookup: a type the layer
   has a kernel for (supported), sizes K x rows x T in range, and rows of
   whole blocks; *rb gets the bytes of a row. kind: "weights", "tables". */
static inline mllm_status mllm_dev_rows(const char *be, const char *op, const char *kind, mllm_dtype t, bool supported,
                                        int64_t K, int64_t rows, int64_t T, size_t *rb) {
    if (!supported)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s %s: %s of type %s are not supported", be, op, kind, mllm_dtype_name(t));
    mllm_status st = mllm_dev_dims(be, op, K, rows, T);
    if (st) return st;
    *rb = mllm_dtype_row_size(t, K); /* 0: K is not whole blocks */
    if (!*rb)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s %s: K = %lld is not whole %s blocks", be, op, (long long)K,
                        mllm_dtype_name(t));
    return MLLM_OK;
}

/* n bytes at off inside a buffer of `size` (a host copy in or out). */
static inline mllm_status mllm_dev_range(const char *be, const char *what, bool present, size_t size, size_t off,
                                         size_t n) {
    if (!present) return mllm_err(MLLM_ERR_INVALID_ARG, "%s: %s: NULL buffer", be, what);
    if (off > size || n > size - off)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: %s of %zu bytes at %zu is outside a buffer of %zu", be, what, n, off,
                        size);
    return MLLM_OK;
}

/* Each of the T ids or positions (read back from a graph input) in
   [0, limit): the kernels index with them. */
static inline mllm_status mllm_dev_ids(const char *be, const char *op, const char *what, const int32_t *v, int64_t T,
                                       int64_t limit) {
    for (int64_t i = 0; i < T; i++)
        if (v[i] < 0 || v[i] >= limit)
            return mllm_err(MLLM_ERR_INVALID_ARG, "%s %s: %s %d at %lld is outside [0, %lld)", be, op, what, v[i],
                            (long long)i, (long long)limit);
    return MLLM_OK;
}

/* An encoder's attention over K and V given as tensors (the layers'
   attention_enc: graph.h's attention_full and attention_segments). Each
   row of Q, K, V holds H heads of D floats side by side, rows q_stride,
   k_stride, v_stride floats apart (views of one fused QKV output); O is
   n_q rows of H * D. n_segs 0: every query sees keys [0, n_k); else segs
   holds n_segs + 1 I32 offsets and a query sees the keys of its segment
   only (n_q == n_k). An item of the kernels keeps one head's sums in
   registers: D is at most MLLM_DEV_ENC_ATTN_MAX_D (ENC_MAX_D there). */
#define MLLM_DEV_ENC_ATTN_MAX_D 128
typedef struct {
    int64_t D, H, n_q, n_k;
    int64_t q_stride, k_stride, v_stride;
    int64_t n_segs;
    float scale;
} mllm_dev_enc_attn;

/* The bytes a buffer of rows rows, stride floats apart, the last n wide, spans. */
/* T_out of a 1-D convolution (im2col), or 0 when its parameters make none. */
static inline int64_t mllm_dev_conv_out(int64_t T_in, int k, int stride, int pad) {
    return k > 0 && stride > 0 && pad >= 0 && T_in + 2 * pad >= k ? (T_in + 2 * pad - k) / stride + 1 : 0;
}

static inline size_t mllm_dev_rows_span(int64_t rows, int64_t stride, int64_t n) {
    return ((size_t)(rows - 1) * (size_t)stride + (size_t)n) * 4;
}

/* a's sizes in range, its strides at least a row, and its head size within the kernels' bound. */
static inline mllm_status mllm_dev_enc_attn_ok(const char *be, const mllm_dev_enc_attn *a) {
    mllm_status st = mllm_dev_dims(be, "encoder attention", a->D, a->H, a->n_q);
    if (st || (st = mllm_dev_dims(be, "encoder attention", a->n_k, a->n_segs + 1, a->D * a->H))) return st;
    const int64_t row = a->D * a->H;
    if (a->D > MLLM_DEV_ENC_ATTN_MAX_D)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s encoder attention: head size %lld over %d", be, (long long)a->D,
                        MLLM_DEV_ENC_ATTN_MAX_D);
    if (a->q_stride < row || a->k_stride < row || a->v_stride < row)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s encoder attention: row strides %lld, %lld, %lld below a row of %lld",
                        be, (long long)a->q_stride, (long long)a->k_stride, (long long)a->v_stride, (long long)row);
    if (a->n_segs > 0 && a->n_q != a->n_k)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s encoder attention: segments over %lld queries and %lld keys", be,
                        (long long)a->n_q, (long long)a->n_k);
    return MLLM_OK;
}

/* a checked, and its buffers (Q, K, V, O, segments; present[i] false for a
   NULL one, size[i] its bytes) large enough for the rows it reads and
   writes (strided rows span mllm_dev_rows_span). */
static inline mllm_status mllm_dev_enc_attn_fits(const char *be, const mllm_dev_enc_attn *a, const bool present[5],
                                                 const size_t size[5]) {
    mllm_status st = mllm_dev_enc_attn_ok(be, a);
    if (st) return st;
    const int64_t row = a->D * a->H;
    static const char *const what[5] = {"Q", "K", "V", "O", "segments"};
    const size_t need[5] = {mllm_dev_rows_span(a->n_q, a->q_stride, row), mllm_dev_rows_span(a->n_k, a->k_stride, row),
                            mllm_dev_rows_span(a->n_k, a->v_stride, row), (size_t)(row * a->n_q) * 4,
                            (size_t)(a->n_segs + 1) * 4};
    for (int i = 0; i < (a->n_segs > 0 ? 5 : 4); i++)
        if ((st = mllm_dev_need(be, "encoder attention", what[i], present[i], size[i], need[i]))) return st;
    return MLLM_OK;
}

#endif
