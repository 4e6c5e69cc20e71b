/* The paged KV layer's block layout (kv/kv_layout.h): region offsets
   and sizes per dtype, the arithmetic src/kv sizes its pool with. */
#include "kv/kv_layout.h"

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static size_t elem_size(int dtype) { return dtype == MLLM_KV_DTYPE_F32 ? 4 : dtype == MLLM_KV_DTYPE_F16 ? 2 : 1; }

const char *mllm_kv_dtype_name(int dtype) {
    return dtype == MLLM_KV_DTYPE_F32 ? "f32" : dtype == MLLM_KV_DTYPE_F16 ? "f16" : dtype == MLLM_KV_DTYPE_Q8 ? "q8" : "?";
}

size_t mllm_kv_paged_token_bytes(int dtype, int n_head_kv, int head_dim) {
    size_t row = (size_t)n_head_kv * (size_t)head_dim * elem_size(dtype);
    if (dtype == MLLM_KV_DTYPE_Q8) row += (size_t)n_head_kv * sizeof(float);
    return 2 * row;
}

size_t mllm_kv_paged_layout(mllm_kv_paged *kv, int dtype, int block_size, int n_head_kv, int head_dim) {
    kv->dtype = dtype;
    kv->block_size = block_size;
    kv->n_head_kv = n_head_kv;
    kv->head_dim = head_dim;
    const size_t tok = (size_t)block_size * (size_t)n_head_kv;
    const size_t data = align64(tok * (size_t)head_dim * elem_size(dtype));
    kv->v_off = data;
    kv->ks_off = 2 * data;
    const size_t sc = dtype == MLLM_KV_DTYPE_Q8 ? align64(tok * sizeof(float)) : 0;
    kv->vs_off = kv->ks_off + sc;
    kv->block_bytes = kv->vs_off + sc;
    return kv->block_bytes;
}
