/* Whole models on the OpenCL backend (src/backends/opencl/ocl_backend.c
   over the shared device backend; PoCL on the CPU in CI,
   $MLLM_OPENCL_DEVICE picks another device) against the CPU: the cases and
   bounds of device_model_cases.h, shared with test_cuda_model.c. */
#ifdef MLLM_HAVE_OPENCL
#include "backends/opencl/ocl.h"
#include "backends/opencl/ocl_backend.h"
#define DEV_BUILT 1
#define DEV_DEVICE() mllm_backend_opencl_device()
#define DEV_SUPPORTS_GET_ROWS(t) mllm_ocl_supports_get_rows(t)
#else
#define DEV_BUILT 0
#endif
#define DEV_NAME "opencl"
#define DEV_LABEL "OpenCL"
#define DEV_NOT_BUILT "this build has no OpenCL (configure found no ICD loader, or -DMLLM_OPENCL=OFF)"
#include "device_model_cases.h"
