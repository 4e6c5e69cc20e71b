#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef __wasi__
#include <sys/resource.h>
#endif
#include "cli.h"

double cli_peak_rss_mib(void) {
#ifdef __wasi__
    return (double)__builtin_wasm_memory_size(0) * 65536.0 / (1024.0 * 1024.0);
#else
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
#endif
}

bool cli_int(const char *opt, const char *val, long lo, long hi, long *out) {
    char *end = NULL;
    errno = 0;
    long v = val ? strtol(val, &end, 10) : 0;
    if (!val || errno || end == val || *end || v < lo || v > hi) {
        fprintf(stderr, "mllm: %s expects an integer in [%ld, %ld], got '%s'\n", opt, lo, hi, val ? val : "");
        return false;
    }
    *out = v;
    return true;
}

bool cli_kv_type(const char *opt, const char *val, int *out) {
    static const char *const names[] = {"f32", "f16", "q8"};
    for (int i = 0; i < 3; i++)
        if (val && !strcmp(val, names[i])) {
            *out = MLLM_KV_PAGED_F32 + i;
            return true;
        }
    fprintf(stderr, "mllm: %s expects f32, f16 or q8, got '%s'\n", opt, val ? val : "");
    return false;
}

bool cli_float(const char *opt, const char *val, double lo, double hi, double *out) {
    char *end = NULL;
    errno = 0;
    double v = val ? strtod(val, &end) : 0;
    if (!val || errno || end == val || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "mllm: %s expects a number in [%g, %g], got '%s'\n", opt, lo, hi, val ? val : "");
        return false;
    }
    *out = v;
    return true;
}

const char *cli_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        fprintf(stderr, "mllm: option %s needs a value\n", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

int cli_fail(const char *what, mllm_status st) {
    const char *d = mllm_last_error();
    fprintf(stderr, "mllm: %s: %s\n", what, d && *d ? d : mllm_status_str(st));
    return 1;
}

char *cli_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "mllm: cannot open '%s'\n", path);
        return NULL;
    }
    size_t cap = 4096, n = 0, r;
    char *b = malloc(cap);
    while (b && (r = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    if (b && ferror(f)) { free(b); b = NULL; }
    fclose(f);
    if (!b) {
        fprintf(stderr, "mllm: cannot read '%s'\n", path);
        return NULL;
    }
    b[n] = 0;
    if (len) *len = n;
    return b;
}
