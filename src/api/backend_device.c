/* mllm_backend_device: which device a device backend opened, for the
   programs that report it (mllm run, chat, serve: "opencl device: ..."). */
#include <string.h>
#include <mllm/mllm.h>
#ifdef MLLM_HAVE_OPENCL
#include "backends/opencl/ocl_backend.h"
#endif
#ifdef MLLM_HAVE_CUDA
#include "backends/cuda/cu_backend.h"
#endif

const char *mllm_backend_device(const char *backend) {
    if (!backend) return NULL;
#ifdef MLLM_HAVE_OPENCL
    if (!strcmp(backend, "opencl")) return mllm_backend_opencl_device();
#endif
#ifdef MLLM_HAVE_CUDA
    if (!strcmp(backend, "cuda")) return mllm_backend_cuda_device();
#endif
    return NULL;
}
