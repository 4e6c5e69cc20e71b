/* mllm embed: the embedding vector of each text (an encoder such as
   all-MiniLM-L6-v2, or any decoder with mean / last-token pooling). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static void embed_usage(FILE *f) {
    fprintf(f,
            "usage: mllm embed -m MODEL (-p TEXT | -f FILE) [--pooling mean|cls|last] [--no-normalize]\n"
            "                  [-o json|text] [--max-tokens N] [-t THREADS]\n"
            "\n"
            "Prints one embedding per text: -p TEXT, or each line of FILE (-f; '-' is stdin).\n"
            "  -o json    (default) an OpenAI-style list: {\"object\":\"list\",\"data\":[{\"object\":\n"
            "             \"embedding\",\"index\":0,\"embedding\":[...]}],\"model\":...,\"usage\":{...}}\n"
            "  -o text    one line per text, the floats space separated\n"
            "  --pooling  how token vectors become one: mean, cls (first token) or last;\n"
            "             default: the folder's sentence-transformers config, else mean\n"
            "  --no-normalize  the pooled vector as it is (default: L2-normalised, unless a\n"
            "             sentence-transformers config lists no Normalize module)\n"
            "  --max-tokens N  truncate longer texts (default: the model's max_seq_length,\n"
            "             else its training context, at most %d for decoders)\n"
            "Embedding models (BERT: config.json with model_type bert) and decoders\n"
            "(GGUF, HF folders) both work.\n",
            MLLM_EMBED_MAX_TOKENS);
}

/* The lines of buf (modified in place: newlines become NULs). */
static char **split_lines(char *buf, size_t len, size_t *n_out) {
    size_t n = 0, cap = 16;
    char **v = malloc(cap * sizeof *v);
    for (size_t i = 0; v && i < len;) {
        char *s = buf + i, *e = memchr(s, '\n', len - i);
        size_t l = e ? (size_t)(e - s) : len - i;
        i += l + (e != NULL);
        if (l && s[l - 1] == '\r') l--;
        s[l] = 0;
        if (n == cap) {
            char **nv = realloc(v, (cap *= 2) * sizeof *v);
            if (!nv) { free(v); return NULL; }
            v = nv;
        }
        v[n++] = s;
    }
    *n_out = n;
    return v;
}

static char *read_stdin(size_t *len) {
    size_t n = 0, cap = 1 << 16;
    char *b = malloc(cap + 1);
    for (size_t r; b && (r = fread(b + n, 1, cap - n, stdin)) > 0;) {
        n += r;
        if (n == cap) {
            char *nb = realloc(b, (cap *= 2) + 1);
            if (!nb) { free(b); return NULL; }
            b = nb;
        }
    }
    if (b) b[n] = 0;
    *len = n;
    return b;
}

static void print_json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

int cmd_embed(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *file = NULL, *fmt = "json";
    mllm_embed_params ep;
    mllm_embed_default_params(&ep);
    long threads = 0, max_tokens = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { embed_usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { if (!(model = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) { if (!(text = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) { if (!(file = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(fmt = cli_value(argc, argv, &i))) return 2;
            if (strcmp(fmt, "json") && strcmp(fmt, "text")) {
                fprintf(stderr, "mllm embed: -o must be json or text, not '%s'\n", fmt);
                return 2;
            }
        } else if (!strcmp(a, "--pooling")) {
            if (!(v = cli_value(argc, argv, &i))) return 2;
            if (!strcmp(v, "mean")) ep.pooling = MLLM_POOLING_MEAN;
            else if (!strcmp(v, "cls")) ep.pooling = MLLM_POOLING_CLS;
            else if (!strcmp(v, "last")) ep.pooling = MLLM_POOLING_LAST;
            else { fprintf(stderr, "mllm embed: --pooling must be mean, cls or last, not '%s'\n", v); return 2; }
        } else if (!strcmp(a, "--no-normalize")) ep.normalize = 0;
        else if (!strcmp(a, "--max-tokens")) {
            if (!(v = cli_value(argc, argv, &i)) || !cli_int(a, v, 1, 1 << 20, &max_tokens)) return 2;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!(v = cli_value(argc, argv, &i)) || !cli_int(a, v, 1, 1024, &threads)) return 2;
        } else { fprintf(stderr, "mllm embed: unknown option '%s'\n", a); return 2; }
    }
    if (!model || (!text == !file)) { embed_usage(stderr); return 2; }
    ep.max_tokens = (int32_t)max_tokens;
    char *buf = NULL;
    size_t len = 0, n_texts = 1;
    char **texts = NULL;
    if (file) {
        buf = !strcmp(file, "-") ? read_stdin(&len) : cli_read_file(file, &len);
        if (!buf) return 1;
        texts = split_lines(buf, len, &n_texts);
        if (!texts) { free(buf); return cli_fail("out of memory", MLLM_ERR_NOMEM); }
    }
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = (int)threads;
    mllm_model *m = NULL;
    mllm_status st = mllm_model_load(model, &lp, &m);
    if (st != MLLM_OK) { free(texts); free(buf); return cli_fail("cannot load model", st); }
    const size_t E = (size_t)mllm_model_n_embd(m);
    float *vec = malloc(E * sizeof *vec);
    const bool json = !strcmp(fmt, "json");
    size_t n_tok_total = 0;
    if (json) printf("{\"object\":\"list\",\"data\":[");
    for (size_t k = 0; k < n_texts && vec && !st; k++) {
        const char *t = file ? texts[k] : text;
        size_t n_tok = 0, n_out = 0;
        st = mllm_embed_tokenize(m, t, strlen(t), &ep, NULL, 0, &n_tok);
        if (st == MLLM_ERR_BUFFER_TOO_SMALL) st = MLLM_OK;
        if (!st) st = mllm_embed(m, t, strlen(t), &ep, vec, E, &n_out);
        if (st) break;
        n_tok_total += n_tok;
        if (json) printf("%s{\"object\":\"embedding\",\"index\":%zu,\"embedding\":[", k ? "," : "", k);
        for (size_t e = 0; e < n_out; e++) printf(e ? (json ? ",%.9g" : " %.9g") : "%.9g", (double)vec[e]);
        printf(json ? "]}" : "\n");
    }
    if (json && !st) {
        printf("],\"model\":");
        print_json_string(model);
        printf(",\"usage\":{\"prompt_tokens\":%zu,\"total_tokens\":%zu}}\n", n_tok_total, n_tok_total);
    }
    fflush(stdout);
    if (!vec) st = MLLM_ERR_NOMEM;
    free(vec);
    free(texts);
    free(buf);
    mllm_model_free(m);
    return st ? cli_fail("cannot embed", st) : 0;
}
