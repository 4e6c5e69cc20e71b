/* The temporary + fsync + rename protocol: see atomic_write.h. */
#include "core/atomic_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"

char *mllm_atomic_tmp_name(const char *path) {
    const size_t n = strlen(path) + 32;
    char *tmp = mllm_malloc(n);
    if (tmp) snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    return tmp;
}

mllm_status mllm_atomic_open(mllm_atomic_file *af, const char *path) {
    memset(af, 0, sizeof *af);
    char *tmp = mllm_atomic_tmp_name(path);
    if (!tmp) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        mllm_status st = mllm_err(MLLM_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        mllm_free(tmp);
        return st;
    }
    af->path = path;
    af->tmp = tmp;
    af->f = f;
    return MLLM_OK;
}

/* The rename is durable only once the folder's entry is on disk. A folder
   that cannot be opened or synced (some file systems refuse) leaves the
   rename done but not yet durable: not an error of the write. */
static void sync_parent(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = NULL;
    if (!slash) dir = mllm_strndup(".", 1);
    else dir = mllm_strndup(path, slash == path ? 1 : (size_t)(slash - path));
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    mllm_free(dir);
}

mllm_status mllm_atomic_rename(const char *tmp, const char *path) {
    if (rename(tmp, path) != 0) return mllm_err(MLLM_ERR_IO, "%s: rename failed: %s", path, strerror(errno));
    sync_parent(path);
    return MLLM_OK;
}

mllm_status mllm_atomic_commit(mllm_atomic_file *af, mllm_status st) {
    if (!af->f) return st;
    if (!st && fflush(af->f) != 0) st = mllm_err(MLLM_ERR_IO, "%s: write failed: %s", af->tmp, strerror(errno));
    if (!st && fsync(fileno(af->f)) != 0)
        st = mllm_err(MLLM_ERR_IO, "%s: fsync failed: %s", af->tmp, strerror(errno));
    if (fclose(af->f) != 0 && !st) st = mllm_err(MLLM_ERR_IO, "%s: close failed: %s", af->tmp, strerror(errno));
    if (!st) st = mllm_atomic_rename(af->tmp, af->path);
    if (st) unlink(af->tmp);
    mllm_free(af->tmp);
    memset(af, 0, sizeof *af);
    return st;
}
