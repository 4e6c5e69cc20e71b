/* Content hash of a model's files, cached by their stat (model_hash.h). */
#include "formats/model_hash.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/alloc.h"
#include "core/atomic_write.h"
#include "core/error.h"
#include "core/file_open.h"
#include "formats/mllmfile.h"

#define HASH_CHUNK ((size_t)1 << 20)
#define MAX_FOLDER_FILES 4096

/* The regular files a model at path is read from (path itself, or the
   folder's regular files sorted by name): *names (mllm_free each and the
   array), *n. */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static mllm_status list_files(const char *path, char ***names, size_t *n) {
    *names = NULL, *n = 0;
    struct stat st;
    if (stat(path, &st) != 0) return mllm_err(MLLM_ERR_IO, "%s: %s", path, strerror(errno));
    char **v = mllm_calloc(MAX_FOLDER_FILES, sizeof *v);
    if (!v) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    if (!S_ISDIR(st.st_mode)) {
        v[0] = mllm_malloc(strlen(path) + 1);
        if (!v[0]) { mllm_free(v); return mllm_err(MLLM_ERR_NOMEM, "out of memory"); }
        strcpy(v[0], path);
        *names = v, *n = 1;
        return MLLM_OK;
    }
    DIR *d = opendir(path);
    if (!d) { mllm_free(v); return mllm_err(MLLM_ERR_IO, "%s: %s", path, strerror(errno)); }
    size_t k = 0;
    mllm_status rc = MLLM_OK;
    for (struct dirent *e; rc == MLLM_OK && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue; /* ., .., hidden files (a download's partial state) */
        const size_t len = strlen(path) + strlen(e->d_name) + 2;
        char *full = mllm_malloc(len);
        if (!full) { rc = mllm_err(MLLM_ERR_NOMEM, "out of memory"); break; }
        snprintf(full, len, "%s/%s", path, e->d_name);
        struct stat fs;
        if (stat(full, &fs) != 0 || !S_ISREG(fs.st_mode)) { mllm_free(full); continue; }
        if (k == MAX_FOLDER_FILES) {
            mllm_free(full);
            rc = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: more than %d files in the model folder", path, MAX_FOLDER_FILES);
            break;
        }
        v[k++] = full;
    }
    closedir(d);
    if (rc != MLLM_OK) {
        for (size_t i = 0; i < k; i++) mllm_free(v[i]);
        mllm_free(v);
        return rc;
    }
    qsort(v, k, sizeof *v, cmp_str);
    *names = v, *n = k;
    return MLLM_OK;
}

static void free_list(char **v, size_t n) {
    for (size_t i = 0; i < n; i++) mllm_free(v[i]);
    mllm_free(v);
}

/* What stat says of the files, hashed: the cache's key. */
static mllm_status stat_key(char **v, size_t n, uint64_t *key) {
    mllm_xxh64_state h;
    mllm_xxh64_init(&h);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(v[i], &st) != 0) return mllm_err(MLLM_ERR_IO, "%s: %s", v[i], strerror(errno));
        const int64_t f[9] = {(int64_t)st.st_dev, (int64_t)st.st_ino, (int64_t)st.st_size,
                              (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec, (int64_t)st.st_ctim.tv_sec,
                              (int64_t)st.st_ctim.tv_nsec, (int64_t)st.st_mode, (int64_t)strlen(v[i])};
        mllm_xxh64_update(&h, f, sizeof f);
        mllm_xxh64_update(&h, v[i], strlen(v[i]));
    }
    *key = mllm_xxh64_digest(&h);
    return MLLM_OK;
}

static mllm_status hash_files(char **v, size_t n, uint64_t *out) {
    uint8_t *buf = mllm_malloc(HASH_CHUNK);
    if (!buf) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    mllm_xxh64_state h;
    mllm_xxh64_init(&h);
    mllm_status st = MLLM_OK;
    for (size_t i = 0; st == MLLM_OK && i < n; i++) {
        int fd = -1;
        uint64_t size = 0;
        if ((st = mllm_file_open(v[i], &fd, &size)) != MLLM_OK) break;
        const char *base = strrchr(v[i], '/');
        base = base ? base + 1 : v[i];
        mllm_xxh64_update(&h, base, strlen(base) + 1); /* which file, then its bytes */
        mllm_xxh64_update(&h, &size, sizeof size);
        for (uint64_t at = 0; at < size;) {
            ssize_t r = pread(fd, buf, HASH_CHUNK, (off_t)at);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                st = mllm_err(MLLM_ERR_IO, "%s: read error at byte %llu: %s", v[i], (unsigned long long)at,
                              r < 0 ? strerror(errno) : "the file shrank");
                break;
            }
            mllm_xxh64_update(&h, buf, (size_t)r);
            at += (uint64_t)r;
        }
        close(fd);
    }
    mllm_free(buf);
    if (st == MLLM_OK) *out = mllm_xxh64_digest(&h);
    return st;
}

static bool cache_read(const char *file, uint64_t *out) {
    int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return false;
    char text[64] = {0};
    const ssize_t r = read(fd, text, sizeof text - 1);
    close(fd);
    unsigned long long v = 0;
    int used = 0;
    if (r < 17 || sscanf(text, "%16llx%n", &v, &used) != 1 || used != 16 || text[16] != '\n') return false;
    *out = v;
    return true;
}

/* A failure to write the cache costs only the next start's hashing. */
static void cache_write(const char *file, uint64_t v) {
    mllm_atomic_file af;
    if (mllm_atomic_open(&af, file) != MLLM_OK) return;
    fprintf(af.f, "%016llx\n# xxh64 of every byte of the model's files (mllm prefix store)\n",
            (unsigned long long)v);
    (void)mllm_atomic_commit(&af, ferror(af.f) ? MLLM_ERR_IO : MLLM_OK);
}

mllm_status mllm_model_content_hash(const char *path, const char *cache_dir, uint64_t *out, bool *from_cache) {
    if (from_cache) *from_cache = false;
    char **v = NULL;
    size_t n = 0;
    mllm_status st = list_files(path, &v, &n);
    if (st != MLLM_OK) return st;
    uint64_t key = 0;
    char file[4096] = "";
    if (cache_dir && (st = stat_key(v, n, &key)) == MLLM_OK &&
        (size_t)snprintf(file, sizeof file, "%s/content-%016llx.xxh64", cache_dir, (unsigned long long)key) <
            sizeof file &&
        cache_read(file, out)) {
        if (from_cache) *from_cache = true;
        free_list(v, n);
        return MLLM_OK;
    }
    if (st == MLLM_OK) st = hash_files(v, n, out);
    free_list(v, n);
    if (st == MLLM_OK && file[0]) cache_write(file, *out);
    return st;
}
