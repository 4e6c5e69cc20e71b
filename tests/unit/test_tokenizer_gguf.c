/* Tokenizers built from GGUF metadata, against llama.cpp's vocab test
   vectors (expected ids made by the HF tokenizers), the stories260K GGUF vs
   the llama2.c tokenizer, and the Qwen3 anchor GGUF's "fox" prompt ids. */
#include "core/alloc.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "test_tokenizer_vectors.h"
#include <cjson/cJSON.h>

static mllm_tokenizer *open_vocab(const char *rel, mllm_gguf **g) {
    const char *p = tt_shared(rel);
    if (!p) return NULL;
    assert_int_equal(mllm_gguf_open(p, g), MLLM_OK);
    mllm_tokenizer *t = NULL;
    mllm_status st = mllm_tokenizer_from_gguf(*g, &t);
    if (st) printf("%s\n", mllm_last_error());
    assert_int_equal(st, MLLM_OK);
    return t;
}

/* Runs ggml-vocab-NAME.gguf with its .inp/.out; known lists the cases that
   are expected to differ (each explained where the list is declared). */
static void vocab_case(const char *name, const int *known, int n_known) {
    char g_rel[256], i_rel[256], o_rel[256];
    snprintf(g_rel, sizeof g_rel, "models/llama-cpp-vocab/ggml-vocab-%s.gguf", name);
    snprintf(i_rel, sizeof i_rel, "models/llama-cpp-vocab/ggml-vocab-%s.gguf.inp", name);
    snprintf(o_rel, sizeof o_rel, "models/llama-cpp-vocab/ggml-vocab-%s.gguf.out", name);
    mllm_gguf *g = NULL;
    mllm_tokenizer *t = open_vocab(g_rel, &g);
    if (!t) skip();
    const char *pi = tt_shared(i_rel), *po = tt_shared(o_rel);
    if (!pi || !po) skip();
    vec_run(t, pi, po, name, known, n_known);
    mllm_tokenizer_free(t);
    mllm_gguf_close(g);
}

static void test_llama_spm(void **s) { (void)s; vocab_case("llama-spm", NULL, 0); }
static void test_phi3(void **s) { (void)s; vocab_case("phi-3", NULL, 0); }
static void test_gpt2(void **s) { (void)s; vocab_case("gpt-2", NULL, 0); }
static void test_deepseek_llm(void **s) { (void)s; vocab_case("deepseek-llm", NULL, 0); }
static void test_deepseek_coder(void **s) { (void)s; vocab_case("deepseek-coder", NULL, 0); }
static void test_falcon(void **s) { (void)s; vocab_case("falcon", NULL, 0); }
static void test_starcoder(void **s) { (void)s; vocab_case("starcoder", NULL, 0); }
static void test_mpt(void **s) { (void)s; vocab_case("mpt", NULL, 0); }
static void test_refact(void **s) { (void)s; vocab_case("refact", NULL, 0); }


/* The GGUF of Llama 2 tiny-random carries the full Llama 2 vocabulary: the
   llama-spm vectors must hold for it too. */
static void test_llama2_fixture(void **s) {
    (void)s;
    mllm_gguf *g = NULL;
    mllm_tokenizer *t = open_vocab("models/gguf-fixtures/llama-2-tiny-random.gguf", &g);
    if (!t) skip();
    const char *pi = tt_shared("models/llama-cpp-vocab/ggml-vocab-llama-spm.gguf.inp");
    const char *po = tt_shared("models/llama-cpp-vocab/ggml-vocab-llama-spm.gguf.out");
    if (!pi || !po) skip();
    assert_int_equal(mllm_tokenizer_n_vocab(t), 32000);
    assert_int_equal(mllm_tokenizer_bos(t), 1);
    assert_true(mllm_tokenizer_add_bos(t));
    vec_run(t, pi, po, "llama-2-tiny-random (llama-spm vectors)", NULL, 0);
    mllm_tokenizer_free(t);
    mllm_gguf_close(g);
}

/* ggml-org's stories260K.gguf holds the vocabulary of tok512.bin (with
   U+2581 for spaces): it must give the golden llama2.c encodings. */
static void test_stories260k_gguf(void **s) {
    (void)s;
    mllm_gguf *g = NULL;
    mllm_tokenizer *t = open_vocab("anchor-data/models/stories260K.gguf", &g);
    if (!t) skip();
    const char *tok = tt_shared("models/stories260K/tok512.bin");
    const char *gold = tt_shared("models/stories260K/stories260K_golden.json");
    if (!tok || !gold) skip();
    mllm_tokenizer *ref = NULL;
    assert_int_equal(mllm_tokenizer_from_llama2c(tok, &ref), MLLM_OK);
    assert_int_equal(mllm_tokenizer_n_vocab(t), 512);
    assert_string_equal(mllm_tokenizer_kind(t), "spm");
    /* Same decoded pieces for every token (normal and byte ones). */
    int same = 0;
    for (int32_t id = 3; id < 512; id++) {
        size_t a = 0, b = 0;
        const char *pa = mllm_tokenizer_piece(t, id, &a), *pb = mllm_tokenizer_piece(ref, id, &b);
        same += a == b && memcmp(pa, pb, a) == 0;
    }
    assert_int_equal(same, 509);
    char *js = tu_read_file(gold, NULL);
    cJSON *root = cJSON_Parse(js);
    cJSON *c;
    int n_cases = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "encode_examples")) {
        int32_t ids[256];
        size_t n = 0;
        assert_int_equal(mllm_tokenizer_encode(t, c->string, strlen(c->string), true, false, ids, 256, &n),
                         MLLM_OK);
        assert_int_equal((int)n, cJSON_GetArraySize(c));
        for (size_t i = 0; i < n; i++) assert_int_equal(ids[i], cJSON_GetArrayItem(c, (int)i)->valueint);
        n_cases++;
    }
    printf("stories260K.gguf: %d/%d golden encodings\n", n_cases, n_cases);
    assert_int_equal(n_cases, 4);
    cJSON_Delete(root);
    free(js);
    mllm_tokenizer_free(ref);
    mllm_tokenizer_free(t);
    mllm_gguf_close(g);
}

/* The Qwen3 anchor GGUF (pre "qwen2"): README's "fox" ids, the qwen2
   vectors, and the chat vectors with special tokens parsed. */
static void test_qwen3_anchor(void **s) {
    (void)s;
    mllm_gguf *g = NULL;
    mllm_tokenizer *t = open_vocab("anchor-data/models/qwen3-tiny-random-Q8_0.gguf", &g);
    if (!t) skip();
    assert_int_equal(mllm_tokenizer_n_vocab(t), 151936);
    assert_int_equal(mllm_tokenizer_bos(t), 151643);
    assert_int_equal(mllm_tokenizer_eos(t), 151645);
    assert_false(mllm_tokenizer_add_bos(t));
    assert_true(mllm_tokenizer_is_eog(t, 151645));
    assert_true(mllm_tokenizer_is_eog(t, 151643));
    assert_non_null(mllm_tokenizer_chat_template(t));
    const char *fox = "The quick brown fox jumps over the lazy dog.";
    const int32_t want[] = {785, 3974, 13876, 38835, 34208, 916, 279, 15678, 5562, 13};
    int32_t ids[32];
    size_t n = 0;
    assert_int_equal(mllm_tokenizer_encode(t, fox, strlen(fox), true, false, ids, 32, &n), MLLM_OK);
    assert_int_equal((int)n, 10);
    assert_memory_equal(ids, want, sizeof want);
    /* <think> is user-defined: split out even without parse_special. */
    assert_int_equal(mllm_tokenizer_encode(t, "<think>", 7, false, false, ids, 32, &n), MLLM_OK);
    assert_int_equal((int)n, 1);
    assert_int_equal(ids[0], 151667);
    const char *pi = tt_shared("models/llama-cpp-vocab/ggml-vocab-qwen2.gguf.inp");
    const char *po = tt_shared("models/llama-cpp-vocab/ggml-vocab-qwen2.gguf.out");
    if (pi && po) vec_run(t, pi, po, "qwen3 GGUF (qwen2 vectors)", NULL, 0);
    /* Chat vectors: same ids as the HF tokenizer gives. */
    const char *pe = tt_shared("models/hf-tokenizers/extra_tokenizer_vectors.json");
    if (pe) {
        char *js = tu_read_file(pe, NULL);
        cJSON *root = cJSON_Parse(js);
        cJSON *c;
        int ok = 0, total = 0;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(root, "cases"), "qwen3")) {
            const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
            cJSON *w = cJSON_GetObjectItem(c, "ids");
            int32_t got[512];
            size_t ng = 0;
            assert_int_equal(mllm_tokenizer_encode(t, text, strlen(text), false, true, got, 512, &ng), MLLM_OK);
            bool same = (int)ng == cJSON_GetArraySize(w);
            for (size_t i = 0; same && i < ng; i++) same = got[i] == cJSON_GetArrayItem(w, (int)i)->valueint;
            if (!same) printf("qwen3 GGUF chat case %d differs: '%.60s'\n", total, text);
            ok += same;
            total++;
        }
        printf("qwen3 GGUF chat vectors: %d/%d\n", ok, total);
        assert_int_equal(ok, total);
        cJSON_Delete(root);
        free(js);
    }
    mllm_tokenizer_free(t);
    mllm_gguf_close(g);
}

/* WordPiece (bert) is out of scope: a clear UNSUPPORTED, not a crash. */
static void test_bert_unsupported(void **s) {
    (void)s;
    const char *p = tt_shared("models/llama-cpp-vocab/ggml-vocab-bert-bge.gguf");
    if (!p) skip();
    mllm_gguf *g = NULL;
    assert_int_equal(mllm_gguf_open(p, &g), MLLM_OK);
    mllm_tokenizer *t = NULL;
    assert_int_equal(mllm_tokenizer_from_gguf(g, &t), MLLM_ERR_UNSUPPORTED);
    assert_null(t);
    mllm_gguf_close(g);
}

/* ---- synthetic GGUFs -------------------------------------------------- */

/* A byte-level vocab: the 256 byte chars, then "12", "123"; merges 1+2, 12+3. */
static mllm_tokenizer *synth_bpe(const char *pre, bool with_merges, mllm_status *st_out) {
    char chars[256][3];
    const char *toks[258];
    for (int b = 0; b < 256; b++) {
        /* GPT-2 mapping, computed independently of the library */
        int cp = b, n = 0;
        if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174))) {
            for (int i = 0; i < b; i++) n += !((i >= 33 && i <= 126) || (i >= 161 && i <= 172) || (i >= 174));
            cp = 256 + n;
        }
        if (cp < 0x80) {
            chars[b][0] = (char)cp;
            chars[b][1] = 0;
        } else {
            chars[b][0] = (char)(0xC0 | (cp >> 6));
            chars[b][1] = (char)(0x80 | (cp & 0x3F));
            chars[b][2] = 0;
        }
        toks[b] = chars[b];
    }
    toks[256] = "12";
    toks[257] = "123";
    const char *merges[] = {"1 2", "12 3"};
    mllm_gguf_writer *w = NULL;
    assert_int_equal(mllm_gguf_writer_new(&w), MLLM_OK);
    mllm_gguf_writer_add_str(w, "tokenizer.ggml.model", "gpt2");
    if (pre) mllm_gguf_writer_add_str(w, "tokenizer.ggml.pre", pre);
    mllm_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 258);
    if (with_merges) mllm_gguf_writer_add_arr_str(w, "tokenizer.ggml.merges", merges, NULL, 2);
    const char *path = tt_tmp("synth_bpe.gguf");
    assert_int_equal(mllm_gguf_writer_write(w, path), MLLM_OK);
    mllm_gguf_writer_free(w);
    mllm_gguf *g = NULL;
    assert_int_equal(mllm_gguf_open(path, &g), MLLM_OK);
    mllm_tokenizer *t = NULL;
    *st_out = mllm_tokenizer_from_gguf(g, &t);
    mllm_gguf_close(g); /* the tokenizer owns copies of everything */
    return t;
}

/* SmolLM's pre-tokenizer splits digits one by one before the GPT-2 regex;
   GPT-2's keeps "123" whole, so the merges make it one token. */
static void test_smollm_digits(void **s) {
    (void)s;
    mllm_status st;
    int32_t ids[8];
    size_t n = 0;
    mllm_tokenizer *t = synth_bpe("smollm", true, &st);
    assert_int_equal(st, MLLM_OK);
    assert_int_equal(mllm_tokenizer_encode(t, "123", 3, false, false, ids, 8, &n), MLLM_OK);
    assert_int_equal((int)n, 3);
    assert_int_equal(ids[0], '1');
    assert_int_equal(ids[2], '3');
    mllm_tokenizer_free(t);
    t = synth_bpe("gpt-2", true, &st);
    assert_int_equal(st, MLLM_OK);
    assert_int_equal(mllm_tokenizer_encode(t, "123", 3, false, false, ids, 8, &n), MLLM_OK);
    assert_int_equal((int)n, 1);
    assert_int_equal(ids[0], 257);
    size_t len = 0;
    assert_memory_equal(mllm_tokenizer_piece(t, ' ' + 0, &len), " ", 1); /* byte char of ' ' */
    mllm_tokenizer_free(t);
}

static void test_bad_metadata(void **s) {
    (void)s;
    mllm_status st;
    mllm_tokenizer *t = synth_bpe("gpt-2", false, &st); /* gpt2 without merges */
    assert_int_equal(st, MLLM_ERR_FORMAT);
    assert_null(t);
    t = synth_bpe("no-such-pre", true, &st);
    assert_int_equal(st, MLLM_ERR_UNSUPPORTED);
    assert_null(t);
    /* Scores that do not match the token count. */
    mllm_gguf_writer *w = NULL;
    assert_int_equal(mllm_gguf_writer_new(&w), MLLM_OK);
    const char *toks[] = {"<unk>", "<s>", "</s>", "a"};
    float scores[] = {0, 0, 0};
    mllm_gguf_writer_add_str(w, "tokenizer.ggml.model", "llama");
    mllm_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 4);
    mllm_gguf_writer_add_arr(w, "tokenizer.ggml.scores", MLLM_GGUF_FLOAT32, scores, 3);
    const char *path = tt_tmp("bad_scores.gguf");
    assert_int_equal(mllm_gguf_writer_write(w, path), MLLM_OK);
    mllm_gguf_writer_free(w);
    mllm_gguf *g = NULL;
    assert_int_equal(mllm_gguf_open(path, &g), MLLM_OK);
    assert_int_equal(mllm_tokenizer_from_gguf(g, &t), MLLM_ERR_FORMAT);
    assert_null(t);
    mllm_gguf_close(g);
    /* No tokenizer at all. */
    assert_int_equal(mllm_gguf_writer_new(&w), MLLM_OK);
    mllm_gguf_writer_add_str(w, "general.architecture", "llama");
    path = tt_tmp("no_tok.gguf");
    assert_int_equal(mllm_gguf_writer_write(w, path), MLLM_OK);
    mllm_gguf_writer_free(w);
    assert_int_equal(mllm_gguf_open(path, &g), MLLM_OK);
    assert_int_equal(mllm_tokenizer_from_gguf(g, &t), MLLM_ERR_FORMAT);
    mllm_gguf_close(g);
}


/* Allocation failures while building from GGUF (SPM and BPE paths) give
   MLLM_ERR_NOMEM and leak nothing. */
static void oom_loop(mllm_gguf *g, const char *text) {
    int n_fail = 0;
    for (long k = 0;; k++) {
        mllm_tokenizer *t = NULL;
        mllm_alloc_fail_after(k);
        mllm_status st = mllm_tokenizer_from_gguf(g, &t);
        int32_t ids[64];
        size_t n = 0;
        if (st == MLLM_OK) st = mllm_tokenizer_encode(t, text, strlen(text), true, true, ids, 64, &n);
        mllm_alloc_fail_after(-1);
        mllm_tokenizer_free(t);
        if (st == MLLM_OK) break;
        assert_int_equal(st, MLLM_ERR_NOMEM);
        n_fail++;
        assert_true(k < 1000);
    }
    assert_true(n_fail > 5);
}

static void test_out_of_memory(void **s) {
    (void)s;
    const char *p = tt_shared("anchor-data/models/stories260K.gguf");
    if (!p) skip();
    mllm_gguf *g = NULL;
    assert_int_equal(mllm_gguf_open(p, &g), MLLM_OK);
    oom_loop(g, "Once upon a time <s> \xf0\x9f\xa6\x99");
    mllm_gguf_close(g);
    mllm_status st;
    mllm_tokenizer *t = synth_bpe("llama3", true, &st);
    assert_int_equal(st, MLLM_OK);
    mllm_tokenizer_free(t);
    const char *path = tt_tmp("synth_bpe.gguf");
    assert_int_equal(mllm_gguf_open(path, &g), MLLM_OK);
    oom_loop(g, "123 abc\n\n  x");
    mllm_gguf_close(g);
}


/* Random bytes (mostly invalid UTF-8) never crash and round-trip exactly
   through a byte-level BPE vocab and an SPM vocab with byte fallback. */
static void random_roundtrip(const char *rel, const char *name) {
    mllm_gguf *g = NULL;
    mllm_tokenizer *t = open_vocab(rel, &g);
    if (!t) return;
    uint64_t x = 0x1234567;
    int ok = 0, n_cases = 300;
    for (int c = 0; c < n_cases; c++) {
        char text[64];
        size_t len = 1 + c % 60;
        for (size_t i = 0; i < len; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            uint8_t b = (uint8_t)(x >> 56);
            /* a mix of ASCII, spaces and high bytes */
            text[i] = (char)(c % 3 == 0 ? b : c % 3 == 1 ? (b % 2 ? ' ' + b % 95 : b) : (b % 4 ? 'a' + b % 26 : ' '));
        }
        int32_t ids[256];
        size_t n = 0;
        assert_int_equal(mllm_tokenizer_encode(t, text, len, false, false, ids, 256, &n), MLLM_OK);
        char dec[512];
        size_t n_dec = 0;
        assert_int_equal(mllm_tokenizer_decode(t, ids, n, true, dec, sizeof dec, &n_dec), MLLM_OK);
        bool same = n_dec == len && memcmp(dec, text, len) == 0;
        if (!same) printf("%s random case %d does not round-trip\n", name, c);
        ok += same;
    }
    printf("%s: %d/%d random byte strings round-trip\n", name, ok, n_cases);
    assert_int_equal(ok, n_cases);
    mllm_tokenizer_free(t);
    mllm_gguf_close(g);
}

static void test_random_bytes(void **s) {
    (void)s;
    random_roundtrip("models/llama-cpp-vocab/ggml-vocab-gpt-2.gguf", "gpt-2");
    random_roundtrip("models/llama-cpp-vocab/ggml-vocab-llama-spm.gguf", "llama-spm");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_spm),   cmocka_unit_test(test_phi3),
        cmocka_unit_test(test_gpt2),        cmocka_unit_test(test_deepseek_llm),
        cmocka_unit_test(test_deepseek_coder), cmocka_unit_test(test_falcon),
        cmocka_unit_test(test_starcoder),   cmocka_unit_test(test_mpt),
        cmocka_unit_test(test_refact),      cmocka_unit_test(test_llama2_fixture),
        cmocka_unit_test(test_stories260k_gguf), cmocka_unit_test(test_qwen3_anchor),
        cmocka_unit_test(test_bert_unsupported), cmocka_unit_test(test_smollm_digits),
        cmocka_unit_test(test_bad_metadata), cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_random_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, tt_free_paths);
}
