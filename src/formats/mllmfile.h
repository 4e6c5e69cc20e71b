/* The .mllm file, version 3: our native format (docs/format.md), the next
   version of MLLM's .mllm v1/v2 (formats/mllm_v1v2.h), told apart by the
   same int32 magic 0x519A and the version that follows it.

       header (128 bytes) | index | config JSON | tokenizer | chat template
       | pad to 64 | data (every tensor 64-byte aligned)

   Loading is one read-only mmap; tensors point into it. The header, index
   and metadata are covered by one xxHash64 checked at every open; each
   tensor's bytes have their own xxHash64, checked by mllm_mllmfile_verify
   (`mllm info --verify`), not at load, so load time does not grow with the
   weights. */
#ifndef MLLM_FORMATS_MLLMFILE_H
#define MLLM_FORMATS_MLLMFILE_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MLLM_FILE_MAGIC 0x519A      /* int32, shared with MLLM v2 */
#define MLLM_FILE_VERSION 3
#define MLLM_FILE_HEADER_BYTES 128
#define MLLM_FILE_ALIGN 64          /* data section and every tensor */
#define MLLM_FILE_ENTRY_BYTES 80    /* fixed part of an index entry */
#define MLLM_FILE_MAX_NAME 255
#define MLLM_FILE_MAX_DIMS 4

/* What the tokenizer section holds. */
typedef enum {
    MLLM_TOK_NONE = 0,
    MLLM_TOK_GGUF_KV = 1, /* a GGUF v3 image with no tensors: the tokenizer.* keys */
    MLLM_TOK_HF_JSON = 2, /* u64 len_a, u64 len_b, tokenizer.json, tokenizer_config.json */
} mllm_tok_kind;

typedef struct {
    const char *name;  /* into the mapping, name_len bytes, not NUL-terminated */
    uint32_t name_len;
    int dtype;         /* mllm_dtype */
    int n_dims;
    int64_t ne[4];     /* unused dims are 1 */
    uint64_t offset;   /* relative to the data section */
    uint64_t size;
    uint64_t checksum; /* xxHash64 (seed 0) of the tensor's bytes */
    const void *data;  /* into the mapping */
} mllm_mllmfile_tensor;

typedef struct mllm_mllmfile mllm_mllmfile;

/* True if the first 8 bytes are the v3 magic and version. */
bool mllm_mllmfile_sniff(const void *head, size_t n);
/* mmaps and validates path: header, meta checksum, every index entry
   (name, known dtype, shape, 64-byte alignment, bounds, no overlap, no
   duplicate name). Errors name the file and the entry. */
mllm_status mllm_mllmfile_open(const char *path, mllm_mllmfile **out);
/* The same over an image in memory (not copied; must outlive the handle). */
mllm_status mllm_mllmfile_open_memory(const void *buf, size_t len, const char *label, mllm_mllmfile **out);
void mllm_mllmfile_close(mllm_mllmfile *m);

size_t mllm_mllmfile_n_tensors(const mllm_mllmfile *m);
const mllm_mllmfile_tensor *mllm_mllmfile_tensor_at(const mllm_mllmfile *m, size_t i);
/* Sections (pointer into the mapping and length; length 0 if absent). */
const char *mllm_mllmfile_config(const mllm_mllmfile *m, size_t *len);
const void *mllm_mllmfile_tokenizer(const mllm_mllmfile *m, mllm_tok_kind *kind, size_t *len);
const char *mllm_mllmfile_chat_template(const mllm_mllmfile *m, size_t *len);
/* The two JSON texts of an MLLM_TOK_HF_JSON section (config may be empty). */
mllm_status mllm_mllmfile_hf_tokenizer(const mllm_mllmfile *m, const char **json, size_t *json_len,
                                       const char **config, size_t *config_len);
const char *mllm_mllmfile_label(const mllm_mllmfile *m);
/* Recomputes every tensor checksum; the first mismatch is an error naming
   the tensor. *n_checked (may be NULL) counts the tensors verified. */
mllm_status mllm_mllmfile_verify(const mllm_mllmfile *m, size_t *n_checked);

/* ---- writer ------------------------------------------------------------ */
/* Produces bytes [offset, offset+n) of a tensor, in consecutive ranges. */
typedef mllm_status (*mllm_mllmfile_fill_fn)(void *user, void *buf, size_t offset, size_t n);

typedef struct mllm_mllmfile_writer mllm_mllmfile_writer;

mllm_status mllm_mllmfile_writer_new(mllm_mllmfile_writer **out);
void mllm_mllmfile_writer_free(mllm_mllmfile_writer *w);
/* Sections are copied. */
mllm_status mllm_mllmfile_writer_set_config(mllm_mllmfile_writer *w, const char *json, size_t len);
mllm_status mllm_mllmfile_writer_set_tokenizer(mllm_mllmfile_writer *w, mllm_tok_kind kind, const void *data,
                                               size_t len);
mllm_status mllm_mllmfile_writer_set_chat_template(mllm_mllmfile_writer *w, const char *text, size_t len);
/* The tensor is produced by fill when the file is written (one tensor in
   memory at a time at most). */
mllm_status mllm_mllmfile_writer_add_tensor(mllm_mllmfile_writer *w, const char *name, int dtype, int n_dims,
                                            const int64_t *ne, mllm_mllmfile_fill_fn fill, void *user);
/* Writes path atomically (core/atomic_write.h: never a half-written file
   under the target name). */
mllm_status mllm_mllmfile_writer_write(mllm_mllmfile_writer *w, const char *path);

/* ---- xxHash64 (seed 0), streaming -------------------------------------- */
typedef struct mllm_xxh64_state {
    uint64_t v[4];
    uint64_t total;
    uint8_t buf[32];
    uint32_t n_buf;
} mllm_xxh64_state;

void mllm_xxh64_init(mllm_xxh64_state *s);
void mllm_xxh64_update(mllm_xxh64_state *s, const void *data, size_t n);
uint64_t mllm_xxh64_digest(const mllm_xxh64_state *s);
uint64_t mllm_xxh64(const void *data, size_t n);

#endif
