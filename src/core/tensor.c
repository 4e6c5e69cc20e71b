/* Tensor helpers every layer above core may use. */
#include "core/tensor.h"

int64_t mllm_tensor_nelements(const mllm_tensor *t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

size_t mllm_tensor_nbytes(const mllm_tensor *t) { return t->nb[3] * (size_t)t->ne[3]; }
