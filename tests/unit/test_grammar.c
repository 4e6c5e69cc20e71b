/* The grammar engine: GBNF that llama.cpp accepts parses (and bad GBNF
   fails with line:column), the matcher accepts and rejects what it should
   (split UTF-8 included), the trie mask equals a token-by-token check,
   integer ranges from JSON Schema are exact, and on SmolLM2's vocabulary
   the mask admits the tokens of a JSON text and its cost is printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "api/internal.h"
#include "runtime/grammar.h"
#include "runtime/grammar_match.h"
#include "runtime/json_schema.h"
#include "runtime/rng.h"
#include "runtime/vocab_trie.h"
#include "testutil.h"

/* llama.cpp's grammars/json.gbnf, as published. */
static const char JSON_GBNF[] =
    "root   ::= object\n"
    "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "\n"
    "object ::=\n"
    "  \"{\" ws (\n"
    "            string \":\" ws value\n"
    "    (\",\" ws string \":\" ws value)*\n"
    "  )? \"}\" ws\n"
    "\n"
    "array  ::=\n"
    "  \"[\" ws (\n"
    "            value\n"
    "    (\",\" ws value)*\n"
    "  )? \"]\" ws\n"
    "\n"
    "string ::=\n"
    "  \"\\\"\" (\n"
    "    [^\"\\\\\\x7F\\x00-\\x1F] |\n"
    "    \"\\\\\" ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4}) # escapes\n"
    "  )* \"\\\"\" ws\n"
    "\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"
    "\n"
    "# Optional space: by convention, applied in this grammar after literal chars when allowed\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

static const char ARITH_GBNF[] =
    "root  ::= (expr \"=\" ws term \"\\n\")+\n"
    "expr  ::= term ([-+*/] term)*\n"
    "term  ::= ident | num | \"(\" ws expr \")\" ws\n"
    "ident ::= [a-z] [a-z0-9_]* ws\n"
    "num   ::= [0-9]+ ws\n"
    "ws    ::= [ \\t\\n]*\n";

static mllm_grammar *compile(const char *gbnf) {
    mllm_grammar *g = NULL;
    mllm_status st = mllm_grammar_new(gbnf, NULL, &g);
    if (st != MLLM_OK) fail_msg("grammar failed to compile: %s", mllm_last_error());
    return g;
}

/* 1: all of text accepted and complete; 0: accepted, incomplete; -1: rejected. */
static int match(mllm_grammar *g, const char *text) {
    mllm_grammar_reset(g);
    if (mllm_grammar_accept(g, text, strlen(text)) != MLLM_OK) return -1;
    return mllm_grammar_complete(g);
}

static void test_llama_cpp_grammars(void **state) {
    (void)state;
    mllm_grammar *g = compile(JSON_GBNF);
    assert_int_equal(match(g, "{\"a\": [1, 2.5e3, \"x\\u00e9\"], \"b\": null}"), 1);
    assert_int_equal(match(g, "{\"caf\xc3\xa9\": {\"\xe6\x97\xa5\": true}}\n"), 1);
    assert_int_equal(match(g, "{\"a\":"), 0);
    assert_int_equal(match(g, "{\"a\" 1}"), -1);
    assert_int_equal(match(g, "[1]"), -1); /* root is an object */
    assert_int_equal(match(g, "{\"a\": 01}"), -1);
    mllm_grammar_free(g);
    g = compile(ARITH_GBNF);
    assert_int_equal(match(g, "x = 3\ny+2*(z-1)= q\n"), 1);
    assert_int_equal(match(g, "x = 3"), 0);
    assert_int_equal(match(g, "x == 3\n"), -1);
    mllm_grammar_free(g);
}

static void test_elements(void **state) {
    (void)state;
    static const struct {
        const char *gbnf, *text;
        int want;
    } cases[] = {
        {"root ::= \"ab\"{2,3}", "abab", 1},
        {"root ::= \"ab\"{2,3}", "ababab", 1},
        {"root ::= \"ab\"{2,3}", "abababab", -1},
        {"root ::= \"ab\"{2,3}", "ab", 0},
        {"root ::= \"a\"{2,}", "aaaaaaa", 1},
        {"root ::= \"a\"{3}", "aaaa", -1},
        {"root ::= [^a-c]+", "b", -1},
        {"root ::= [^a-c]+", "xyz\xc3\xa9", 1},
        {"root ::= [\xce\xb1-\xcf\x89]{2}", "\xce\xb1\xce\xb2", 1},
        {"root ::= [\xce\xb1-\xcf\x89]{2}", "ab", -1},
        {"root ::= \"\\u00e9\\U0001F600\\t\\x41\\\\\\\"\\[\\]\"", "\xc3\xa9\xf0\x9f\x98\x80\tA\\\"[]", 1},
        {"root ::= [\\x00-\\x1F]", "\n", 1},
        {"root ::= .+", "\xf0\x9f\x98\x80z", 1},
        {"root ::= .", "\xff", -1},
        {"root ::= .", "\xc0\x80", -1},         /* overlong */
        {"root ::= .", "\xed\xa0\x80", -1},     /* a surrogate */
        {"root ::= .", "\xf4\x90\x80\x80", -1}, /* past U+10FFFF */
        {"root ::= \"a\" | \"\"", "", 1},
        {"root ::= \"a\"\nroot ::= \"b\"", "b", 1}, /* a later definition replaces the first */
        {"root ::= \"a\"\nroot ::= \"b\"", "a", -1},
        {"root ::= (\"a\" | \"a\")*", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 1},
        {"root ::= x*\nx ::= \"a\" | \"a\" \"a\"", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 1},
        {"root ::= a b\na ::= \"x\"?\nb ::= \"y\"*", "", 1},
        {"root ::= a b\na ::= \"x\"?\nb ::= \"y\"*", "xyy", 1},
        {"root ::= a b\na ::= \"x\"?\nb ::= \"y\"*", "yx", -1},
        {"root ::= ( # comment\n  \"a\" |\n  \"b\"\n) \"c\" # end", "bc", 1},
        {"root ::= dead | \"ok\"\ndead ::= \"x\" dead", "ok", 1}, /* the endless alternative is dropped */
        {"root ::= dead | \"ok\"\ndead ::= \"x\" dead", "x", -1},
        {"root ::= [-a]+ [a-]", "-a-", 1},
        {"root ::= \"x\"{0}", "", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mllm_grammar *g = compile(cases[i].gbnf);
        int got = match(g, cases[i].text);
        if (got != cases[i].want) fail_msg("case %zu: %s on '%s': %d, want %d", i, cases[i].gbnf, cases[i].text, got, cases[i].want);
        mllm_grammar_free(g);
    }
    /* A character split over calls is held as a partial one. */
    mllm_grammar *g = compile("root ::= [\xce\xb1-\xcf\x89] \"!\"");
    assert_int_equal(mllm_grammar_accept(g, "\xce", 1), MLLM_OK);
    assert_false(mllm_grammar_complete(g));
    assert_int_equal(mllm_grammar_accept(g, "\xb1", 1), MLLM_OK);
    assert_int_equal(mllm_grammar_accept(g, "!", 1), MLLM_OK);
    assert_true(mllm_grammar_complete(g));
    mllm_grammar_reset(g);
    assert_int_equal(mllm_grammar_accept(g, "\xc3", 1), MLLM_ERR_INVALID_ARG); /* U+00C0..U+00FF: none in the class */
    mllm_grammar_free(g);
}

static void test_errors(void **state) {
    (void)state;
    static const struct {
        const char *gbnf, *want;
    } cases[] = {
        {"root ::= \"abc", "line 1, column 10: unterminated literal"},
        {"root ::= [a-z", "line 1, column 10: unterminated character class"},
        {"root ::= foo", "line 1, column 10: undefined rule 'foo'"},
        {"foo ::= \"x\"", "no 'root' rule"},
        {"root ::= (\"a\"", "line 1, column 10: unclosed '('"},
        {"root ::= \"a\" )", "line 1, column 14: unmatched ')'"},
        {"root := \"a\"", "line 1, column 6: expecting '::='"},
        {"root ::= \"\\q\"", "line 1, column 11: unknown escape '\\q'"},
        {"root ::= \"\\x4\"", "expecting 2 hex digits"},
        {"root ::= \"\\U00110000\"", "escape past U+10FFFF"},
        {"root ::= \"\\uD800\"", "line 1, column 11: escape of a UTF-16 surrogate"},
        {"root ::= [\\uDFFF]", "escape of a UTF-16 surrogate"},
        {"root ::= *", "line 1, column 10: expecting an item before '*'"},
        {"root ::= \"a\"{3,2}", "n < m"},
        {"root ::= \"a\"{5000}", "MLLM_GRAMMAR_MAX_REPEAT (4096)"},
        {"root ::= \"a\"{2", "expecting ',' or '}'"},
        {"root ::= root \"a\" | \"b\"", "rule 'root' is left-recursive"},
        {"root ::= a\na ::= b \"x\"\nb ::= \"\" | a", "left-recursive"},
        {"root ::= a\na ::= \"x\" a", "matches no finite text"},
        {"root ::= [z-a]", "line 1, column 13: range end before its start"},
        {"root ::= \"a\"\nfoo ::= \"b\" ]", "line 2, column 13: expecting a newline"},
        {"root ::= \"a\"\n | \"b\"", "line 2, column 2: expecting a rule name"},
        {"root ::= \"\xff\"", "invalid UTF-8"},
        {"root ::= [\xe6\x97]", "invalid UTF-8"},
        {"r\xc3\xa9 ::= \"a\"", "line 1, column 2: expecting '::='"},
        {"", "no 'root' rule"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mllm_grammar *g = NULL;
        mllm_status st = mllm_grammar_new(cases[i].gbnf, NULL, &g);
        if (st != MLLM_ERR_INVALID_ARG || !strstr(mllm_last_error(), cases[i].want))
            fail_msg("case %zu '%s': status %d, '%s' (want '%s')", i, cases[i].gbnf, st, mllm_last_error(), cases[i].want);
        assert_null(g);
    }
    /* Nesting and size limits. */
    char deep[400];
    size_t n = 0;
    n += (size_t)snprintf(deep, sizeof deep, "root ::= ");
    for (int i = 0; i < 70; i++) deep[n++] = '(';
    deep[n++] = '"';
    deep[n++] = 'a';
    deep[n++] = '"';
    for (int i = 0; i < 70; i++) deep[n++] = ')';
    deep[n] = 0;
    mllm_grammar *g = NULL;
    assert_int_equal(mllm_grammar_new(deep, NULL, &g), MLLM_ERR_INVALID_ARG);
    assert_non_null(strstr(mllm_last_error(), "MLLM_GRAMMAR_MAX_NESTING (64)"));
    /* A literal is copied by each repetition: 300 characters x 4096 is over the element limit. */
    char big[400];
    n = (size_t)snprintf(big, sizeof big, "root ::= \"");
    memset(big + n, 'x', 300);
    snprintf(big + n + 300, sizeof big - n - 300, "\"{4096}");
    assert_int_equal(mllm_grammar_new(big, NULL, &g), MLLM_ERR_INVALID_ARG);
    assert_non_null(strstr(mllm_last_error(), "MLLM_GRAMMAR_MAX_ELEMENTS"));
    assert_int_equal(mllm_grammar_new(NULL, NULL, &g), MLLM_ERR_INVALID_ARG);
    /* Another root. */
    assert_int_equal(mllm_grammar_new("a ::= \"x\"\nb ::= \"y\"", "b", &g), MLLM_OK);
    assert_int_equal(match(g, "y"), 1);
    mllm_grammar_free(g);
    mllm_grammar_free(NULL);
}

/* ---- the trie mask against token-by-token checks ------------------------- */
static const char *const PIECES[] = {"{", "}", "{\"", "\":", "\": ", "\",", "\"}", ", ", "[", "]", "[]", "\"", "a",
                                     "ab", "abc", "b", "true", "tr", "ue", "null", "1", "12", "123", "-", "-1", ".",
                                     "5", "e", "E+", " ", "  ", "\n", "\\", "\\n", "\\u00", "e9", "x", "\xc3",
                                     "\xa9", "\xc3\xa9", "\xe6\x97\xa5", "\xe6", "\x97", "\xa5", "\xf0\x9f\x98",
                                     "\x80", "\xf0", "\xff", "\xed\xa0", "\"a\"", "\"\"", "9", "0", "00", "a\"", "é\""};
#define N_PIECES (int32_t)(sizeof PIECES / sizeof PIECES[0])

static const char *piece_of(const void *user, int32_t id, size_t *len) {
    (void)user;
    if (id == 7 || id == N_PIECES) return NULL; /* not in the trie: as control tokens */
    const char *p = PIECES[id % N_PIECES];
    *len = strlen(p);
    return p;
}

/* Random walks: at every step the mask equals "a fresh matcher fed the
   prefix, then the token, accepts it", for every token. */
static void mask_agrees(const char *gbnf, uint64_t seed) {
    mllm_gram *gram;
    assert_int_equal(mllm_gram_compile(gbnf, strlen(gbnf), NULL, &gram), MLLM_OK);
    mllm_vocab_trie *t;
    int32_t nv = 2 * N_PIECES; /* every piece twice: several tokens on one trie node */
    assert_int_equal(mllm_vocab_trie_build(nv, piece_of, NULL, &t), MLLM_OK);
    mllm_gmatch *m, *ref;
    assert_int_equal(mllm_gmatch_new(gram, &m), MLLM_OK);
    assert_int_equal(mllm_gmatch_new(gram, &ref), MLLM_OK);
    uint8_t allow[2 * N_PIECES];
    char prefix[512];
    size_t plen = 0;
    mllm_rng rng;
    mllm_rng_seed(&rng, seed);
    for (int step = 0; step < 60; step++) {
        size_t n_allowed;
        assert_int_equal(mllm_gmatch_mask(m, t, allow, &n_allowed), MLLM_OK);
        size_t count = 0;
        for (int32_t id = 0; id < nv; id++) {
            size_t len = 0;
            const char *p = piece_of(NULL, id, &len);
            bool ok = false;
            if (p) {
                assert_int_equal(mllm_gmatch_reset(ref), MLLM_OK);
                ok = mllm_gmatch_accept(ref, prefix, plen) == MLLM_OK && mllm_gmatch_accept(ref, p, len) == MLLM_OK;
            }
            if (ok != (allow[id] != 0))
                fail_msg("%s: after '%.*s', token %d '%s': mask %d, check %d", gbnf, (int)plen, prefix, id, p ? p : "",
                         allow[id], ok);
            count += ok;
        }
        assert_int_equal(count, n_allowed);
        if (n_allowed == 0 || plen > 400) break;
        size_t k = (size_t)(mllm_rng_uniform(&rng) * (double)n_allowed);
        int32_t id = 0;
        while (!allow[id] || k--) id++;
        size_t len = 0;
        const char *p = piece_of(NULL, id, &len);
        assert_int_equal(mllm_gmatch_accept(m, p, len), MLLM_OK);
        memcpy(prefix + plen, p, len);
        plen += len;
    }
    mllm_gmatch_free(m);
    mllm_gmatch_free(ref);
    mllm_vocab_trie_free(t);
    mllm_gram_free(gram);
}

static void test_mask_equals_checks(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        mask_agrees(JSON_GBNF, seed);
        mask_agrees("root ::= [\xce\xb1-\xcf\x89\xe6\x97\xa5\xc3\xa9]* \"!\"?", seed);
        mask_agrees("root ::= (\"ab\" | \"a\" [b-c]{1,3} | \"\xe6\x97\xa5\")+ [0-9]{0,2}", seed);
        mask_agrees("root ::= .*", seed);
    }
}

/* ---- JSON Schema pieces --------------------------------------------------- */
static mllm_grammar *from_schema(const char *schema) {
    mllm_grammar *g = NULL;
    if (mllm_grammar_from_json_schema(schema, &g) != MLLM_OK) fail_msg("%s: %s", schema, mllm_last_error());
    return g;
}

/* Every integer in [from, to] is accepted exactly when it is in the range. */
static void int_range_exact(const char *schema, long lo, long hi, long from, long to) {
    mllm_grammar *g = from_schema(schema);
    char num[32];
    for (long v = from; v <= to; v++) {
        snprintf(num, sizeof num, "%ld", v);
        int got = match(g, num);
        if ((got == 1) != (v >= lo && v <= hi)) fail_msg("%s: %ld -> %d", schema, v, got);
    }
    assert_int_equal(match(g, "-0") == 1, lo <= 0 && hi >= 0 && strstr(schema, "minimum") == NULL &&
                                              strstr(schema, "maximum") == NULL);
    assert_true(match(g, "007") != 1 && match(g, "1.0") != 1);
    mllm_grammar_free(g);
}

static void test_schema_integers(void **state) {
    (void)state;
    int_range_exact("{\"type\":\"integer\",\"minimum\":-1234,\"maximum\":56789}", -1234, 56789, -3000, 60000);
    int_range_exact("{\"type\":\"integer\",\"minimum\":0,\"maximum\":120}", 0, 120, -200, 1200);
    int_range_exact("{\"type\":\"integer\",\"exclusiveMinimum\":10,\"exclusiveMaximum\":20}", 11, 19, -30, 300);
    int_range_exact("{\"type\":\"integer\",\"minimum\":1000}", 1000, 999999999999999L, -2000, 20000);
    int_range_exact("{\"type\":\"integer\",\"maximum\":-50}", -999999999999999L, -50, -20000, 2000);
    int_range_exact("{\"type\":\"integer\",\"minimum\":-7}", -7, 999999999999999L, -2000, 2000);
    int_range_exact("{\"type\":\"integer\",\"minimum\":-99,\"maximum\":-10}", -99, -10, -1000, 1000);
    int_range_exact("{\"type\":\"integer\",\"minimum\":1.5,\"maximum\":9.5}", 2, 9, -100, 100);
    int_range_exact("{\"type\":\"integer\"}", -999999999999999L, 999999999999999L, -3000, 3000);
}

static void test_schema_shapes(void **state) {
    (void)state;
    mllm_grammar *g = from_schema("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},"
                                  "\"b\":{\"type\":\"string\",\"maxLength\":2}},\"required\":[\"b\"]}");
    assert_int_equal(match(g, "{\"a\": 1, \"b\": \"xy\"}"), 1);
    assert_int_equal(match(g, "{\"b\":\"\"}"), 1);
    assert_int_equal(match(g, "{\"a\": 1}"), -1);
    assert_int_equal(match(g, "{\"b\": \"xyz\"}"), -1);
    assert_int_equal(match(g, "{\"b\": \"x\", \"c\": 1}"), -1); /* additionalProperties absent: none */
    assert_int_equal(match(g, "{\"b\": \"x\", \"a\": 1}"), -1); /* declaration order */
    mllm_grammar_free(g);
    g = from_schema("{\"type\":\"object\"}");
    assert_int_equal(match(g, "{\"x\": [1, {\"y\": null}], \"z\": \"\\u00e9\"}"), 1);
    assert_int_equal(match(g, "[]"), -1);
    assert_int_equal(match(g, "{\"s\": \"\\ud800\"}"), -1); /* a lone surrogate escape */
    mllm_grammar_free(g);
    g = from_schema("{\"type\":\"array\",\"items\":{\"type\":\"boolean\"},\"minItems\":1,\"maxItems\":2}");
    assert_int_equal(match(g, "[]"), -1);
    assert_int_equal(match(g, "[true, false]"), 1);
    assert_int_equal(match(g, "[true,false,true]"), -1);
    mllm_grammar_free(g);
    g = from_schema("{\"type\":\"object\",\"properties\":{\"k\":{}},\"additionalProperties\":{\"type\":\"null\"}}");
    assert_int_equal(match(g, "{\"k\": 5, \"m\": null}"), 1);
    assert_int_equal(match(g, "{\"m\": null}"), 1);
    assert_int_equal(match(g, "{\"k\": 5, \"k\": null}"), -1); /* no duplicate of a declared key */
    assert_int_equal(match(g, "{\"m\": 1}"), -1);
    mllm_grammar_free(g);
    g = from_schema("{\"type\":\"string\",\"format\":\"date\"}");
    assert_int_equal(match(g, "\"2024-02-28\""), 1);
    assert_int_equal(match(g, "\"2024-02-30\""), -1);
    assert_int_equal(match(g, "\"2024-04-31\""), -1);
    mllm_grammar_free(g);
    /* Whitespace is bounded: a model cannot pad forever. */
    g = from_schema("{\"type\":\"array\"}");
    assert_int_equal(match(g, "[                     ]"), -1);
    mllm_grammar_free(g);
    size_t need = 0;
    assert_int_equal(mllm_json_schema_to_gbnf("{\"type\":\"boolean\"}", NULL, 0, &need), MLLM_ERR_BUFFER_TOO_SMALL);
    char *buf = malloc(need);
    assert_int_equal(mllm_json_schema_to_gbnf("{\"type\":\"boolean\"}", buf, need, &need), MLLM_OK);
    assert_non_null(strstr(buf, "root ::= boolean\n"));
    free(buf);
    assert_int_equal(mllm_grammar_from_json_schema("{\"type\": \"integer\"", &g), MLLM_ERR_INVALID_ARG);
    assert_non_null(strstr(mllm_last_error(), "not valid JSON"));
}

/* ---- a real vocabulary ------------------------------------------------------- */
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The tokens of a JSON text are each allowed by the json_object mask in
   turn; prints the mask's cost per token (not checked: CI machines vary). */
static void test_smollm2_mask(void **state) {
    (void)state;
    const char *path = tu_smollm2_gguf();
    if (!path) return;
    mllm_model *m = NULL;
    assert_int_equal(mllm_model_load(path, NULL, &m), MLLM_OK);
    const mllm_vocab_trie *t;
    double t0 = now_ms();
    assert_int_equal(mllm_model_trie(m, &t), MLLM_OK);
    double build_ms = now_ms() - t0;
    const char *text = "{\"name\": \"Ada Lovelace\", \"born\": 1815, \"tags\": [\"math\", \"poetry\", \"caf\xc3\xa9\"],"
                       " \"notes\": {\"first\": true, \"ratio\": -0.25e2}}";
    int32_t ids[256];
    size_t n = 0;
    assert_int_equal(mllm_tokenize(m, text, strlen(text), 0, ids, 256, &n), MLLM_OK);
    mllm_grammar *g = from_schema("{\"type\":\"object\"}");
    mllm_constraint c;
    assert_int_equal(mllm_model_constraint_init(&c, m, g), MLLM_OK);
    float *logits = calloc((size_t)c.n_vocab, sizeof *logits);
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        const float *out;
        bool done;
        /* The fastest of three runs: other processes on a shared machine only add time. */
        double best = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            double a = now_ms();
            assert_int_equal(mllm_constraint_apply(&c, logits, &out, &done), MLLM_OK);
            if (now_ms() - a < best) best = now_ms() - a;
        }
        total += best;
        assert_false(done);
        if (!isfinite(out[ids[i]])) fail_msg("token %zu (%d) of the JSON text is masked", i, ids[i]);
        /* End-of-generation only where the text is complete. */
        for (int k = 0; k < c.n_eog; k++) assert_false(isfinite(out[c.eog[k]]));
        assert_int_equal(mllm_constraint_accept(&c, ids[i]), MLLM_OK);
    }
    const float *out;
    bool done;
    /* The object is complete and nothing may follow: generation ends. */
    assert_int_equal(mllm_constraint_apply(&c, logits, &out, &done), MLLM_OK);
    assert_true(done);
    mllm_constraint_free(&c);
    mllm_grammar_free(g);
    /* Complete but open to more: the end tokens join the text tokens. */
    g = compile("root ::= \"a\"+");
    assert_int_equal(mllm_model_constraint_init(&c, m, g), MLLM_OK);
    assert_int_equal(mllm_grammar_accept(g, "a", 1), MLLM_OK);
    assert_int_equal(mllm_constraint_apply(&c, logits, &out, &done), MLLM_OK);
    assert_true(!done && c.n_eog > 0 && isfinite(out[c.eog[0]]));
    printf("grammar mask on SmolLM2's vocabulary (%d tokens, trie of %u nodes built in %.1f ms): %zu masks, "
           "%.3f ms per token (json_object grammar)\n",
           t->n_vocab, t->n_nodes, build_ms, n, total / (double)n);
    free(logits);
    mllm_constraint_free(&c);
    mllm_grammar_free(g);
    mllm_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_cpp_grammars), cmocka_unit_test(test_elements),
        cmocka_unit_test(test_errors),             cmocka_unit_test(test_mask_equals_checks),
        cmocka_unit_test(test_schema_integers),    cmocka_unit_test(test_schema_shapes),
        cmocka_unit_test(test_smollm2_mask),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
