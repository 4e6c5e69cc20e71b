/* OpenCL context, kernel program and buffers (ocl.h). The kernel source is
   compiled into the library (kernels.cl, embedded by
   cmake/embed_file.cmake) and built for the device when it is opened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/ocl_internal.h"
#include "backends/device_checks.h"
#include "core/alloc.h"

extern const char mllm_ocl_kernels_src[];

/* A limit on what clGetPlatformIDs / clGetDeviceIDs may list. */
#define OCL_MAX_PLATFORMS 16
#define OCL_MAX_DEVICES 16
/* The ICD loader's "no platform" (cl_khr_icd's CL_PLATFORM_NOT_FOUND_KHR,
   in cl_ext.h, which we do not otherwise need). */
#define CL_PLATFORM_NOT_FOUND_KHR_LOCAL (-1001)

mllm_status mllm_ocl_fail(cl_int err, const char *what) {
    const char *name = err == CL_OUT_OF_RESOURCES             ? " (CL_OUT_OF_RESOURCES)"
                       : err == CL_OUT_OF_HOST_MEMORY         ? " (CL_OUT_OF_HOST_MEMORY)"
                       : err == CL_MEM_OBJECT_ALLOCATION_FAILURE ? " (CL_MEM_OBJECT_ALLOCATION_FAILURE)"
                       : err == CL_INVALID_VALUE              ? " (CL_INVALID_VALUE)"
                       : err == CL_INVALID_WORK_GROUP_SIZE    ? " (CL_INVALID_WORK_GROUP_SIZE)"
                       : err == CL_INVALID_BUFFER_SIZE        ? " (CL_INVALID_BUFFER_SIZE)"
                       : err == CL_BUILD_PROGRAM_FAILURE      ? " (CL_BUILD_PROGRAM_FAILURE)"
                       : err == CL_DEVICE_NOT_FOUND           ? " (CL_DEVICE_NOT_FOUND)"
                       : err == CL_PLATFORM_NOT_FOUND_KHR_LOCAL ? " (CL_PLATFORM_NOT_FOUND_KHR)"
                                                              : "";
    const mllm_status st = err == CL_OUT_OF_HOST_MEMORY || err == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
                                   err == CL_OUT_OF_RESOURCES
                               ? MLLM_ERR_NOMEM
                               : MLLM_ERR_UNSUPPORTED;
    return mllm_err(st, "opencl: %s failed: error %d%s", what, (int)err, name);
}

/* "P:D" -> platform and device index; false when it is not that form. */
static bool parse_spec(const char *s, unsigned *p, unsigned *d) {
    char *end = NULL;
    unsigned long a = strtoul(s, &end, 10);
    if (end == s || *end != ':') return false;
    const char *s2 = end + 1;
    unsigned long b = strtoul(s2, &end, 10);
    if (end == s2 || *end || a >= OCL_MAX_PLATFORMS || b >= OCL_MAX_DEVICES) return false;
    *p = (unsigned)a, *d = (unsigned)b;
    return true;
}

static mllm_status pick_device(const char *spec, cl_platform_id *plat, cl_device_id *dev) {
    cl_platform_id ps[OCL_MAX_PLATFORMS];
    cl_uint np = 0;
    cl_int e = clGetPlatformIDs(OCL_MAX_PLATFORMS, ps, &np);
    if (e == CL_PLATFORM_NOT_FOUND_KHR_LOCAL || (e == CL_SUCCESS && np == 0))
        return mllm_err(MLLM_ERR_UNSUPPORTED, "opencl: no OpenCL platform is installed (Debian: pocl-opencl-icd)");
    if (e != CL_SUCCESS) return mllm_ocl_fail(e, "clGetPlatformIDs");
    if (np > OCL_MAX_PLATFORMS) np = OCL_MAX_PLATFORMS;
    unsigned want_p = 0, want_d = 0;
    const bool chosen = spec && *spec;
    if (chosen && !parse_spec(spec, &want_p, &want_d))
        return mllm_err(MLLM_ERR_INVALID_ARG, "opencl: device '%s' is not PLATFORM:DEVICE (e.g. 0:0; see clinfo -l)",
                        spec);
    if (chosen && want_p >= np)
        return mllm_err(MLLM_ERR_INVALID_ARG, "opencl: platform %u does not exist (%u found)", want_p, (unsigned)np);
    /* Without a choice: the first GPU, else the first device at all. */
    for (int pass = 0; pass < 2; pass++) {
        for (cl_uint i = 0; i < np; i++) {
            if (chosen && i != want_p) continue;
            cl_device_id ds[OCL_MAX_DEVICES];
            cl_uint nd = 0;
            const cl_device_type ty = !chosen && pass == 0 ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_ALL;
            if (clGetDeviceIDs(ps[i], ty, OCL_MAX_DEVICES, ds, &nd) != CL_SUCCESS || nd == 0) continue;
            if (nd > OCL_MAX_DEVICES) nd = OCL_MAX_DEVICES;
            if (chosen && want_d >= nd)
                return mllm_err(MLLM_ERR_INVALID_ARG, "opencl: platform %u has no device %u (%u found)", want_p,
                                want_d, (unsigned)nd);
            *plat = ps[i];
            *dev = ds[chosen ? want_d : 0];
            return MLLM_OK;
        }
    }
    return mllm_err(MLLM_ERR_UNSUPPORTED, "opencl: no OpenCL device found");
}

static mllm_status build_program(mllm_ocl *c) {
    const char *src = mllm_ocl_kernels_src;
    cl_int e;
    c->prog = clCreateProgramWithSource(c->ctx, 1, &src, NULL, &e);
    if (e != CL_SUCCESS) return mllm_ocl_fail(e, "clCreateProgramWithSource");
    /* No fast-math flags: the kernels must round as the C kernels do. */
    e = clBuildProgram(c->prog, 1, &c->dev, "-cl-std=CL1.2", NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[2048] = {0};
        clGetProgramBuildInfo(c->prog, c->dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        return mllm_err(MLLM_ERR_UNSUPPORTED, "opencl: the device's compiler refused the kernels (error %d): %s",
                        (int)e, log);
    }
#define MLLM_OCL_CREATE(en, kname)                                                                             \
    c->k[MLLM_OCL_##en] = clCreateKernel(c->prog, kname, &e);                                                   \
    if (e != CL_SUCCESS) return mllm_ocl_fail(e, "clCreateKernel " kname);
    MLLM_OCL_KERNELS(MLLM_OCL_CREATE)
#undef MLLM_OCL_CREATE
    return MLLM_OK;
}

mllm_status mllm_ocl_open(const char *spec, mllm_ocl **out) {
    if (!out) return mllm_err(MLLM_ERR_INVALID_ARG, "opencl: out is NULL");
    *out = NULL;
    if (!spec || !*spec) spec = getenv("MLLM_OPENCL_DEVICE");
    cl_platform_id plat = NULL;
    cl_device_id dev = NULL;
    mllm_status st = pick_device(spec, &plat, &dev);
    if (st) return st;
    mllm_ocl *c = mllm_calloc(1, sizeof *c);
    if (!c) return mllm_err(MLLM_ERR_NOMEM, "opencl: out of memory");
    c->dev = dev;
    char pn[120] = {0}, dn[120] = {0};
    clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof pn - 1, pn, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dn - 1, dn, NULL);
    snprintf(c->name, sizeof c->name, "%s / %s", pn, dn);
    size_t max_wg = 0;
    clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_wg, &max_wg, NULL);
    if (max_wg < MLLM_OCL_LWS) {
        mllm_ocl_close(c);
        return mllm_err(MLLM_ERR_UNSUPPORTED, "opencl: %s allows work-groups of %zu items; the kernels need %d",
                        c->name, max_wg, MLLM_OCL_LWS);
    }
    cl_int e;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
    c->ctx = clCreateContext(props, 1, &dev, NULL, NULL, &e);
    if (e != CL_SUCCESS) {
        mllm_ocl_close(c);
        return mllm_ocl_fail(e, "clCreateContext");
    }
    c->q = clCreateCommandQueue(c->ctx, dev, 0, &e);
    if (e != CL_SUCCESS) {
        mllm_ocl_close(c);
        return mllm_ocl_fail(e, "clCreateCommandQueue");
    }
    if ((st = build_program(c))) {
        mllm_ocl_close(c);
        return st;
    }
    *out = c;
    return MLLM_OK;
}

void mllm_ocl_close(mllm_ocl *c) {
    if (!c) return;
    mllm_ocl_custom_release(c);
    for (int i = 0; i < MLLM_OCL_N_KERNELS; i++)
        if (c->k[i]) clReleaseKernel(c->k[i]);
    if (c->prog) clReleaseProgram(c->prog);
    if (c->q) clReleaseCommandQueue(c->q);
    if (c->ctx) clReleaseContext(c->ctx);
    mllm_free(c);
}

const char *mllm_ocl_device_name(const mllm_ocl *c) { return c ? c->name : "(none)"; }

mllm_status mllm_ocl_finish(mllm_ocl *c) {
    cl_int e = clFinish(c->q);
    return e == CL_SUCCESS ? MLLM_OK : mllm_ocl_fail(e, "clFinish");
}

mllm_status mllm_ocl_buf_new(mllm_ocl *c, size_t bytes, mllm_ocl_buf **out) {
    if (!c || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "opencl: buffer: NULL argument");
    *out = NULL;
    mllm_ocl_buf *b = mllm_calloc(1, sizeof *b);
    if (!b) return mllm_err(MLLM_ERR_NOMEM, "opencl: out of memory");
    cl_int e;
    /* OpenCL has no zero-size buffers; one byte stands in (size stays 0). */
    b->mem = clCreateBuffer(c->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &e);
    if (e != CL_SUCCESS) {
        mllm_free(b);
        return mllm_ocl_fail(e, "clCreateBuffer");
    }
    b->c = c;
    b->size = bytes;
    *out = b;
    return MLLM_OK;
}

void mllm_ocl_buf_free(mllm_ocl_buf *b) {
    if (!b) return;
    clReleaseMemObject(b->mem);
    mllm_free(b);
}

size_t mllm_ocl_buf_size(const mllm_ocl_buf *b) { return b ? b->size : 0; }

static mllm_status check_range(const mllm_ocl_buf *b, size_t off, size_t n, const char *what) {
    return mllm_dev_range("opencl", what, b != NULL, b ? b->size : 0, off, n);
}

mllm_status mllm_ocl_buf_set(mllm_ocl_buf *b, size_t off, const void *src, size_t n) {
    mllm_status st = check_range(b, off, n, "write");
    if (st || n == 0) return st;
    cl_int e = clEnqueueWriteBuffer(b->c->q, b->mem, CL_TRUE, off, n, src, 0, NULL, NULL);
    return e == CL_SUCCESS ? MLLM_OK : mllm_ocl_fail(e, "clEnqueueWriteBuffer");
}

mllm_status mllm_ocl_buf_get(const mllm_ocl_buf *b, size_t off, void *dst, size_t n) {
    mllm_status st = check_range(b, off, n, "read");
    if (st || n == 0) return st;
    cl_int e = clEnqueueReadBuffer(b->c->q, b->mem, CL_TRUE, off, n, dst, 0, NULL, NULL);
    return e == CL_SUCCESS ? MLLM_OK : mllm_ocl_fail(e, "clEnqueueReadBuffer");
}

mllm_status mllm_ocl_buf_copy(mllm_ocl_buf *dst, size_t dst_off, const mllm_ocl_buf *src, size_t src_off, size_t n) {
    mllm_status st = check_range(dst, dst_off, n, "copy destination");
    if (!st) st = check_range(src, src_off, n, "copy source");
    if (st || n == 0) return st;
    if (dst->c != src->c) return mllm_err(MLLM_ERR_INVALID_ARG, "opencl: copy between two contexts");
    cl_int e = clEnqueueCopyBuffer(dst->c->q, src->mem, dst->mem, src_off, dst_off, n, 0, NULL, NULL);
    return e == CL_SUCCESS ? MLLM_OK : mllm_ocl_fail(e, "clEnqueueCopyBuffer");
}
