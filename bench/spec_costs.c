/* What a speculative pass costs, in one-token passes of the model
   (bench/history/2026-12-01_to_2026-12-03.md, "Speculative decoding"): each round times, back to
   back, one token of the model, verification passes over n = 2, 3, 5, 9
   tokens (logits of every row, as api/speculative.c verifies), and one
   token of the draft, with its whole output matrix and cut to its first
   65536 ids (mllm_session_cut_vocab). Ratios are taken within a round and
   their medians printed, so a shared machine's load, which drifts over
   seconds, cancels out of them as far as it can. Not part of ctest. Build
   against the static library, e.g.:
     cc -O2 -std=c17 -Iinclude -Isrc bench/spec_costs.c build/release/libmllm.a \
        $(see bench_kernels.c for the libraries) -o spec_costs
   Usage: spec_costs TARGET.gguf DRAFT.gguf [ROUNDS] [THREADS] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mllm/mllm.h>
#include "api/internal.h"

enum { N_CFG = 7 };
static const char *names[N_CFG] = {"target 1", "verify 2", "verify 3", "verify 5", "verify 9", "draft 1",
                                   "draft 1 cut"};

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static mllm_session *open_session(mllm_model *m, const int32_t *ids, size_t n) {
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = 512;
    mllm_session *s = NULL;
    if (mllm_session_new(m, &sp, &s) != MLLM_OK || mllm_session_eval(s, ids, n) != MLLM_OK) {
        fprintf(stderr, "session: %s\n", mllm_last_error());
        exit(1);
    }
    return s;
}

/* ms of evaluating n tokens after what s holds, which it then forgets. */
static double time_eval(mllm_session *s, const int32_t *ids, int n) {
    const int n0 = s->n_past;
    const float *rows;
    double t0 = mllm_time_ms();
    mllm_status st = n == 1 ? mllm_session_eval_internal(s, ids, 1) : mllm_session_eval_rows(s, ids, n, &rows);
    double ms = mllm_time_ms() - t0;
    if (st != MLLM_OK) {
        fprintf(stderr, "eval: %s\n", mllm_last_error());
        exit(1);
    }
    s->n_past = n0;
    return ms;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: spec_costs TARGET.gguf DRAFT.gguf [ROUNDS] [THREADS]\n");
        return 2;
    }
    const int rounds = argc > 3 ? atoi(argv[3]) : 20, nt = argc > 4 ? atoi(argv[4]) : 2;
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = nt;
    mllm_model *t = NULL, *d = NULL;
    if (mllm_model_load(argv[1], &lp, &t) != MLLM_OK || mllm_model_load(argv[2], &lp, &d) != MLLM_OK) {
        fprintf(stderr, "load: %s\n", mllm_last_error());
        return 1;
    }
    static const char prompt[] = "Write a Python class LRUCache with get and put methods, O(1) each.";
    int32_t ids[256];
    size_t n = 0;
    if (mllm_tokenize(t, prompt, sizeof prompt - 1, 1, ids, 256, &n) != MLLM_OK) return 1;
    mllm_session *st = open_session(t, ids, n), *sd = open_session(d, ids, n);
    mllm_session *sc = NULL;
    {
        mllm_session_params sp;
        mllm_session_default_params(&sp);
        sp.n_ctx = 512;
        if (mllm_session_new(d, &sp, &sc) != MLLM_OK || mllm_session_cut_vocab(sc, 65536) != MLLM_OK ||
            mllm_session_eval(sc, ids, n) != MLLM_OK)
            return 1;
    }
    const int ns[N_CFG] = {1, 2, 3, 5, 9, 1, 1};
    mllm_session *ss[N_CFG] = {st, st, st, st, st, sd, sc};
    double *ms = calloc((size_t)rounds * N_CFG, sizeof *ms), *ratio = calloc((size_t)rounds, sizeof *ratio);
    for (int c = 0; c < N_CFG; c++) time_eval(ss[c], ids, ns[c]); /* warm-up: graphs traced, pages touched */
    for (int r = 0; r < rounds; r++)
        for (int c = 0; c < N_CFG; c++) ms[c * rounds + r] = time_eval(ss[c], ids, ns[c]);
    printf("%d rounds, %d threads; ms (median) and the ratio to a one-token pass of the model in the same round\n",
           rounds, nt);
    for (int c = 0; c < N_CFG; c++) {
        for (int r = 0; r < rounds; r++) ratio[r] = ms[c * rounds + r] / ms[r];
        double rm = median(ratio, rounds);
        memcpy(ratio, ms + c * rounds, (size_t)rounds * sizeof *ratio);
        printf("%-12s %8.1f ms  %.3f", names[c], median(ratio, rounds), rm);
        if (ns[c] > 1) printf("  (%.3f per extra row)", (rm - 1) / (ns[c] - 1));
        printf("\n");
    }
    free(ms);
    free(ratio);
    mllm_session_free(st);
    mllm_session_free(sd);
    mllm_session_free(sc);
    mllm_model_free(t);
    mllm_model_free(d);
    return 0;
}
