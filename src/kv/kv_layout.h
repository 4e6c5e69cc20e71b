/* One layer of the paged KV cache as every layer above the kernels sees it:
   blocks of block_size token positions each, at base + id * block_bytes, in
   f32, f16 or q8 (int8 per token and KV head, with an f32 scale). src/kv
   owns the blocks (the pool, refcounts, the prefix index) and fills one of
   these per layer; the graph's paged ops carry it to the backend, whose
   kernels read and write the blocks (backends/cpu/kv_paged.h). src/kv
   sits below the backends (it includes only src/core and src/formats), so
   the backends and the graph may include this header. */
#ifndef MLLM_KV_KV_LAYOUT_H
#define MLLM_KV_KV_LAYOUT_H
#include <stddef.h>
#include <stdint.h>

typedef enum { MLLM_KV_DTYPE_F32 = 0, MLLM_KV_DTYPE_F16 = 1, MLLM_KV_DTYPE_Q8 = 2 } mllm_kv_dtype;

/* Block layout (offsets from the block's start, each region 64-byte
   aligned): K (block_size, n_head_kv, head_dim) elements, V the same (or
   head-major, below), then for q8 the K scales (block_size, n_head_kv) f32
   and the V scales. */
typedef struct {
    uint8_t *base;      /* block id b of this layer at base + b * block_bytes */
    size_t block_bytes;
    size_t v_off, ks_off, vs_off; /* region offsets inside a block */
    int dtype;          /* mllm_kv_dtype */
    int block_size;     /* token positions per block */
    int n_head_kv, head_dim;
    int n_blocks;       /* valid ids are [0, n_blocks) */
    /* Attention order. 0: the online softmax (backends/cpu/kv_paged.h). 1: the contiguous
       cache's order (backends/cpu/node_compute.c): each token's scores up to its own
       position in one row, one softmax, P x V along positions in 8-lane
       dots over blocks of 256 positions, K/V gathered from the blocks
       first; for f32 the same bits as the contiguous cache, no split. */
    int ordered;
    /* Head-major blocks (f32 only; the pool sets it with ordered): K as
       (n_head_kv, block_size, head_dim) and V transposed, (n_head_kv,
       head_dim, block_size). A KV head's K rows and its V^T rows of a
       block are then one contiguous run each, which the ordered
       attention reads where they lie (scores by the f32 matmul, P x V by
       ops.dot_f32_segments) instead of gathering and transposing every
       position of the history at every step. */
    int head_major;
} mllm_kv_paged;

/* Fills the layout fields (not base, n_blocks) and returns block_bytes. */
size_t mllm_kv_paged_layout(mllm_kv_paged *kv, int dtype, int block_size, int n_head_kv, int head_dim);
const char *mllm_kv_dtype_name(int dtype);
/* Bytes one token position takes in one layer (K and V, scales included). */
size_t mllm_kv_paged_token_bytes(int dtype, int n_head_kv, int head_dim);

/* Head-major f32 blocks, id in [0, n_blocks): KV head kvh's K rows of
   block id (block_size rows of head_dim floats, one per offset), and row d
   of its V^T (block_size floats, one per offset). */
static inline const float *mllm_kv_paged_k_rows(const mllm_kv_paged *kv, int32_t id, int kvh) {
    return (const float *)(kv->base + (size_t)id * kv->block_bytes) +
           (size_t)kvh * (size_t)kv->block_size * (size_t)kv->head_dim;
}
static inline const float *mllm_kv_paged_vt_row(const mllm_kv_paged *kv, int32_t id, int kvh, int d) {
    return (const float *)(kv->base + (size_t)id * kv->block_bytes + kv->v_off) +
           ((size_t)kvh * (size_t)kv->head_dim + (size_t)d) * (size_t)kv->block_size;
}

#endif
