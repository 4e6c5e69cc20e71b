/* stories260K as a llama2.c checkpoint (stories260K.bin + tok512.bin)
   reproduces ../shared/models/stories260K/stories260K_golden.json (an
   independent numpy re-implementation of llama2.c's run.c): the prompt
   encodings, the greedy ids of every run token for token, and the logits at
   position 0 after BOS (within 1e-4 absolute, the golden's own advice). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mllm/mllm.h>
#include "testutil.h"

static void test_golden(void **state) {
    (void)state;
    char *bin = (char *)tu_shared("models/stories260K/stories260K.bin");
    char *tok = (char *)tu_shared("models/stories260K/tok512.bin");
    char *gp = (char *)tu_shared("models/stories260K/stories260K_golden.json");
    if (!bin || !tok || !gp) { free(bin); free(tok); free(gp); skip(); return; }
    char *text = tu_read_file(gp, NULL);
    cJSON *g = cJSON_Parse(text);
    assert_non_null(g);
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.tokenizer_path = tok;
    lp.n_threads = 2;
    mllm_model *m = NULL;
    assert_int_equal(mllm_model_load(bin, &lp, &m), MLLM_OK);

    /* Prompt encodings. */
    cJSON *e;
    int n_enc = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(g, "encode_examples")) {
        int32_t ids[256];
        size_t n = 0;
        assert_int_equal(mllm_tokenize(m, e->string, strlen(e->string), 1, ids, 256, &n), MLLM_OK);
        assert_int_equal((int)n, cJSON_GetArraySize(e));
        for (size_t i = 0; i < n; i++) assert_int_equal(ids[i], cJSON_GetArrayItem(e, (int)i)->valueint);
        n_enc++;
    }
    assert_true(n_enc >= 4);

    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = 512;
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, &sp, &s), MLLM_OK);

    /* Logits at position 0 after BOS. */
    int32_t bos = 1;
    assert_int_equal(mllm_session_eval(s, &bos, 1), MLLM_OK);
    cJSON *ref = cJSON_GetObjectItem(g, "logits_pos0_after_bos");
    assert_int_equal(cJSON_GetArraySize(ref), mllm_model_n_vocab(m));
    double worst = 0;
    for (int i = 0; i < cJSON_GetArraySize(ref); i++) {
        double d = fabs(mllm_session_logits(s)[i] - cJSON_GetArrayItem(ref, i)->valuedouble);
        worst = d > worst ? d : worst;
    }
    printf("logits after BOS: max |diff| %.3g (bound 1e-4)\n", worst);
    assert_true(worst < 1e-4);

    /* Greedy runs: prompt tokens, then steps + 1 - n_prompt generated ids. */
    cJSON *run;
    cJSON_ArrayForEach(run, cJSON_GetObjectItem(g, "runs")) {
        cJSON *pt = cJSON_GetObjectItem(run, "prompt_tokens"), *want = cJSON_GetObjectItem(run, "tokens");
        int np = cJSON_GetArraySize(pt), nw = cJSON_GetArraySize(want);
        int32_t *ids = malloc((size_t)nw * sizeof *ids);
        for (int i = 0; i < np; i++) ids[i] = cJSON_GetArrayItem(pt, i)->valueint;
        mllm_session_reset(s);
        assert_int_equal(mllm_session_eval(s, ids, (size_t)np), MLLM_OK);
        for (int i = np; i < nw; i++) {
            const float *l = mllm_session_logits(s);
            int best = 0;
            for (int v = 1; v < mllm_model_n_vocab(m); v++)
                if (l[v] > l[best]) best = v;
            ids[i] = best;
            if (best != cJSON_GetArrayItem(want, i)->valueint)
                fprintf(stderr, "run '%s': index %d ours %d golden %d\n", cJSON_GetObjectItem(run, "prompt")->valuestring, i,
                        best, cJSON_GetArrayItem(want, i)->valueint);
            assert_int_equal(best, cJSON_GetArrayItem(want, i)->valueint);
            assert_int_equal(mllm_session_eval(s, &ids[i], 1), MLLM_OK);
        }
        printf("run '%s': %d ids identical\n", cJSON_GetObjectItem(run, "prompt")->valuestring, nw);
        free(ids);
    }
    mllm_session_free(s);
    mllm_model_free(m);
    cJSON_Delete(g);
    free(text);
    free(bin);
    free(tok);
    free(gp);
}

/* mllm_session_sync keeps the shared prefix: the logits after a sync that
   reuses 4 of 5 tokens equal those of a fresh evaluation. */
static void test_sync_reuses_prefix(void **state) {
    (void)state;
    char *bin = (char *)tu_shared("models/stories260K/stories260K.bin");
    char *tok = (char *)tu_shared("models/stories260K/tok512.bin");
    if (!bin || !tok) { free(bin); free(tok); skip(); return; }
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.tokenizer_path = tok;
    mllm_model *m = NULL;
    assert_int_equal(mllm_model_load(bin, &lp, &m), MLLM_OK);
    mllm_session *a = NULL, *b = NULL;
    assert_int_equal(mllm_session_new(m, NULL, &a), MLLM_OK);
    assert_int_equal(mllm_session_new(m, NULL, &b), MLLM_OK);
    int32_t t1[5] = {1, 403, 407, 261, 378}, t2[6] = {1, 403, 407, 261, 300, 301};
    size_t reused = 99;
    assert_int_equal(mllm_session_sync(a, t1, 5, &reused), MLLM_OK);
    assert_int_equal(reused, 0);
    assert_int_equal(mllm_session_sync(a, t2, 6, &reused), MLLM_OK);
    assert_int_equal(reused, 4);
    assert_int_equal(mllm_session_eval(b, t2, 6), MLLM_OK);
    int V = mllm_model_n_vocab(m);
    assert_true(tu_nmse(mllm_session_logits(a), mllm_session_logits(b), (size_t)V) < 1e-10);
    /* The same tokens again: everything but the last is reused. */
    assert_int_equal(mllm_session_sync(a, t2, 6, &reused), MLLM_OK);
    assert_int_equal(reused, 5);
    size_t n = 0;
    const int32_t *held = mllm_session_tokens(a, &n);
    assert_int_equal(n, 6);
    assert_memory_equal(held, t2, sizeof t2);
    mllm_session_free(a);
    mllm_session_free(b);
    mllm_model_free(m);
    free(bin);
    free(tok);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_golden), cmocka_unit_test(test_sync_reuses_prefix)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
