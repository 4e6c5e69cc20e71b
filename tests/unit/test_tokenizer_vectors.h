/* Shared by the tokenizer tests: runs llama.cpp's vocab test vectors
   (NAME.inp: inputs each followed by "\n__ggml_vocab_test__\n"; NAME.out:
   one line of expected ids per input, produced by the HF tokenizer without
   BOS) and checks decode(encode(x)) == x. Header-only because every
   tests/unit/test_*.c is its own executable. */
#ifndef TEST_TOKENIZER_VECTORS_H
#define TEST_TOKENIZER_VECTORS_H
#include "testutil.h"
#include "tokenizer/tokenizer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VEC_SEP "\n__ggml_vocab_test__\n"

/* tu_shared()/tu_tmp() return malloc'd paths that live until exit; these
   wrappers remember them so the group teardown frees them (LeakSanitizer). */
static char *tt_paths[128];
static int tt_n_paths;

static inline const char *tt_keep(const char *p) {
    if (p && tt_n_paths < 128) tt_paths[tt_n_paths++] = (char *)p;
    return p;
}
static inline const char *tt_shared(const char *rel) { return tt_keep(tu_shared(rel)); }
static inline const char *tt_tmp(const char *name) { return tt_keep(tu_tmp(name)); }
static inline int tt_free_paths(void **state) {
    (void)state;
    for (int i = 0; i < tt_n_paths; i++) free(tt_paths[i]);
    tt_n_paths = 0;
    return 0;
}

typedef struct {
    int total, passed, roundtrip;
} vec_result;

static inline bool vec_is_known(const int *known, int n_known, int i) {
    for (int k = 0; k < n_known; k++)
        if (known[k] == i) return true;
    return false;
}

/* Asserts that every case not listed in known[] encodes to the expected ids
   and decodes back to its input; prints every miss (known ones included). */
static inline vec_result vec_run(const mllm_tokenizer *t, const char *inp_path, const char *out_path,
                          const char *name, const int *known, int n_known) {
    vec_result r = {0, 0, 0};
    char *inp = tu_read_file(inp_path, NULL);
    char *out = tu_read_file(out_path, NULL);
    assert_non_null(inp);
    assert_non_null(out);
    char *ip = inp, *op = out;
    int unexpected = 0;
    for (int i = 0;; i++) {
        char *sep = strstr(ip, VEC_SEP);
        if (!sep) break;
        *sep = 0;
        char *nl = strchr(op, '\n');
        assert_non_null(nl);
        *nl = 0;
        int32_t want[1024];
        int n_want = 0;
        for (char *q = op; *q;) {
            char *end;
            long v = strtol(q, &end, 10);
            if (end == q) break;
            want[n_want++] = (int32_t)v;
            q = end;
        }
        size_t len = strlen(ip);
        int32_t got[1024];
        size_t n_got = 0;
        assert_int_equal(mllm_tokenizer_encode(t, ip, len, false, false, got, 1024, &n_got), MLLM_OK);
        bool ok = (int)n_got == n_want && memcmp(got, want, n_got * sizeof(int32_t)) == 0;
        char dec[8192];
        size_t n_dec = 0;
        bool rt = mllm_tokenizer_decode(t, got, n_got, true, dec, sizeof dec, &n_dec) == MLLM_OK &&
                  n_dec == len && memcmp(dec, ip, len) == 0;
        bool known_miss = vec_is_known(known, n_known, i);
        r.total++;
        r.passed += ok;
        r.roundtrip += rt;
        if (!ok || !rt) {
            printf("%s case %d%s: %s%s input '%.60s'\n", name, i, known_miss ? " (known miss)" : "",
                   ok ? "" : "ids differ", rt ? "" : " round trip differs", ip);
            if (!ok) {
                printf("   want:");
                for (int k = 0; k < n_want; k++) printf(" %d", want[k]);
                printf("\n   got: ");
                for (size_t k = 0; k < n_got; k++) printf(" %d", got[k]);
                printf("\n");
            }
            if (!known_miss) unexpected++;
        }
        ip = sep + strlen(VEC_SEP);
        op = nl + 1;
    }
    printf("%s: %d/%d ids, %d/%d round trips\n", name, r.passed, r.total, r.roundtrip, r.total);
    free(inp);
    free(out);
    assert_true(r.total > 0);
    assert_int_equal(unexpected, 0);
    return r;
}

#endif
