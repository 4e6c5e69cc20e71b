/* mllm_grammar_sample: random texts a grammar matches (`mllm grammar
   --sample`, what the JSON-schema tests validate with Python's jsonschema),
   drawn by the same mask walk that constrains generation. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "api/internal.h"
#include "core/alloc.h"
#include "core/error.h"
#include "runtime/rng.h"

#define SAMPLE_MAX_BYTES 20000 /* a random text longer than this is dropped and drawn again */
#define SAMPLE_MAX_TRIES 20    /* draws per sample before giving up */

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

/* One random text of g (reset first) into text (SAMPLE_MAX_BYTES + 64
   bytes), *n bytes; false if none came out short enough. */
static bool sample_text(mllm_grammar *g, const mllm_vocab_trie *t, uint8_t *allow, mllm_rng *rng, char *text,
                        size_t *n) {
    for (int tries = 0; tries < SAMPLE_MAX_TRIES; tries++) {
        mllm_grammar_reset(g);
        *n = 0;
        while (*n < SAMPLE_MAX_BYTES) {
            size_t n_allowed = 0;
            if (mllm_gmatch_mask(g->match, t, allow, &n_allowed) != MLLM_OK) break;
            const bool can_end = mllm_gmatch_can_end(g->match);
            if (can_end && (n_allowed == 0 || mllm_rng_uniform(rng) < 0.25)) {
                text[*n] = 0;
                return true;
            }
            if (n_allowed == 0) break;
            size_t k = (size_t)(mllm_rng_uniform(rng) * (double)n_allowed);
            int32_t id = 0;
            for (; id < t->n_vocab; id++)
                if (allow[id] && k-- == 0) break;
            size_t len;
            const char *p = sample_piece(NULL, id, &len);
            if (mllm_gmatch_accept(g->match, p, len) != MLLM_OK) break;
            memcpy(text + *n, p, len);
            *n += len;
        }
    }
    return false;
}

mllm_status mllm_grammar_sample(mllm_grammar *g, int n, uint64_t seed, mllm_text_sink sink, void *user) {
    if (!g || n < 0 || !sink) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_grammar_sample: NULL argument or n < 0");
    mllm_vocab_trie *t = NULL;
    mllm_status st = mllm_vocab_trie_build(256 + N_EXTRA, sample_piece, NULL, &t);
    uint8_t *allow = st == MLLM_OK ? mllm_malloc((size_t)t->n_vocab) : NULL;
    char *text = allow ? mllm_malloc(SAMPLE_MAX_BYTES + 64) : NULL;
    if (st == MLLM_OK && !text) st = mllm_err(MLLM_ERR_NOMEM, "mllm_grammar_sample: out of memory");
    mllm_rng rng;
    mllm_rng_seed(&rng, seed);
    for (int i = 0; i < n && st == MLLM_OK; i++) {
        size_t len = 0;
        if (sample_text(g, t, allow, &rng, text, &len)) {
            sink(user, text, len);
            continue;
        }
        char why[1024]; /* the matcher's last word, copied: mllm_err rewrites the buffer it lives in */
        snprintf(why, sizeof why, "%s", mllm_last_error());
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "no text of at most %d bytes came out of %d draws (%s)",
                      SAMPLE_MAX_BYTES, SAMPLE_MAX_TRIES, why);
    }
    mllm_free(text);
    mllm_free(allow);
    mllm_vocab_trie_free(t);
    return st;
}
