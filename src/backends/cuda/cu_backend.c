/* The CUDA backend (cu_backend.h): the device layer of cuda.h in the table
   a device backend is driven by (backends/dev_backend.h), and what CUDA
   does its own way: opening the device and making views of its buffers.
   Which nodes run, the KV cache and the runs are backends/dev_backend.c
   and dev_kv.c, shared with OpenCL. */
#include "backends/cuda/cu_backend.h"

#include "backends/cuda/cu_internal.h"
#include "backends/dev_backend.h"
#include "core/alloc.h"

/* View origins: every kernel reads floats, halves or bytes; 16 keeps any
   vector load a kernel may use aligned. */
#define CU_VIEW_ALIGN 16

static mllm_status cu_open(mllm_dev **out) {
    mllm_cuda *c = NULL;
    const mllm_status st = mllm_cuda_open(NULL, &c);
    *out = (mllm_dev *)c;
    return st;
}

/* A pointer into b's memory: no copy, no driver call. */
static mllm_status cu_view_new(mllm_dev_buf *b, size_t off, size_t n, mllm_dev_buf **out) {
    const mllm_cuda_buf *parent = (const mllm_cuda_buf *)b;
    *out = NULL;
    if (off % CU_VIEW_ALIGN || !parent->mem) return MLLM_OK;
    mllm_cuda_buf *v = mllm_calloc(1, sizeof *v);
    if (!v) return mllm_err(MLLM_ERR_NOMEM, "cuda: out of memory");
    v->c = parent->c;
    v->mem = (char *)parent->mem + off;
    v->size = n;
    *out = (mllm_dev_buf *)v;
    return MLLM_OK;
}

/* The memory is the parent's: only the handle goes. */
static void cu_view_free(mllm_dev_buf *v) { mllm_free(v); }

MLLM_DEV_LAYER_CALLS(mllm_cuda, MLLM_CUDA_)

static const mllm_dev_ops g_ops = {
    .name = "cuda",
    .open = cu_open,
    .view_new = cu_view_new,
    .view_free = cu_view_free,
    MLLM_DEV_LAYER_FIELDS(mllm_cuda),
};

mllm_backend *mllm_backend_cuda(void) { return mllm_dev_backend_get(&g_ops); }

const char *mllm_backend_cuda_device(void) { return mllm_dev_backend_device(&g_ops); }
