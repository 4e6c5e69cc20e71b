/* mllm grammar: compile a GBNF grammar or a JSON Schema, print the GBNF,
   check a text against it, or print random texts it matches (what the
   JSON-schema tests validate with Python's jsonschema). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "cli.h"

static void grammar_usage(FILE *f) {
    fprintf(f,
            "usage: mllm grammar (--grammar FILE | --json-schema FILE) [options]\n"
            "\n"
            "Compiles a GBNF grammar (llama.cpp's format) or a JSON Schema, as\n"
            "mllm run --grammar / --json-schema and the server do, and reports errors\n"
            "with their line and column (or JSON pointer).\n"
            "\n"
            "  -g, --grammar FILE      a GBNF grammar (root rule: root)\n"
            "  -j, --json-schema FILE  a JSON Schema; prints the GBNF it compiles to\n"
            "      --check FILE        exit 0 if the file's text is a complete match, 1 if not\n"
            "      --sample N          print N random texts the grammar matches, one JSON\n"
            "                          string per line (to test a grammar or a schema)\n"
            "      --seed S            seed of --sample (default 0)\n"
            "  -h, --help              this help\n");
}

/* One sample: a JSON string per line. */
static void print_sample(void *user, const char *text, size_t len) {
    (void)len; /* text is NUL-terminated */
    int *rc = user;
    cJSON *s = cJSON_CreateString(text);
    char *line = s ? cJSON_PrintUnformatted(s) : NULL;
    if (line) printf("%s\n", line);
    else *rc = 1;
    cJSON_free(line);
    cJSON_Delete(s);
}

int cmd_grammar(int argc, char **argv) {
    const char *gfile = NULL, *sfile = NULL, *check = NULL;
    long n_sample = -1, seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
#define VAL() do { if (!(v = cli_value(argc, argv, &i))) return 2; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { grammar_usage(stdout); return 0; }
        else if (!strcmp(a, "-g") || !strcmp(a, "--grammar")) { VAL(); gfile = v; }
        else if (!strcmp(a, "-j") || !strcmp(a, "--json-schema")) { VAL(); sfile = v; }
        else if (!strcmp(a, "--check")) { VAL(); check = v; }
        else if (!strcmp(a, "--sample")) { VAL(); if (!cli_int(a, v, 0, 1 << 20, &n_sample)) return 2; }
        else if (!strcmp(a, "--seed")) { VAL(); if (!cli_int(a, v, 0, CLI_SEED_MAX, &seed)) return 2; }
        else { fprintf(stderr, "mllm grammar: unknown option '%s' (try mllm grammar --help)\n", a); return 2; }
#undef VAL
    }
    if (!gfile == !sfile) { fprintf(stderr, "mllm grammar: give one of --grammar FILE, --json-schema FILE\n"); return 2; }
    char *src = cli_read_file(gfile ? gfile : sfile, NULL);
    if (!src) return 1;
    mllm_grammar *g = NULL;
    mllm_status st = gfile ? mllm_grammar_new(src, NULL, &g) : mllm_grammar_from_json_schema(src, &g);
    int rc = 1;
    if (st != MLLM_OK) {
        fprintf(stderr, "mllm grammar: %s: %s\n", gfile ? gfile : sfile, mllm_last_error());
    } else if (check) {
        size_t len = 0;
        char *text = cli_read_file(check, &len);
        if (text) {
            st = mllm_grammar_accept(g, text, len);
            rc = st == MLLM_OK && mllm_grammar_complete(g) ? 0 : 1;
            if (rc) fprintf(stderr, "mllm grammar: %s: %s\n", check, st == MLLM_OK ? "incomplete" : mllm_last_error());
        }
        free(text);
    } else if (n_sample >= 0) {
        rc = 0;
        st = mllm_grammar_sample(g, (int)n_sample, (uint64_t)seed, print_sample, &rc);
        if (st != MLLM_OK) {
            fprintf(stderr, "mllm grammar: %s\n", mllm_last_error());
            rc = 1;
        }
    } else if (sfile) {
        size_t need = 0;
        mllm_json_schema_to_gbnf(src, NULL, 0, &need);
        char *gbnf = malloc(need ? need : 1);
        if (gbnf && mllm_json_schema_to_gbnf(src, gbnf, need, &need) == MLLM_OK) {
            fputs(gbnf, stdout);
            rc = 0;
        }
        free(gbnf);
    } else {
        printf("%s: ok\n", gfile);
        rc = 0;
    }
    mllm_grammar_free(g);
    free(src);
    return rc;
}
