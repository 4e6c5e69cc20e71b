/* mllm bench: llama-bench style throughput table (prompt processing ppN and
   token generation tgN), or JSON with llama-bench's field names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"

#define MAX_LIST 16

static void bench_usage(FILE *f) {
    fprintf(f,
            "usage: mllm bench -m MODEL [-p 128,512] [-n 64] [-t 2] [-r 3] [-o md|json]\n"
            "\n"
            "  -m, --model PATH     model (GGUF, HF folder; llama2.c needs --tokenizer)\n"
            "  -p, --n-prompt LIST  prompt lengths to time as one batch (ppN); 0 skips (default 512)\n"
            "  -n, --n-gen LIST     tokens to generate one at a time (tgN); 0 skips (default 128)\n"
            "  -t, --threads LIST   thread counts (default: all cores)\n"
            "      --exact          time the exact mode (f32 activations in quantized matmuls)\n"
            "%s"
            "  -r, --repetitions N  timed runs per test, after one untimed warm-up (default 5)\n"
            "  -o, --output FMT     md (a table, default) or json (llama-bench's field names)\n"
            "      --tokenizer PATH tokenizer for llama2.c checkpoints\n"
            "\n"
            "Tokens are random ids (fixed seed), as in llama-bench. Times cover only the\n"
            "model evaluation, each repetition from an empty KV cache.\n",
            cli_backend_usage);
}

static int parse_list(const char *opt, const char *s, long lo, long hi, long *out) {
    int n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (n == MAX_LIST) { fprintf(stderr, "mllm bench: too many values for %s\n", opt); return -1; }
        if (!cli_int(opt, tok, lo, hi, &out[n])) return -1;
        n++;
    }
    return n;
}

/* splitmix64: the random token ids, from a fixed seed as in llama-bench. */
static uint64_t next_id(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct {
    int n_prompt, n_gen, threads, reps;
    double *ns; /* (reps) */
} bench_test;

static mllm_status run_test(mllm_session *s, bench_test *t, int n_vocab) {
    int n = t->n_prompt ? t->n_prompt : t->n_gen;
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) return MLLM_ERR_NOMEM;
    uint64_t seed = 1234;
    for (int i = 0; i < n; i++) ids[i] = (int32_t)(next_id(&seed) % (uint64_t)n_vocab);
    mllm_status st = MLLM_OK;
    for (int r = -1; r < t->reps && st == MLLM_OK; r++) { /* r = -1: warm-up */
        mllm_session_reset(s);
        double t0 = mllm_time_ms() * 1e6;
        if (t->n_prompt) st = mllm_session_eval(s, ids, (size_t)n);
        else
            for (int i = 0; i < n && st == MLLM_OK; i++) st = mllm_session_eval(s, &ids[i], 1);
        double dt = mllm_time_ms() * 1e6 - t0;
        if (r >= 0) t->ns[r] = dt;
    }
    free(ids);
    return st;
}

static void stats(const bench_test *t, double *avg_ts, double *sd_ts, double *avg_ns, double *sd_ns) {
    int n = t->n_prompt ? t->n_prompt : t->n_gen;
    double a = 0, b = 0, c = 0, d = 0;
    for (int r = 0; r < t->reps; r++) { a += n * 1e9 / t->ns[r]; c += t->ns[r]; }
    a /= t->reps;
    c /= t->reps;
    for (int r = 0; r < t->reps; r++) {
        double x = n * 1e9 / t->ns[r] - a, y = t->ns[r] - c;
        b += x * x;
        d += y * y;
    }
    *avg_ts = a;
    *avg_ns = c;
    *sd_ts = t->reps > 1 ? sqrt(b / (t->reps - 1)) : 0;
    *sd_ns = t->reps > 1 ? sqrt(d / (t->reps - 1)) : 0;
}

int cmd_bench(int argc, char **argv) {
    const char *model = NULL, *tok = NULL, *fmt = "md";
    bool exact = false;
    long pp[MAX_LIST] = {512}, tg[MAX_LIST] = {128}, th[MAX_LIST] = {0}, reps = 5;
    int n_pp = 1, n_tg = 1, n_th = 1;
    cli_backend_opts bo;
    cli_backend_defaults(&bo);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int ba = cli_backend_arg(&bo, argc, argv, &i);
        if (ba < 0) return 2;
        if (ba > 0) continue;
#define VAL() do { if (!(v = cli_value(argc, argv, &i))) return 2; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { bench_usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { VAL(); model = v; }
        else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) { VAL(); if ((n_pp = parse_list(a, v, 0, 1 << 16, pp)) < 0) return 2; }
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) { VAL(); if ((n_tg = parse_list(a, v, 0, 1 << 16, tg)) < 0) return 2; }
        else if (!strcmp(a, "--exact")) exact = true;
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { VAL(); if ((n_th = parse_list(a, v, 1, 1024, th)) < 0) return 2; }
        else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) { VAL(); if (!cli_int(a, v, 1, 1000, &reps)) return 2; }
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) { VAL(); fmt = v; }
        else if (!strcmp(a, "--tokenizer")) { VAL(); tok = v; }
        else { fprintf(stderr, "mllm bench: unknown option '%s' (try mllm bench --help)\n", a); return 2; }
#undef VAL
    }
    if (!model) { fprintf(stderr, "mllm bench: -m MODEL is required\n"); return 2; }
    bool json = !strcmp(fmt, "json");
    if (!json && strcmp(fmt, "md")) { fprintf(stderr, "mllm bench: -o expects md or json\n"); return 2; }
    int64_t now64;
    if (json && mllm_time_now(&now64) != MLLM_OK) { fprintf(stderr, "mllm bench: %s\n", mllm_last_error()); return 2; }
    if (th[0] == 0) th[0] = mllm_n_cpus();

    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.tokenizer_path = tok;
    lp.exact = exact;
    cli_backend_apply(&bo, &lp, "mllm bench");
    mllm_model *m = NULL;
    mllm_status st = mllm_model_load(model, &lp, &m);
    if (st != MLLM_OK) return cli_fail("cannot load model", st);
    cli_backend_report("mllm bench");
    mllm_model_summary sum;
    if ((st = mllm_model_summarize(m, &sum)) != MLLM_OK) {
        mllm_model_free(m);
        return cli_fail("cannot bench this model", st);
    }
    const char *be_name = sum.backend;
    const size_t size = (size_t)sum.size;
    char mtype[96], sz[16];
    double np = (double)sum.n_params;
    if (np >= 1e8) snprintf(sz, sizeof sz, "%.1fB", np / 1e9);
    else if (np >= 1e6) snprintf(sz, sizeof sz, "%.0fM", np / 1e6);
    else snprintf(sz, sizeof sz, "%.0fK", np / 1e3);
    snprintf(mtype, sizeof mtype, "%s %s %s", sum.arch, sz, sum.type);
    const char *base = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
    long max_n = 1;
    for (int i = 0; i < n_pp; i++) max_n = pp[i] > max_n ? pp[i] : max_n;
    for (int i = 0; i < n_tg; i++) max_n = tg[i] > max_n ? tg[i] : max_n;

    if (json) printf("[\n");
    else {
        printf("| %-30s | %10s | %10s | %-7s | %7s | %12s | %20s |\n", "model", "size", "params", "backend", "threads", "test", "t/s");
        printf("| ------------------------------ | ---------: | ---------: | ------- | ------: | -----------: | -------------------: |\n");
    }
    int first = 1, rc = 0;
    double *ns = malloc((size_t)reps * sizeof *ns);
    for (int ti = 0; ti < n_th && rc == 0; ti++) {
        mllm_session_params sp;
        mllm_session_default_params(&sp);
        sp.n_ctx = (int)max_n + 1;
        sp.n_threads = (int)th[ti];
        mllm_session *s = NULL;
        if ((st = mllm_session_new(m, &sp, &s)) != MLLM_OK) { rc = cli_fail("cannot create session", st); break; }
        for (int k = 0; k < n_pp + n_tg && rc == 0; k++) {
            bench_test t = {k < n_pp ? (int)pp[k] : 0, k < n_pp ? 0 : (int)tg[k - n_pp], (int)th[ti], (int)reps, ns};
            if (t.n_prompt == 0 && t.n_gen == 0) continue;
            fprintf(stderr, "bench: %s%d, %d threads...\n", t.n_prompt ? "pp" : "tg", t.n_prompt + t.n_gen, t.threads);
            if ((st = run_test(s, &t, mllm_model_n_vocab(m))) != MLLM_OK) { rc = cli_fail("bench run failed", st); break; }
            double ats, sts, ans, sns;
            stats(&t, &ats, &sts, &ans, &sns);
            char test[32];
            snprintf(test, sizeof test, "%s%d", t.n_prompt ? "pp" : "tg", t.n_prompt + t.n_gen);
            if (!json) {
                char tps[48];
                snprintf(tps, sizeof tps, "%.2f ± %.2f", ats, sts);
                printf("| %-30s | %6.2f GiB | %8.2f M | %-7s | %7d | %12s | %21s |\n", mtype, size / 1073741824.0, np / 1e6,
                       be_name, t.threads, test, tps);
                fflush(stdout);
                continue;
            }
            if (mllm_time_now(&now64) != MLLM_OK) now64 = (int64_t)time(NULL); /* checked above */
            time_t now = (time_t)now64; /* SOURCE_DATE_EPOCH pins test_time */
            char when[32];
            struct tm tm;
            strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
            printf("%s  {\n    \"build_commit\": \"%s\",\n    \"cpu_info\": \"%s\",\n    \"backends\": \"%s\",\n"
                   "    \"model_filename\": \"%s\",\n    \"model_type\": \"%s\",\n    \"model_size\": %zu,\n"
                   "    \"model_n_params\": %.0f,\n    \"n_batch\": 512,\n    \"n_ubatch\": 512,\n    \"n_threads\": %d,\n"
                   "    \"type_k\": \"f32\",\n    \"type_v\": \"f32\",\n    \"n_prompt\": %d,\n    \"n_gen\": %d,\n"
                   "    \"n_depth\": 0,\n    \"test_time\": \"%s\",\n    \"avg_ns\": %.0f,\n    \"stddev_ns\": %.0f,\n"
                   "    \"avg_ts\": %.6f,\n    \"stddev_ts\": %.6f,\n    \"samples_ns\": [",
                   first ? "" : ",\n", mllm_version(), sum.cpu_path, be_name, base, mtype, size, np, t.threads,
                   t.n_prompt, t.n_gen, when, ans, sns, ats, sts);
            for (int r = 0; r < t.reps; r++) printf("%s%.0f", r ? ", " : " ", t.ns[r]);
            printf(" ],\n    \"samples_ts\": [");
            int n = t.n_prompt + t.n_gen;
            for (int r = 0; r < t.reps; r++) printf("%s%.3f", r ? ", " : " ", n * 1e9 / t.ns[r]);
            printf(" ]\n  }");
            fflush(stdout);
            first = 0;
        }
        mllm_session_free(s);
    }
    if (json) printf("\n]\n");
    free(ns);
    mllm_model_free(m);
    return rc;
}
