/* Karpathy's llama2.c checkpoint (legacy "v0"): a 7 x int32 header, then
   fp32 arrays (see llama2c.c). No magic number: a file is taken as one only
   if its size equals the size its header implies, exactly. */
#ifndef MLLM_FORMATS_LLAMA2C_H
#define MLLM_FORMATS_LLAMA2C_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads;
    int32_t vocab_size; /* negative: an untied classifier follows the weights */
    int32_t seq_len;
} mllm_llama2c_header;

#define MLLM_LLAMA2C_HEADER_BYTES 28

/* Checks the header's values and that `file_size` is exactly what they
   imply; *shared is true when the classifier is the token embedding. */
mllm_status mllm_llama2c_check(const mllm_llama2c_header *h, uint64_t file_size, const char *label, bool *shared);

#endif
