/* The OpenCL device layer (issue #13): a context on one OpenCL device, its
   buffers, and one launch function per graph op, each computing what the
   generic C kernel of the op computes (src/backends/cpu; the kernels are
   kernels.cl). This is the part of the OpenCL backend below the backend
   vtable (src/backends/backend.h, issue #12): the vtable's OpenCL entry
   (ocl_backend.c, through the shared backends/dev_backend.h) maps graph
   nodes onto these calls (docs/opencl.md).
   Every call returns MLLM_OK or an error with mllm_last_error() set; sizes
   are checked against the buffers before anything is enqueued. */
#ifndef MLLM_BACKENDS_OPENCL_OCL_H
#define MLLM_BACKENDS_OPENCL_OCL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/device_checks.h"
#include "core/dtype.h"
#include "core/error.h"

typedef struct mllm_ocl mllm_ocl;
typedef struct mllm_ocl_buf mllm_ocl_buf;

/* Opens a device: spec NULL or "" takes $MLLM_OPENCL_DEVICE, else the first
   GPU, else the first device of any kind; "P:D" picks platform P's device
   D (as `clinfo -l` numbers them). Builds the kernels (a clear error with
   the build log when the driver refuses them). MLLM_ERR_UNSUPPORTED when
   no OpenCL platform or device is present. */
mllm_status mllm_ocl_open(const char *spec, mllm_ocl **out);
void mllm_ocl_close(mllm_ocl *c);
/* "platform / device" names, for logs and errors */
const char *mllm_ocl_device_name(const mllm_ocl *c);
/* Waits for every enqueued command. */
mllm_status mllm_ocl_finish(mllm_ocl *c);

/* Device memory. set/get copy host bytes in/out (blocking). */
mllm_status mllm_ocl_buf_new(mllm_ocl *c, size_t bytes, mllm_ocl_buf **out);
void mllm_ocl_buf_free(mllm_ocl_buf *b);
size_t mllm_ocl_buf_size(const mllm_ocl_buf *b);
mllm_status mllm_ocl_buf_set(mllm_ocl_buf *b, size_t off, const void *src, size_t n);
mllm_status mllm_ocl_buf_get(const mllm_ocl_buf *b, size_t off, void *dst, size_t n);
/* dst[dst_off..) = src[src_off..) on the device (the KV store) */
mllm_status mllm_ocl_buf_copy(mllm_ocl_buf *dst, size_t dst_off, const mllm_ocl_buf *src, size_t src_off, size_t n);

/* Weight types the matmul and row lookups take. */
bool mllm_ocl_supports_matmul(mllm_dtype t);
bool mllm_ocl_supports_get_rows(mllm_dtype t);

/* Y (T x N f32) = X (T x K f32) times W (N rows of K values of type wt,
   GGUF layout) transposed, + bias (N floats) when bias is not NULL. */
mllm_status mllm_ocl_mul_mat(mllm_ocl *c, mllm_dtype wt, const mllm_ocl_buf *W, int64_t K, int64_t N,
                             const mllm_ocl_buf *X, int64_t T, mllm_ocl_buf *Y, const mllm_ocl_buf *bias);
/* Y (T x K) = rows ids[0..T) of the table W (rows of K values of type wt). */
mllm_status mllm_ocl_get_rows(mllm_ocl *c, mllm_dtype wt, const mllm_ocl_buf *W, int64_t K, int64_t n_rows,
                              const mllm_ocl_buf *ids, int64_t T, mllm_ocl_buf *Y);
/* Per row of n: rmsnorm (w may be NULL), layernorm (w, b may be NULL). */
mllm_status mllm_ocl_rmsnorm(mllm_ocl *c, const mllm_ocl_buf *X, const mllm_ocl_buf *w, mllm_ocl_buf *Y, int64_t n,
                             int64_t rows, float eps);
mllm_status mllm_ocl_layernorm(mllm_ocl *c, const mllm_ocl_buf *X, const mllm_ocl_buf *w, const mllm_ocl_buf *b,
                               mllm_ocl_buf *Y, int64_t n, int64_t rows, float eps);
/* In place: each row of n becomes softmax(row * scale). */
mllm_status mllm_ocl_softmax(mllm_ocl *c, mllm_ocl_buf *X, int64_t n, int64_t rows, float scale);
/* RoPE of X (T x H x D) into Y with the host's tables cs, sn (T x n_rot/2). */
mllm_status mllm_ocl_rope(mllm_ocl *c, const mllm_ocl_buf *X, mllm_ocl_buf *Y, const mllm_ocl_buf *cs,
                          const mllm_ocl_buf *sn, int64_t D, int64_t H, int64_t T, int n_rot, bool neox);

typedef enum {
    MLLM_OCL_ADD,      /* y = a + b */
    MLLM_OCL_SILU_MUL, /* y = silu(a) * b */
    MLLM_OCL_GELU_MUL, /* y = gelu_tanh(a) * b */
    MLLM_OCL_GELU,     /* y = gelu_erf(a) */
    MLLM_OCL_SCALE,    /* y = a * p */
    MLLM_OCL_SOFTCAP,  /* y = p * tanh(a / p) */
    MLLM_OCL_GELU_TANH, /* y = gelu_tanh(a) */
} mllm_ocl_elementwise;
/* n elements; b is used by the binary ops only, p by scale and softcap. */
mllm_status mllm_ocl_elementwise_op(mllm_ocl *c, mllm_ocl_elementwise op, const mllm_ocl_buf *a,
                                    const mllm_ocl_buf *b, mllm_ocl_buf *y, int64_t n, float p);

/* Attention of Q (T x H x D) over a cache of n_keys positions (K and V:
   rows of Hkv * D floats, position-major) into O (T x H x D). Token t is at
   position pos[t] (I32 buffer of T); causal: keys up to its own position
   (window > 0: only the last `window`), otherwise all n_keys. scale <= 0:
   1/sqrt(D). scratch: at least mllm_ocl_attention_scratch() bytes. */
size_t mllm_ocl_attention_scratch(int64_t H, int64_t T, int64_t n_keys);
mllm_status mllm_ocl_attention(mllm_ocl *c, const mllm_ocl_buf *Q, const mllm_ocl_buf *Kc, const mllm_ocl_buf *Vc,
                               const mllm_ocl_buf *pos, mllm_ocl_buf *O, mllm_ocl_buf *scratch, int64_t D, int64_t H,
                               int64_t Hkv, int64_t T, int64_t n_keys, float scale, int window, bool causal);

/* An encoder's attention (backends/device_checks.h, mllm_dev_enc_attn):
   Q, K, V rows of a->H heads of a->D; segs (a->n_segs + 1 offsets, NULL
   when n_segs is 0) checked against the rows by the kernel, as the CPU
   does: a query in no valid segment keeps its row of O. */
mllm_status mllm_ocl_attention_enc(mllm_ocl *c, const mllm_ocl_buf *Q, const mllm_ocl_buf *K, const mllm_ocl_buf *V,
                                   const mllm_ocl_buf *segs, mllm_ocl_buf *O, const mllm_dev_enc_attn *a);
/* Y (T_out rows of C * k) = the columns of a 1-D convolution of X (T_in
   rows of C), graph.h's mllm_op_im2col; T_out = (T_in + 2 pad - k) / stride + 1. */
mllm_status mllm_ocl_im2col(mllm_ocl *c, const mllm_ocl_buf *X, mllm_ocl_buf *Y, int64_t C, int64_t T_in, int k,
                            int stride, int pad);

/* A plugin op's OpenCL C kernel (include/mllm/mllm.h, mllm_op_def): the
   program src is built on this device the first time key is seen (a clear
   error with the build log when it does not compile) and kernel is run over
   one work-item per element of Y, with the arguments Y, in[0..n_in), then
   the long4 shapes ne_y and ne_in[0..n_in). Every buffer is checked to hold
   its shape's floats. One caller at a time per device (the backend's lock). */
mllm_status mllm_ocl_custom(mllm_ocl *c, const void *key, const char *src, const char *kernel, mllm_ocl_buf *Y,
                            const int64_t ne_y[4], const mllm_ocl_buf *const *in, const int64_t (*ne_in)[4], int n_in);

#endif
