/* The BERT family and its WordPiece tokenizer on the real
   all-MiniLM-L6-v2 ($MLLM_MINILM_DIR, scripts/fetch-minilm.sh), against
   the answers of Hugging Face tokenizers and sentence-transformers
   (tools/reference/embed_reference.py -> tests/data/minilm/). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mllm/mllm.h>
#include "testutil.h"
#include "tokenizer/tokenizer.h"

static const char *minilm_dir(void) {
    const char *d = getenv("MLLM_MINILM_DIR");
    if (!d || !*d) {
        printf("SKIPPED: MLLM_MINILM_DIR is not set (scripts/fetch-minilm.sh)\n");
        return NULL;
    }
    return d;
}

static cJSON *load_json(const char *rel) {
    size_t n = 0;
    const char *path = tu_data(rel);
    char *js = tu_read_file(path, &n);
    if (!js) fail_msg("cannot read %s", path);
    cJSON *j = cJSON_ParseWithLength(js, n);
    free(js);
    free((void *)path);
    if (!j) fail_msg("%s is not JSON", rel);
    return j;
}

static mllm_model *load_model(const char *dir) {
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 2;
    mllm_model *m = NULL;
    if (mllm_model_load(dir, &lp, &m) != MLLM_OK) fail_msg("cannot load %s: %s", dir, mllm_last_error());
    return m;
}

/* Every text gives exactly the ids the HF tokenizer gives. */
static void test_wordpiece_vs_hf(void **state) {
    (void)state;
    const char *dir = minilm_dir();
    if (!dir) return;
    char tj[4096], tc[4096];
    snprintf(tj, sizeof tj, "%s/tokenizer.json", dir);
    snprintf(tc, sizeof tc, "%s/tokenizer_config.json", dir);
    mllm_tokenizer *t = NULL;
    assert_int_equal(mllm_tokenizer_from_hf(tj, tc, &t), MLLM_OK);
    assert_string_equal(mllm_tokenizer_kind(t), "wordpiece");
    cJSON *ref = load_json("minilm/tokens.json");
    const cJSON *texts = cJSON_GetObjectItem(ref, "texts"), *ids = cJSON_GetObjectItem(ref, "ids");
    int n = cJSON_GetArraySize(texts), bad = 0;
    assert_true(n >= 20);
    for (int i = 0; i < n; i++) {
        const char *s = cJSON_GetArrayItem(texts, i)->valuestring;
        const cJSON *want = cJSON_GetArrayItem(ids, i);
        int32_t got[4096];
        size_t k = 0;
        assert_int_equal(mllm_tokenizer_encode(t, s, strlen(s), true, true, got, 4096, &k), MLLM_OK);
        bool same = (int)k == cJSON_GetArraySize(want);
        for (size_t j = 0; same && j < k; j++) same = got[j] == cJSON_GetArrayItem(want, (int)j)->valueint;
        if (!same) {
            bad++;
            printf("text %d '%.60s': %zu ids, expected %d; first ids:", i, s, k, cJSON_GetArraySize(want));
            for (size_t j = 0; j < k && j < 24; j++)
                printf(" %d/%d", got[j], j < (size_t)cJSON_GetArraySize(want) ? cJSON_GetArrayItem(want, (int)j)->valueint : -1);
            printf("\n");
        }
    }
    printf("wordpiece: %d of %d texts identical to the HF tokenizer\n", n - bad, n);
    assert_int_equal(bad, 0);
    cJSON_Delete(ref);
    mllm_tokenizer_free(t);
}

static double cosine(const float *a, const float *b, size_t n) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return ab / sqrt(aa * bb);
}

/* Each text's vector is within cosine 0.9999 of sentence-transformers', with
   the same number of tokens (the long one truncated at max_seq_length). */
static void test_embed_vs_sentence_transformers(void **state) {
    (void)state;
    const char *dir = minilm_dir();
    if (!dir) return;
    mllm_model *m = load_model(dir);
    assert_false(mllm_model_can_generate(m));
    const size_t E = (size_t)mllm_model_n_embd(m);
    assert_int_equal(E, 384);
    cJSON *ref = load_json("minilm/embeddings.json");
    const cJSON *texts = cJSON_GetObjectItem(ref, "texts"), *embs = cJSON_GetObjectItem(ref, "embeddings");
    const cJSON *ntok = cJSON_GetObjectItem(ref, "n_tokens");
    int n = cJSON_GetArraySize(texts);
    assert_true(n >= 8);
    float got[384], want[384];
    double worst = 1.0;
    for (int i = 0; i < n; i++) {
        const char *s = cJSON_GetArrayItem(texts, i)->valuestring;
        size_t k = 0, n_out = 0;
        mllm_status st = mllm_embed_tokenize(m, s, strlen(s), NULL, NULL, 0, &k);
        assert_true(st == MLLM_OK || st == MLLM_ERR_BUFFER_TOO_SMALL);
        assert_int_equal((int)k, cJSON_GetArrayItem(ntok, i)->valueint);
        assert_int_equal(mllm_embed(m, s, strlen(s), NULL, got, E, &n_out), MLLM_OK);
        assert_int_equal(n_out, E);
        const cJSON *row = cJSON_GetArrayItem(embs, i);
        assert_int_equal(cJSON_GetArraySize(row), (int)E);
        for (size_t e = 0; e < E; e++) want[e] = (float)cJSON_GetArrayItem(row, (int)e)->valuedouble;
        const double c = cosine(got, want, E);
        printf("text %d (%d tokens): cosine %.8f\n", i, (int)k, c);
        if (c < worst) worst = c;
        if (!(c >= 0.9999)) fail_msg("text %d: cosine %.8f < 0.9999", i, c);
    }
    printf("minilm: worst cosine %.8f over %d texts\n", worst, n);
    cJSON_Delete(ref);
    mllm_model_free(m);
}

/* The options change what they say and nothing else; bad input is refused. */
static void test_embed_options_and_errors(void **state) {
    (void)state;
    const char *dir = minilm_dir();
    if (!dir) return;
    mllm_model *m = load_model(dir);
    const char *s = "pooling options";
    float a[384], b[384], c[384];
    size_t n = 0;
    mllm_embed_params p;
    mllm_embed_default_params(&p);
    assert_int_equal(mllm_embed(m, s, strlen(s), &p, a, 384, &n), MLLM_OK);
    p.normalize = 0;
    assert_int_equal(mllm_embed(m, s, strlen(s), &p, b, 384, &n), MLLM_OK);
    double nb = 0;
    for (int e = 0; e < 384; e++) nb += (double)b[e] * b[e];
    assert_true(fabs(sqrt(nb) - 1.0) > 1e-3);         /* raw mean pooling is not unit length */
    assert_true(cosine(a, b, 384) > 0.999999);       /* but points the same way */
    p.pooling = MLLM_POOLING_CLS;
    assert_int_equal(mllm_embed(m, s, strlen(s), &p, c, 384, &n), MLLM_OK);
    assert_true(cosine(b, c, 384) < 0.99);           /* the [CLS] vector is another one */
    /* refusals */
    int32_t bad_id = 999999, ids[600];
    assert_int_equal(mllm_embed_ids(m, &bad_id, 1, NULL, a, 384, &n), MLLM_ERR_INVALID_ARG);
    for (int i = 0; i < 600; i++) ids[i] = 1000;
    assert_int_equal(mllm_embed_ids(m, ids, 257, NULL, a, 384, &n), MLLM_ERR_INVALID_ARG); /* over max_seq_length */
    assert_int_equal(mllm_embed_ids(m, ids, 0, NULL, a, 384, &n), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_embed(m, s, strlen(s), NULL, a, 100, &n), MLLM_ERR_BUFFER_TOO_SMALL);
    assert_int_equal(n, 384);
    mllm_session *ses = NULL;
    assert_int_equal(mllm_session_new(m, NULL, &ses), MLLM_ERR_UNSUPPORTED);
    assert_non_null(strstr(mllm_last_error(), "embedding model"));
    mllm_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wordpiece_vs_hf),
        cmocka_unit_test(test_embed_vs_sentence_transformers),
        cmocka_unit_test(test_embed_options_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
