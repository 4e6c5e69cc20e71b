/* The speculation controller's rules (runtime/spec_ctl.h), with injected
   outcomes and step times (no clock, no model): the acceptance estimate and
   the proposal length it allows at a given cost per token, and the fit of
   step time against batch tokens that gives that cost. */
#include <math.h>
#include <stdio.h>
#include "runtime/spec_ctl.h"
#include "testutil.h"

static void test_length_follows_acceptance_and_cost(void **state) {
    (void)state;
    mllm_spec_ctl c;
    mllm_spec_ctl_init(&c, 8);
    /* the prior: one kept, one refused */
    assert_true(mllm_spec_ctl_keep(&c) == 0.5);
    assert_int_equal(mllm_spec_ctl_len(&c, 0.2, 8), 2);  /* 0.5, 0.25 > 0.2 > 0.125 */
    assert_int_equal(mllm_spec_ctl_len(&c, 0.2, 1), 1);  /* the cap */
    assert_int_equal(mllm_spec_ctl_len(&c, 0.6, 8), 0);  /* a full batch on few cores: not even one */
    assert_int_equal(mllm_spec_ctl_len(&c, 1.0, 8), 0);  /* a row as dear as a token never pays */
    assert_int_equal(mllm_spec_ctl_len(&c, 0.0, 8), 8);  /* free rows: all of them */
    /* text that lookup does not predict: ten refusals */
    for (int i = 0; i < 10; i++) mllm_spec_ctl_observe(&c, 1, 0);
    assert_true(mllm_spec_ctl_keep(&c) < 0.11);
    assert_int_equal(mllm_spec_ctl_len(&c, 0.2, 8), 0);
    assert_int_equal(mllm_spec_ctl_len(&c, 0.06, 8), 1); /* one stream, cheap rows: still one, cheaply */
    /* then a copied stretch: three passes of 8 kept */
    for (int i = 0; i < 3; i++) mllm_spec_ctl_observe(&c, 8, 8);
    const double p = mllm_spec_ctl_keep(&c);
    assert_true(p > 0.8 && p < 0.85);
    assert_int_equal(mllm_spec_ctl_len(&c, 0.6, 8), 2);  /* p, p^2 > 0.6 > p^3 */
    assert_int_equal(mllm_spec_ctl_len(&c, 0.2, 4), 4);
}

static void test_observe_counts_positions(void **state) {
    (void)state;
    /* a pass of 4 that kept 2 is two kept positions and one refused, in
       that order: the same as three single checks */
    mllm_spec_ctl a, b;
    mllm_spec_ctl_init(&a, 8);
    mllm_spec_ctl_init(&b, 8);
    mllm_spec_ctl_observe(&a, 4, 2);
    mllm_spec_ctl_observe(&b, 1, 1);
    mllm_spec_ctl_observe(&b, 1, 1);
    mllm_spec_ctl_observe(&b, 1, 0);
    assert_true(a.kept == b.kept && a.refused == b.refused);
    /* all kept: no refusal is counted for the positions not proposed */
    const double kept = a.kept, refused = a.refused, d3 = pow(MLLM_SPEC_CTL_DECAY, 3);
    mllm_spec_ctl_observe(&a, 3, 3);
    assert_true(fabs(a.refused - refused * d3) < 1e-12);
    assert_true(a.kept > kept);
    /* old evidence fades: 200 refusals, then 20 kept */
    mllm_spec_ctl c;
    mllm_spec_ctl_init(&c, 8);
    for (int i = 0; i < 200; i++) mllm_spec_ctl_observe(&c, 1, 0);
    assert_true(mllm_spec_ctl_keep(&c) < 0.05);
    for (int i = 0; i < 20; i++) mllm_spec_ctl_observe(&c, 1, 1);
    assert_true(mllm_spec_ctl_keep(&c) > 0.5);
}

static void test_cost_fit(void **state) {
    (void)state;
    const double eps = 1e-9;
    mllm_spec_cost f;
    mllm_spec_cost_init(&f, 0.25);
    /* the prior until there is a fit: slope 0.25 of a one-token step */
    assert_true(fabs(mllm_spec_cost_token(&f, 1) - 0.2) < eps);
    assert_true(fabs(mllm_spec_cost_token(&f, 8) - 2.0 / 3) < eps);
    /* one batch size only: no slope to fit, still the prior */
    for (int i = 0; i < 20; i++) mllm_spec_cost_add(&f, 8, 24.0);
    assert_true(fabs(mllm_spec_cost_token(&f, 8) - 2.0 / 3) < eps);
    /* steps of 8 and 12 tokens, 4 ms + 2 ms a token: one more token costs
       2 / 6 of a one-token step's output, 2 / 2.5 of an 8-token step's */
    mllm_spec_cost_init(&f, 0.25);
    for (int i = 0; i < 7; i++) mllm_spec_cost_add(&f, i % 2 ? 12 : 8, 4 + 2.0 * (i % 2 ? 12 : 8));
    assert_true(fabs(mllm_spec_cost_token(&f, 8) - 2.0 / 3) < eps); /* 7 steps: not yet */
    for (int i = 7; i < 40; i++) mllm_spec_cost_add(&f, i % 2 ? 12 : 8, 4 + 2.0 * (i % 2 ? 12 : 8));
    assert_true(fabs(mllm_spec_cost_token(&f, 1) - 1.0 / 3) < eps);
    assert_true(fabs(mllm_spec_cost_token(&f, 8) - 0.8) < eps);
    assert_true(fabs(mllm_spec_cost_token(&f, 0) - 1.0 / 3) < eps); /* no decodes: as one */
    /* rows cheaper than the prior says (10 ms + 0.1 ms a token): the prior,
       a floor (on a shared machine a flat slope is mostly other work) */
    mllm_spec_cost_init(&f, 0.25);
    for (int i = 0; i < 40; i++) mllm_spec_cost_add(&f, i % 2 ? 12 : 8, 10 + 0.1 * (i % 2 ? 12 : 8));
    assert_true(fabs(mllm_spec_cost_token(&f, 1) - 0.2) < eps);
    assert_true(fabs(mllm_spec_cost_token(&f, 8) - 2.0 / 3) < eps);
    /* times that fall as the batch grows (noise): meaningless, the prior */
    mllm_spec_cost_init(&f, 0.25);
    for (int i = 0; i < 40; i++) mllm_spec_cost_add(&f, i % 2 ? 12 : 8, 40.0 - (i % 2 ? 12 : 8));
    assert_true(fabs(mllm_spec_cost_token(&f, 8) - 2.0 / 3) < eps);
    /* a slope above the base: dearer than the prior, still below one token */
    mllm_spec_cost_init(&f, 0.25);
    for (int i = 0; i < 40; i++) mllm_spec_cost_add(&f, i % 3 + 1, 0.1 + 10.0 * (i % 3 + 1));
    const double c4 = mllm_spec_cost_token(&f, 4);
    assert_true(c4 > 0.99 && c4 < 1);
}

/* Per-length pass costs: the prior until a length is timed, then what it
   measured (its first time whole, later ones averaged); an untimed length
   costs the longest shorter timed one plus the prior per token; nothing
   below a one-token pass; nothing recorded before a one-token pass. */
static void test_pass_costs(void **state) {
    (void)state;
    mllm_spec_passes p;
    mllm_spec_passes_init(&p, 0.06);
    assert_true(fabs(mllm_spec_passes_cost(&p, 1) - 1) < 1e-12);
    assert_true(fabs(mllm_spec_passes_cost(&p, 5) - 1.24) < 1e-12);
    assert_true(fabs(mllm_spec_passes_row(&p, 0) - 0.06) < 1e-12);
    mllm_spec_passes_add(&p, 3, 40); /* no one-token time yet: ignored */
    assert_true(fabs(mllm_spec_passes_cost(&p, 3) - 1.12) < 1e-12);
    mllm_spec_passes_add(&p, 1, 20);
    mllm_spec_passes_add(&p, 3, 30);
    assert_true(fabs(mllm_spec_passes_cost(&p, 3) - 1.5) < 1e-12);
    assert_true(fabs(mllm_spec_passes_cost(&p, 2) - 1.06) < 1e-12);
    assert_true(fabs(mllm_spec_passes_cost(&p, 5) - 1.62) < 1e-12);
    assert_true(fabs(mllm_spec_passes_row(&p, 1) - 0.44) < 1e-12); /* the 2nd proposal: 2 -> 3 tokens */
    mllm_spec_passes_add(&p, 3, 50);
    assert_true(fabs(mllm_spec_passes_cost(&p, 3) - (0.8 * 1.5 + 0.2 * 2.5)) < 1e-12);
    mllm_spec_passes_add(&p, 2, 10); /* faster than one token: the one-token time is stale */
    assert_true(fabs(p.c1_ms - 10) < 1e-12 && fabs(mllm_spec_passes_cost(&p, 2) - 1) < 1e-12);
}

/* A draft's proposal: below p_min none; unpriced, on to cap; priced, not
   when the run's chance is below its row, the last when it is below the
   next row and draft step; the run's chance is the product. */
static void test_draft_take(void **state) {
    (void)state;
    double p = 1;
    assert_int_equal(mllm_spec_draft_take(NULL, &p, 0.05, 0.1, 0, 4), 0);
    p = 1;
    assert_int_equal(mllm_spec_draft_take(NULL, &p, 0.2, 0.1, 0, 4), 2);
    assert_int_equal(mllm_spec_draft_take(NULL, &p, 0.2, 0.1, 3, 4), 1);
    assert_true(fabs(p - 0.04) < 1e-12);
    mllm_spec_price pr = {.step = 0.3};
    pr.row[0] = 0.5;
    pr.row[1] = 0.7;
    p = 1;
    assert_int_equal(mllm_spec_draft_take(&pr, &p, 0.4, 0.1, 0, 4), 0);
    p = 1;
    assert_int_equal(mllm_spec_draft_take(&pr, &p, 0.9, 0.1, 0, 4), 1); /* 0.9 < 0.3 + 0.7 */
    pr.step = 0.1;
    p = 1;
    assert_int_equal(mllm_spec_draft_take(&pr, &p, 0.9, 0.1, 0, 4), 2); /* 0.9 >= 0.1 + 0.7 */
    pr.row[1] = 0.86;
    assert_int_equal(mllm_spec_draft_take(&pr, &p, 0.95, 0.1, 1, 4), 0); /* 0.9 * 0.95 < 0.86 */
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_length_follows_acceptance_and_cost),
                                       cmocka_unit_test(test_observe_counts_positions),
                                       cmocka_unit_test(test_cost_fit), cmocka_unit_test(test_pass_costs),
                                       cmocka_unit_test(test_draft_take)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
