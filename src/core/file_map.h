/* Maps a whole regular file read-only: the one place every file reader
   (GGUF, safetensors, .mllm, llama2.c, MLLM v1/v2) opens, checks and mmap's
   its input.

   A file that shrinks while it is mapped (truncated, or rewritten in place by
   a download or a copy) makes every read past its new end raise SIGBUS,
   which would kill the process. mllm_file_map therefore registers each
   mapping, and a SIGBUS handler (installed once, chaining to any handler
   the program had) replaces the faulting page of a registered mapping with
   a page of zeros and marks the mapping damaged, so the read completes.
   Callers check mllm_file_map_damaged() after each load and forward pass
   and turn it into a clean MLLM_ERR_IO; faults outside registered mappings
   go to the previous handler (or the default: the process dies as before). */
#ifndef MLLM_CORE_FILE_MAP_H
#define MLLM_CORE_FILE_MAP_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* At most this many mappings are guarded at once; more still map, unguarded. */
#define MLLM_FILE_MAP_MAX_GUARDED 256

/* On success base and size describe the mapping (release with mllm_file_unmap).
   A file shorter than min_size is refused as MLLM_ERR_FORMAT with the message
   "<path>: <too_short>". Other errors: MLLM_ERR_IO (cannot open, not a
   regular file, mmap failed), MLLM_ERR_UNSUPPORTED (larger than the address
   space). Every message names the file. */
mllm_status mllm_file_map(const char *path, size_t min_size, const char *too_short, void **base,
                          size_t *size);
void mllm_file_unmap(void *base, size_t size);

/* Guards a mapping made elsewhere (the prefix store maps its own file
   shared, core/file_map's loaders map theirs private) as mllm_file_map
   guards its own: a read of a page the file no longer has (truncated, or
   a hole a full tmpfs cannot fill) reads zeros and marks it damaged.
   mllm_file_map_unguard before munmap. */
void mllm_file_map_guard(void *base, size_t size);
void mllm_file_map_unguard(const void *base);

/* Drops the whole pages inside [p, p + n) of a read-only file mapping from
   this process (madvise DONTNEED: they are read again from the page cache
   if touched later). For loaders that convert mapped weights into their own
   copy, so resident memory stays about one copy, not two. */
void mllm_file_map_drop(const void *p, size_t n);

/* Whether a read inside the mapping that starts at base hit a page past the
   end of the file (the file shrank after it was mapped). Cheap: one atomic
   load when no fault was ever caught. */
bool mllm_file_map_damaged(const void *base);

#endif
