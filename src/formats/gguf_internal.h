/* Private layout of an opened GGUF file, shared by the parser (gguf.c) and
   the metadata getters (gguf_get.c). */
#ifndef MLLM_FORMATS_GGUF_INTERNAL_H
#define MLLM_FORMATS_GGUF_INTERNAL_H
#include "formats/gguf.h"

typedef struct {
    mllm_gguf_str key;
    mllm_gguf_type type;
    const uint8_t *val;       /* start of the value bytes in the mapping */
    /* Arrays only. */
    mllm_gguf_type elem;
    uint64_t n;
    mllm_gguf_str *strs;      /* string arrays: one entry per element, owned */
} mllm_gguf_kv;

/* Open-addressing hash of names -> index (+1; 0 = empty slot). */
typedef struct {
    uint64_t *slots;
    uint64_t mask;
} mllm_gguf_index;

struct mllm_gguf {
    char *path;
    const uint8_t *base;      /* whole file */
    size_t size;
    bool mapped;              /* munmap at close */
    uint32_t version;
    uint64_t alignment;
    uint64_t data_offset;     /* start of the data section */
    uint64_t n_kv;
    mllm_gguf_kv *kv;         /* (n_kv) */
    mllm_gguf_index kv_index;
    uint64_t n_tensors;
    mllm_gguf_tensor *tensors; /* (n_tensors) */
    mllm_gguf_index tensor_index;
};

uint64_t mllm_gguf_hash(const char *s, size_t n);
const mllm_gguf_kv *mllm_gguf_kv_find(const mllm_gguf *g, const char *key);
/* Bytes of one element of a fixed-size type; 0 for string/array/unknown. */
size_t mllm_gguf_type_size(mllm_gguf_type t);

#endif
