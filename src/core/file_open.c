/* Regular files only, opened without blocking: see file_open.h. */
#include "core/file_open.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/alloc.h"
#include "core/error.h"

static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a plain file";
}

mllm_status mllm_file_open(const char *path, int *fd_out, uint64_t *size) {
    *fd_out = -1;
    if (size) *size = 0;
    if (!path) return mllm_err(MLLM_ERR_INVALID_ARG, "no file name");
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return mllm_err(MLLM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return mllm_err(MLLM_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return mllm_err(MLLM_ERR_IO, "%s: not a regular file (%s)", path, kind_of(sb.st_mode));
    }
    /* Reads of a regular file never block anyway; clear the flag so stdio
       and read loops see ordinary semantics. */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    *fd_out = fd;
    if (size) *size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
    return MLLM_OK;
}

FILE *mllm_file_fopen(const char *path) {
    int fd;
    if (mllm_file_open(path, &fd, NULL) != MLLM_OK) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        mllm_err(MLLM_ERR_IO, "%s: cannot open: %s", path, strerror(e));
    }
    return f;
}

mllm_status mllm_file_read_all(const char *path, size_t max, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    int fd;
    uint64_t size = 0;
    mllm_status st = mllm_file_open(path, &fd, &size);
    if (st) return st;
    if (size > max) {
        close(fd);
        return mllm_err(MLLM_ERR_FORMAT, "%s: %llu bytes, more than the %zu a file of this kind may have", path,
                        (unsigned long long)size, max);
    }
    char *buf = mllm_malloc((size_t)size + 1);
    if (!buf) {
        close(fd);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, (size_t)size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got != size) {
        mllm_free(buf);
        return mllm_err(MLLM_ERR_IO, "%s: read failed", path);
    }
    buf[got] = 0;
    *out = buf;
    *len = got;
    return MLLM_OK;
}
