/* The kernel launchers of cu_kernels.cu, called by cu_ops.c after it has
   checked every size, id and position. C linkage and only C types, so the C
   side never sees CUDA C++. Each enqueues on `stream` and returns the launch
   error (cudaGetLastError), 0 for success. Pointers are device pointers;
   sizes fit int (cu_ops.c CU_MAX_DIM). */
#ifndef MLLM_BACKENDS_CUDA_CU_LAUNCH_H
#define MLLM_BACKENDS_CUDA_CU_LAUNCH_H
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Weight / table types the kernels know (cu_ops.c maps mllm_dtype). */
typedef enum {
    MLLM_CU_F32,
    MLLM_CU_F16,
    MLLM_CU_Q8_0,
    MLLM_CU_Q4_0,
    MLLM_CU_Q4_K,
    MLLM_CU_Q6_K,
} mllm_cu_wtype;

/* Elementwise ops; the same order as mllm_cuda_elementwise. */
typedef enum {
    MLLM_CU_EW_ADD,
    MLLM_CU_EW_SILU_MUL,
    MLLM_CU_EW_GELU_MUL,
    MLLM_CU_EW_GELU,
    MLLM_CU_EW_SCALE,
    MLLM_CU_EW_SOFTCAP,
    MLLM_CU_EW_GELU_TANH
} mllm_cu_ew;

/* 0 when the build holds code this device can run (a kernel's attributes
   load), else the CUDA error (cudaErrorNoKernelImageForDevice). */
cudaError_t mllm_cu_probe(void);

cudaError_t mllm_cu_mul_mat(cudaStream_t s, mllm_cu_wtype t, const uint8_t *W, size_t row_bytes, int K, int N,
                            const float *X, int T, float *Y, const float *bias);
cudaError_t mllm_cu_get_rows(cudaStream_t s, mllm_cu_wtype t, const uint8_t *W, size_t row_bytes, int K,
                             const int32_t *ids, int T, float *Y);
cudaError_t mllm_cu_rmsnorm(cudaStream_t s, const float *X, const float *w, float *Y, int n, int rows, float eps);
cudaError_t mllm_cu_layernorm(cudaStream_t s, const float *X, const float *w, const float *b, float *Y, int n,
                              int rows, float eps);
cudaError_t mllm_cu_softmax(cudaStream_t s, float *X, int n, int rows, float scale);
cudaError_t mllm_cu_rope(cudaStream_t s, const float *X, float *Y, const float *cs, const float *sn, int D, int H,
                         int T, int n_rot, int neox);
cudaError_t mllm_cu_elementwise(cudaStream_t s, mllm_cu_ew op, const float *a, const float *b, float *y, int64_t n,
                                float p);
/* scores S (T x H x n_keys, -inf where masked, times scale), then the
   softmax of each row, then O = P V */
cudaError_t mllm_cu_attn_scores(cudaStream_t s, const float *Q, const float *Kc, float *S, const int32_t *pos, int D,
                                int H, int Hkv, int T, int n_keys, float scale, int window, int causal);
cudaError_t mllm_cu_attn_pv(cudaStream_t s, const float *P, const float *Vc, float *O, int D, int H, int Hkv, int T,
                            int n_keys);
/* An encoder's attention (device_checks.h, mllm_dev_enc_attn): one
   thread per (head, query) over its keys, strides in floats; segs NULL
   when n_segs is 0. */
cudaError_t mllm_cu_attn_enc(cudaStream_t s, const float *Q, const float *K, const float *V, const int32_t *segs,
                             float *O, int D, int H, int n_q, int n_k, int64_t qs, int64_t ks, int64_t vs, int n_segs,
                             float scale);
/* Y (T_out rows of C * k) = the columns of a 1-D convolution of X (T_in rows of C). */
cudaError_t mllm_cu_im2col(cudaStream_t s, const float *X, float *Y, int C, int T_in, int k, int stride, int pad,
                           int T_out);

#ifdef __cplusplus
}
#endif
#endif
