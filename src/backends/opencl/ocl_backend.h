/* The "opencl" entry of the backend registry (backends/backend.h) over the
   device layer (ocl.h), through the shared device backend
   (backends/dev_backend.h): device buffers as its buffer type, the ops it
   has kernels for in supports_op (the KV store and attention of the layers
   it computes included, their cache on the device), each node of a run
   launched by graph_compute. Everything else (M-RoPE, paged KV, plugin
   ops, weight types without a kernel) stays on the CPU, the scheduler
   (graph/sched.c) copying tensors between them. docs/opencl.md. */
#ifndef MLLM_BACKENDS_OPENCL_OCL_BACKEND_H
#define MLLM_BACKENDS_OPENCL_OCL_BACKEND_H
#include "backends/backend.h"

/* The backend, its device opened (mllm_ocl_open(NULL): $MLLM_OPENCL_DEVICE,
   else the first GPU, else the first device) and registered on the first
   call; the device stays open until the process exits. NULL after setting
   the error (MLLM_ERR_UNSUPPORTED: no platform or device, or the driver
   refused the kernels), on this and every later call. */
mllm_backend *mllm_backend_opencl(void);
/* "platform / device" of the opened device, or NULL before a successful open. */
const char *mllm_backend_opencl_device(void);

#endif
