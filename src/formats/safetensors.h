/* safetensors reader: u64 header length, JSON header
   {"name": {"dtype": "F16", "shape": [out, in], "data_offsets": [b, e]}, ...},
   then the data. mmap'd; every range checked; tensors are zero-copy views.
   Shapes are reported in GGUF order (ne[0] = the last, fastest dimension). */
#ifndef MLLM_FORMATS_SAFETENSORS_H
#define MLLM_FORMATS_SAFETENSORS_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *name;        /* NUL-terminated, owned */
    int dtype;         /* mllm_dtype: F32, F16 or BF16 (weights); I32 or I64 (buffers) */
    int n_dims;        /* at most 4: see src_dims */
    int64_t ne[4];     /* reversed shape; unused dims are 1; dims past the
                          4th are multiplied into ne[3] */
    const void *data;  /* into the mapping */
    size_t size;       /* bytes */
    int src_dims;      /* the file's rank (up to MLLM_ST_MAX_DIMS) */
} mllm_st_tensor;

/* Highest rank read. Qwen2.5-VL's patch embedding is a 5-D Conv3d kernel
   [out, in, t, h, w]; ranks past 4 are folded into ne[3]. */
#define MLLM_ST_MAX_DIMS 8

typedef struct mllm_safetensors mllm_safetensors;

mllm_status mllm_safetensors_open(const char *path, mllm_safetensors **out);
/* Parses an in-memory image (not copied; must outlive the handle). */
mllm_status mllm_safetensors_open_memory(const void *buf, size_t len, const char *label, mllm_safetensors **out);
void mllm_safetensors_close(mllm_safetensors *s);
/* Whether the file shrank under the mapping (core/file_map.h). */
bool mllm_safetensors_damaged(const mllm_safetensors *s);
size_t mllm_safetensors_n_tensors(const mllm_safetensors *s);
const mllm_st_tensor *mllm_safetensors_tensor_at(const mllm_safetensors *s, size_t i);
const mllm_st_tensor *mllm_safetensors_find(const mllm_safetensors *s, const char *name);

#endif
