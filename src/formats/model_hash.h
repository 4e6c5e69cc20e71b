/* The hash of every byte a model is read from, for keys that must not
   trust a sample: the prefix store's (#42: a model with three edited
   embedding rows took another's cached K/V when only a sample of each
   tensor was hashed). A file model (GGUF, llama2.c) is its file; a folder
   (Hugging Face) is every regular file in it, in name order (weights,
   config, tokenizer, chat template). Hashing reads them all once (about a
   second a GB from the page cache), so the result is kept in a small file
   in a folder the caller owns, keyed by what stat says of each file
   (device, inode, size, modification and change times: an edit in place
   changes the change time, which no user can set back). */
#ifndef MLLM_FORMATS_MODEL_HASH_H
#define MLLM_FORMATS_MODEL_HASH_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stdint.h>

/* *out: the content hash of the model at path. cache_dir: a folder to keep
   it in (NULL: computed every time); *from_cache (may be NULL) says
   whether it was read from there. Errors name the file (MLLM_ERR_IO). */
mllm_status mllm_model_content_hash(const char *path, const char *cache_dir, uint64_t *out, bool *from_cache);

#endif
