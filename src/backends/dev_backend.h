/* The device-independent half of a device backend (issue #13): the vtable
   of backends/backend.h over a device layer that has the shape of
   opencl/ocl.h (cuda/cuda.h is its twin, call for call). What a device
   backend decides is the same for every device (which nodes it takes, how
   a tensor at a byte offset of a buffer reaches a launch, the RoPE angle
   tables, the KV cache of the layers it computes, one graph compute at a
   time per device), so it is written once, in dev_backend.c, and drives a
   layer through the table of its calls below (mllm_dev_ops). A layer's
   backend entry (opencl/ocl_backend.c, cuda/cu_backend.c) fills the table
   with MLLM_DEV_LAYER_CALLS and adds what differs: how it opens its device
   and how it makes a view of a buffer. docs/backends.md. */
#ifndef MLLM_BACKENDS_DEV_BACKEND_H
#define MLLM_BACKENDS_DEV_BACKEND_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "backends/device_checks.h"
#include "core/dtype.h"
#include "core/error.h"

/* A layer's context (mllm_ocl, mllm_cuda) and buffers (mllm_ocl_buf,
   mllm_cuda_buf), seen through the table only. */
typedef struct mllm_dev mllm_dev;
typedef struct mllm_dev_buf mllm_dev_buf;

/* In the order of the layers' own enums (MLLM_OCL_ADD ..., MLLM_CUDA_ADD ...). */
typedef enum {
    MLLM_DEV_ADD,
    MLLM_DEV_SILU_MUL,
    MLLM_DEV_GELU_MUL,
    MLLM_DEV_GELU,
    MLLM_DEV_SCALE,
    MLLM_DEV_SOFTCAP,
    MLLM_DEV_GELU_TANH,
} mllm_dev_elementwise;

typedef struct {
    const char *name; /* the backend's name ("opencl", "cuda"), also its messages' prefix */
    /* What the entry writes itself. open: the device the environment names
       (MLLM_ERR_UNSUPPORTED, with the reason, when there is none).
       view_new: bytes [off, off + n) of b as a buffer of their own that the
       launches take (an OpenCL sub-buffer, a CUDA pointer into b), freed by
       view_free and never outliving b; *out NULL with MLLM_OK where the
       device cannot start one at off (the caller then copies). */
    mllm_status (*open)(mllm_dev **out);
    mllm_status (*view_new)(mllm_dev_buf *b, size_t off, size_t n, mllm_dev_buf **out);
    void (*view_free)(mllm_dev_buf *v);
    /* The layer's calls (ocl.h / cuda.h say what each does). */
    const char *(*device_name)(const mllm_dev *c);
    mllm_status (*finish)(mllm_dev *c);
    mllm_status (*buf_new)(mllm_dev *c, size_t bytes, mllm_dev_buf **out);
    void (*buf_free)(mllm_dev_buf *b);
    size_t (*buf_size)(const mllm_dev_buf *b);
    mllm_status (*buf_set)(mllm_dev_buf *b, size_t off, const void *src, size_t n);
    mllm_status (*buf_get)(const mllm_dev_buf *b, size_t off, void *dst, size_t n);
    mllm_status (*buf_copy)(mllm_dev_buf *dst, size_t dst_off, const mllm_dev_buf *src, size_t src_off, size_t n);
    bool (*supports_matmul)(mllm_dtype t);
    bool (*supports_get_rows)(mllm_dtype t);
    mllm_status (*mul_mat)(mllm_dev *c, mllm_dtype wt, const mllm_dev_buf *W, int64_t K, int64_t N,
                           const mllm_dev_buf *X, int64_t T, mllm_dev_buf *Y, const mllm_dev_buf *bias);
    mllm_status (*get_rows)(mllm_dev *c, mllm_dtype wt, const mllm_dev_buf *W, int64_t K, int64_t n_rows,
                            const mllm_dev_buf *ids, int64_t T, mllm_dev_buf *Y);
    mllm_status (*rmsnorm)(mllm_dev *c, const mllm_dev_buf *X, const mllm_dev_buf *w, mllm_dev_buf *Y, int64_t n,
                           int64_t rows, float eps);
    mllm_status (*layernorm)(mllm_dev *c, const mllm_dev_buf *X, const mllm_dev_buf *w, const mllm_dev_buf *b,
                             mllm_dev_buf *Y, int64_t n, int64_t rows, float eps);
    mllm_status (*rope)(mllm_dev *c, const mllm_dev_buf *X, mllm_dev_buf *Y, const mllm_dev_buf *cs,
                        const mllm_dev_buf *sn, int64_t D, int64_t H, int64_t T, int n_rot, bool neox);
    mllm_status (*elementwise)(mllm_dev *c, mllm_dev_elementwise op, const mllm_dev_buf *a, const mllm_dev_buf *b,
                               mllm_dev_buf *y, int64_t n, float p);
    size_t (*attention_scratch)(int64_t H, int64_t T, int64_t n_keys);
    mllm_status (*attention)(mllm_dev *c, const mllm_dev_buf *Q, const mllm_dev_buf *Kc, const mllm_dev_buf *Vc,
                             const mllm_dev_buf *pos, mllm_dev_buf *O, mllm_dev_buf *scratch, int64_t D, int64_t H,
                             int64_t Hkv, int64_t T, int64_t n_keys, float scale, int window, bool causal);
    mllm_status (*attention_enc)(mllm_dev *c, const mllm_dev_buf *Q, const mllm_dev_buf *K, const mllm_dev_buf *V,
                                 const mllm_dev_buf *segs, mllm_dev_buf *O, const mllm_dev_enc_attn *a);
    mllm_status (*im2col)(mllm_dev *c, const mllm_dev_buf *X, mllm_dev_buf *Y, int64_t C, int64_t T_in, int k,
                          int stride, int pad);
    /* A plugin op's OpenCL C kernel (opencl/ocl.h, mllm_ocl_custom). NULL
       in layers without one (CUDA): plugin ops then stay on the CPU. */
    mllm_status (*custom_opencl)(mllm_dev *c, const void *key, const char *src, const char *kernel, mllm_dev_buf *y,
                                 const int64_t ne_y[4], const mllm_dev_buf *const *in, const int64_t (*ne_in)[4],
                                 int n_in);
} mllm_dev_ops;

/* The backend of ops: its device opened (ops->open) and the backend
   registered on the first call; the device stays open until the process
   exits. NULL after setting the error (the open's), on this and every
   later call. ops must outlive the process (a static table). */
mllm_backend *mllm_dev_backend_get(const mllm_dev_ops *ops);
/* The opened device's name, or NULL before a successful open. */
const char *mllm_dev_backend_device(const mllm_dev_ops *ops);

/* Defines P_dv_*, one adapter per call of a layer whose functions are
   P_name (P = mllm_ocl: mllm_ocl_mul_mat ...), whose context and buffer
   types are P and P_buf and whose elementwise enum values are E##ADD ...;
   MLLM_DEV_LAYER_FIELDS(P) then fills a table with them. The adapters
   only convert pointers: a layer's handles are what the table passes. */
#define MLLM_DEV_LAYER_CALLS(P, E)                                                                                     \
    static const char *P##_dv_device_name(const mllm_dev *c) { return P##_device_name((const P *)c); }               \
    static mllm_status P##_dv_finish(mllm_dev *c) { return P##_finish((P *)c); }                                     \
    static mllm_status P##_dv_buf_new(mllm_dev *c, size_t bytes, mllm_dev_buf **out) {                               \
        P##_buf *b = NULL;                                                                                             \
        const mllm_status st = P##_buf_new((P *)c, bytes, &b);                                                        \
        *out = (mllm_dev_buf *)b;                                                                                      \
        return st;                                                                                                     \
    }                                                                                                                  \
    static void P##_dv_buf_free(mllm_dev_buf *b) { P##_buf_free((P##_buf *)b); }                                     \
    static size_t P##_dv_buf_size(const mllm_dev_buf *b) { return P##_buf_size((const P##_buf *)b); }                \
    static mllm_status P##_dv_buf_set(mllm_dev_buf *b, size_t off, const void *src, size_t n) {                     \
        return P##_buf_set((P##_buf *)b, off, src, n);                                                               \
    }                                                                                                                  \
    static mllm_status P##_dv_buf_get(const mllm_dev_buf *b, size_t off, void *dst, size_t n) {                     \
        return P##_buf_get((const P##_buf *)b, off, dst, n);                                                         \
    }                                                                                                                  \
    static mllm_status P##_dv_buf_copy(mllm_dev_buf *d, size_t doff, const mllm_dev_buf *s, size_t soff, size_t n) { \
        return P##_buf_copy((P##_buf *)d, doff, (const P##_buf *)s, soff, n);                                        \
    }                                                                                                                  \
    static mllm_status P##_dv_mul_mat(mllm_dev *c, mllm_dtype wt, const mllm_dev_buf *W, int64_t K, int64_t N,       \
                                      const mllm_dev_buf *X, int64_t T, mllm_dev_buf *Y, const mllm_dev_buf *bias) { \
        return P##_mul_mat((P *)c, wt, (const P##_buf *)W, K, N, (const P##_buf *)X, T, (P##_buf *)Y,                \
                           (const P##_buf *)bias);                                                                     \
    }                                                                                                                  \
    static mllm_status P##_dv_get_rows(mllm_dev *c, mllm_dtype wt, const mllm_dev_buf *W, int64_t K, int64_t rows,   \
                                       const mllm_dev_buf *ids, int64_t T, mllm_dev_buf *Y) {                          \
        return P##_get_rows((P *)c, wt, (const P##_buf *)W, K, rows, (const P##_buf *)ids, T, (P##_buf *)Y);         \
    }                                                                                                                  \
    static mllm_status P##_dv_rmsnorm(mllm_dev *c, const mllm_dev_buf *X, const mllm_dev_buf *w, mllm_dev_buf *Y,    \
                                      int64_t n, int64_t rows, float eps) {                                           \
        return P##_rmsnorm((P *)c, (const P##_buf *)X, (const P##_buf *)w, (P##_buf *)Y, n, rows, eps);              \
    }                                                                                                                  \
    static mllm_status P##_dv_layernorm(mllm_dev *c, const mllm_dev_buf *X, const mllm_dev_buf *w,                   \
                                        const mllm_dev_buf *b, mllm_dev_buf *Y, int64_t n, int64_t rows, float eps) { \
        return P##_layernorm((P *)c, (const P##_buf *)X, (const P##_buf *)w, (const P##_buf *)b, (P##_buf *)Y, n,    \
                             rows, eps);                                                                               \
    }                                                                                                                  \
    static mllm_status P##_dv_rope(mllm_dev *c, const mllm_dev_buf *X, mllm_dev_buf *Y, const mllm_dev_buf *cs,     \
                                   const mllm_dev_buf *sn, int64_t D, int64_t H, int64_t T, int n_rot, bool neox) {    \
        return P##_rope((P *)c, (const P##_buf *)X, (P##_buf *)Y, (const P##_buf *)cs, (const P##_buf *)sn, D, H, T, \
                        n_rot, neox);                                                                                  \
    }                                                                                                                  \
    static mllm_status P##_dv_elementwise(mllm_dev *c, mllm_dev_elementwise op, const mllm_dev_buf *a,               \
                                          const mllm_dev_buf *b, mllm_dev_buf *y, int64_t n, float p) {               \
        static const P##_elementwise map[] = {E##ADD,   E##SILU_MUL, E##GELU_MUL, E##GELU,                           \
                                              E##SCALE, E##SOFTCAP,  E##GELU_TANH};                                 \
        if ((unsigned)op >= sizeof map / sizeof map[0])                                                              \
            return mllm_err(MLLM_ERR_INVALID_ARG, "elementwise: unknown op %d", (int)op);                           \
        return P##_elementwise_op((P *)c, map[op], (const P##_buf *)a, (const P##_buf *)b, (P##_buf *)y, n, p);      \
    }                                                                                                                  \
    static mllm_status P##_dv_attention(mllm_dev *c, const mllm_dev_buf *Q, const mllm_dev_buf *Kc,                  \
                                        const mllm_dev_buf *Vc, const mllm_dev_buf *pos, mllm_dev_buf *O,            \
                                        mllm_dev_buf *scratch, int64_t D, int64_t H, int64_t Hkv, int64_t T,         \
                                        int64_t n_keys, float scale, int window, bool causal) {                       \
        return P##_attention((P *)c, (const P##_buf *)Q, (const P##_buf *)Kc, (const P##_buf *)Vc,                   \
                             (const P##_buf *)pos, (P##_buf *)O, (P##_buf *)scratch, D, H, Hkv, T, n_keys, scale,   \
                             window, causal);                                                                          \
    }                                                                                                                  \
    static mllm_status P##_dv_attention_enc(mllm_dev *c, const mllm_dev_buf *Q, const mllm_dev_buf *K,               \
                                            const mllm_dev_buf *V, const mllm_dev_buf *segs, mllm_dev_buf *O,         \
                                            const mllm_dev_enc_attn *a) {                                             \
        return P##_attention_enc((P *)c, (const P##_buf *)Q, (const P##_buf *)K, (const P##_buf *)V,                 \
                                 (const P##_buf *)segs, (P##_buf *)O, a);                                              \
    }                                                                                                                  \
    static mllm_status P##_dv_im2col(mllm_dev *c, const mllm_dev_buf *X, mllm_dev_buf *Y, int64_t C, int64_t T_in,   \
                                     int k, int stride, int pad) {                                                     \
        return P##_im2col((P *)c, (const P##_buf *)X, (P##_buf *)Y, C, T_in, k, stride, pad);                         \
    }

#define MLLM_DEV_LAYER_FIELDS(P)                                                                                       \
    .device_name = P##_dv_device_name, .finish = P##_dv_finish, .buf_new = P##_dv_buf_new,                           \
    .buf_free = P##_dv_buf_free, .buf_size = P##_dv_buf_size, .buf_set = P##_dv_buf_set, .buf_get = P##_dv_buf_get, \
    .buf_copy = P##_dv_buf_copy, .supports_matmul = P##_supports_matmul, .supports_get_rows = P##_supports_get_rows, \
    .mul_mat = P##_dv_mul_mat, .get_rows = P##_dv_get_rows, .rmsnorm = P##_dv_rmsnorm, .layernorm = P##_dv_layernorm, \
    .rope = P##_dv_rope, .elementwise = P##_dv_elementwise, .attention_scratch = P##_attention_scratch,              \
    .attention = P##_dv_attention, .attention_enc = P##_dv_attention_enc, .im2col = P##_dv_im2col

#endif
