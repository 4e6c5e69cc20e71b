/* Helpers shared by the fuzz targets: input slicing, exact-size copies and a
   per-process scratch folder for the file-based readers. */
#include "fuzz_util.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Noreturn void fz_fail(const char *file, int line, const char *what) {
    fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", file, line, what);
    const char *e = mllm_last_error();
    if (e && e[0]) fprintf(stderr, "  last error: %s\n", e);
    abort();
}

void fz_check_status(mllm_status st) {
    if (st == MLLM_OK) return;
    FZ_CHECK(st < 0 && st >= MLLM_ERR_BUFFER_TOO_SMALL);
    const char *e = mllm_last_error();
    FZ_CHECK(e != NULL && e[0] != '\0');
}

uint8_t fz_take_u8(fz_input *in) {
    if (in->n == 0) return 0;
    uint8_t v = in->p[0];
    in->p++;
    in->n--;
    return v;
}

uint32_t fz_take_u32(fz_input *in) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)fz_take_u8(in) << (8 * i);
    return v;
}

fz_input fz_take_part(fz_input *in) {
    uint32_t want = fz_take_u32(in);
    size_t n = want < in->n ? want : in->n;
    fz_input part = {in->p, n};
    in->p += n;
    in->n -= n;
    return part;
}

void *fz_dup(const void *p, size_t n) {
    void *q = malloc(n ? n : 1);
    if (!q) abort();
    if (n) memcpy(q, p, n);
    return q;
}

char *fz_dup_str(const void *p, size_t n) {
    char *q = malloc(n + 1);
    if (!q) abort();
    if (n) memcpy(q, p, n);
    q[n] = '\0';
    return q;
}

static char g_dir[256];

/* Removes the scratch folder, one sub-folder level deep (all fz_write makes). */
static void remove_tree(const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0 && depth > 0) remove_tree(path, depth - 1);
    }
    closedir(d);
    rmdir(dir);
}

static void cleanup(void) {
    if (g_dir[0]) remove_tree(g_dir, 1);
}

const char *fz_tmpdir(void) {
    if (g_dir[0]) return g_dir;
    struct stat sb;
    const char *root = getenv("MLLM_FUZZ_TMP");
    if (!root || !root[0]) root = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) ? "/dev/shm" : NULL;
    if (!root) root = getenv("TMPDIR");
    if (!root || !root[0]) root = "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/mllm-fuzz-XXXXXX", root);
    if (!mkdtemp(g_dir)) {
        fprintf(stderr, "fuzz: cannot create a scratch folder under %s: %s\n", root, strerror(errno));
        abort();
    }
    atexit(cleanup);
    return g_dir;
}

const char *fz_write(const char *rel, const void *data, size_t n) {
    static char path[512];
    const char *dir = fz_tmpdir();
    const char *slash = strchr(rel, '/');
    if (slash) {
        snprintf(path, sizeof path, "%s/%.*s", dir, (int)(slash - rel), rel);
        if (mkdir(path, 0700) != 0 && errno != EEXIST) return NULL;
    }
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    bool ok = (n == 0 || fwrite(data, 1, n, f) == n);
    ok = (fclose(f) == 0) && ok;
    return ok ? path : NULL;
}

void fz_remove(const char *rel) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", fz_tmpdir(), rel);
    if (unlink(path) != 0) rmdir(path);
}
