/* GGUF v3 writer, for tests, `synth` and exports.

       mllm_gguf_writer *w;  mllm_gguf_writer_new(&w);
       mllm_gguf_writer_add_str(w, "general.architecture", "llama");
       mllm_gguf_writer_add_tensor(w, "output_norm.weight", MLLM_DTYPE_F32, 1, ne, data);
       mllm_gguf_writer_write(w, "out.gguf");   // temp file, fsync, rename
       mllm_gguf_writer_free(w);

   Metadata values are copied when added. Tensor data is NOT copied: the
   pointer must stay valid until mllm_gguf_writer_write returns, or the data
   is produced on demand by a fill callback (streaming, for models larger
   than memory). Tensor data is aligned to 32 bytes (GGUF's default) unless
   mllm_gguf_writer_set_alignment says otherwise. */
#ifndef MLLM_FORMATS_GGUF_WRITER_H
#define MLLM_FORMATS_GGUF_WRITER_H
#include "formats/gguf.h"

typedef struct mllm_gguf_writer mllm_gguf_writer;

/* Fills buf with bytes [offset, offset+n) of a tensor. Called with
   consecutive, increasing ranges that together cover the tensor once. */
typedef mllm_status (*mllm_gguf_fill_fn)(void *user, void *buf, size_t offset, size_t n);

mllm_status mllm_gguf_writer_new(mllm_gguf_writer **out);
void mllm_gguf_writer_free(mllm_gguf_writer *w);
/* Aligns tensor data to `align` (a power of two, 1..4096) and writes it as
   general.alignment; at most once. Tests use 1 to make odd files. */
mllm_status mllm_gguf_writer_set_alignment(mllm_gguf_writer *w, uint32_t align);

/* Each returns MLLM_ERR_INVALID_ARG for a duplicate key. */
mllm_status mllm_gguf_writer_add_u8(mllm_gguf_writer *w, const char *key, uint8_t v);
mllm_status mllm_gguf_writer_add_i8(mllm_gguf_writer *w, const char *key, int8_t v);
mllm_status mllm_gguf_writer_add_u16(mllm_gguf_writer *w, const char *key, uint16_t v);
mllm_status mllm_gguf_writer_add_i16(mllm_gguf_writer *w, const char *key, int16_t v);
mllm_status mllm_gguf_writer_add_u32(mllm_gguf_writer *w, const char *key, uint32_t v);
mllm_status mllm_gguf_writer_add_i32(mllm_gguf_writer *w, const char *key, int32_t v);
mllm_status mllm_gguf_writer_add_u64(mllm_gguf_writer *w, const char *key, uint64_t v);
mllm_status mllm_gguf_writer_add_i64(mllm_gguf_writer *w, const char *key, int64_t v);
mllm_status mllm_gguf_writer_add_f32(mllm_gguf_writer *w, const char *key, float v);
mllm_status mllm_gguf_writer_add_f64(mllm_gguf_writer *w, const char *key, double v);
mllm_status mllm_gguf_writer_add_bool(mllm_gguf_writer *w, const char *key, bool v);
mllm_status mllm_gguf_writer_add_str(mllm_gguf_writer *w, const char *key, const char *v);
mllm_status mllm_gguf_writer_add_strn(mllm_gguf_writer *w, const char *key, const char *v, size_t len);
/* Numeric array: n elements of `elem` (not STRING/ARRAY), packed little-endian. */
mllm_status mllm_gguf_writer_add_arr(mllm_gguf_writer *w, const char *key, mllm_gguf_type elem,
                                     const void *data, uint64_t n);
/* String array of n NUL-terminated strings; lens may be NULL (then strlen). */
mllm_status mllm_gguf_writer_add_arr_str(mllm_gguf_writer *w, const char *key, const char *const *strs,
                                         const size_t *lens, uint64_t n);

/* ne[0] is the fastest dimension; ne[0] must be a multiple of the dtype's
   block size. `data` must stay valid until write returns. */
mllm_status mllm_gguf_writer_add_tensor(mllm_gguf_writer *w, const char *name, int dtype, int n_dims,
                                        const int64_t *ne, const void *data);
mllm_status mllm_gguf_writer_add_tensor_fn(mllm_gguf_writer *w, const char *name, int dtype, int n_dims,
                                           const int64_t *ne, mllm_gguf_fill_fn fill, void *user);

/* Writes path atomically (core/atomic_write.h: a temporary, fsynced and
   renamed onto it). */
mllm_status mllm_gguf_writer_write(mllm_gguf_writer *w, const char *path);

#endif
