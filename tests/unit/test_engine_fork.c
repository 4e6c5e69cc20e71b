/* n > 1 choices in the engine (mllm_engine_submit_forks): the prompt is
   read once and the forks share its K/V; each choice gives, token for
   token, what it gives submitted alone (greedy and seeded), also when a
   fork finds no free slot (it waits, its prompt from the prefix cache) and
   when the first choice is cancelled before its prompt is read; every
   block is free at the end. A synthetic q8_0 model. */
#include <stdio.h>
#include <string.h>
#include "api/engine_api.h"
#include "api/internal.h"
#include "testutil.h"

#define MAXGEN 24
#define NCH 4  /* choices */
#define PLEN 37 /* two full blocks of 16 and a partial one */
#define NGEN 12

#include "engine_out.h"

/* Choice c: greedy for 0 and 1 (identical), seeded sampling for the rest. */
static mllm_sampling sampling_of(int c) {
    mllm_sampling sp;
    mllm_sampling_default(&sp);
    sp.max_tokens = NGEN;
    sp.ignore_eos = 1;
    sp.temperature = c < 2 ? 0.0f : 0.9f;
    sp.seed = 100 + (uint64_t)c;
    return sp;
}

static mllm_model_engine open_engine(mllm_model *m, int max_running) {
    mllm_engine_params p = {.max_running = max_running, .n_ctx = 64, .n_blocks = 40, .block_size = 16,
                            .prefill_chunk = 512, .spec_mode = MLLM_SPEC_OFF};
    mllm_model_engine me;
    if (mllm_model_engine_open(m, &p, 2, &me) != MLLM_OK) fail_msg("engine: %s", mllm_last_error());
    return me;
}

static void run_to_end(mllm_engine *e) {
    for (int i = 0; i < 10000 && !mllm_engine_idle(e); i++) assert_int_equal(mllm_engine_step(e), MLLM_OK);
    assert_true(mllm_engine_idle(e));
}

static void check_blocks_free(mllm_engine *e) {
    mllm_engine_stats st;
    mllm_engine_get_stats(e, &st);
    assert_int_equal(st.blocks_used, 0);
    assert_int_equal(st.blocks_free + st.blocks_cached, st.blocks_total);
}

/* Every choice forked from choice 0 in one engine of max_running
   sequences (the head cancelled before its first step when cancel0). */
static void run_forked(mllm_model *m, const int32_t *prompt, int max_running, bool cancel0, out_t *o,
                       mllm_engine_stats *st) {
    mllm_sampling sp[NCH];
    mllm_engine_request r[NCH];
    atomic_bool cancel;
    atomic_init(&cancel, cancel0);
    for (int c = 0; c < NCH; c++) {
        sp[c] = sampling_of(c);
        r[c] = (mllm_engine_request){.prompt = prompt, .n_prompt = PLEN, .sampling = &sp[c], .on_token = on_token,
                                     .on_finish = on_finish, .user = &o[c], .cancel = c == 0 ? &cancel : NULL};
    }
    mllm_model_engine me = open_engine(m, max_running);
    assert_int_equal(mllm_engine_submit_forks(me.e, &r[0], r + 1, NCH - 1), MLLM_OK);
    run_to_end(me.e);
    mllm_engine_get_stats(me.e, st);
    check_blocks_free(me.e);
    mllm_model_engine_close(&me);
}

static void test_forks(void **state) {
    (void)state;
    mllm_model *m = tu_synth_load("fork", "qwen3", "q8_0");
    const int V = m->dec.cfg.n_vocab;
    int32_t prompt[PLEN];
    for (int i = 0; i < PLEN; i++) prompt[i] = (int32_t)((i * 37 + 5) % V);
    out_t alone[NCH] = {0};
    for (int c = 0; c < NCH; c++) { /* each alone, in an engine of its own */
        mllm_sampling sp = sampling_of(c);
        mllm_engine_request r = {.prompt = prompt, .n_prompt = PLEN, .sampling = &sp, .on_token = on_token,
                                 .on_finish = on_finish, .user = &alone[c]};
        mllm_model_engine me = open_engine(m, 1);
        assert_int_equal(mllm_engine_submit(me.e, &r), MLLM_OK);
        run_to_end(me.e);
        mllm_model_engine_close(&me);
        assert_int_equal(alone[c].n, NGEN);
    }
    assert_memory_equal(alone[0].toks, alone[1].toks, sizeof alone[0].toks); /* greedy twice: the same */
    assert_true(memcmp(alone[2].toks, alone[3].toks, sizeof alone[2].toks) != 0); /* seeds differ: not vacuous */

    /* Room for all: the prompt is read once, each fork evaluates its last
       position again, then every choice decodes. */
    out_t o[NCH] = {0};
    mllm_engine_stats st;
    run_forked(m, prompt, NCH, false, o, &st);
    for (int c = 0; c < NCH; c++) {
        assert_true(o[c].finished);
        assert_int_equal(o[c].res.finish, MLLM_ENGINE_LENGTH);
        if (memcmp(o[c].toks, alone[c].toks, sizeof o[c].toks)) fail_msg("choice %d differs forked", c);
        assert_int_equal(o[c].res.n_cached, c == 0 ? 0 : PLEN - 1);
    }
    assert_int_equal(st.tokens_evaluated, PLEN + (NCH - 1) + NCH * (NGEN - 1));
    assert_int_equal(st.prefix_lookups, 1); /* the forks looked nothing up */

    /* Two running slots: two forks wait and take their prompt from the
       prefix cache (its full blocks). */
    memset(o, 0, sizeof o);
    run_forked(m, prompt, 2, false, o, &st);
    for (int c = 0; c < NCH; c++)
        if (memcmp(o[c].toks, alone[c].toks, sizeof o[c].toks)) fail_msg("choice %d differs, 2 slots", c);
    assert_int_equal(st.prefix_lookups, 1 + 2);

    /* The first choice cancelled before its prompt is read: the others run
       as sequences of their own. */
    memset(o, 0, sizeof o);
    run_forked(m, prompt, NCH, true, o, &st);
    assert_int_equal(o[0].res.finish, MLLM_ENGINE_CANCELLED);
    assert_int_equal(o[0].n, 0);
    for (int c = 1; c < NCH; c++)
        if (memcmp(o[c].toks, alone[c].toks, sizeof o[c].toks)) fail_msg("choice %d differs, head cancelled", c);
    mllm_model_free(m);
}

/* A refused fork queues nothing and calls nothing. */
static void test_forks_refused(void **state) {
    (void)state;
    mllm_model *m = tu_synth_load("fork", "qwen3", "q8_0");
    int32_t prompt[PLEN] = {0};
    mllm_sampling sp = sampling_of(0);
    out_t o[2] = {0};
    mllm_engine_request r = {.prompt = prompt, .n_prompt = PLEN, .sampling = &sp, .on_token = on_token,
                             .on_finish = on_finish, .user = &o[0]};
    mllm_engine_request f = r;
    f.sampling = NULL; /* refused: a request needs its sampling settings */
    f.user = &o[1];
    mllm_model_engine me = open_engine(m, 2);
    assert_int_not_equal(mllm_engine_submit_forks(me.e, &r, &f, 1), MLLM_OK);
    assert_true(mllm_engine_idle(me.e));
    mllm_model_engine_close(&me);
    assert_false(o[0].finished);
    assert_false(o[1].finished);
    mllm_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_forks), cmocka_unit_test(test_forks_refused)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
