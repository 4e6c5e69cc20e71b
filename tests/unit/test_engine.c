/* The engine (src/engine): sequences stepped together give, token for
   token, what each gives alone (greedy and seeded sampling, prompts
   chunked beside decodes, with preemption when the pool is small); the
   prefix cache's reuse counts are exact; every block is free again after
   finish and cancel; a request waits while the pool cannot hold it;
   prompt lookup changes no token (greedy and seeded), and the blocks it
   registers hold only delivered tokens. Synthetic q8_0 / f32 models
   (batch-invariant matmuls). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "api/engine_api.h"
#include "api/internal.h"
#include "synth/synth.h"
#include "testutil.h"

#define MAXGEN 48
#define NSEQ 4

#include "engine_out.h"

static mllm_model *synth(const char *arch, const char *dtype) { return tu_synth_load("eng", arch, dtype); }

static const int plen[NSEQ] = {40, 23, 5, 33};

static void prompt_of(int s, int V, int32_t *p) {
    for (int i = 0; i < plen[s]; i++) p[i] = (int32_t)((i * (31 + 6 * s) + 7 * s + 1) % V);
}

static mllm_sampling sampling_of(int s, int max_tokens) {
    mllm_sampling sp;
    mllm_sampling_default(&sp);
    sp.max_tokens = max_tokens;
    sp.ignore_eos = 1;
    sp.temperature = s % 2 ? 0.9f : 0.0f; /* seeded sampling too: its own sampler per sequence */
    sp.seed = 100 + (uint64_t)s;
    return sp;
}

static void submit(mllm_engine *e, int s, int V, int max_tokens, out_t *o, const atomic_bool *cancel) {
    int32_t p[64];
    prompt_of(s, V, p);
    mllm_sampling sp = sampling_of(s, max_tokens);
    mllm_engine_request r = {.prompt = p, .n_prompt = plen[s], .sampling = &sp, .cancel = cancel,
                             .on_token = on_token, .on_finish = on_finish, .user = o};
    assert_int_equal(mllm_engine_submit(e, &r), MLLM_OK);
}

static mllm_model_engine open_engine_spec(mllm_model *m, int max_running, int n_blocks, int chunk, int kv_dtype,
                                          int spec_mode) {
    mllm_engine_params p = {.max_running = max_running, .n_ctx = 64, .n_blocks = n_blocks, .block_size = 16,
                            .kv_dtype = kv_dtype, .prefill_chunk = chunk, .spec_mode = spec_mode};
    mllm_model_engine me;
    if (mllm_model_engine_open(m, &p, 2, &me) != MLLM_OK) fail_msg("engine: %s", mllm_last_error());
    return me;
}

static mllm_model_engine open_engine(mllm_model *m, int max_running, int n_blocks, int chunk, int kv_dtype) {
    return open_engine_spec(m, max_running, n_blocks, chunk, kv_dtype, MLLM_SPEC_AUTO);
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
    assert_int_equal(st.running + st.waiting, 0);
}

/* Each alone (a fresh engine each), then all together in one engine. */
static void check_together(const char *arch, const char *wtype, int kv_dtype, int n_blocks, int chunk,
                           bool expect_preempt) {
    mllm_model *m = synth(arch, wtype);
    const int V = m->dec.cfg.n_vocab;
    out_t alone[NSEQ] = {0}, mixed[NSEQ] = {0};
    for (int s = 0; s < NSEQ; s++) {
        mllm_model_engine me = open_engine(m, 1, 5, 512, kv_dtype);
        submit(me.e, s, V, 20, &alone[s], NULL);
        run_to_end(me.e);
        check_blocks_free(me.e);
        mllm_model_engine_close(&me);
        assert_true(alone[s].finished);
        assert_int_equal(alone[s].n, 20);
        assert_int_equal(alone[s].res.finish, MLLM_ENGINE_LENGTH);
    }
    /* not vacuous: the sequences differ */
    assert_true(memcmp(alone[0].toks, alone[2].toks, sizeof alone[0].toks) != 0);
    mllm_model_engine me = open_engine(m, NSEQ, n_blocks, chunk, kv_dtype);
    for (int s = 0; s < NSEQ; s++) submit(me.e, s, V, 20, &mixed[s], NULL);
    run_to_end(me.e);
    mllm_engine_stats st;
    mllm_engine_get_stats(me.e, &st);
    if (expect_preempt) assert_true(st.preemptions > 0);
    else assert_int_equal(st.preemptions, 0);
    check_blocks_free(me.e);
    for (int s = 0; s < NSEQ; s++) {
        assert_true(mixed[s].finished);
        assert_int_equal(mixed[s].n, alone[s].n);
        if (memcmp(mixed[s].toks, alone[s].toks, sizeof alone[s].toks))
            fail_msg("%s %s kv %d: sequence %d differs stepped with others", arch, wtype, kv_dtype, s);
    }
    mllm_model_engine_close(&me);
    mllm_model_free(m);
}

static void test_together(void **state) {
    (void)state;
    /* roomy pool, prompts in chunks of 16 beside decodes */
    check_together("qwen3", "q8_0", MLLM_KV_DTYPE_F32, 40, 16, false);
    check_together("llama", "f32", MLLM_KV_DTYPE_Q8, 40, 16, false);
    /* a pool for 2 of the 4 sequences: waiting and preemption, same tokens */
    check_together("qwen3", "q8_0", MLLM_KV_DTYPE_F16, 8, 512, true);
    check_together("gemma3", "q8_0", MLLM_KV_DTYPE_F32, 6, 16, true); /* sliding-window layers, tight pool */
}

/* n_cached is what the prefix index gives, exactly, and the answer is the
   one computed from scratch. */
static void test_prefix_reuse(void **state) {
    (void)state;
    mllm_model *m = synth("qwen3", "q8_0");
    const int V = m->dec.cfg.n_vocab;
    mllm_model_engine me = open_engine(m, 2, 40, 512, MLLM_KV_DTYPE_F32);
    int32_t a[48], b[48];
    for (int i = 0; i < 48; i++) a[i] = b[i] = (int32_t)((i * 13 + 5) % V);
    for (int i = 35; i < 48; i++) b[i] = (int32_t)((i * 7 + 2) % V);
    mllm_sampling sp = sampling_of(0, 6);
    out_t o[5] = {0};
    const int32_t *pr[5] = {a, b, a, a, a};
    const int n[5] = {40, 45, 48, 48, 10};
    /* none; the 2 full blocks they share (the first's third block held generated tokens, unregistered);
       those 2 and 3 positions of the second's registered third block (copy on write); all 48 but the last
       (evaluated again for its logits); 9 of a 10-token prompt from inside the first registered block */
    const int expect[5] = {0, 32, 35, 47, 9};
    for (int k = 0; k < 5; k++) {
        mllm_engine_request r = {.prompt = pr[k], .n_prompt = n[k], .sampling = &sp, .on_token = on_token,
                                 .on_finish = on_finish, .user = &o[k]};
        assert_int_equal(mllm_engine_submit(me.e, &r), MLLM_OK);
        run_to_end(me.e);
        assert_int_equal(o[k].res.n_cached, expect[k]);
        assert_int_equal(o[k].res.n_prompt, n[k]);
    }
    mllm_engine_stats st;
    mllm_engine_get_stats(me.e, &st);
    assert_int_equal(st.prefix_lookups, 5);
    assert_int_equal(st.prefix_hit_tokens, 32 + 35 + 47 + 9);
    check_blocks_free(me.e);
    mllm_model_engine_close(&me);
    /* the reused answers equal fresh ones */
    for (int k = 1; k <= 4; k++) {
        me = open_engine(m, 1, 5, 512, MLLM_KV_DTYPE_F32);
        out_t f = {0};
        mllm_engine_request r = {.prompt = pr[k], .n_prompt = n[k], .sampling = &sp, .on_token = on_token,
                                 .on_finish = on_finish, .user = &f};
        assert_int_equal(mllm_engine_submit(me.e, &r), MLLM_OK);
        run_to_end(me.e);
        assert_int_equal(f.res.n_cached, 0);
        assert_int_equal(f.n, o[k].n);
        assert_memory_equal(f.toks, o[k].toks, sizeof f.toks);
        mllm_model_engine_close(&me);
    }
    mllm_model_free(m);
}

/* Requests that arrive together with one long shared prefix (a system
   prompt), read in chunks over several steps: the later ones wait for the
   first one's blocks and take them, rather than compute them again; every
   answer is the one computed alone. */
static void test_shared_prefill(void **state) {
    (void)state;
    mllm_model *m = synth("qwen3", "q8_0");
    const int V = m->dec.cfg.n_vocab;
    enum { NR = 3, NPRE = 48, NT = 54 };
    int32_t pr[NR][NT];
    for (int r = 0; r < NR; r++)
        for (int i = 0; i < NT; i++) pr[r][i] = (int32_t)(i < NPRE ? (i * 11 + 3) % V : (i * 5 + 17 * r + 1) % V);
    mllm_sampling sp = sampling_of(0, 4);
    out_t o[NR] = {0};
    mllm_model_engine me = open_engine(m, NR, 40, 16, MLLM_KV_DTYPE_F32);
    for (int r = 0; r < NR; r++) {
        mllm_engine_request rq = {.prompt = pr[r], .n_prompt = NT, .sampling = &sp, .on_token = on_token,
                                  .on_finish = on_finish, .user = &o[r]};
        assert_int_equal(mllm_engine_submit(me.e, &rq), MLLM_OK);
    }
    run_to_end(me.e);
    mllm_engine_stats st;
    mllm_engine_get_stats(me.e, &st);
    assert_true(st.prefix_waits > 0);
    assert_int_equal(o[0].res.n_cached, 0);
    for (int r = 1; r < NR; r++) assert_int_equal(o[r].res.n_cached, NPRE); /* the 3 shared blocks */
    check_blocks_free(me.e);
    mllm_model_engine_close(&me);
    for (int r = 0; r < NR; r++) {
        out_t f = {0};
        me = open_engine(m, 1, 5, 16, MLLM_KV_DTYPE_F32);
        mllm_engine_request rq = {.prompt = pr[r], .n_prompt = NT, .sampling = &sp, .on_token = on_token,
                                  .on_finish = on_finish, .user = &f};
        assert_int_equal(mllm_engine_submit(me.e, &rq), MLLM_OK);
        run_to_end(me.e);
        mllm_model_engine_close(&me);
        assert_int_equal(f.n, 4);
        assert_memory_equal(f.toks, o[r].toks, sizeof f.toks);
    }
    mllm_model_free(m);
}

/* Cancel while running and while waiting: both end CANCELLED, blocks back. */
static void test_cancel_and_wait(void **state) {
    (void)state;
    mllm_model *m = synth("qwen3", "q8_0");
    const int V = m->dec.cfg.n_vocab;
    /* 5 blocks: one 64-token context; a 40-token prompt needs 3 + 1 */
    mllm_model_engine me = open_engine(m, 4, 5, 512, MLLM_KV_DTYPE_Q8);
    atomic_bool c0, c1;
    atomic_init(&c0, false);
    atomic_init(&c1, false);
    out_t o[3] = {0};
    submit(me.e, 0, V, 20, &o[0], &c0);
    submit(me.e, 3, V, 20, &o[1], &c1);
    submit(me.e, 1, V, 4, &o[2], NULL);
    assert_int_equal(mllm_engine_step(me.e), MLLM_OK);
    mllm_engine_stats st;
    mllm_engine_get_stats(me.e, &st);
    assert_int_equal(st.running, 1); /* the pool holds one: the others wait, FIFO */
    assert_int_equal(st.waiting, 2);
    assert_int_equal(o[0].n, 1);
    atomic_store(&c1, true); /* a waiting one */
    assert_int_equal(mllm_engine_step(me.e), MLLM_OK);
    assert_true(o[1].finished);
    assert_int_equal(o[1].res.finish, MLLM_ENGINE_CANCELLED);
    assert_int_equal(o[1].n, 0);
    atomic_store(&c0, true); /* the running one */
    assert_int_equal(mllm_engine_step(me.e), MLLM_OK);
    assert_true(o[0].finished);
    assert_int_equal(o[0].res.finish, MLLM_ENGINE_CANCELLED);
    assert_true(o[0].n >= 2 && o[0].n < 20);
    run_to_end(me.e);
    assert_int_equal(o[2].res.finish, MLLM_ENGINE_LENGTH);
    assert_int_equal(o[2].n, 4);
    check_blocks_free(me.e);
    /* a prompt that cannot fit the context is refused at submit */
    int32_t big[64] = {0};
    mllm_sampling sp = sampling_of(0, 4);
    mllm_engine_request r = {.prompt = big, .n_prompt = 64, .sampling = &sp};
    assert_int_equal(mllm_engine_submit(me.e, &r), MLLM_ERR_CONTEXT_FULL);
    mllm_model_engine_close(&me);
    /* a pool smaller than one context is refused */
    mllm_engine_params p = {.max_running = 1, .n_ctx = 64, .n_blocks = 4, .block_size = 16};
    assert_int_equal(mllm_model_engine_open(m, &p, 1, &me), MLLM_ERR_INVALID_ARG);
    mllm_model_free(m);
}

/* Speculation: four sequences stepped together, with proposals whenever
   they can (MLLM_SPEC_ALWAYS), give each one's tokens without speculation,
   alone. The proposer is prompt lookup, or (`known`) one that proposes a
   sequence's true continuation (its tokens alone) with one token wrong at
   a place that moves with the position, so runs of every length are kept
   and refused. Then requests through the blocks they registered (prompt +
   generated text) answer as fresh ones: refused K/V was never registered. */
enum { NP = 18, NG = 40 };

typedef struct {
    int32_t pr[NSEQ][NP];
    out_t alone[NSEQ];
    int V, calls;
} known_t;

static int propose_known(void *user, const int32_t *ctx, int n, int cap, const mllm_spec_price *price,
                         int32_t *out) {
    (void)price;
    known_t *k = user;
    int s = 0;
    while (s < NSEQ && memcmp(ctx, k->pr[s], sizeof k->pr[s])) s++;
    if (s == NSEQ || n <= NP) fail_msg("propose: an unknown context of %d tokens", n);
    const int g = n - NP; /* generated so far, the pending token included */
    if (cap > NG - g) cap = NG - g;
    const int wrong = (g * 7 + s * 3) % (cap + 2); /* >= cap: all right */
    for (int i = 0; i < cap; i++) out[i] = (k->alone[s].toks[g + i] + (i == wrong)) % k->V;
    k->calls++;
    return cap;
}

/* The prompts, and each one's NG tokens alone without speculation. */
static void known_alone(mllm_model *m, int kv_dtype, known_t *kn, mllm_sampling *sp) {
    kn->V = m->dec.cfg.n_vocab;
    for (int s = 0; s < NSEQ; s++)
        for (int i = 0; i < NP; i++) kn->pr[s][i] = (int32_t)(((i % (3 + s)) * (17 + 4 * s) + 3 * s + 1) % kn->V);
    for (int s = 0; s < NSEQ; s++) {
        sp[s] = sampling_of(s, NG);
        mllm_model_engine me = open_engine_spec(m, 1, 5, 512, kv_dtype, MLLM_SPEC_OFF);
        mllm_engine_request r = {.prompt = kn->pr[s], .n_prompt = NP, .sampling = &sp[s], .on_token = on_token,
                                 .on_finish = on_finish, .user = &kn->alone[s]};
        assert_int_equal(mllm_engine_submit(me.e, &r), MLLM_OK);
        run_to_end(me.e);
        mllm_engine_stats st;
        mllm_engine_get_stats(me.e, &st);
        assert_int_equal(st.spec_passes, 0);
        assert_int_equal(kn->alone[s].n, NG);
        mllm_model_engine_close(&me);
    }
}

static void check_speculation(const char *arch, const char *wtype, int kv_dtype, bool known, uint64_t *refused) {
    mllm_model *m = synth(arch, wtype);
    known_t kn = {0};
    out_t mixed[NSEQ] = {0};
    mllm_sampling sp[NSEQ];
    known_alone(m, kv_dtype, &kn, sp);
    mllm_engine_params p = {.max_running = NSEQ, .n_ctx = 64, .n_blocks = 40, .block_size = 16,
                            .kv_dtype = kv_dtype, .spec_mode = MLLM_SPEC_ALWAYS,
                            .propose = known ? propose_known : NULL, .propose_user = &kn};
    mllm_model_engine me;
    if (mllm_model_engine_open(m, &p, 2, &me) != MLLM_OK) fail_msg("engine: %s", mllm_last_error());
    for (int s = 0; s < NSEQ; s++) {
        mllm_engine_request r = {.prompt = kn.pr[s], .n_prompt = NP, .sampling = &sp[s], .on_token = on_token,
                                 .on_finish = on_finish, .user = &mixed[s]};
        assert_int_equal(mllm_engine_submit(me.e, &r), MLLM_OK);
    }
    run_to_end(me.e);
    mllm_engine_stats st;
    mllm_engine_get_stats(me.e, &st);
    printf("# %s %s kv %d %s: %llu passes, %llu of %llu proposals kept, %llu steps for %d tokens\n", arch, wtype,
           kv_dtype, known ? "known" : "lookup", (unsigned long long)st.spec_passes,
           (unsigned long long)st.spec_accepted, (unsigned long long)st.spec_drafted, (unsigned long long)st.steps,
           NSEQ * NG);
    assert_true(st.spec_accepted > 0); /* kept: tokens came without a step of their own */
    if (known) assert_true(st.steps < NG / 2);
    *refused += st.spec_drafted - st.spec_accepted;
    assert_int_equal(st.tokens_generated, NSEQ * NG);
    check_blocks_free(me.e);
    for (int s = 0; s < NSEQ; s++) {
        assert_int_equal(mixed[s].n, NG);
        if (memcmp(mixed[s].toks, kn.alone[s].toks, sizeof kn.alone[s].toks))
            fail_msg("%s %s kv %d: sequence %d differs with speculation", arch, wtype, kv_dtype, s);
    }
    /* Each prompt plus most of what it said, through the registered
       blocks, answers as a fresh engine does. */
    p.spec_mode = MLLM_SPEC_OFF;
    for (int s = 0; s < NSEQ; s++) {
        int32_t again[NP + NG];
        memcpy(again, kn.pr[s], sizeof kn.pr[s]);
        memcpy(again + NP, kn.alone[s].toks, (NG - 6) * sizeof(int32_t));
        mllm_sampling sp1 = sampling_of(s, 6);
        out_t o = {0}, f = {0};
        mllm_engine_request r = {.prompt = again, .n_prompt = NP + NG - 6, .sampling = &sp1, .on_token = on_token,
                                 .on_finish = on_finish, .user = &o};
        assert_int_equal(mllm_engine_submit(me.e, &r), MLLM_OK);
        run_to_end(me.e);
        assert_true(o.res.n_cached >= 32);
        mllm_model_engine fresh;
        if (mllm_model_engine_open(m, &p, 2, &fresh) != MLLM_OK) fail_msg("engine: %s", mllm_last_error());
        r.user = &f;
        assert_int_equal(mllm_engine_submit(fresh.e, &r), MLLM_OK);
        run_to_end(fresh.e);
        mllm_model_engine_close(&fresh);
        assert_int_equal(f.res.n_cached, 0);
        assert_int_equal(f.n, o.n);
        if (memcmp(f.toks, o.toks, sizeof f.toks))
            fail_msg("%s %s kv %d: sequence %d's registered blocks answer otherwise", arch, wtype, kv_dtype, s);
    }
    mllm_model_engine_close(&me);
    mllm_model_free(m);
}

static void test_speculation(void **state) {
    (void)state;
    uint64_t refused = 0;
    check_speculation("qwen3", "q8_0", MLLM_KV_DTYPE_F32, true, &refused);
    check_speculation("llama", "f32", MLLM_KV_DTYPE_Q8, true, &refused);
    check_speculation("gemma3", "q8_0", MLLM_KV_DTYPE_F16, true, &refused); /* sliding-window layers */
    assert_true(refused > 0);
    check_speculation("gemma3", "q8_0", MLLM_KV_DTYPE_F32, false, &refused); /* prompt lookup itself */
}

/* A proposer right at 60% of positions (the same ones whenever asked): the
   true continuation with a token off where (position * 7 + s * 3) % 5 < 2. */
static int propose_often(void *user, const int32_t *ctx, int n, int cap, const mllm_spec_price *price,
                         int32_t *out) {
    (void)price;
    known_t *k = user;
    int s = 0;
    while (s < NSEQ && memcmp(ctx, k->pr[s], sizeof k->pr[s])) s++;
    if (s == NSEQ || n < NP) fail_msg("propose: an unknown context of %d tokens", n);
    const int g = n - NP; /* (0: a prompt found whole in the cache, its last token evaluated again) */
    if (cap > NG - g) cap = NG - g;
    for (int i = 0; i < cap; i++) out[i] = (k->alone[s].toks[g + i] + (((g + i) * 7 + s * 3) % 5 < 2)) % k->V;
    return cap > 0 ? cap : 0;
}

/* Injected step times (no clock): a row nearly as dear as a whole step of
   one token, or nearly free beside it. */
static double rows_dear(void *user, int n_tokens) { (void)user; return 0.1 + 10.0 * n_tokens; }
static double rows_cheap(void *user, int n_tokens) { (void)user; return 10.0 + 0.1 * n_tokens; }

/* MLLM_SPEC_AUTO weighs a proposal against what its row costs the step.
   After requests of 8, 16, 24 and 32 tokens (batches of 4 down to 1, so
   the fit of step time has a slope), four requests with that proposer:
   where rows are dear nothing is verified (every proposal is only
   compared with the token that came), where they are cheap proposals are
   verified and kept (at the prior's cost, a floor). The text is the same
   either way. */
static void test_speculation_weighs_cost(void **state) {
    (void)state;
    mllm_model *m = synth("qwen3", "q8_0");
    known_t kn = {0};
    mllm_sampling sp[NSEQ];
    known_alone(m, MLLM_KV_DTYPE_F32, &kn, sp);
    for (int dear = 0; dear < 2; dear++) {
        mllm_engine_params p = {.max_running = NSEQ, .n_ctx = 64, .n_blocks = 40, .block_size = 16,
                                .spec_mode = MLLM_SPEC_AUTO, .propose = propose_often, .propose_user = &kn,
                                .step_ms = dear ? rows_dear : rows_cheap};
        mllm_model_engine me;
        if (mllm_model_engine_open(m, &p, 2, &me) != MLLM_OK) fail_msg("engine: %s", mllm_last_error());
        out_t warm[NSEQ] = {0}, got[NSEQ] = {0};
        mllm_sampling sw[NSEQ];
        for (int s = 0; s < NSEQ; s++) {
            sw[s] = sampling_of(s, 8 * (s + 1));
            mllm_engine_request r = {.prompt = kn.pr[s], .n_prompt = NP, .sampling = &sw[s], .on_token = on_token,
                                     .on_finish = on_finish, .user = &warm[s]};
            assert_int_equal(mllm_engine_submit(me.e, &r), MLLM_OK);
        }
        run_to_end(me.e);
        mllm_engine_stats st0, st;
        mllm_engine_get_stats(me.e, &st0);
        for (int s = 0; s < NSEQ; s++) {
            mllm_engine_request r = {.prompt = kn.pr[s], .n_prompt = NP, .sampling = &sp[s], .on_token = on_token,
                                     .on_finish = on_finish, .user = &got[s]};
            assert_int_equal(mllm_engine_submit(me.e, &r), MLLM_OK);
        }
        run_to_end(me.e);
        mllm_engine_get_stats(me.e, &st);
        const uint64_t passes = st.spec_passes - st0.spec_passes, kept = st.spec_accepted - st0.spec_accepted,
                       checked = st.spec_checked - st0.spec_checked, steps = st.steps - st0.steps;
        printf("# rows %s: %llu passes kept %llu, %llu proposals only checked (%llu right), %llu steps\n",
               dear ? "dear" : "cheap", (unsigned long long)passes, (unsigned long long)kept,
               (unsigned long long)checked, (unsigned long long)(st.spec_checked_kept - st0.spec_checked_kept),
               (unsigned long long)steps);
        if (dear) {
            assert_int_equal(passes, 0);
            assert_true(checked >= NSEQ * (NG - 4)); /* about one per token */
        } else {
            assert_true(passes > 0 && kept > 0);
            assert_true(steps < NG);
        }
        for (int s = 0; s < NSEQ; s++) {
            assert_int_equal(got[s].n, NG);
            if (memcmp(got[s].toks, kn.alone[s].toks, sizeof got[s].toks))
                fail_msg("rows %s: sequence %d differs", dear ? "dear" : "cheap", s);
        }
        check_blocks_free(me.e);
        mllm_model_engine_close(&me);
    }
    mllm_model_free(m);
}

/* Freeing an engine ends what runs and waits, each once. */
static void test_free_ends_all(void **state) {
    (void)state;
    mllm_model *m = synth("qwen3", "q8_0");
    const int V = m->dec.cfg.n_vocab;
    mllm_model_engine me = open_engine(m, 1, 10, 512, MLLM_KV_DTYPE_F32);
    out_t o[2] = {0};
    submit(me.e, 0, V, 20, &o[0], NULL);
    submit(me.e, 1, V, 20, &o[1], NULL);
    assert_int_equal(mllm_engine_step(me.e), MLLM_OK);
    mllm_model_engine_close(&me);
    for (int k = 0; k < 2; k++) {
        assert_true(o[k].finished);
        assert_int_equal(o[k].res.finish, MLLM_ENGINE_CANCELLED);
    }
    mllm_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_together), cmocka_unit_test(test_prefix_reuse),
                                       cmocka_unit_test(test_cancel_and_wait), cmocka_unit_test(test_free_ends_all),
                                       cmocka_unit_test(test_speculation), cmocka_unit_test(test_speculation_weighs_cost),
                                       cmocka_unit_test(test_shared_prefill)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
