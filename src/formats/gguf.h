/* GGUF v2/v3 reader: mmap's the file and validates every count, length and
   offset before use. Strings point into the mapping (not NUL-terminated). */
#ifndef MLLM_FORMATS_GGUF_H
#define MLLM_FORMATS_GGUF_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    MLLM_GGUF_UINT8 = 0, MLLM_GGUF_INT8 = 1, MLLM_GGUF_UINT16 = 2, MLLM_GGUF_INT16 = 3,
    MLLM_GGUF_UINT32 = 4, MLLM_GGUF_INT32 = 5, MLLM_GGUF_FLOAT32 = 6, MLLM_GGUF_BOOL = 7,
    MLLM_GGUF_STRING = 8, MLLM_GGUF_ARRAY = 9, MLLM_GGUF_UINT64 = 10, MLLM_GGUF_INT64 = 11,
    MLLM_GGUF_FLOAT64 = 12,
} mllm_gguf_type;

typedef struct { const char *ptr; uint64_t len; } mllm_gguf_str;

typedef struct {
    mllm_gguf_str name;
    int dtype;          /* mllm_dtype (GGUF numbering) */
    uint32_t n_dims;
    int64_t ne[4];      /* unused dims are 1 */
    uint64_t offset;    /* relative to the data section */
    size_t size;        /* bytes, from dtype and shape */
    const void *data;   /* into the mapping */
} mllm_gguf_tensor;

typedef struct mllm_gguf mllm_gguf;

mllm_status mllm_gguf_open(const char *path, mllm_gguf **out);
/* Parses an in-memory image (no copy; buf must outlive the handle). Used by
   the fuzzer and the truncation tests. */
mllm_status mllm_gguf_open_memory(const void *buf, size_t len, const char *label, mllm_gguf **out);
void mllm_gguf_close(mllm_gguf *g);
/* Whether the file shrank under the mapping (core/file_map.h); false for
   files opened from memory. */
bool mllm_gguf_damaged(const mllm_gguf *g);

uint32_t mllm_gguf_version(const mllm_gguf *g);
uint64_t mllm_gguf_n_kv(const mllm_gguf *g);
mllm_gguf_str mllm_gguf_kv_key(const mllm_gguf *g, uint64_t i);
mllm_gguf_type mllm_gguf_kv_type(const mllm_gguf *g, uint64_t i);
/* -1 if the key is absent. */
int64_t mllm_gguf_find_key(const mllm_gguf *g, const char *key);

/* Typed getters: false if absent or of an incompatible type. Integer getters
   accept any integer type whose value fits. */
bool mllm_gguf_get_u32(const mllm_gguf *g, const char *key, uint32_t *out);
bool mllm_gguf_get_i64(const mllm_gguf *g, const char *key, int64_t *out);
bool mllm_gguf_get_f32(const mllm_gguf *g, const char *key, float *out);
bool mllm_gguf_get_bool(const mllm_gguf *g, const char *key, bool *out);
bool mllm_gguf_get_str(const mllm_gguf *g, const char *key, mllm_gguf_str *out);
/* Arrays: element type and count. Numeric element data may be unaligned:
   read it with memcpy (or the helpers below). */
bool mllm_gguf_get_arr(const mllm_gguf *g, const char *key, mllm_gguf_type *elem,
                       uint64_t *n, const void **data);
/* Element i of a string array (index built at open: O(1)). */
bool mllm_gguf_get_arr_str(const mllm_gguf *g, const char *key, uint64_t i, mllm_gguf_str *out);
/* Element i of a numeric array converted to double/int64. */
bool mllm_gguf_arr_f64(const mllm_gguf *g, const char *key, uint64_t i, double *out);
bool mllm_gguf_arr_i64(const mllm_gguf *g, const char *key, uint64_t i, int64_t *out);

uint64_t mllm_gguf_n_tensors(const mllm_gguf *g);
const mllm_gguf_tensor *mllm_gguf_tensor_at(const mllm_gguf *g, uint64_t i);
const mllm_gguf_tensor *mllm_gguf_find_tensor(const mllm_gguf *g, const char *name);
const char *mllm_gguf_path(const mllm_gguf *g);
/* Size of the whole mapping and its base (for mllm info). */
size_t mllm_gguf_file_size(const mllm_gguf *g);

#endif
