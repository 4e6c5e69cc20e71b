#include "core/file_map.h"
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/error.h"

mllm_status mllm_file_map(const char *path, size_t min_size, const char *too_short, void **base,
                          size_t *size) {
    *base = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return mllm_err(MLLM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    mllm_status st = MLLM_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = mllm_err(MLLM_ERR_IO, "%s: not a regular file", path);
    else if ((uint64_t)sb.st_size < min_size || sb.st_size == 0)
        st = mllm_err(MLLM_ERR_FORMAT, "%s: %s", path, too_short);
    else if ((uint64_t)sb.st_size > SIZE_MAX)
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: file too large to map", path);
    if (st != MLLM_OK) {
        close(fd);
        return st;
    }
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int saved = errno; /* close() may overwrite it */
    close(fd);
    if (p == MAP_FAILED) return mllm_err(MLLM_ERR_IO, "%s: mmap failed: %s", path, strerror(saved));
    *base = p;
    *size = (size_t)sb.st_size;
    return MLLM_OK;
}

void mllm_file_unmap(void *base, size_t size) {
    if (base) munmap(base, size);
}
