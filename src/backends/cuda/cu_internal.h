/* Shared by cu_runtime.c (device, stream, buffers) and cu_ops.c (the
   checked launches): the structs behind the handles. */
#ifndef MLLM_BACKENDS_CUDA_CU_INTERNAL_H
#define MLLM_BACKENDS_CUDA_CU_INTERNAL_H
#include "backends/cuda/cu_launch.h"
#include "backends/cuda/cuda.h"

struct mllm_cuda {
    int dev;
    cudaStream_t stream;
    char name[320];
};

struct mllm_cuda_buf {
    mllm_cuda *c;
    void *mem; /* device memory; NULL for a buffer of 0 bytes */
    size_t size;
};

/* A CUDA error as an mllm status with a message naming what failed. */
mllm_status mllm_cuda_fail(cudaError_t err, const char *what);
/* Makes c's device the calling thread's current one (CUDA's current
   device is per thread; a context may be used from several). */
mllm_status mllm_cuda_use(const mllm_cuda *c);

#endif
