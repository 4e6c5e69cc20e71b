/* Opening an input file: the one way every reader opens what a user names
   (model files, shards, configs, tokenizers, templates, pipelines).

   Only regular files are read, and the check cannot hang: the file is opened
   with O_NONBLOCK, so a FIFO (or a device) named as a shard returns at once
   and is refused, instead of blocking open() until a writer appears.
   Symbolic links are followed, wherever they point: a Hugging Face cache
   links snapshots/<rev>/<file> to ../../blobs/<sha>, outside the model
   folder. Readers therefore never print bytes of a file they failed to
   parse (the link may name a file that is not a model at all). */
#ifndef MLLM_CORE_FILE_OPEN_H
#define MLLM_CORE_FILE_OPEN_H
#include <mllm/mllm.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Read-only descriptor of the regular file at path, close-on-exec, in
   blocking mode again, and its size (size may be NULL). Errors (message
   naming the file): MLLM_ERR_IO (cannot open: strerror; "not a regular
   file (a FIFO)", "(a directory)", "(a device)", ...). */
mllm_status mllm_file_open(const char *path, int *fd, uint64_t *size);

/* The same as a stdio stream ("rb"). On failure NULL, with the reason in
   mllm_last_error(). */
FILE *mllm_file_fopen(const char *path);

/* The whole file, NUL-terminated (*out from mllm_malloc, *len bytes before
   the NUL). Errors: those of mllm_file_open, MLLM_ERR_FORMAT (over max
   bytes), MLLM_ERR_NOMEM, MLLM_ERR_IO. */
mllm_status mllm_file_read_all(const char *path, size_t max, char **out, size_t *len);

#endif
