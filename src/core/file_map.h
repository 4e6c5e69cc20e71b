/* Maps a whole regular file read-only: the one place every file reader
   (GGUF, safetensors, .mllm) opens, checks and mmap's its input. */
#ifndef MLLM_CORE_FILE_MAP_H
#define MLLM_CORE_FILE_MAP_H
#include <mllm/mllm.h>
#include <stddef.h>

/* On success base and size describe the mapping (release with mllm_file_unmap).
   A file shorter than min_size is refused as MLLM_ERR_FORMAT with the message
   "<path>: <too_short>". Other errors: MLLM_ERR_IO (cannot open, not a
   regular file, mmap failed), MLLM_ERR_UNSUPPORTED (larger than the address
   space). Every message names the file. */
mllm_status mllm_file_map(const char *path, size_t min_size, const char *too_short, void **base,
                          size_t *size);
void mllm_file_unmap(void *base, size_t size);

#endif
