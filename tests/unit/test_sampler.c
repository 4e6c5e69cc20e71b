/* Sampling: greedy, seeds, that each filter keeps what it should, the
   penalties and biases against a plain reference, and logprobs. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
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
    int32_t bad_id = V;
    float bias = 1;
    p = params(0);
    p.logit_bias_ids = &bad_id;
    p.logit_bias = &bias;
    p.n_logit_bias = 1;
    assert_int_equal(mllm_sampler_init(&s, &p, V), MLLM_ERR_INVALID_ARG);
    p = params(0);
    p.n_logit_bias = 1; /* no arrays */
    assert_int_equal(mllm_sampler_init(&s, &p, V), MLLM_ERR_INVALID_ARG);
    p = params(0);
    p.n_top_logprobs = MLLM_MAX_TOP_LOGPROBS + 1;
    assert_int_equal(mllm_sampler_init(&s, &p, V), MLLM_ERR_INVALID_ARG);
    p = params(0);
    p.presence_penalty = NAN;
    assert_int_equal(mllm_sampler_init(&s, &p, V), MLLM_ERR_INVALID_ARG);
}

/* The penalties as llama.cpp's llama_sampler_penalties_apply states them,
   written the slow, obvious way. */
static void reference_penalties(float *l, const mllm_sampling *p, const int32_t *recent, int n_recent) {
    int from = n_recent > p->repeat_last_n ? n_recent - p->repeat_last_n : 0;
    for (int t = 0; t < V; t++) {
        int count = 0;
        for (int i = from; i < n_recent; i++) count += recent[i] == t;
        if (count == 0) continue;
        l[t] = l[t] > 0 ? l[t] / p->repeat_penalty : l[t] * p->repeat_penalty;
        l[t] -= (float)count * p->frequency_penalty + p->presence_penalty;
    }
    for (int i = 0; i < p->n_logit_bias; i++) l[p->logit_bias_ids[i]] += p->logit_bias[i];
}

static void test_penalties_match_reference(void **state) {
    (void)state;
    float l[V], want[V];
    logits_fixture(l);
    l[12] = -1.5f; /* a negative logit among the recent ones */
    int32_t recent[] = {4, 7, 7, 12, 3, 7, 30, 12, 49, 0, 0, 0}; /* the first two fall outside the window */
    int n_recent = (int)(sizeof recent / sizeof recent[0]);
    int32_t bias_ids[] = {5, 7, 30};
    float bias[] = {1.25f, -0.5f, 100.0f};
    const float settings[][3] = {{1, 0.5f, 0}, {1, 0, 0.25f}, {1.3f, 0.4f, 0.7f}, {1, -1.0f, -0.5f}};
    for (int k = 0; k < 4; k++) {
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            mllm_sampling p = params(0);
            p.repeat_penalty = settings[k][0];
            p.presence_penalty = settings[k][1];
            p.frequency_penalty = settings[k][2];
            p.repeat_last_n = 10;
            if (with_bias) {
                p.logit_bias_ids = bias_ids;
                p.logit_bias = bias;
                p.n_logit_bias = 3;
            }
            memcpy(want, l, sizeof want);
            reference_penalties(want, &p, recent, n_recent);
            mllm_sampler s;
            assert_int_equal(mllm_sampler_init(&s, &p, V), MLLM_OK);
            int32_t got = mllm_sampler_sample(&s, l, recent, n_recent);
            assert_int_equal(got, mllm_argmax(want, V));
            for (int i = 0; i < V; i++) assert_float_equal(s.logits[i], want[i], 1e-5);
            /* The window's counts are cleared for the next token. */
            for (int i = 0; i < V; i++) assert_int_equal(s.count[i], 0);
            mllm_sampler_free(&s);
        }
    }
    /* -100 bans the best token, +100 forces the worst. */
    mllm_sampling p = params(0);
    int32_t id = 7;
    float b = -100;
    p.logit_bias_ids = &id;
    p.logit_bias = &b;
    p.n_logit_bias = 1;
    mllm_sampler s;
    mllm_sampler_init(&s, &p, V);
    assert_int_equal(mllm_sampler_sample(&s, l, NULL, 0), 3);
    mllm_sampler_free(&s);
    id = V - 1;
    b = 100;
    p.temperature = 1;
    mllm_sampler_init(&s, &p, V);
    for (int i = 0; i < 100; i++) assert_int_equal(mllm_sampler_sample(&s, l, NULL, 0), V - 1);
    mllm_sampler_free(&s);
}

static void test_logprobs(void **state) {
    (void)state;
    float l[V];
    logits_fixture(l);
    l[40] = 2.5f; /* ties with id 3: the lower id first */
    mllm_sampling p = params(0);
    mllm_sampler s;
    mllm_sampler_init(&s, &p, V);
    int32_t ids[MLLM_MAX_TOP_LOGPROBS];
    float lps[MLLM_MAX_TOP_LOGPROBS], lp;
    mllm_sampler_logprobs(&s, l, 40, 5, ids, lps, &lp);
    double z = 0;
    for (int i = 0; i < V; i++) z += exp(l[i]);
    assert_float_equal(lp, l[40] - log(z), 1e-5);
    int32_t want[] = {7, 3, 40, 0, 1};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(ids[i], want[i]);
        assert_float_equal(lps[i], l[want[i]] - log(z), 1e-5);
    }
    mllm_sampler_free(&s);
}

static void test_v1_struct_size(void **state) {
    (void)state;
    /* A caller built against the first mllm_sampling passes its sizeof;
       the new fields get their defaults, whatever its tail padding holds. */
    mllm_sampling full;
    mllm_sampling_default(&full);
    union { mllm_sampling_v1 v1; mllm_sampling as_new; } old;
    memset(&old, 0xAB, sizeof old);
    memcpy(&old.v1, &full, offsetof(mllm_sampling_v1, ignore_eos) + sizeof(int));
    old.v1.struct_size = (uint32_t)sizeof old.v1;
    old.v1.temperature = 0.3f;
    assert_int_equal(mllm_sampling_upgrade(&old.as_new, &full), MLLM_OK);
    assert_int_equal(full.struct_size, sizeof full);
    assert_float_equal(full.temperature, 0.3f, 0);
    assert_float_equal(full.presence_penalty, 0, 0);
    assert_null(full.on_logprobs);
    assert_int_equal(full.n_logit_bias, 0);
    old.v1.struct_size = (uint32_t)offsetof(mllm_sampling, presence_penalty) + 8;
    assert_int_equal(mllm_sampling_upgrade(&old.as_new, &full), MLLM_ERR_INVALID_ARG);
}

static void test_abi3_struct_size(void **state) {
    (void)state;
    /* ABI 3's struct ended at n_top_logprobs: its size is accepted and the
       grammar (in what was its tail padding) is NULL, whatever lies there. */
    mllm_sampling full, old;
    mllm_sampling_default(&old);
    memset(&old.grammar, 0xAB, sizeof old.grammar);
    old.struct_size = (uint32_t)MLLM_SAMPLING_ABI3_SIZE;
    old.n_top_logprobs = 3;
    assert_int_equal(mllm_sampling_upgrade(&old, &full), MLLM_OK);
    assert_int_equal(full.struct_size, sizeof full);
    assert_int_equal(full.n_top_logprobs, 3);
    assert_null(full.grammar);
}

/* mllm_argmax against the plain scan it replaces, on every size 1..70 and
   long rows: random values with ties, -0 / +0, -inf, NaN anywhere
   (index 0 too), the maximum at the first, last and tail positions. */
static int32_t scan_argmax(const float *x, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static void test_argmax_equals_scan(void **state) {
    (void)state;
    static float x[5000];
    uint32_t r = 12345;
    int checked = 0;
    for (int n = 1; n <= 5000; n = n < 70 ? n + 1 : n * 3 + 1) {
        for (int rep = 0; rep < 40; rep++) {
            for (int i = 0; i < n; i++) {
                r = r * 1664525u + 1013904223u;
                const uint32_t k = r >> 24;
                x[i] = (float)((int)(r >> 8 & 15) - 8) * 0.5f; /* few values: ties */
                if (k < 8) x[i] = NAN;
                else if (k < 16) x[i] = -INFINITY;
                else if (k < 24) x[i] = 0.0f;
                else if (k < 32) x[i] = -0.0f;
            }
            if (rep == 1) x[n - 1] = 100.0f;
            if (rep == 2) x[0] = 100.0f;
            if (rep == 3) x[0] = NAN;
            if (rep == 4)
                for (int i = 0; i < n; i++) x[i] = i % 2 ? 0.0f : -0.0f;
            if (rep == 5)
                for (int i = 0; i < n; i++) x[i] = -INFINITY;
            assert_int_equal(mllm_argmax(x, n), scan_argmax(x, n));
            checked++;
        }
    }
    assert_true(checked > 2000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argmax_equals_scan),
        cmocka_unit_test(test_greedy_and_ties),
        cmocka_unit_test(test_seed_reproduces),
        cmocka_unit_test(test_distribution_matches_softmax),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_invalid_params),
        cmocka_unit_test(test_penalties_match_reference),
        cmocka_unit_test(test_logprobs),
        cmocka_unit_test(test_v1_struct_size),
        cmocka_unit_test(test_abi3_struct_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
