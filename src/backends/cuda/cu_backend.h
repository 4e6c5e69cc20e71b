/* The "cuda" entry of the backend registry (backends/backend.h) over the
   device layer (cuda.h), through the shared device backend
   (backends/dev_backend.h), exactly as OpenCL's (opencl/ocl_backend.h):
   the same ops on the device, its KV cache there, the rest on the CPU.
   docs/cuda.md. */
#ifndef MLLM_BACKENDS_CUDA_CU_BACKEND_H
#define MLLM_BACKENDS_CUDA_CU_BACKEND_H
#include "backends/backend.h"

/* The backend, its device opened (mllm_cuda_open(NULL): $MLLM_CUDA_DEVICE,
   else device 0) and registered on the first call; the device stays open
   until the process exits. NULL after setting the error
   (MLLM_ERR_UNSUPPORTED: no driver or device, or a GPU without code in
   this build), on this and every later call. */
mllm_backend *mllm_backend_cuda(void);
/* "device N: NAME (sm_XY)" of the opened device, or NULL before a successful open. */
const char *mllm_backend_cuda_device(void);

#endif
