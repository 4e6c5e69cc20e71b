/* CUDA device, stream and buffers (cuda.h). The kernels are compiled into
   the library by nvcc (cu_kernels.cu, for MLLM_CUDA_ARCHS, with PTX the
   driver can JIT for newer GPUs); the runtime (cudart) is linked
   statically and loads the driver (libcuda.so.1) only when a call needs
   it, so the library loads and runs on machines without either, and
   mllm_cuda_open then says why there is no device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cu_internal.h"
#include "backends/device_checks.h"
#include "core/alloc.h"

mllm_status mllm_cuda_fail(cudaError_t err, const char *what) {
    const mllm_status st = err == cudaErrorMemoryAllocation ? MLLM_ERR_NOMEM : MLLM_ERR_UNSUPPORTED;
    return mllm_err(st, "cuda: %s failed: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err));
}

mllm_status mllm_cuda_use(const mllm_cuda *c) {
    if (!c) return mllm_err(MLLM_ERR_INVALID_ARG, "cuda: NULL context");
    const cudaError_t e = cudaSetDevice(c->dev);
    return e == cudaSuccess ? MLLM_OK : mllm_cuda_fail(e, "cudaSetDevice");
}

/* "N" -> device index N; -1 when it is not a number below `count` */
static int parse_spec(const char *s, int count) {
    char *end = NULL;
    const long v = strtol(s, &end, 10);
    if (end == s || *end || v < 0 || v >= count) return -1;
    return (int)v;
}

mllm_status mllm_cuda_open(const char *spec, mllm_cuda **out) {
    if (!out) return mllm_err(MLLM_ERR_INVALID_ARG, "cuda: out is NULL");
    *out = NULL;
    if (!spec || !*spec) spec = getenv("MLLM_CUDA_DEVICE");
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* the runtime records the error; clear it for later calls */
        return mllm_err(MLLM_ERR_UNSUPPORTED, "cuda: no CUDA device: cudaGetDeviceCount: %s (%s)",
                        cudaGetErrorString(e), cudaGetErrorName(e));
    }
    if (count <= 0) return mllm_err(MLLM_ERR_UNSUPPORTED, "cuda: no CUDA device: cudaGetDeviceCount found none");
    int dev = 0;
    if (spec && *spec && (dev = parse_spec(spec, count)) < 0)
        return mllm_err(MLLM_ERR_INVALID_ARG, "cuda: device '%s' is not a device number below %d", spec, count);
    if ((e = cudaSetDevice(dev)) != cudaSuccess) return mllm_cuda_fail(e, "cudaSetDevice");
    struct cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, dev)) != cudaSuccess) return mllm_cuda_fail(e, "cudaGetDeviceProperties");
    /* A GPU older than the build's architectures has no code to run. */
    if ((e = mllm_cu_probe()) != cudaSuccess) {
        (void)cudaGetLastError();
        return mllm_err(MLLM_ERR_UNSUPPORTED, "cuda: device %d (%s, sm_%d%d) cannot run this build's kernels: %s (%s)",
                        dev, prop.name, prop.major, prop.minor, cudaGetErrorString(e), cudaGetErrorName(e));
    }
    mllm_cuda *c = mllm_calloc(1, sizeof *c);
    if (!c) return mllm_err(MLLM_ERR_NOMEM, "cuda: out of memory");
    c->dev = dev;
    snprintf(c->name, sizeof c->name, "device %d: %.255s (sm_%d%d)", dev, prop.name, prop.major, prop.minor);
    if ((e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        mllm_free(c);
        return mllm_cuda_fail(e, "cudaStreamCreate");
    }
    *out = c;
    return MLLM_OK;
}

void mllm_cuda_close(mllm_cuda *c) {
    if (!c) return;
    if (mllm_cuda_use(c) == MLLM_OK) {
        (void)cudaStreamSynchronize(c->stream);
        (void)cudaStreamDestroy(c->stream);
    }
    mllm_free(c);
}

const char *mllm_cuda_device_name(const mllm_cuda *c) { return c ? c->name : "(none)"; }

mllm_status mllm_cuda_finish(mllm_cuda *c) {
    mllm_status st = mllm_cuda_use(c);
    if (st) return st;
    const cudaError_t e = cudaStreamSynchronize(c->stream);
    return e == cudaSuccess ? MLLM_OK : mllm_cuda_fail(e, "cudaStreamSynchronize");
}

mllm_status mllm_cuda_buf_new(mllm_cuda *c, size_t bytes, mllm_cuda_buf **out) {
    if (!c || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "cuda: buffer: NULL argument");
    *out = NULL;
    mllm_status st = mllm_cuda_use(c);
    if (st) return st;
    mllm_cuda_buf *b = mllm_calloc(1, sizeof *b);
    if (!b) return mllm_err(MLLM_ERR_NOMEM, "cuda: out of memory");
    if (bytes) {
        const cudaError_t e = cudaMalloc(&b->mem, bytes);
        if (e != cudaSuccess) {
            mllm_free(b);
            return mllm_cuda_fail(e, "cudaMalloc");
        }
    }
    b->c = c;
    b->size = bytes;
    *out = b;
    return MLLM_OK;
}

void mllm_cuda_buf_free(mllm_cuda_buf *b) {
    if (!b) return;
    /* cudaFree waits for the device, so no launch still reads it */
    if (b->mem && mllm_cuda_use(b->c) == MLLM_OK) (void)cudaFree(b->mem);
    mllm_free(b);
}

size_t mllm_cuda_buf_size(const mllm_cuda_buf *b) { return b ? b->size : 0; }

static mllm_status check_range(const mllm_cuda_buf *b, size_t off, size_t n, const char *what) {
    return mllm_dev_range("cuda", what, b != NULL, b ? b->size : 0, off, n);
}

/* One copy on the context's stream; blocking ones wait for it (and so for
   every launch before it). */
static mllm_status copy(mllm_cuda *c, void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, bool wait,
                        const char *what) {
    mllm_status st = mllm_cuda_use(c);
    if (st) return st;
    cudaError_t e = cudaMemcpyAsync(dst, src, n, kind, c->stream);
    if (e == cudaSuccess && wait) e = cudaStreamSynchronize(c->stream);
    return e == cudaSuccess ? MLLM_OK : mllm_cuda_fail(e, what);
}

mllm_status mllm_cuda_buf_set(mllm_cuda_buf *b, size_t off, const void *src, size_t n) {
    mllm_status st = check_range(b, off, n, "write");
    if (st || n == 0) return st;
    if (!src) return mllm_err(MLLM_ERR_INVALID_ARG, "cuda: write: NULL source");
    return copy(b->c, (char *)b->mem + off, src, n, cudaMemcpyHostToDevice, true, "cudaMemcpy (write)");
}

mllm_status mllm_cuda_buf_get(const mllm_cuda_buf *b, size_t off, void *dst, size_t n) {
    mllm_status st = check_range(b, off, n, "read");
    if (st || n == 0) return st;
    if (!dst) return mllm_err(MLLM_ERR_INVALID_ARG, "cuda: read: NULL destination");
    return copy(b->c, dst, (const char *)b->mem + off, n, cudaMemcpyDeviceToHost, true, "cudaMemcpy (read)");
}

mllm_status mllm_cuda_buf_copy(mllm_cuda_buf *dst, size_t dst_off, const mllm_cuda_buf *src, size_t src_off,
                               size_t n) {
    mllm_status st = check_range(dst, dst_off, n, "copy destination");
    if (!st) st = check_range(src, src_off, n, "copy source");
    if (st || n == 0) return st;
    if (dst->c != src->c) return mllm_err(MLLM_ERR_INVALID_ARG, "cuda: copy between two contexts");
    return copy(dst->c, (char *)dst->mem + dst_off, (const char *)src->mem + src_off, n, cudaMemcpyDeviceToDevice,
                false, "cudaMemcpy (device copy)");
}
