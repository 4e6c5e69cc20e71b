/* Fuzz target: a safetensors file image (u64 header length, JSON header,
   data), parsed in memory. Every tensor handed out must lie inside the
   image, have the byte size its dtype and shape imply, and be found by name. */
#include "fuzz_util.h"
#include "core/dtype.h"
#include "formats/safetensors.h"
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mllm_safetensors *s = NULL;
    mllm_status st = mllm_safetensors_open_memory(data, size, "fuzz.safetensors", &s);
    fz_check_status(st);
    if (st) {
        FZ_CHECK(s == NULL);
        return 0;
    }
    size_t n = mllm_safetensors_n_tensors(s);
    const uint8_t *end = data + size;
    for (size_t i = 0; i < n; i++) {
        const mllm_st_tensor *t = mllm_safetensors_tensor_at(s, i);
        FZ_CHECK(t != NULL && t->name != NULL);
        FZ_CHECK(t->n_dims >= 0 && t->n_dims <= 4); /* dims past the 4th are folded into ne[3] */
        FZ_CHECK(t->src_dims >= t->n_dims && t->src_dims <= MLLM_ST_MAX_DIMS);
        /* the float weights, and the I32 / I64 buffers (position ids) the
           reader lists too (the fuzzer found the I32 case once the invariant
           lagged behind: regressions/safetensors/i32-scalar-past-end) */
        FZ_CHECK(t->dtype == MLLM_DTYPE_F32 || t->dtype == MLLM_DTYPE_F16 || t->dtype == MLLM_DTYPE_BF16 ||
                 t->dtype == MLLM_DTYPE_I32 || t->dtype == MLLM_DTYPE_I64);
        uint64_t n_el = 1;
        for (int d = 0; d < 4; d++) {
            FZ_CHECK(t->ne[d] >= 0);
            FZ_CHECK(d < t->n_dims || t->ne[d] == 1);
            n_el *= (uint64_t)t->ne[d];
        }
        FZ_CHECK(t->size == n_el * mllm_dtype_get(t->dtype)->type_size);
        if (t->size) {
            const uint8_t *p = t->data;
            FZ_CHECK(p >= data && p <= end && t->size <= (size_t)(end - p));
        }
        const mllm_st_tensor *f = mllm_safetensors_find(s, t->name);
        FZ_CHECK(f != NULL && strcmp(f->name, t->name) == 0);
    }
    FZ_CHECK(mllm_safetensors_tensor_at(s, n) == NULL);
    mllm_safetensors_close(s);
    return 0;
}
