/* A draft model proposing inside the batching engine (api/engine_draft.c,
   what mllm serve --draft runs): four sequences stepped together, greedy
   and seeded, give each one's text of a plain engine without speculation,
   with the draft's proposals verified and kept; with as many draft
   sessions as sequences, and with fewer (the sequences take turns on
   them, evaluating what they lack); in MLLM_SPEC_ALWAYS and in
   MLLM_SPEC_AUTO (the draft's own time counted), proposals verified and
   kept in both. A priced proposal stops where the draft's confidence no
   longer pays for the next row or draft step. A draft with another
   vocabulary is refused. */
#include "testutil.h"
#include "api/engine_api.h"
#include "api/engine_draft.h"
#include "api/internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NSEQ = 4, NP = 12, NG = 32 };

typedef struct {
    int32_t toks[NG];
    int n;
    bool finished;
} out_t;

static int on_token(void *user, int32_t id, const char *piece, size_t len) {
    (void)piece, (void)len;
    out_t *o = user;
    if (id >= 0 && o->n < NG) o->toks[o->n++] = id;
    return 0;
}

static void on_finish(void *user, const mllm_engine_result *r) {
    (void)r;
    ((out_t *)user)->finished = true;
}

static void prompt_of(int s, int V, int32_t *p) {
    for (int i = 0; i < NP; i++) p[i] = (int32_t)(((i % (3 + s)) * (17 + 4 * s) + 3 * s + 1) % V);
}

static mllm_sampling sampling_of(int s) {
    mllm_sampling sp;
    mllm_sampling_default(&sp);
    sp.max_tokens = NG;
    sp.ignore_eos = 1;
    sp.temperature = s % 2 ? 0.8f : 0.0f;
    sp.seed = 7 + (uint64_t)s;
    return sp;
}

/* For MLLM_SPEC_AUTO: steps priced as a model that costs 50 ms per step
   and 0.5 ms per extra row (the draft's own time, a fraction of a
   millisecond, is measured). */
static double step_ms(void *user, int n_tokens) {
    (void)user;
    return 50.0 + 0.5 * n_tokens;
}

/* The first nseq sequences in one engine; draft NULL: no speculation. */
static void run_all(mllm_model *m, mllm_model *draft, int mode, int n_slots, int nseq, out_t *out,
                    mllm_engine_stats *st, uint64_t *evals) {
    mllm_engine_params p = {.max_running = NSEQ, .n_ctx = 64, .n_blocks = 24, .block_size = 16,
                            .spec_mode = draft ? mode : MLLM_SPEC_OFF, .step_ms = step_ms};
    mllm_model_engine me;
    if (mllm_model_engine_open(m, &p, 2, &me) != MLLM_OK) fail_msg("engine: %s", mllm_last_error());
    mllm_engine_draft *d = NULL;
    if (draft) {
        mllm_engine_draft_params dp = {.draft = draft, .model = m, .pool = me.pool, .n_slots = n_slots,
                                       .n_ctx = 64, .p_min = 0.0f};
        if (mllm_engine_draft_new(&dp, &d) != MLLM_OK) fail_msg("draft: %s", mllm_last_error());
        mllm_engine_set_proposer(me.e, mllm_engine_draft_propose, d, true);
    }
    const int V = m->dec.cfg.n_vocab;
    mllm_sampling sp[NSEQ];
    for (int s = 0; s < nseq; s++) {
        int32_t pr[NP];
        prompt_of(s, V, pr);
        sp[s] = sampling_of(s);
        mllm_engine_request r = {.prompt = pr, .n_prompt = NP, .sampling = &sp[s], .on_token = on_token,
                                 .on_finish = on_finish, .user = &out[s]};
        assert_int_equal(mllm_engine_submit(me.e, &r), MLLM_OK);
    }
    for (int i = 0; i < 10000 && !mllm_engine_idle(me.e); i++) assert_int_equal(mllm_engine_step(me.e), MLLM_OK);
    assert_true(mllm_engine_idle(me.e));
    mllm_engine_get_stats(me.e, st);
    mllm_model_engine_close(&me);
    *evals = mllm_engine_draft_evals(d);
    mllm_engine_draft_free(d);
    for (int s = 0; s < nseq; s++) {
        assert_true(out[s].finished);
        assert_int_equal(out[s].n, NG);
    }
}

/* What the speculation must have done besides leaving the text alone. */
typedef enum { KEPT, RESTED, ANY } expect_t;

static void check(const char *tdtype, const char *ddtype, int mode, int n_slots, int nseq, expect_t want) {
    mllm_model *m = tu_synth_load("edraft", "qwen3", tdtype), *d = tu_synth_load("edraft", "qwen3", ddtype);
    out_t ref[NSEQ] = {0}, got[NSEQ] = {0};
    mllm_engine_stats st;
    uint64_t evals = 0;
    run_all(m, NULL, 0, 0, nseq, ref, &st, &evals);
    assert_int_equal(st.spec_passes, 0);
    run_all(m, d, mode, n_slots, nseq, got, &st, &evals);
    printf("# %s draft %s, mode %d, %d sessions, %d sequences: %llu passes, %llu of %llu kept, %llu steps, %llu draft "
           "evaluations\n",
           tdtype, ddtype, mode, n_slots, nseq, (unsigned long long)st.spec_passes, (unsigned long long)st.spec_accepted,
           (unsigned long long)st.spec_drafted, (unsigned long long)st.steps, (unsigned long long)evals);
    for (int s = 0; s < nseq; s++)
        if (memcmp(got[s].toks, ref[s].toks, sizeof ref[s].toks))
            fail_msg("sequence %d (%s) differs with the draft", s, s % 2 ? "seeded" : "greedy");
    assert_true(evals > 0);
    if (want == KEPT) assert_true(st.spec_passes > 0 && st.spec_accepted > 0);
    if (want == RESTED) assert_true(st.spec_passes == 0 && st.spec_turned_off > 0 && evals < NG);
    mllm_model_free(d);
    mllm_model_free(m);
}

static void test_always(void **state) {
    (void)state;
    check("f32", "q4_0", MLLM_SPEC_ALWAYS, NSEQ, NSEQ, KEPT);
    check("q8_0", "q4_0", MLLM_SPEC_ALWAYS, 2, NSEQ, KEPT); /* fewer draft sessions than sequences */
}

/* AUTO prices each proposal with the draft's confidence, which for the
   tiny models is never enough for a row (they are sure of nothing: below
   the 0.06 a row is taken to cost until a pass of that length is timed):
   one sequence (greedy), its draft proposes nothing, which counts against
   it, and it rests; two (the seeded one too), the text is the same
   whatever was proposed. What pays is test_priced's. */
static void test_auto(void **state) {
    (void)state;
    check("f32", "q4_0", MLLM_SPEC_AUTO, NSEQ, 1, RESTED);
    check("f32", "q4_0", MLLM_SPEC_AUTO, NSEQ, 2, ANY);
}

/* The hook itself: unpriced, proposals run to cap (p_min 0); priced, they
   stop before a row the draft's confidence does not cover, and after the
   first when the next draft step is dearer than any chance (a step of 1
   passes for a confidence below 1, which a tiny model always has). */
static void test_priced(void **state) {
    (void)state;
    mllm_model *m = tu_synth_load("edraft", "qwen3", "f32"), *d = tu_synth_load("edraft", "qwen3", "q4_0");
    mllm_pool *pool = mllm_pool_new(2);
    assert_non_null(pool);
    mllm_engine_draft_params dp = {.draft = d, .model = m, .pool = pool, .n_slots = 1, .n_ctx = 64, .p_min = 0.0f};
    mllm_engine_draft *ed = NULL;
    assert_int_equal(mllm_engine_draft_new(&dp, &ed), MLLM_OK);
    int32_t ctx[NP], out[4];
    prompt_of(0, m->dec.cfg.n_vocab, ctx);
    mllm_spec_price free_rows = {0}, dear_rows = {0}, dear_step = {.step = 1.0};
    for (int i = 0; i <= MLLM_SPEC_MAX_DRAFT; i++) dear_rows.row[i] = 1.01;
    assert_int_equal(mllm_engine_draft_propose(ed, ctx, NP, 4, NULL, out), 4);
    assert_int_equal(mllm_engine_draft_propose(ed, ctx, NP, 4, &free_rows, out), 4);
    assert_int_equal(mllm_engine_draft_propose(ed, ctx, NP, 4, &dear_rows, out), 0);
    assert_int_equal(mllm_engine_draft_propose(ed, ctx, NP, 4, &dear_step, out), 1);
    mllm_engine_draft_free(ed);
    mllm_pool_free(pool);
    mllm_model_free(d);
    mllm_model_free(m);
}

static void test_other_vocabulary(void **state) {
    (void)state;
    mllm_model *m = tu_synth_load("edraft", "qwen3", "f32"), *d = tu_synth_load("edraft", "llama", "f32");
    mllm_engine_draft_params dp = {.draft = d, .model = m, .n_slots = 1, .n_ctx = 64};
    mllm_engine_draft *ed = NULL;
    assert_int_equal(mllm_engine_draft_new(&dp, &ed), MLLM_ERR_INVALID_ARG);
    assert_null(ed);
    assert_non_null(strstr(mllm_last_error(), "there and"));
    mllm_model_free(d);
    mllm_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_always),
        cmocka_unit_test(test_auto),
        cmocka_unit_test(test_priced),
        cmocka_unit_test(test_other_vocabulary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
