/* What the vision towers (qwen2vl_vision*.c, idefics3_vision*.c) share: a
   linear layer whose weights stay in the file's mapping (f32 / f16 / bf16)
   run through the CPU GEMM over the thread pool, multi-head attention over
   segments of tokens (windows, tiles or the whole image), and binding those
   weights from a safetensors file by name and shape. */
#ifndef MLLM_MODELS_VIT_OPS_H
#define MLLM_MODELS_VIT_OPS_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/threadpool.h"
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

/* Queries per attention block: the scores of one block are QV_QBLOCK x
   segment floats of scratch per thread. */
#define QV_QBLOCK 64

/* Y (M x n_out) = X (M x n_in) W^T + b; pool may be NULL (one thread). */
void qv_linear_run(mllm_pool *pool, const qv_linear *L, const float *X, int64_t M, float *Y);

typedef struct {
    const float *qkv;     /* tokens x 3 H (q, k, v; heads inside each), rows qkv_stride floats apart */
    float *out;           /* tokens x H */
    const int32_t *segs;  /* n_segs + 1 token offsets: each segment attends to itself only */
    int n_segs, heads, hd, H, max_len;
    float *scratch;       /* qv_attention_scratch(max_len, hd) floats per thread */
    size_t scratch_per;
} qv_attention_job;

/* Floats of scratch one thread needs for segments of up to max_len tokens. */
size_t qv_attention_scratch(int max_len, int hd);
/* softmax(q k^T / sqrt(hd)) v per segment and head (no mask). */
void qv_attention(mllm_pool *pool, qv_attention_job *a);

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
/* A copy widened to f32 (mllm_malloc'd). */
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
