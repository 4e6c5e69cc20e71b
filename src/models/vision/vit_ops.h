/* What the vision towers (qwen2vl_vision*.c, idefics3_vision*.c) share:
   their weights as graph tensors (linear layers stay in the file's mapping,
   f32 / f16 / bf16; vectors widened to f32), placed on the backends the
   towers run on, each encode's trace graph over them (graph/graph.h), and
   binding those weights from a safetensors file by name and shape. */
#ifndef MLLM_MODELS_VIT_OPS_H
#define MLLM_MODELS_VIT_OPS_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/threadpool.h"
#include "graph/graph.h"
#include "graph/sched.h"
#include "core/meta.h"
#include "formats/safetensors.h"

typedef struct {
    const void *w;      /* n_out rows of n_in values, in the mapping */
    int dtype;          /* F32, F16 or BF16 */
    size_t row_bytes;
    int64_t n_in, n_out;
    float *b;           /* n_out floats (owned) or NULL */
    void *own;          /* w when the loader built it (GGUF: q, k, v joined; the patch kernel), else NULL */
} qv_linear;

/* A tower's weights as graph tensors: every one made here is listed, so
   that they can be placed on the backends (mllm_sched_place_weights). */
typedef struct {
    mllm_graph g;             /* holds the tensor structs; never executed */
    mllm_tensor **all;        /* n of them */
    int n, cap;
    mllm_backend *be[MLLM_MAX_BACKENDS]; /* in order of preference; none: the CPU alone */
    int n_be;
    mllm_placement *placed[MLLM_MAX_BACKENDS];
    bool failed;              /* out of memory while making them */
} qv_weights;

typedef struct {
    mllm_tensor *w, *b; /* b NULL: no bias */
} qv_lin;

void qv_weights_init(qv_weights *ws);
void qv_weights_free(qv_weights *ws);
/* n_out rows of n_in values of dtype, packed one after the other (not copied). */
mllm_tensor *qv_weight_matrix(qv_weights *ws, const void *w, int dtype, int64_t n_in, int64_t n_out, const char *name);
/* rows of n f32 values (rows == 1: a vector; not copied). */
mllm_tensor *qv_weight_f32(qv_weights *ws, const float *x, int64_t n, int64_t rows, const char *name);
/* Rows [r0, r0 + n) of L as a linear layer (its bias's too). */
qv_lin qv_weight_linear_rows(qv_weights *ws, const qv_linear *L, int64_t r0, int64_t n, const char *name);
static inline qv_lin qv_weight_linear(qv_weights *ws, const qv_linear *L, const char *name) {
    return qv_weight_linear_rows(ws, L, 0, L->n_out, name);
}
/* The backends the tower's graphs run on (the CPU, last, takes what they
   cannot): the weights each can use are copied into its buffers now.
   n == 0, or the CPU alone: the CPU. */
mllm_status qv_weights_use_backends(qv_weights *ws, mllm_backend *const *be, int n, const char *what);
/* A trace graph for one encode on pool: encoders' matmuls (the packed GEMM
   on the CPU), the backends of ws. */
void qv_graph_init(const qv_weights *ws, mllm_graph *g, mllm_pool *pool);
/* y = x W^T + b. */
static inline mllm_tensor *qv_matmul(mllm_graph *g, qv_lin L, mllm_tensor *x) { return mllm_op_matmul(g, L.w, x, L.b); }
/* Plans g for out, runs it and copies out's values to a new buffer (dst,
   mllm_malloc'd); fill(user) writes the graph's inputs in between. */
mllm_status qv_graph_run(mllm_graph *g, mllm_tensor *out, void (*fill)(void *user), void *user, float **dst,
                         const char *what);
/* The schedule of the calling thread's last qv_graph_run (all zero when it
   ran on the CPU alone, without one): which backends computed a tower's
   nodes, for tests and logs. Per thread, so encodes on other threads do
   not change it. */
void qv_last_schedule(mllm_sched_stats *out);

/* Binding a safetensors file's tensors: the first error sticks in st, and
   every later call does nothing. */
typedef struct {
    mllm_safetensors *file;
    const char *path, *prefix;
    mllm_status st;
} qv_binder;

mllm_status qv_check_dtype(int dtype, const char *path, const char *name);
/* prefix + name with ne0 x ne1 values (ne0 the row length unless the tensor
   has more than 2 dimensions: a conv kernel is read as flat rows). */
const mllm_st_tensor *qv_bind_find(qv_binder *b, const char *name, int64_t ne0, int64_t ne1);
/* rows of ne0 values of dtype (packed) widened into dst (f32), through the
   graph's row lookup; false when out of memory. */
bool qv_widen(int dtype, const void *src, int64_t ne0, int64_t rows, float *dst);
/* A bound tensor's n values widened to f32 (mllm_malloc'd). */
float *qv_bind_f32(qv_binder *b, const char *name, int64_t n);
/* The same for a matrix of ne1 rows of ne0. */
float *qv_bind_f32_2d(qv_binder *b, const char *name, int64_t ne0, int64_t ne1);
/* name.weight (n_out x n_in) in place, name.bias copied when bias. */
void qv_bind_linear(qv_binder *b, qv_linear *L, const char *name, int64_t n_in, int64_t n_out, bool bias);

/* A Hugging Face folder's files: config.json's path and contents (m: the
   caller frees it with mllm_meta_free), then model.safetensors opened (a
   sharded checkpoint refused with a message). */
typedef struct {
    char cfg[4096], weights[4096], index[4096];
} qv_folder;
mllm_status qv_folder_config(const char *dir, qv_folder *f, mllm_meta *m);
mllm_status qv_folder_weights(const char *dir, const qv_folder *f, mllm_safetensors **st);

#endif
