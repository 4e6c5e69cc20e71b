/* Files that appear complete or not at all. A writer writes
   <path>.tmp.<pid> in the destination's folder (the same file system, so
   the rename is atomic), then mllm_atomic_commit flushes and fsyncs it,
   renames it onto path and fsyncs the folder, so that after a crash path
   holds the old file or the new one, never a half-written one. On any
   failure the temporary is removed and path is left as it was. One copy of
   this protocol for every writer (GGUF, .mllm v1/v2/v3, synth's folders). */
#ifndef MLLM_CORE_ATOMIC_WRITE_H
#define MLLM_CORE_ATOMIC_WRITE_H
#include <mllm/mllm.h>
#include <stdio.h>

typedef struct {
    const char *path; /* the destination: the caller's string, kept until commit */
    char *tmp;        /* <path>.tmp.<pid> */
    FILE *f;          /* open "wb" on tmp: stdio, or fileno(f) for pwrite writers */
} mllm_atomic_file;

/* <path>.tmp.<pid> (mllm_free it), or NULL when out of memory. */
char *mllm_atomic_tmp_name(const char *path);

/* Creates the temporary (truncating a stale one) and opens it. Errors name
   the temporary (MLLM_ERR_IO) or are MLLM_ERR_NOMEM; *af is then empty. */
mllm_status mllm_atomic_open(mllm_atomic_file *af, const char *path);

/* Ends the write. st is the writer's own outcome: MLLM_OK commits (flush,
   fsync, close, rename onto path, fsync of path's folder); anything else
   discards. Returns st when it failed, else the first failure of the
   commit (its message names the temporary, or path for the rename), after
   removing the temporary. Always releases *af. */
mllm_status mllm_atomic_commit(mllm_atomic_file *af, mllm_status st);

/* Renames tmp (a file or a folder the caller filled and synced) onto path
   and fsyncs path's folder: the last step of the commit, for writers of a
   folder. MLLM_ERR_IO naming path when the rename fails. */
mllm_status mllm_atomic_rename(const char *tmp, const char *path);

#endif
