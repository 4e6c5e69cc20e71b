/* mllm grammar: compile a GBNF grammar or a JSON Schema, print the GBNF,
   check a text against it, or print random texts it matches (what the
   JSON-schema tests validate with Python's jsonschema). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "api/internal.h"
#include "cli.h"
#include "runtime/rng.h"

#define GRAMMAR_SAMPLE_MAX_BYTES 20000 /* a random text longer than this is dropped and drawn again */
#define GRAMMAR_SAMPLE_MAX_TRIES 20    /* draws per sample before giving up */

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

/* The vocabulary random texts are drawn from: every byte, and pieces of
   several bytes (structure, words, a split UTF-8 character) so the mask
   walk sees shared prefixes and partial characters. */
static const char *const EXTRA[] = {"{\"", "\":", "\": ", "\",", "\"}", ", ", "[]", "{}", "true", "false", "null",
                                    "12", "-3", "0.5", "e+1", "2024-", "-0", "T1", ":0", "name", "\"a\"", "  ",
                                    "\n ", "\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xe6", "\x97\xa5", "\xf0\x9f",
                                    "\x98\x80", "\\n", "\\u00e9", "abc", "\"\""};
#define N_EXTRA (int32_t)(sizeof EXTRA / sizeof EXTRA[0])

static const char *sample_piece(const void *user, int32_t id, size_t *len) {
    static const unsigned char bytes[256] = {
#define B4(i) i, i + 1, i + 2, i + 3
#define B16(i) B4(i), B4(i + 4), B4(i + 8), B4(i + 12)
#define B64(i) B16(i), B16(i + 16), B16(i + 32), B16(i + 48)
        B64(0), B64(64), B64(128), B64(192)};
    (void)user;
    if (id < 256) { *len = 1; return (const char *)&bytes[id]; }
    *len = strlen(EXTRA[id - 256]);
    return EXTRA[id - 256];
}

/* One random text of g (reset first) into *out; false if none came out short enough. */
static bool sample_text(mllm_grammar *g, const mllm_vocab_trie *t, uint8_t *allow, mllm_rng *rng, char **out,
                        size_t *out_len) {
    for (int tries = 0; tries < GRAMMAR_SAMPLE_MAX_TRIES; tries++) {
        mllm_grammar_reset(g);
        size_t n = 0;
        char *text = malloc(GRAMMAR_SAMPLE_MAX_BYTES + 64);
        if (!text) return false;
        bool ok = false;
        while (n < GRAMMAR_SAMPLE_MAX_BYTES) {
            size_t n_allowed = 0;
            if (mllm_gmatch_mask(g->match, t, allow, &n_allowed) != MLLM_OK) break;
            bool can_end = mllm_gmatch_can_end(g->match);
            if (can_end && (n_allowed == 0 || mllm_rng_uniform(rng) < 0.25)) { ok = true; break; }
            if (n_allowed == 0) break;
            size_t k = (size_t)(mllm_rng_uniform(rng) * (double)n_allowed);
            int32_t id = 0;
            for (; id < t->n_vocab; id++)
                if (allow[id] && k-- == 0) break;
            size_t len;
            const char *p = sample_piece(NULL, id, &len);
            if (mllm_gmatch_accept(g->match, p, len) != MLLM_OK) break;
            memcpy(text + n, p, len);
            n += len;
        }
        if (ok) {
            text[n] = 0;
            *out = text;
            *out_len = n;
            return true;
        }
        free(text);
    }
    return false;
}

static int print_samples(mllm_grammar *g, long n, long seed) {
    mllm_vocab_trie *t = NULL;
    if (mllm_vocab_trie_build(256 + N_EXTRA, sample_piece, NULL, &t) != MLLM_OK)
        return cli_fail("cannot build the sample vocabulary", MLLM_ERR_NOMEM);
    uint8_t *allow = malloc((size_t)t->n_vocab);
    mllm_rng rng;
    mllm_rng_seed(&rng, (uint64_t)seed);
    int rc = allow ? 0 : 1;
    for (long i = 0; i < n && rc == 0; i++) {
        char *text = NULL;
        size_t len = 0;
        if (!sample_text(g, t, allow, &rng, &text, &len)) {
            fprintf(stderr, "mllm grammar: no text of at most %d bytes came out of %d draws (%s)\n",
                    GRAMMAR_SAMPLE_MAX_BYTES, GRAMMAR_SAMPLE_MAX_TRIES, mllm_last_error());
            rc = 1;
            break;
        }
        cJSON *s = cJSON_CreateString(text);
        char *line = s ? cJSON_PrintUnformatted(s) : NULL;
        if (line) printf("%s\n", line);
        else rc = 1;
        cJSON_free(line);
        cJSON_Delete(s);
        free(text);
    }
    free(allow);
    mllm_vocab_trie_free(t);
    return rc;
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
        rc = print_samples(g, n_sample, seed);
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
