/* Sampling: greedy, seeds, and that each filter keeps what it should. */
#include <math.h>
#include <string.h>
#include "runtime/sampler.h"
#include "testutil.h"

enum { V = 50 };

static mllm_sampling params(float temp) {
    mllm_sampling p;
    mllm_sampling_default(&p);
    p.temperature = temp;
    p.top_k = 0;
    p.top_p = 1;
    p.min_p = 0;
    return p;
}

static void logits_fixture(float *l) {
    for (int i = 0; i < V; i++) l[i] = (float)(-0.1 * i);
    l[7] = 3.0f; /* best */
    l[3] = 2.5f; /* second */
}

static void test_greedy_and_ties(void **state) {
    (void)state;
    float l[V];
    logits_fixture(l);
    mllm_sampling p = params(0);
    mllm_sampler s;
    assert_int_equal(mllm_sampler_init(&s, &p, V), MLLM_OK);
    assert_int_equal(mllm_sampler_sample(&s, l, NULL, 0), 7);
    l[20] = 3.0f; /* tie: the lowest id wins, as in llama.cpp's argmax */
    assert_int_equal(mllm_sampler_sample(&s, l, NULL, 0), 7);
    mllm_sampler_free(&s);
}

static void test_seed_reproduces(void **state) {
    (void)state;
    float l[V];
    logits_fixture(l);
    mllm_sampling p = params(1.5f);
    p.seed = 42;
    int a[64], b[64];
    for (int run = 0; run < 2; run++) {
        mllm_sampler s;
        assert_int_equal(mllm_sampler_init(&s, &p, V), MLLM_OK);
        for (int i = 0; i < 64; i++) (run ? b : a)[i] = mllm_sampler_sample(&s, l, NULL, 0);
        mllm_sampler_free(&s);
    }
    assert_memory_equal(a, b, sizeof a);
    p.seed = 43;
    mllm_sampler s;
    mllm_sampler_init(&s, &p, V);
    int diff = 0;
    for (int i = 0; i < 64; i++) diff += mllm_sampler_sample(&s, l, NULL, 0) != a[i];
    assert_true(diff > 0);
    mllm_sampler_free(&s);
}

static void test_distribution_matches_softmax(void **state) {
    (void)state;
    float l[V];
    logits_fixture(l);
    mllm_sampling p = params(1.0f);
    mllm_sampler s;
    mllm_sampler_init(&s, &p, V);
    enum { DRAWS = 40000 };
    int count[V] = {0};
    for (int i = 0; i < DRAWS; i++) count[mllm_sampler_sample(&s, l, NULL, 0)]++;
    double z = 0;
    for (int i = 0; i < V; i++) z += exp(l[i]);
    for (int i = 0; i < V; i++) {
        double pi = exp(l[i]) / z, sd = sqrt(DRAWS * pi * (1 - pi));
        assert_true(fabs(count[i] - DRAWS * pi) <= 5 * sd + 2);
    }
    mllm_sampler_free(&s);
}

static void test_filters(void **state) {
    (void)state;
    float l[V];
    logits_fixture(l);
    mllm_sampler s;
    /* top-k 2: only ids 7 and 3 ever come out. */
    mllm_sampling p = params(5.0f);
    p.top_k = 2;
    mllm_sampler_init(&s, &p, V);
    for (int i = 0; i < 2000; i++) {
        int t = mllm_sampler_sample(&s, l, NULL, 0);
        assert_true(t == 7 || t == 3);
    }
    mllm_sampler_free(&s);
    /* top-p 0.4: the best token alone holds 0.48 of the mass (temperature 1). */
    p = params(5.0f);
    p.top_p = 0.4f;
    mllm_sampler_init(&s, &p, V);
    for (int i = 0; i < 500; i++) assert_int_equal(mllm_sampler_sample(&s, l, NULL, 0), 7);
    mllm_sampler_free(&s);
    /* min-p 0.5: id 3 has exp(-0.5) = 0.61 of the best's probability, the rest < 0.5. */
    p = params(5.0f);
    p.min_p = 0.5f;
    mllm_sampler_init(&s, &p, V);
    int seen3 = 0;
    for (int i = 0; i < 2000; i++) {
        int t = mllm_sampler_sample(&s, l, NULL, 0);
        assert_true(t == 7 || t == 3);
        seen3 += t == 3;
    }
    assert_true(seen3 > 0);
    mllm_sampler_free(&s);
    /* repetition penalty: a recent best token loses to the second. */
    p = params(0);
    p.repeat_penalty = 1.5f;
    p.repeat_last_n = 8;
    int32_t recent[3] = {7, 7, 1};
    mllm_sampler_init(&s, &p, V);
    assert_int_equal(mllm_sampler_sample(&s, l, recent, 3), 3);
    mllm_sampler_free(&s);
}

static void test_invalid_params(void **state) {
    (void)state;
    mllm_sampler s;
    mllm_sampling p = params(1);
    p.top_p = 0;
    assert_int_equal(mllm_sampler_init(&s, &p, V), MLLM_ERR_INVALID_ARG);
    p = params(-1);
    assert_int_equal(mllm_sampler_init(&s, &p, V), MLLM_ERR_INVALID_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_and_ties),
        cmocka_unit_test(test_seed_reproduces),
        cmocka_unit_test(test_distribution_matches_softmax),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_invalid_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
