/* Shared by dev_backend.c (buffer type, node placement, runs) and
   dev_kv.c (the KV cache on the device and attention over it): the
   backend's state, a tensor's bytes as a buffer a launch takes, and what a
   run reads back from the device once. */
#ifndef MLLM_BACKENDS_DEV_INTERNAL_H
#define MLLM_BACKENDS_DEV_INTERNAL_H
#include <pthread.h>

#include "backends/dev_backend.h"

/* The device copy of one host KV layer (core/tensor.h's mllm_kv_layer),
   found by its host keys pointer: K and V position-major, n_ctx rows of
   kv_dim floats each (the layout the attention launch takes). */
typedef struct {
    const float *host;
    int n_ctx, kv_dim;
    mllm_dev_buf *k, *v;
} mllm_dev_kv;

typedef struct {
    const mllm_dev_ops *ops;
    mllm_dev *c;
    mllm_status st; /* of the open; with why, returned by every later mllm_dev_backend_get */
    char why[512];
    pthread_mutex_t run_mu; /* one graph compute (and one change of kv) at a time */
    mllm_buffer_type buft;
    mllm_backend be;
    mllm_dev_kv *kv; /* (n_kv) */
    int n_kv, cap_kv;
    mllm_dev_buf *scratch; /* attention's scores, grown as needed */
    size_t attn_scratch_max; /* bytes of scores per attention launch (dev_kv.c) */
} mllm_dev_be;

static inline bool mllm_dev_contiguous(const mllm_tensor *t, size_t elem) {
    return t->nb[0] == elem && t->nb[1] == (size_t)t->ne[0] * elem && t->nb[2] == t->nb[1] * (size_t)t->ne[1] &&
           t->nb[3] == t->nb[2] * (size_t)t->ne[2];
}
/* A contiguous f32 tensor; an I32 vector of n (ids, positions). */
static inline bool mllm_dev_f32c(const mllm_tensor *t) {
    return t && t->dtype == MLLM_DTYPE_F32 && mllm_dev_contiguous(t, 4);
}
static inline bool mllm_dev_i32v(const mllm_tensor *t, int64_t n) {
    return t && t->dtype == MLLM_DTYPE_I32 && mllm_dev_contiguous(t, 4) && mllm_tensor_nelements(t) == n;
}

/* Bytes [offs, offs + n) of parent as a buffer of their own: b, a view or
   (temp) a copy, which release writes back when write. */
typedef struct {
    mllm_dev_buf *b; /* NULL: no tensor */
    mllm_dev_buf *parent;
    size_t offs, n;
    bool temp, write;
} mllm_dev_region;

mllm_status mllm_dev_region_get(mllm_dev_be *d, mllm_dev_buf *parent, size_t offs, size_t n, bool write,
                            mllm_dev_region *r);
/* A tensor's bytes (t NULL: an empty region); the tensor must be in d's buffer type. */
mllm_status mllm_dev_region_of(mllm_dev_be *d, const mllm_tensor *t, bool write, mllm_dev_region *r);
/* Frees r (copying a temporary output back first); returns st, or the copy's error. */
mllm_status mllm_dev_region_release(mllm_dev_be *d, mllm_dev_region *r, mllm_status st);

/* Positions read back to the host once per run (RoPE's tables, the KV
   store's rows, attention's key counts), and the RoPE tables made of them. */
#define MLLM_DEV_RUN_CACHE 8
typedef struct {
    const mllm_tensor *t;
    int32_t *host;
} mllm_dev_pos_entry;
typedef struct {
    const mllm_tensor *pos;
    const mllm_rope_params *rp;
    mllm_dev_buf *cs, *sn;
} mllm_dev_rope_entry;
typedef struct {
    mllm_dev_pos_entry pos[MLLM_DEV_RUN_CACHE];
    mllm_dev_rope_entry rope[MLLM_DEV_RUN_CACHE];
    int n_pos, n_rope;
} mllm_dev_run_cache;

void mllm_dev_run_cache_free(mllm_dev_be *d, mllm_dev_run_cache *rc);
/* The values of pos (an I32 tensor in d's buffers), valid until the next call. */
mllm_status mllm_dev_positions(mllm_dev_be *d, mllm_dev_run_cache *rc, const mllm_tensor *pos, const int32_t **out);

/* dev_kv.c: supports_op for MLLM_OP_KV_STORE and MLLM_OP_ATTENTION, their
   launches, the vtable's kv_release, and the scores' bound for d (from
   $MLLM_DEVICE_ATTN_SCRATCH_KIB, else MLLM_DEV_ATTN_SCRATCH_MAX). */
size_t mllm_dev_attn_scratch_max(void);
bool mllm_dev_kv_supports(const mllm_tensor *t);
mllm_status mllm_dev_kv_store(mllm_dev_be *d, mllm_dev_run_cache *rc, const mllm_tensor *t);
mllm_status mllm_dev_attention(mllm_dev_be *d, mllm_dev_run_cache *rc, const mllm_tensor *t);
void mllm_dev_kv_release(mllm_backend *be, const mllm_kv_layer *kv);

#endif
