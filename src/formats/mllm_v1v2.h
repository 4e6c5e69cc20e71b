/* MLLM's own published .mllm layouts, versions 1 and 2 (little-endian):

   v1: int32 magic 20012, uint64 index_size, then index entries
       { uint32 name_len, name, uint64 data_len, uint64 offset (absolute),
         int32 dtype } filling index_size bytes, then unaligned data.
       No shapes: they come from the model's config.
   v2: a 532-byte header { int32 magic 0x519A, int32 version 2,
       char model_name[512], uint32 num_params, uint64 params_desc_offset },
       then num_params 352-byte records at params_desc_offset
       { uint32 id, uint32 type, uint64 size, uint64 offset, uint64 shape_len,
         int32 shape[16] (outermost first, like PyTorch), char name[256] }.

   dtype codes: 0..30 are GGUF's type numbers, 128 = bf16, 134 = opaque
   kernel-specific packed bytes (refused), 135 = MXFP4 (refused: no kernels).
   Tensor names are Hugging Face names (model.layers.0.self_attn.q_proj.weight). */
#ifndef MLLM_FORMATS_MLLM_V1V2_H
#define MLLM_FORMATS_MLLM_V1V2_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/meta.h"

#define MLLM_V1_MAGIC 20012
#define MLLM_V2_MAGIC 0x519A
#define MLLM_V2_HEADER_BYTES 532
#define MLLM_V2_RECORD_BYTES 352
#define MLLM_V2_MAX_SHAPE 16
#define MLLM_V2_NAME_BYTES 256
#define MLLM_CODE_BF16 128
#define MLLM_CODE_PACKED 134
#define MLLM_CODE_MXFP4 135

struct mllm_model_file;

typedef struct {
    char *name;         /* NUL-terminated, owned */
    int32_t code;       /* MLLM dtype code as stored */
    int dtype;          /* mllm_dtype */
    int n_dims;         /* 0 for v1 (no shape in the file) */
    int64_t ne[4];      /* fastest first (GGUF order); unused dims 1 */
    uint64_t offset;    /* absolute */
    uint64_t size;
} mllm_v1v2_entry;

typedef struct {
    int version;        /* 1 or 2 */
    char model_name[MLLM_V2_NAME_BYTES * 2 + 1];
    size_t n;
    mllm_v1v2_entry *e; /* (n) */
} mllm_v1v2_index;

/* 1 or 2 if head starts like a v1 / v2 file, else 0. */
int mllm_v1v2_sniff(const void *head, size_t n);
/* Checks every entry: bounds, no overlap with the header, the index or
   another tensor, known and supported dtype, size = dtype x shape. */
mllm_status mllm_v1v2_parse(const void *buf, size_t len, const char *label, mllm_v1v2_index *out);
void mllm_v1v2_index_free(mllm_v1v2_index *ix);
/* mllm_dtype for an MLLM dtype code; -1 with *why set if refused. */
int mllm_v1v2_dtype(int32_t code, const char **why);
/* The shape the Llama-family graph expects for a GGUF tensor name; false
   for names it does not know. */
bool mllm_v1v2_shape_from_config(const char *gguf_name, const mllm_meta *cfg, int *n_dims, int64_t ne[4]);

/* Fills f (kind HF, priv already an mllm_native_priv) from the v1/v2 file
   f->path: config from config_path or config.json beside the file,
   tokenizer.json / tokenizer_config.json beside the file. */
mllm_status mllm_v1v2_open_model(struct mllm_model_file *f, const char *config_path);
/* mllm_model_file_open for a v1/v2 file with an explicit config.json. */
mllm_status mllm_v1v2_model_open(const char *path, const char *config_path, struct mllm_model_file **out);

/* Writers (tests, interop). code: MLLM dtype code; shape from ne/n_dims
   (v2 only). v1 data is packed with no alignment, v2 data 64-byte aligned. */
typedef struct {
    const char *name;
    int32_t code;
    int n_dims;
    int64_t ne[4];
    const void *data;
    size_t size;
} mllm_v1v2_tensor;

mllm_status mllm_v1_write(const char *path, const mllm_v1v2_tensor *t, size_t n);
mllm_status mllm_v2_write(const char *path, const char *model_name, const mllm_v1v2_tensor *t, size_t n);

#endif
