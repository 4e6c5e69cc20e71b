/* One opened model file of any supported format, seen the same way by the
   model code: generic metadata (core/meta.h: GGUF keys as they are, a
   config.json flattened) plus a table of weights under the names the file
   gives them (GGUF names, or Hugging Face names that the model registry
   renames), each pointing into mmap'd memory (zero-copy) unless the format
   forced a conversion. Nothing here knows a model family. */
#ifndef MLLM_FORMATS_MODEL_FILE_H
#define MLLM_FORMATS_MODEL_FILE_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/meta.h"

struct mllm_gguf;
struct mllm_tokenizer;

typedef enum {
    MLLM_FILE_GGUF = 1,
    MLLM_FILE_HF = 2,      /* folder: config.json + *.safetensors */
    MLLM_FILE_LLAMA2C = 3, /* karpathy llama2.c checkpoint */
} mllm_file_kind;

typedef struct {
    char *name;        /* GGUF-style name, NUL-terminated, owned */
    int dtype;         /* mllm_dtype */
    int n_dims;
    int64_t ne[4];     /* ne[0] fastest (= in_features for a matrix), like GGUF */
    const void *data;  /* into the mapping (or owned conversion buffer) */
    size_t size;       /* bytes */
    bool mapped;       /* data lies in a read-only file mapping (its pages may be dropped) */
} mllm_weight;

typedef struct mllm_model_file {
    mllm_file_kind kind;
    char *path;
    mllm_meta meta;           /* every key of the file (GGUF) or field of its config (HF, .mllm) */
    mllm_weight *weights;
    size_t n_weights;
    struct mllm_gguf *gguf;   /* set for GGUF files (metadata, tokenizer) */
    char *tokenizer_json;     /* HF: path of tokenizer.json, if present */
    char *tokenizer_config;   /* HF: path of tokenizer_config.json, if present */
    void *priv;               /* format-specific: mappings, buffers */
} mllm_model_file;

/* Opens `path` (format detected from the folder/magic), validates every
   offset/size against the file, fills meta. The model registry
   (models/registry.h: mllm_family_open) then reads it as a model.
   Errors name the file and the problem (mllm_last_error). */
mllm_status mllm_model_file_open(const char *path, mllm_model_file **out);
void mllm_model_file_close(mllm_model_file *f);
/* MLLM_OK, or MLLM_ERR_IO naming the file when a mapping of it hit a page
   past the file's end (it was truncated or rewritten in place while in use;
   the reads returned zeros, core/file_map.h): loads and forward passes call
   it so such a run ends in an error instead of SIGBUS or silent garbage. */
mllm_status mllm_model_file_check_intact(const mllm_model_file *f);
/* Keeps p (an mllm_malloc_aligned block, e.g. a weight converted at load)
   until the file is closed. */
mllm_status mllm_model_file_own(mllm_model_file *f, void *p);
/* Adds what identifies f's weights to h (an mllm_xxh64_state,
   formats/mllmfile.h): its kind, and each tensor's name, type, shape,
   size, and a sample of its bytes (the first 4 KiB and 16 slices of 256
   bytes spread over the rest, so a fine-tune of the same shapes differs).
   The prefix store keys its files by it (engine_store.c) and the vision
   tower its images (api/vision.c). */
struct mllm_xxh64_state;
void mllm_model_file_fingerprint(const mllm_model_file *f, struct mllm_xxh64_state *h);
/* NULL if absent. */
const mllm_weight *mllm_model_file_find(const mllm_model_file *f, const char *name);

#endif
