/* mllm perplexity: chunked perplexity of a text, as llama.cpp computes it:
   the text is cut into chunks of n_ctx tokens (each starting with BOS when
   the model uses one); within a chunk only the second half's predictions
   are scored, so every scored token sees at least n_ctx/2 of context. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static void ppl_usage(FILE *f) {
    fprintf(f,
            "usage: mllm perplexity -m MODEL -f TEXT [-c 512] [-t N] [--chunks N]\n"
            "\n"
            "  -f, --file PATH      the text (UTF-8)\n"
            "  -c, --ctx-size N     tokens per chunk (default 512)\n"
            "      --chunks N       stop after N chunks (default: all)\n"
            "  -t, --threads N      compute threads\n"
            "      --exact          f32 activations in quantized matmuls (docs/EXACTNESS.md)\n"
            "%s"
            "      --kv-type T      KV cache as a pool of 16-token blocks with K/V in f32, f16 or q8\n"
            "                       (int8 per token and head, f32 scale); default: one contiguous f32 cache\n"
            "      --tokenizer PATH tokenizer for llama2.c checkpoints\n"
            "\n"
            "Prints each chunk's running perplexity and, at the end, PPL = x +/- err\n"
            "(err from the spread of the per-token negative log-likelihoods).\n",
            cli_backend_usage);
}

/* -log softmax(logits)[target], in double. */
static double nll(const float *l, int n, int target) {
    float mx = l[0];
    for (int i = 1; i < n; i++) mx = l[i] > mx ? l[i] : mx;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += exp((double)l[i] - mx);
    return log(sum) - ((double)l[target] - mx);
}

int cmd_perplexity(int argc, char **argv) {
    const char *model = NULL, *file = NULL, *tok = NULL;
    bool exact = false;
    int kv_type = MLLM_KV_CONTIGUOUS;
    long n_ctx = 512, threads = 0, max_chunks = 0;
    cli_backend_opts bo;
    cli_backend_defaults(&bo);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int ba = cli_backend_arg(&bo, argc, argv, &i);
        if (ba < 0) return 2;
        if (ba > 0) continue;
#define VAL() do { if (!(v = cli_value(argc, argv, &i))) return 2; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { ppl_usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { VAL(); model = v; }
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) { VAL(); file = v; }
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) { VAL(); if (!cli_int(a, v, 8, 1 << 16, &n_ctx)) return 2; }
        else if (!strcmp(a, "--exact")) exact = true;
        else if (!strcmp(a, "--kv-type")) { VAL(); if (!cli_kv_type(a, v, &kv_type)) return 2; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { VAL(); if (!cli_int(a, v, 1, 1024, &threads)) return 2; }
        else if (!strcmp(a, "--chunks")) { VAL(); if (!cli_int(a, v, 1, 1 << 30, &max_chunks)) return 2; }
        else if (!strcmp(a, "--tokenizer")) { VAL(); tok = v; }
        else { fprintf(stderr, "mllm perplexity: unknown option '%s'\n", a); return 2; }
#undef VAL
    }
    if (!model || !file) { ppl_usage(stderr); return 2; }
    size_t len = 0;
    char *text = cli_read_file(file, &len);
    if (!text) return 1;
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = (int)threads;
    lp.tokenizer_path = tok;
    lp.exact = exact;
    cli_backend_apply(&bo, &lp, "mllm perplexity");
    mllm_model *m = NULL;
    mllm_status st = mllm_model_load(model, &lp, &m);
    if (st != MLLM_OK) { free(text); return cli_fail("cannot load model", st); }
    cli_backend_report("mllm perplexity");
    size_t n_tok = 0;
    int32_t *ids = NULL;
    st = mllm_tokenize(m, text, len, 1, NULL, 0, &n_tok);
    if (st == MLLM_OK || st == MLLM_ERR_BUFFER_TOO_SMALL) {
        ids = malloc((n_tok ? n_tok : 1) * sizeof *ids);
        st = ids ? mllm_tokenize(m, text, len, 1, ids, n_tok, &n_tok) : MLLM_ERR_NOMEM;
    }
    free(text);
    int rc = 1, V = mllm_model_n_vocab(m), bos = mllm_model_bos(m);
    bool add_bos = mllm_model_add_bos(m);
    size_t n_chunks = n_tok / (size_t)n_ctx;
    if (max_chunks > 0 && (size_t)max_chunks < n_chunks) n_chunks = (size_t)max_chunks;
    mllm_session *s = NULL;
    float *out = NULL;
    if (st != MLLM_OK) { cli_fail("cannot tokenize", st); goto done; }
    if (n_chunks == 0) {
        fprintf(stderr, "mllm perplexity: the text has %zu tokens, fewer than one chunk of %ld (use a smaller -c)\n",
                n_tok, n_ctx);
        goto done;
    }
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = (int)n_ctx;
    sp.kv_type = kv_type;
    if ((st = mllm_session_new(m, &sp, &s)) != MLLM_OK) { cli_fail("cannot create session", st); goto done; }
    int first = (int)n_ctx / 2, piece = 512;
    out = malloc((size_t)piece * (size_t)V * sizeof(float));
    if (!out) { fprintf(stderr, "mllm perplexity: out of memory\n"); goto done; }
    fprintf(stderr, "perplexity: %zu tokens, %zu chunks of %ld, scoring the last %ld of each\n", n_tok, n_chunks,
            n_ctx, n_ctx - first - 1);
    double sum = 0, sum2 = 0;
    long count = 0;
    double t0 = mllm_time_ms();
    for (size_t c = 0; c < n_chunks; c++) {
        int32_t *chunk = ids + c * (size_t)n_ctx;
        int32_t saved = chunk[0];
        if (add_bos) chunk[0] = bos;
        mllm_session_reset(s);
        /* Context half: no logits needed. */
        st = mllm_session_eval(s, chunk, (size_t)first);
        /* Scored half, in pieces the logits buffer holds: the logits at
           position j predict token j + 1. */
        for (int p0 = first; st == MLLM_OK && p0 < n_ctx; p0 += piece) {
            int n = (int)(n_ctx - p0 < piece ? n_ctx - p0 : piece);
            st = mllm_session_eval_logits(s, chunk + p0, n, 0, out);
            for (int j = 0; st == MLLM_OK && j < n && p0 + j + 1 < n_ctx; j++) {
                double x = nll(out + (size_t)j * (size_t)V, V, chunk[p0 + j + 1]);
                sum += x;
                sum2 += x * x;
                count++;
            }
        }
        chunk[0] = saved;
        if (st != MLLM_OK) { cli_fail("evaluation failed", st); goto done; }
        printf("[%zu]%.4f%s", c + 1, exp(sum / (double)count), c + 1 < n_chunks ? "," : "\n");
        fflush(stdout);
        if (c == 0)
            fprintf(stderr, "perplexity: %.2f s per chunk, about %.0f s in all\n", (mllm_time_ms() - t0) / 1e3,
                    (mllm_time_ms() - t0) / 1e3 * (double)n_chunks);
    }
    double mean = sum / (double)count, var = sum2 / (double)count - mean * mean;
    double err = count > 1 ? sqrt(var > 0 ? var / (double)(count - 1) : 0) : 0;
    printf("PPL = %.4f +/- %.4f (%ld tokens scored)\n", exp(mean), exp(mean) * err, count);
    rc = 0;
done:
    free(out);
    free(ids);
    mllm_session_free(s);
    mllm_model_free(m);
    return rc;
}
