/* A plain main() for a fuzz target: runs LLVMFuzzerTestOneInput over every
   file named on the command line or found in the folders named there
   (corpus and regressions), so the inputs that once crashed stay fixed
   without a fuzzing build. A folder that does not exist is skipped (a target
   may have no regressions yet); finding no input at all is a failure. */
#include "fuzz_util.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int g_count;

static void run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz replay: cannot open %s\n", path);
        exit(1);
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) abort();
    /* Exact-size copy: reads past the end are caught by ASan builds. */
    uint8_t *exact = fz_dup(buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    g_count++;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        names = realloc(names, (n + 1) * sizeof *names);
        if (!names) abort();
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) run_file(path);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode)) run_dir(argv[i]);
        else run_file(argv[i]);
    }
    printf("%s: %d inputs replayed without a crash\n", argv[0], g_count);
    return g_count > 0 ? 0 : 1;
}
