/* Whole models on the CUDA backend (src/backends/cuda/cu_backend.c over the
   shared device backend; device 0, $MLLM_CUDA_DEVICE picks another)
   against the CPU: the same cases and bounds as test_opencl_model.c
   (device_model_cases.h). Without a CUDA build, driver or device every
   test prints SKIPPED with the reason (the CUDA error). */
#ifdef MLLM_HAVE_CUDA
#include "backends/cuda/cu_backend.h"
#include "backends/cuda/cuda.h"
#define DEV_BUILT 1
#define DEV_DEVICE() mllm_backend_cuda_device()
#define DEV_SUPPORTS_GET_ROWS(t) mllm_cuda_supports_get_rows(t)
#else
#define DEV_BUILT 0
#endif
#define DEV_NAME "cuda"
#define DEV_LABEL "CUDA"
#define DEV_NOT_BUILT "this build has no CUDA (configure found no nvcc / CUDA toolkit, or -DMLLM_CUDA=OFF)"
#include "device_model_cases.h"
