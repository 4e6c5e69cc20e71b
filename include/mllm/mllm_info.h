/*
 * mllm_info.h — what a build runs and what a model or file holds (`mllm
 * info`): the architectures of the model registry, a loaded model's
 * tensors and decode graph, and model files read without loading them
 * (.mllm v3 checksums and tensor tables, CTranslate2 model.bin). Part of
 * the public API: include mllm/mllm.h, which includes this header.
 */
#ifndef MLLM_MLLM_INFO_H
#define MLLM_MLLM_INFO_H
#ifndef MLLM_MLLM_H
#error "include <mllm/mllm.h>, not mllm_info.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- architectures ----------------------------------------------------- */

/* One row of the model registry. The strings are static. */
typedef struct {
    uint32_t struct_size;   /* set by the caller: sizeof(mllm_architecture_info) */
    const char *name;       /* "llama", "qwen2", ...: GGUF general.architecture */
    const char *kind;       /* "decoder", "encoder", "speech", ... */
    const char *family;     /* the code that runs it */
    const char *hf_types;   /* Hugging Face model_type values, or NULL */
    const char *hf_classes; /* Hugging Face architectures classes, or NULL */
    const char *about;      /* one line, or NULL */
} mllm_architecture_info;

/* The number of architectures this build runs. Thread-safe. */
MLLM_API size_t mllm_architecture_count(void);
/* Row i into *out (at most out->struct_size bytes). Errors:
   MLLM_ERR_INVALID_ARG (out NULL, i out of range, a struct_size smaller
   than the first fields'). Thread-safe. */
MLLM_API mllm_status mllm_architecture_get(size_t i, mllm_architecture_info *out);

/* ---- tensors ------------------------------------------------------------ */

#define MLLM_TENSOR_MAX_DIMS 8

/* One tensor of a model or file. The strings live as long as the model or
   the file info they came from. */
typedef struct {
    uint32_t struct_size; /* set by the caller: sizeof(mllm_tensor_info) */
    const char *name;     /* name_len bytes, not always NUL-terminated */
    size_t name_len;
    const char *dtype;    /* the type's name in its format ("q4_0", "f16"; CTranslate2's own) */
    int n_dims;
    int64_t ne[MLLM_TENSOR_MAX_DIMS]; /* the first n_dims are used: GGUF order (ne[0] fastest), CTranslate2's
                                         file order */
    uint64_t size;        /* bytes */
} mllm_tensor_info;

/* The tensors of a loaded text model (decoder or encoder, as the file
   holds them); 0 for NULL or a speech model. */
MLLM_API size_t mllm_model_n_tensors(const mllm_model *m);
/* Tensor i into *out. Errors: MLLM_ERR_INVALID_ARG (NULL, i out of range,
   a struct_size smaller than the first fields'). */
MLLM_API mllm_status mllm_model_tensor_info(const mllm_model *m, size_t i, mllm_tensor_info *out);
/* Milliseconds mllm_model_load took; 0 for NULL. */
MLLM_API double mllm_model_load_ms(const mllm_model *m);

/* The session's one-token decode graph (traced once at mllm_session_new):
   *n_nodes and *act_bytes (the activations' buffer; both may be NULL),
   and, when sink is not NULL, one line per node ("  %4d op name [ne] <-
   sources", newline included) to sink. Errors: MLLM_ERR_INVALID_ARG (s
   NULL). */
MLLM_API mllm_status mllm_session_decode_graph(const mllm_session *s, int *n_nodes, size_t *act_bytes,
                                               mllm_text_sink sink, void *user);

/* ---- files -------------------------------------------------------------- */

/* Recomputes every checksum of a .mllm v3 file (header, metadata, each
   tensor's xxHash64); *n_checked (may be NULL) receives the number of
   tensors. Errors: MLLM_ERR_IO, MLLM_ERR_FORMAT (not a .mllm v3 file, a
   mismatch: the message names the tensor). */
MLLM_API mllm_status mllm_file_verify(const char *path, size_t *n_checked);

/* 1 if path is a CTranslate2 model (a folder with model.bin and without
   model.safetensors, or a file whose first bytes are a CTranslate2 binary
   version and spec name), else 0. */
MLLM_API int mllm_file_is_ctranslate2(const char *path);

/* A model file's header and tensor table, read without loading the model:
   a .mllm v3 file or a CTranslate2 model (as mllm_file_is_ctranslate2
   says: a folder's model.bin is read). */
typedef struct mllm_file_info mllm_file_info;
#define MLLM_FILE_MLLM 1        /* a .mllm v3 file */
#define MLLM_FILE_CTRANSLATE2 2 /* a CTranslate2 model.bin */
/* Errors: MLLM_ERR_INVALID_ARG (NULL), MLLM_ERR_IO, MLLM_ERR_FORMAT (not
   one of the two formats, or damaged: the message says where). */
MLLM_API mllm_status mllm_file_info_open(const char *path, mllm_file_info **out);
MLLM_API void mllm_file_info_close(mllm_file_info *f);
/* MLLM_FILE_MLLM or MLLM_FILE_CTRANSLATE2; 0 for NULL. */
MLLM_API int mllm_file_info_format(const mllm_file_info *f);
/* The format's binary version (3 for .mllm; CTranslate2's 2..6). */
MLLM_API uint32_t mllm_file_info_version(const mllm_file_info *f);
/* CTranslate2: the spec name ("WhisperSpec") and *revision (may be NULL);
   NULL for a .mllm file. */
MLLM_API const char *mllm_file_info_spec(const mllm_file_info *f, uint32_t *revision);
/* .mllm: the config JSON it carries, *len bytes (not NUL-terminated); NULL
   for CTranslate2. */
MLLM_API const char *mllm_file_info_config(const mllm_file_info *f, size_t *len);
MLLM_API size_t mllm_file_info_n_tensors(const mllm_file_info *f);
/* Tensor (CTranslate2: variable) i into *out. Errors as mllm_model_tensor_info. */
MLLM_API mllm_status mllm_file_info_tensor(const mllm_file_info *f, size_t i, mllm_tensor_info *out);
/* CTranslate2's aliases (a name for another variable); 0 for .mllm. */
MLLM_API size_t mllm_file_info_n_aliases(const mllm_file_info *f);
/* Alias i: its name, and the name of the variable it stands for (both
   NUL-terminated, owned by f). Errors: MLLM_ERR_INVALID_ARG (i out of range). */
MLLM_API mllm_status mllm_file_info_alias(const mllm_file_info *f, size_t i, const char **name, const char **target);

#ifdef __cplusplus
}
#endif
#endif
