/* .mllm files (v3, and MLLM's v1/v2) behind mllm_model_file_open.

   A v3 file is mapped once; weights point into the mapping (kept in
   priv->map, unmapped by mllm_model_file_close). The embedded tokenizer is
   handed to the tokenizer loaders the way the source format would: a GGUF
   key block becomes f->gguf (kind GGUF, parsed in place, no copy);
   tokenizer.json / tokenizer_config.json texts become two anonymous
   in-memory files named by /proc/self/fd paths (kind HF). A file without a
   tokenizer opens as kind LLAMA2C (the caller passes --tokenizer).
   v1/v2 files open as kind HF: config.json and tokenizer.json come from the
   file's folder. */
#ifndef MLLM_FORMATS_MLLMFILE_MODEL_H
#define MLLM_FORMATS_MLLMFILE_MODEL_H
#include "formats/model_file_internal.h"

/* f->priv of a kind-HF native file: the shared part first, so
   mllm_model_file_close frees and unmaps it as usual. */
typedef struct {
    mllm_model_file_priv base;
    int tok_fd[2];  /* in-memory tokenizer.json / tokenizer_config.json, or -1 */
    void *owned;    /* v1/v2: aligned copies of unaligned tensors, or NULL */
} mllm_native_priv;

/* Grows f->priv to an mllm_native_priv (fds -1, owned NULL). */
mllm_status mllm_native_priv_extend(mllm_model_file *f);

/* True if head (n bytes read from the start of a file) begins like a .mllm
   v1, v2 or v3 file. */
bool mllm_native_sniff(const void *head, size_t n);
/* Opens f->path (a .mllm v1/v2/v3 file); sets f->kind. */
mllm_status mllm_model_file_open_native(mllm_model_file *f);
/* Frees what open_native added to a kind-HF file (called by
   mllm_model_file_close when priv->map is set on a kind-HF file). */
void mllm_model_file_release_native(mllm_model_file *f);

/* Config section <-> generic metadata. to_json allocates *out (mllm_free). */
mllm_status mllm_mllmfile_config_to_json(const mllm_meta *m, char **out, size_t *len);
mllm_status mllm_mllmfile_config_parse(const char *json, size_t len, const char *label, mllm_meta *m);

#endif
