/* Plugin ops on OpenCL (ocl.h, mllm_ocl_custom): each op's program is
   built the first time the op runs on the device and kept until the
   device closes; a launch checks every buffer against its shape, then
   passes the buffers and the long4 shapes in the order mllm.h documents. */
#include <stdio.h>
#include <string.h>

#include "backends/opencl/ocl_internal.h"
#include "backends/device_checks.h"

#define MAX_IN 4

void mllm_ocl_custom_release(mllm_ocl *c) {
    for (int i = 0; i < c->n_custom; i++) {
        if (c->custom[i].k) clReleaseKernel(c->custom[i].k);
        if (c->custom[i].prog) clReleaseProgram(c->custom[i].prog);
    }
    c->n_custom = 0;
}

static mllm_status build(mllm_ocl *c, const void *key, const char *src, const char *kernel, cl_kernel *out) {
    for (int i = 0; i < c->n_custom; i++)
        if (c->custom[i].key == key) {
            *out = c->custom[i].k;
            return MLLM_OK;
        }
    if (c->n_custom == MLLM_OCL_MAX_CUSTOM)
        return mllm_err(MLLM_ERR_NOMEM, "opencl: more than %d plugin op programs", MLLM_OCL_MAX_CUSTOM);
    cl_int e = CL_SUCCESS;
    cl_program p = clCreateProgramWithSource(c->ctx, 1, &src, NULL, &e);
    if (e != CL_SUCCESS) return mllm_ocl_fail(e, "clCreateProgramWithSource (plugin op)");
    e = clBuildProgram(p, 1, &c->dev, "-cl-std=CL1.2", NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[2048] = {0};
        clGetProgramBuildInfo(p, c->dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        clReleaseProgram(p);
        return mllm_err(MLLM_ERR_UNSUPPORTED, "opencl: the plugin op's kernel '%s' does not build on %s: %s", kernel,
                        c->name, log);
    }
    cl_kernel k = clCreateKernel(p, kernel, &e);
    if (e != CL_SUCCESS) {
        clReleaseProgram(p);
        return mllm_err(MLLM_ERR_UNSUPPORTED, "opencl: the plugin op's program has no kernel '%s' (%d)", kernel, (int)e);
    }
    c->custom[c->n_custom++] = (mllm_ocl_custom_prog){key, p, k};
    *out = k;
    return MLLM_OK;
}

static mllm_status elements(const char *what, int i, const int64_t ne[4], size_t *n) {
    size_t t = 1;
    for (int d = 0; d < 4; d++) {
        if (ne[d] < 1 || (size_t)ne[d] > SIZE_MAX / 4 / t)
            return mllm_err(MLLM_ERR_INVALID_ARG, "opencl plugin op: %s %d has a bad shape", what, i);
        t *= (size_t)ne[d];
    }
    *n = t;
    return MLLM_OK;
}

static mllm_status holds(const mllm_ocl_buf *b, size_t n, const char *what, int i) {
    char name[32];
    snprintf(name, sizeof name, "%s %d", what, i);
    return mllm_dev_need("opencl", "plugin op", name, b != NULL, b ? b->size : 0, n * sizeof(float));
}

static cl_long4 long4_of(const int64_t ne[4]) {
    cl_long4 v;
    for (int d = 0; d < 4; d++) v.s[d] = (cl_long)ne[d];
    return v;
}

mllm_status mllm_ocl_custom(mllm_ocl *c, const void *key, const char *src, const char *kernel, mllm_ocl_buf *Y,
                            const int64_t ne_y[4], const mllm_ocl_buf *const *in, const int64_t (*ne_in)[4], int n_in) {
    if (!src || !kernel || n_in < 1 || n_in > MAX_IN)
        return mllm_err(MLLM_ERR_INVALID_ARG, "opencl plugin op: no kernel, or %d inputs", n_in);
    size_t n_out = 0, n = 0;
    mllm_status st = elements("output", 0, ne_y, &n_out);
    if (!st) st = holds(Y, n_out, "output", 0);
    for (int i = 0; i < n_in && !st; i++) {
        st = elements("input", i, ne_in[i], &n);
        if (!st) st = holds(in[i], n, "input", i);
    }
    cl_kernel k = NULL;
    if (!st) st = build(c, key, src, kernel, &k);
    if (st) return st;
    cl_long4 shapes[1 + MAX_IN];
    shapes[0] = long4_of(ne_y);
    for (int i = 0; i < n_in; i++) shapes[1 + i] = long4_of(ne_in[i]);
    cl_uint a = 0;
    cl_int e = clSetKernelArg(k, a++, sizeof(cl_mem), &Y->mem);
    for (int i = 0; i < n_in && e == CL_SUCCESS; i++) e = clSetKernelArg(k, a++, sizeof(cl_mem), &in[i]->mem);
    for (int i = 0; i <= n_in && e == CL_SUCCESS; i++) e = clSetKernelArg(k, a++, sizeof(cl_long4), &shapes[i]);
    if (e != CL_SUCCESS) return mllm_ocl_fail(e, "clSetKernelArg (plugin op: does its kernel take the documented arguments?)");
    const size_t global = n_out;
    e = clEnqueueNDRangeKernel(c->q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
    return e == CL_SUCCESS ? MLLM_OK : mllm_ocl_fail(e, "plugin op");
}
