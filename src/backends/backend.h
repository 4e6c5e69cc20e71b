/* The backend interface: what the graph's scheduler (graph/sched.c) needs
   from a device. A backend has a buffer type (where its tensors live: alloc,
   free, set, get, is_host), says which nodes it can compute (supports_op),
   computes a run of consecutive nodes (graph_compute) and waits for its work
   to finish (synchronize). Backends are found by name in a small registry:
   the CPU is always there (backends/cpu/cpu_backend.c); others (the tests'
   "test" backend, OpenCL, CUDA: dev_backend.h) register themselves.

   Nodes are core/tensor.h's mllm_tensor. A node whose buffer is NULL lives
   in host memory the CPU reads in place; otherwise in buffer at
   buffer_offs (data is then buffer->data + buffer_offs when the buffer type
   is host memory, NULL when it is not). */
#ifndef MLLM_BACKENDS_BACKEND_H
#define MLLM_BACKENDS_BACKEND_H
#include <stdbool.h>
#include <stddef.h>

#include <mllm/mllm.h>
#include "core/tensor.h"
#include "core/threadpool.h"

typedef struct mllm_buffer_type mllm_buffer_type;

typedef struct mllm_buffer {
    const mllm_buffer_type *type;
    void *data;  /* host memory when type->is_host(), else the backend's handle */
    size_t size;
} mllm_buffer;

struct mllm_buffer_type {
    const char *name;
    /* Fills *b with size bytes (size 0 allowed); false when out of memory. */
    bool (*alloc)(const mllm_buffer_type *bt, size_t size, mllm_buffer *b);
    void (*free)(mllm_buffer *b);
    /* Copies n bytes from host memory into b at offs, and back. */
    void (*set)(mllm_buffer *b, size_t offs, const void *src, size_t n);
    void (*get)(const mllm_buffer *b, size_t offs, void *dst, size_t n);
    /* Whether b->data is memory the host (and so the CPU kernels) can use. */
    bool (*is_host)(const mllm_buffer_type *bt);
};

/* What a run of nodes is computed with: the graph's threads and a scratch
   buffer the backend may grow (kept by the graph between runs). */
typedef struct {
    mllm_pool *pool;
    void *work;
    size_t work_size;
    /* The CPU computes nodes of fewer multiply-adds (values, for the
       elementwise ops) than this on the calling thread alone, waking the
       pool only for the others; 0: every node on the whole pool
       (mllm_graph.serial_below). */
    int64_t serial_below;
} mllm_exec_ctx;

typedef struct mllm_backend mllm_backend;
struct mllm_backend {
    const char *name;
    /* Where this backend's tensors live. Two backends with the same buffer
       type read each other's tensors without a copy. */
    const mllm_buffer_type *buffer_type;
    /* Whether it can compute this node (op, dtypes, shapes, parameters). */
    bool (*supports_op)(const mllm_backend *be, const mllm_tensor *node);
    /* Computes nodes[0..n) in order; every input is in this backend's
       buffer type. False on failure (out of memory). */
    bool (*graph_compute)(mllm_backend *be, mllm_exec_ctx *x, mllm_tensor **nodes, int n);
    /* Returns when all work handed to graph_compute and to buffer set/get
       is finished (the CPU computes synchronously: a no-op). */
    void (*synchronize)(mllm_backend *be);
    /* Optional: forgets what it holds of the host KV layer kv (a device
       backend's copy of that cache), before the cache is freed. */
    void (*kv_release)(mllm_backend *be, const mllm_kv_layer *kv);
    void *ctx;
};

#define MLLM_MAX_BACKENDS 8

/* The CPU backend: always registered, and the fallback of every schedule. */
mllm_backend *mllm_backend_cpu(void);
/* Adds be to the registry (its name must be new); false when full or the
   name is taken. */
bool mllm_backend_register(mllm_backend *be);
/* The backend called name (case-sensitive), or NULL after setting the error
   message (core/error.h): unknown name, with the names there are.
   "opencl" and "cuda" open their device and register on the first call
   (opencl/ocl_backend.h, cuda/cu_backend.h); without a device, or in a
   build without that layer, the message says so (MLLM_ERR_UNSUPPORTED). */
mllm_backend *mllm_backend_by_name(const char *name);
/* The backends of a comma-separated list of names ("opencl,cpu") into
   out[0..*n) (MLLM_MAX_BACKENDS at most), in order; the CPU alone gives
   *n = 0 (no schedule needed); NULL or "" gives 0. what names the list
   in errors: MLLM_ERR_INVALID_ARG (a bad list, an unknown name, too many),
   MLLM_ERR_UNSUPPORTED (a device backend this build or machine lacks). */
mllm_status mllm_backends_parse(const char *list, const char *what, mllm_backend **out, int *n);
/* Writes the registered names, comma separated, into out (with the device
   backends this build has, registered or not yet). */
void mllm_backend_names(char *out, size_t n);
/* Whether name is a device backend this library knows of ("opencl",
   "cuda"), built in or not: a failure to get it is then unsupported, not
   an unknown name. */
bool mllm_backend_is_device(const char *name);
/* Every registered backend forgets kv[0..n) (kv_release): called by the
   owner of a host KV cache before it frees it. */
void mllm_backend_kv_release(const mllm_kv_layer *kv, int n);

/* Host-memory buffer helpers for backends whose buffer type is host
   memory (the CPU's, the tests'): 64-byte aligned, memcpy set and get. */
bool mllm_host_buffer_alloc(const mllm_buffer_type *bt, size_t size, mllm_buffer *b);
void mllm_host_buffer_free(mllm_buffer *b);
void mllm_host_buffer_set(mllm_buffer *b, size_t offs, const void *src, size_t n);
void mllm_host_buffer_get(const mllm_buffer *b, size_t offs, void *dst, size_t n);
bool mllm_host_buffer_is_host(const mllm_buffer_type *bt);

#endif
