/* Tensor helpers every layer above core may use. */
#include "core/tensor.h"

#include "core/dtype.h"

int64_t mllm_tensor_nelements(const mllm_tensor *t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

size_t mllm_tensor_nbytes(const mllm_tensor *t) { return t->nb[3] * (size_t)t->ne[3]; }

void mllm_tensor_set_shape(mllm_tensor *t, int dtype, int n_dims, const int64_t *ne) {
    t->dtype = dtype;
    for (int i = 0; i < 4; i++) t->ne[i] = i < n_dims ? ne[i] : 1;
    t->nb[0] = mllm_dtype_get(dtype)->type_size;
    t->nb[1] = mllm_dtype_row_size(dtype, t->ne[0]);
    for (int i = 2; i < 4; i++) t->nb[i] = t->nb[i - 1] * (size_t)t->ne[i - 1];
}
