/* The CUDA device layer (issue #13): one CUDA device, its buffers, and one
   launch function per graph op, each computing what the generic C kernel of
   the op computes (src/backends/cpu; the kernels are cu_kernels.cu, their
   arithmetic cu_math.h). The twin of the OpenCL layer
   (src/backends/opencl/ocl.h), call for call, so the backend vtable
   (src/backends/backend.h) maps graph nodes onto it the same way: the
   shared device backend (backends/dev_backend.h) through cu_backend.c
   (docs/cuda.md).
   Every call returns MLLM_OK or an error with mllm_last_error() set; sizes
   are checked against the buffers before anything is launched. Launches
   are asynchronous on the context's stream; buffer reads and
   mllm_cuda_finish wait for them. */
#ifndef MLLM_BACKENDS_CUDA_CUDA_H
#define MLLM_BACKENDS_CUDA_CUDA_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/device_checks.h"
#include "core/dtype.h"
#include "core/error.h"

typedef struct mllm_cuda mllm_cuda;
typedef struct mllm_cuda_buf mllm_cuda_buf;

/* Opens a device: spec NULL or "" takes $MLLM_CUDA_DEVICE, else device 0;
   "N" picks device N (as the CUDA runtime numbers them, after
   CUDA_VISIBLE_DEVICES). MLLM_ERR_UNSUPPORTED, with CUDA's message, when
   there is no driver or device or the GPU cannot run this build's
   kernels (MLLM_CUDA_ARCHS); MLLM_ERR_INVALID_ARG for a spec that is not
   a device number. */
mllm_status mllm_cuda_open(const char *spec, mllm_cuda **out);
void mllm_cuda_close(mllm_cuda *c);
/* "device N: NAME (sm_XY)", for logs and errors */
const char *mllm_cuda_device_name(const mllm_cuda *c);
/* Waits for every enqueued command. */
mllm_status mllm_cuda_finish(mllm_cuda *c);

/* Device memory. set/get copy host bytes in/out (blocking). */
mllm_status mllm_cuda_buf_new(mllm_cuda *c, size_t bytes, mllm_cuda_buf **out);
void mllm_cuda_buf_free(mllm_cuda_buf *b);
size_t mllm_cuda_buf_size(const mllm_cuda_buf *b);
mllm_status mllm_cuda_buf_set(mllm_cuda_buf *b, size_t off, const void *src, size_t n);
mllm_status mllm_cuda_buf_get(const mllm_cuda_buf *b, size_t off, void *dst, size_t n);
/* dst[dst_off..) = src[src_off..) on the device (the KV store) */
mllm_status mllm_cuda_buf_copy(mllm_cuda_buf *dst, size_t dst_off, const mllm_cuda_buf *src, size_t src_off, size_t n);

/* Weight types the matmul and row lookups take. */
bool mllm_cuda_supports_matmul(mllm_dtype t);
bool mllm_cuda_supports_get_rows(mllm_dtype t);

/* Y (T x N f32) = X (T x K f32) times W (N rows of K values of type wt,
   GGUF layout) transposed, + bias (N floats) when bias is not NULL. */
mllm_status mllm_cuda_mul_mat(mllm_cuda *c, mllm_dtype wt, const mllm_cuda_buf *W, int64_t K, int64_t N,
                             const mllm_cuda_buf *X, int64_t T, mllm_cuda_buf *Y, const mllm_cuda_buf *bias);
/* Y (T x K) = rows ids[0..T) of the table W (rows of K values of type wt). */
mllm_status mllm_cuda_get_rows(mllm_cuda *c, mllm_dtype wt, const mllm_cuda_buf *W, int64_t K, int64_t n_rows,
                              const mllm_cuda_buf *ids, int64_t T, mllm_cuda_buf *Y);
/* Per row of n: rmsnorm (w may be NULL), layernorm (w, b may be NULL). */
mllm_status mllm_cuda_rmsnorm(mllm_cuda *c, const mllm_cuda_buf *X, const mllm_cuda_buf *w, mllm_cuda_buf *Y, int64_t n,
                             int64_t rows, float eps);
mllm_status mllm_cuda_layernorm(mllm_cuda *c, const mllm_cuda_buf *X, const mllm_cuda_buf *w, const mllm_cuda_buf *b,
                               mllm_cuda_buf *Y, int64_t n, int64_t rows, float eps);
/* In place: each row of n becomes softmax(row * scale). */
mllm_status mllm_cuda_softmax(mllm_cuda *c, mllm_cuda_buf *X, int64_t n, int64_t rows, float scale);
/* RoPE of X (T x H x D) into Y with the host's tables cs, sn (T x n_rot/2). */
mllm_status mllm_cuda_rope(mllm_cuda *c, const mllm_cuda_buf *X, mllm_cuda_buf *Y, const mllm_cuda_buf *cs,
                          const mllm_cuda_buf *sn, int64_t D, int64_t H, int64_t T, int n_rot, bool neox);

typedef enum {
    MLLM_CUDA_ADD,      /* y = a + b */
    MLLM_CUDA_SILU_MUL, /* y = silu(a) * b */
    MLLM_CUDA_GELU_MUL, /* y = gelu_tanh(a) * b */
    MLLM_CUDA_GELU,     /* y = gelu_erf(a) */
    MLLM_CUDA_SCALE,    /* y = a * p */
    MLLM_CUDA_SOFTCAP,  /* y = p * tanh(a / p) */
    MLLM_CUDA_GELU_TANH, /* y = gelu_tanh(a) */
} mllm_cuda_elementwise;
/* n elements; b is used by the binary ops only, p by scale and softcap. */
mllm_status mllm_cuda_elementwise_op(mllm_cuda *c, mllm_cuda_elementwise op, const mllm_cuda_buf *a,
                                    const mllm_cuda_buf *b, mllm_cuda_buf *y, int64_t n, float p);

/* Attention of Q (T x H x D) over a cache of n_keys positions (K and V:
   rows of Hkv * D floats, position-major) into O (T x H x D). Token t is at
   position pos[t] (I32 buffer of T); causal: keys up to its own position
   (window > 0: only the last `window`), otherwise all n_keys. scale <= 0:
   1/sqrt(D). scratch: at least mllm_cuda_attention_scratch() bytes. */
size_t mllm_cuda_attention_scratch(int64_t H, int64_t T, int64_t n_keys);
mllm_status mllm_cuda_attention(mllm_cuda *c, const mllm_cuda_buf *Q, const mllm_cuda_buf *Kc, const mllm_cuda_buf *Vc,
                               const mllm_cuda_buf *pos, mllm_cuda_buf *O, mllm_cuda_buf *scratch, int64_t D, int64_t H,
                               int64_t Hkv, int64_t T, int64_t n_keys, float scale, int window, bool causal);

/* An encoder's attention and the columns of a 1-D convolution: as
   opencl/ocl.h's mllm_ocl_attention_enc and mllm_ocl_im2col. */
mllm_status mllm_cuda_attention_enc(mllm_cuda *c, const mllm_cuda_buf *Q, const mllm_cuda_buf *K,
                                    const mllm_cuda_buf *V, const mllm_cuda_buf *segs, mllm_cuda_buf *O,
                                    const mllm_dev_enc_attn *a);
mllm_status mllm_cuda_im2col(mllm_cuda *c, const mllm_cuda_buf *X, mllm_cuda_buf *Y, int64_t C, int64_t T_in, int k,
                             int stride, int pad);

#endif
