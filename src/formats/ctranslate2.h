/* CTranslate2 model.bin reader (the folder format faster-whisper reads).

   Layout (little-endian, no padding, no alignment; python/ctranslate2/specs/
   model_spec.py `_serialize` writes it, src/models/model.cc reads it):
     u32 binary version                       (2..6 here; 6 is current)
     string spec name, u32 spec revision      (version >= 2)
     u32 variable count, then per variable:
       string name, u8 rank, u32 dims[rank],
       u8 dtype code, u32 byte count          (version >= 4)
       u8 item size, u32 element count        (versions 2, 3)
       the bytes
     u32 alias count, then per alias:         (version >= 3)
       string alias, string target
   where a string is a u16 length that counts a final NUL, then the bytes.

   The file is mmap'd and tensors point into it (never copied), so `data`
   has no alignment at all: a name's length decides where the next tensor
   starts. Whoever computes on a tensor copies or repacks it first.

   Every length, count, rank, dimension, dtype code, byte count and alias
   target is checked; a variable's byte count must equal the product of its
   dims times its item size. Quantised weights are int8 (a float "<name>_scale"
   of one value per output row, dims[0]) or int16 (one float scale); both are
   checked. Nothing here knows Whisper or any other model: the reader hands
   out named tensors plus the spec name and revision. Dims are reported in
   the file's order (row-major, dims[0] slowest), as CTranslate2 stores them. */
#ifndef MLLM_FORMATS_CTRANSLATE2_H
#define MLLM_FORMATS_CTRANSLATE2_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Oldest and newest binary versions read. Version 1 (no spec name) predates
   every published converter we know of. */
#define MLLM_CT2_MIN_VERSION 2
#define MLLM_CT2_MAX_VERSION 6
/* CTranslate2's tensors have rank <= 4 (conv weights are 3); a little room. */
#define MLLM_CT2_MAX_RANK 8
/* Spec names are short class names ("WhisperSpec", "TransformerSpec"). */
#define MLLM_CT2_MAX_SPEC_NAME 128

typedef struct {
    char *name;          /* NUL-terminated, printable ASCII, owned */
    int dtype;           /* mllm_dtype: F32, F16, BF16, I8, I16 or I32 */
    int rank;            /* 0 (a scalar) .. MLLM_CT2_MAX_RANK */
    uint32_t dims[MLLM_CT2_MAX_RANK]; /* file order; unused entries are 1 */
    uint64_t n_elements; /* product of dims (1 for a scalar) */
    const void *data;    /* into the mapping; unaligned */
    size_t size;         /* bytes = n_elements * item size */
    int32_t scale;       /* index of "<name>_scale" for int8/int16 weights, else -1 */
} mllm_ct2_tensor;

typedef struct {
    char *name;          /* the alias, owned */
    uint32_t target;     /* index of the variable it names */
} mllm_ct2_alias;

typedef struct mllm_ct2 mllm_ct2;

/* Maps and parses path (a regular file). Errors, each naming the file:
   MLLM_ERR_IO (cannot open / map), MLLM_ERR_FORMAT (truncated or malformed:
   the message gives the offset and the field), MLLM_ERR_UNSUPPORTED (binary
   version outside MIN..MAX, unknown dtype code, rank over MAX_RANK),
   MLLM_ERR_NOMEM. */
mllm_status mllm_ct2_open(const char *path, mllm_ct2 **out);
/* Parses an in-memory image (not copied; must outlive the handle). */
mllm_status mllm_ct2_open_memory(const void *buf, size_t len, const char *label, mllm_ct2 **out);
void mllm_ct2_close(mllm_ct2 *c);
/* Whether the file shrank under the mapping (core/file_map.h). */
bool mllm_ct2_damaged(const mllm_ct2 *c);

uint32_t mllm_ct2_version(const mllm_ct2 *c);
const char *mllm_ct2_spec_name(const mllm_ct2 *c);
uint32_t mllm_ct2_spec_revision(const mllm_ct2 *c);
size_t mllm_ct2_n_tensors(const mllm_ct2 *c);
const mllm_ct2_tensor *mllm_ct2_tensor_at(const mllm_ct2 *c, size_t i);
size_t mllm_ct2_n_aliases(const mllm_ct2 *c);
const mllm_ct2_alias *mllm_ct2_alias_at(const mllm_ct2 *c, size_t i);
/* A variable by name, through aliases as CTranslate2 resolves them (an
   alias A of X also makes A_scale name X_scale); NULL if none. */
const mllm_ct2_tensor *mllm_ct2_find(const mllm_ct2 *c, const char *name);
/* A handle over tensors held elsewhere (another container's mapping: a
   .mllm Whisper file, models/whisper/whisper_load_mllm.c): their descriptors are
   copied (names too), their data is not and must outlive the handle;
   tensors[i].dtype may be any mllm dtype (quantized and kernel layouts
   included), which no model.bin holds. No aliases, no scales. Errors:
   FORMAT (two tensors of one name), NOMEM. */
mllm_status mllm_ct2_view_new(const char *label, const char *spec, const mllm_ct2_tensor *tensors, size_t n,
                              mllm_ct2 **out);
/* The dtype's name as CTranslate2 spells it ("float16", "int8", ...). */
const char *mllm_ct2_dtype_name(int dtype);

#endif
