/* Shared by the per-format openers behind mllm_model_file_open. */
#ifndef MLLM_FORMATS_MODEL_FILE_INTERNAL_H
#define MLLM_FORMATS_MODEL_FILE_INTERNAL_H
#include "formats/model_file.h"

struct mllm_safetensors;

/* What f->priv points to: everything the weights point into. */
typedef struct {
    struct mllm_safetensors **shards; /* HF (n_shards) */
    size_t n_shards;
    void *map;                        /* llama2.c: the whole file */
    size_t map_size;
    size_t weights_cap;
} mllm_model_file_priv;

mllm_status mllm_model_file_open_gguf(mllm_model_file *f);
mllm_status mllm_model_file_open_hf(mllm_model_file *f);
mllm_status mllm_model_file_open_llama2c(mllm_model_file *f);

/* Appends a weight (name copied; ne[n_dims..3] set to 1). */
mllm_status mllm_model_file_add_weight(mllm_model_file *f, const char *name, int dtype, int n_dims,
                                       const int64_t *ne, const void *data, size_t size);
/* Validates f->cfg (positive sizes, divisibility) and that every tensor the
   Llama-family graph needs exists with the shape the config implies.
   Reports the first missing or mis-shaped tensor by name. */
mllm_status mllm_model_file_check(const mllm_model_file *f);

#endif
