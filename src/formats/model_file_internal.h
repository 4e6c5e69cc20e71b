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
    void **copies;                    /* aligned copies of misaligned weights (n_copies) */
    size_t n_copies;
    struct mllm_gguf **splits;        /* GGUF split files 2..N (n_splits); f->gguf is file 1 */
    size_t n_splits;
} mllm_model_file_priv;

/* Weight data must start at the alignment of the widest field its dtype
   holds (f32 and k-quant scales 4, f16/bf16 and most blocks 2): the kernels
   read them in place, and a GGUF with general.alignment = 1 or an odd
   safetensors header could place them anywhere. */
size_t mllm_weight_align(int dtype);

mllm_status mllm_model_file_open_gguf(mllm_model_file *f);
mllm_status mllm_model_file_open_hf(mllm_model_file *f);
mllm_status mllm_model_file_open_llama2c(mllm_model_file *f);

/* Appends a weight (name copied; ne[n_dims..3] set to 1). Data that does
   not start at a multiple of mllm_weight_align(dtype) is copied into an aligned
   buffer the file owns (rare: only odd files), so kernels never read a
   misaligned value. */
mllm_status mllm_model_file_add_weight(mllm_model_file *f, const char *name, int dtype, int n_dims,
                                       const int64_t *ne, const void *data, size_t size);
/* Marks the weight just added as lying in a read-only file mapping (its
   pages may be dropped after repacking), unless it had to be copied. */
void mllm_model_file_mark_mapped(mllm_model_file *f);

#endif
