/* The OpenCL backend (ocl_backend.h): the device layer of ocl.h in the
   table a device backend is driven by (backends/dev_backend.h), and what
   OpenCL does its own way: opening the device and making views of its
   buffers. Which nodes run, the KV cache and the runs are
   backends/dev_backend.c and dev_kv.c, shared with CUDA. */
#include "backends/opencl/ocl_backend.h"

#include "backends/dev_backend.h"
#include "backends/opencl/ocl_internal.h"
#include "core/alloc.h"

static size_t g_align; /* sub-buffer origins, bytes (CL_DEVICE_MEM_BASE_ADDR_ALIGN) */

static mllm_status ocl_open(mllm_dev **out) {
    mllm_ocl *c = NULL;
    const mllm_status st = mllm_ocl_open(NULL, &c);
    if (st) return st;
    cl_uint bits = 0;
    clGetDeviceInfo(c->dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL);
    g_align = bits >= 8 ? bits / 8 : 128;
    *out = (mllm_dev *)c;
    return MLLM_OK;
}

/* A sub-buffer where the origin is aligned for the device; none (the
   caller copies) where it is not or the driver refuses. */
static mllm_status ocl_view_new(mllm_dev_buf *b, size_t off, size_t n, mllm_dev_buf **out) {
    const mllm_ocl_buf *parent = (const mllm_ocl_buf *)b;
    *out = NULL;
    if (off % g_align || n == 0) return MLLM_OK;
    mllm_ocl_buf *v = mllm_calloc(1, sizeof *v);
    if (!v) return mllm_err(MLLM_ERR_NOMEM, "opencl: out of memory");
    cl_int e = CL_SUCCESS;
    const cl_buffer_region reg = {off, n};
    v->mem = clCreateSubBuffer(parent->mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &reg, &e);
    if (e != CL_SUCCESS) {
        mllm_free(v);
        return MLLM_OK;
    }
    v->c = parent->c;
    v->size = n;
    *out = (mllm_dev_buf *)v;
    return MLLM_OK;
}

/* OpenCL keeps the sub-buffer until the commands enqueued on it finish. */
static void ocl_view_free(mllm_dev_buf *v) { mllm_ocl_buf_free((mllm_ocl_buf *)v); }

MLLM_DEV_LAYER_CALLS(mllm_ocl, MLLM_OCL_)

static mllm_status ocl_custom(mllm_dev *c, const void *key, const char *src, const char *kernel, mllm_dev_buf *y,
                              const int64_t ne_y[4], const mllm_dev_buf *const *in, const int64_t (*ne_in)[4], int n_in) {
    return mllm_ocl_custom((mllm_ocl *)c, key, src, kernel, (mllm_ocl_buf *)y, ne_y, (const mllm_ocl_buf *const *)in,
                           ne_in, n_in);
}

static const mllm_dev_ops g_ops = {
    .name = "opencl",
    .open = ocl_open,
    .view_new = ocl_view_new,
    .view_free = ocl_view_free,
    MLLM_DEV_LAYER_FIELDS(mllm_ocl),
    .custom_opencl = ocl_custom,
};

mllm_backend *mllm_backend_opencl(void) { return mllm_dev_backend_get(&g_ops); }

const char *mllm_backend_opencl_device(void) { return mllm_dev_backend_device(&g_ops); }
