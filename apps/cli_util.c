#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "cli.h"

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
