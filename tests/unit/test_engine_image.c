/* The engine serves images (engine.h), on the tiny random Qwen2.5-VL
   (M-RoPE: the prompt's 3-row positions, the text after it moved on) and
   the tiny SmolVLM (a tiled tower, plain RoPE): a sequence with an image
   gives the greedy tokens and the log-probabilities of a session's
   mllm_chat_prefill + mllm_generate_ids (contiguous KV, f32, exact: the
   same bits), alone and stepped beside others: the same image again (the
   prefix cache shares its blocks, image included), the same picture as a
   JPEG (same size, so the same tokens but other rows: no block from its
   image on is shared, and it answers as it does alone), and a text
   prompt. A prompt chunk smaller than the prompt puts image rows in
   steps beside decodes; a pool too small for all of them preempts
   sequences, which are recomputed from their tokens and image rows. The
   prefix store keeps an image's blocks: a new engine on its folder takes
   them for the same image, never for another.
   Penalties count an image's tokens as the session does; images that do
   not match the prompt's image tokens are refused. */
#include <stdlib.h>
#include <string.h>
#include "api/engine_api.h"
#include "api/internal.h"
#include "testutil.h"

#define NGEN 40
#define IMG_CONV "[{\"role\":\"user\",\"content\":[{\"type\":\"image\"},{\"type\":\"text\",\"text\":\"What is this?\"}]}]"
#define TEXT_CONV "[{\"role\":\"user\",\"content\":\"What is a photo?\"}]"

typedef struct {
    int32_t toks[NGEN];
    float lp[NGEN];
    int n, n_lp;
    bool finished;
    mllm_engine_result res;
} out_t;

static int on_token(void *user, int32_t id, const char *piece, size_t len) {
    (void)piece, (void)len;
    out_t *o = user;
    if (id >= 0 && o->n < NGEN) o->toks[o->n++] = id;
    return 0;
}

static void on_logprobs(void *user, int32_t id, float lp, const int32_t *top_ids, const float *top_lp, int n_top) {
    (void)id, (void)top_ids, (void)top_lp, (void)n_top;
    out_t *o = user;
    if (o->n_lp < NGEN) o->lp[o->n_lp++] = lp;
}

static void on_finish(void *user, const mllm_engine_result *r) {
    out_t *o = user;
    assert_false(o->finished);
    o->finished = true;
    o->res = *r;
}

/* freq: the frequency penalty (negative: a bonus), over a window that
   holds the image's tokens. */
static mllm_sampling greedy(out_t *o, float freq) {
    mllm_sampling sp;
    mllm_sampling_default(&sp);
    sp.max_tokens = NGEN;
    sp.temperature = 0;
    sp.ignore_eos = 1;
    sp.repeat_penalty = 1.3f;
    sp.frequency_penalty = freq;
    sp.repeat_last_n = 256;
    sp.on_logprobs = on_logprobs;
    sp.logprobs_user = o;
    sp.n_top_logprobs = 1;
    return sp;
}

static mllm_model *open_model(const char *rel) {
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 1;
    lp.exact = 1;
    mllm_model *m = NULL;
    if (mllm_model_load(tu_datap(rel), &lp, &m) != MLLM_OK) fail_msg("%s", mllm_last_error());
    return m;
}

/* The session's answer: the conversation prefilled (with img, or none),
   then NGEN greedy tokens. */
static void session_answer(mllm_model *m, const char *conv, const void *img, size_t len, float freq, out_t *o) {
    mllm_session_params p;
    mllm_session_default_params(&p);
    p.n_ctx = 512;
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, &p, &s), MLLM_OK);
    const void *im[1] = {img};
    const size_t lens[1] = {len};
    mllm_status st = mllm_chat_prefill(s, conv, im, lens, img ? 1 : 0, NULL);
    if (st) fail_msg("prefill: %s", mllm_last_error());
    memset(o, 0, sizeof *o);
    mllm_sampling sp = greedy(o, freq);
    assert_int_equal(mllm_generate_ids(s, NULL, 0, &sp, on_token, o), MLLM_OK);
    assert_int_equal(o->n, NGEN);
    mllm_session_free(s);
}

typedef struct {
    mllm_engine_image_prompt *ip; /* NULL: text */
    int32_t ids[512];
    int n;
    mllm_sampling sp;
    out_t out;
} req_t;

static void make_req(mllm_model *m, req_t *r, const void *img, size_t len, float freq) {
    memset(r, 0, sizeof *r);
    if (img) {
        const void *im[1] = {img};
        const size_t lens[1] = {len};
        if (mllm_engine_image_prompt_new(m, IMG_CONV, im, lens, 1, 511, &r->ip)) fail_msg("%s", mllm_last_error());
    } else {
        size_t n = 0;
        assert_int_equal(mllm_chat_tokenize(m, TEXT_CONV, r->ids, 512, &n), MLLM_OK);
        r->n = (int)n;
    }
    r->sp = greedy(&r->out, freq);
}

static void submit(mllm_engine *e, req_t *r) {
    mllm_engine_request q = {.prompt = r->ip ? r->ip->ids : r->ids, .n_prompt = r->ip ? r->ip->n : r->n,
                             .sampling = &r->sp, .image = r->ip ? &r->ip->image : NULL, .on_token = on_token,
                             .on_finish = on_finish, .user = &r->out};
    assert_int_equal(mllm_engine_submit(e, &q), MLLM_OK);
}

/* n_blocks 0: room for every sequence's whole context. */
static mllm_model_engine open_engine(mllm_model *m, int max_running, int chunk, int n_ctx, int n_blocks) {
    mllm_engine_params p = {.max_running = max_running, .n_ctx = n_ctx,
                            .n_blocks = n_blocks ? n_blocks : max_running * (n_ctx / 16) + 1, .block_size = 16,
                            .kv_dtype = MLLM_KV_DTYPE_F32, .prefill_chunk = chunk};
    mllm_model_engine me;
    if (mllm_model_engine_open(m, &p, 1, &me) != MLLM_OK) fail_msg("engine: %s", mllm_last_error());
    return me;
}

/* Returns the preemptions. */
static uint64_t run_to_end(mllm_engine *e) {
    for (int i = 0; i < 10000 && !mllm_engine_idle(e); i++) assert_int_equal(mllm_engine_step(e), MLLM_OK);
    assert_true(mllm_engine_idle(e));
    mllm_engine_stats st;
    mllm_engine_get_stats(e, &st);
    assert_int_equal(st.blocks_used, 0);
    return st.preemptions;
}

static void same_answer(const out_t *got, const out_t *want, const char *what) {
    assert_true(got->finished);
    assert_int_equal(got->res.finish, MLLM_ENGINE_LENGTH);
    assert_int_equal(got->n, NGEN);
    assert_int_equal(got->n_lp, NGEN);
    for (int i = 0; i < NGEN; i++)
        if (got->toks[i] != want->toks[i] || got->lp[i] != want->lp[i])
            fail_msg("%s: token %d is %d (logprob %.9g), the session's %d (%.9g)", what, i, got->toks[i],
                     (double)got->lp[i], want->toks[i], (double)want->lp[i]);
}

/* The first and one past the last image token of r's prompt. */
static void image_span(const req_t *r, int *first, int *end) {
    *first = -1;
    *end = 0;
    for (int i = 0; i < r->ip->n; i++)
        if (r->ip->ids[i] == r->ip->image.image_token) {
            if (*first < 0) *first = i;
            *end = i + 1;
        }
    assert_true(*first >= 0);
}

/* Images that do not match the prompt are refused at submit, nothing queued. */
static void check_refusals(mllm_model *m, const req_t *r) {
    mllm_model_engine me = open_engine(m, 1, 512, 512, 0);
    int64_t rows = r->ip->n_rows[0] - 1;
    mllm_engine_image im = r->ip->image;
    im.n_rows = &rows;
    out_t o = {0};
    mllm_sampling sp = greedy(&o, 0);
    mllm_engine_request q = {.prompt = r->ip->ids, .n_prompt = r->ip->n, .sampling = &sp, .image = &im,
                             .on_token = on_token, .on_finish = on_finish, .user = &o};
    assert_int_equal(mllm_engine_submit(me.e, &q), MLLM_ERR_INVALID_ARG); /* one token too many */
    rows += 2;
    assert_int_equal(mllm_engine_submit(me.e, &q), MLLM_ERR_INVALID_ARG); /* one row too many */
    im = r->ip->image;
    const uint64_t zero = 0;
    im.id = &zero;
    assert_int_equal(mllm_engine_submit(me.e, &q), MLLM_ERR_INVALID_ARG); /* no identity */
    if (!im.rope_pos) { /* plain RoPE: no M-RoPE positions */
        im = r->ip->image;
        im.rope_pos = r->ip->ids;
        assert_int_equal(mllm_engine_submit(me.e, &q), MLLM_ERR_INVALID_ARG);
    }
    assert_true(mllm_engine_idle(me.e));
    assert_false(o.finished);
    mllm_model_engine_close(&me);
}

/* One request on a new engine with the prefix store in dir (a server's
   start); its stats in *st. */
static void store_run(mllm_model *m, req_t *r, const char *dir, mllm_engine_stats *st) {
    mllm_engine_params p = {.max_running = 1, .n_ctx = 512, .n_blocks = 512 / 16 + 1, .block_size = 16,
                            .kv_dtype = MLLM_KV_DTYPE_F32, .store_dir = dir, .store_bytes = 16u << 20};
    mllm_model_engine me;
    if (mllm_model_engine_open(m, &p, 1, &me) != MLLM_OK) fail_msg("engine: %s", mllm_last_error());
    submit(me.e, r);
    run_to_end(me.e);
    mllm_engine_get_stats(me.e, st);
    mllm_model_engine_close(&me);
}

/* The prefix store holds an image's blocks (keyed by the image's identity,
   the same in every process): after a restart the same image takes its
   blocks from the store, another image of the same size only the text
   before it, and both answer as the session does. */
static void check_store(mllm_model *m, const void *png, size_t png_len, const void *jpg, size_t jpg_len,
                        const out_t *want_png, const out_t *want_jpg, const char *dir) {
    req_t r;
    mllm_engine_stats st;
    make_req(m, &r, png, png_len, 0.5f);
    int first, end;
    image_span(&r, &first, &end);
    store_run(m, &r, dir, &st);
    same_answer(&r.out, want_png, "png, writing the store");
    assert_int_equal(r.out.res.n_cached, 0);
    assert_true(st.store_writes >= (uint64_t)(end / 16)); /* the image's blocks among them */
    mllm_engine_image_prompt_free(r.ip);
    make_req(m, &r, jpg, jpg_len, 0.5f);
    store_run(m, &r, dir, &st);
    same_answer(&r.out, want_jpg, "jpg after a restart");
    assert_true(r.out.res.n_cached <= first);
    assert_int_equal(st.store_hit_blocks * 16, (uint64_t)r.out.res.n_cached);
    mllm_engine_image_prompt_free(r.ip);
    make_req(m, &r, png, png_len, 0.5f);
    store_run(m, &r, dir, &st);
    same_answer(&r.out, want_png, "png after a restart, from the store");
    assert_true(r.out.res.n_cached >= end - end % 16);
    assert_true(st.store_hit_blocks >= (uint64_t)(end / 16));
    mllm_engine_image_prompt_free(r.ip);
}

static void check_model(const char *rel) {
    size_t png_len = 0, jpg_len = 0;
    void *png = tu_read_file(tu_datap("images/photo.png"), &png_len);
    void *jpg = tu_read_file(tu_datap("images/photo.jpg"), &jpg_len);
    mllm_model *m = open_model(rel);
    out_t want_png, want_jpg, want_text, want_bonus;
    session_answer(m, IMG_CONV, png, png_len, 0.5f, &want_png);
    session_answer(m, IMG_CONV, jpg, jpg_len, 0.5f, &want_jpg);
    session_answer(m, TEXT_CONV, NULL, 0, 0.5f, &want_text);
    /* a bonus for the tokens in the window, the image's among them: the
       image token wins, as the session counts it */
    session_answer(m, IMG_CONV, png, png_len, -2.0f, &want_bonus);
    /* not vacuous: the two images answer differently */
    assert_true(memcmp(want_png.toks, want_jpg.toks, sizeof want_png.toks) != 0 ||
                memcmp(want_png.lp, want_jpg.lp, sizeof want_png.lp) != 0);

    req_t alone;
    make_req(m, &alone, png, png_len, 0.5f);
    mllm_model_engine me = open_engine(m, 1, 512, 512, 0);
    submit(me.e, &alone);
    run_to_end(me.e);
    mllm_model_engine_close(&me);
    same_answer(&alone.out, &want_png, "alone");
    assert_int_equal(alone.out.res.n_cached, 0);
    check_refusals(m, &alone);
    req_t bonus;
    make_req(m, &bonus, png, png_len, -2.0f);
    me = open_engine(m, 1, 512, 512, 0);
    submit(me.e, &bonus);
    run_to_end(me.e);
    mllm_model_engine_close(&me);
    same_answer(&bonus.out, &want_bonus, "a bonus for the window's tokens");
    assert_int_equal(bonus.out.toks[0], bonus.ip->image.image_token);
    mllm_engine_image_prompt_free(bonus.ip);

    /* Together, in 48-token prompt chunks beside the decodes; then in a
       pool of 12 blocks (a context of 176 takes 11): the repeated image
       shares the first's prompt blocks, so both run, and their answers
       take more blocks than are left. */
    for (int round = 0; round < 2; round++) {
        req_t r[4];
        make_req(m, &r[0], png, png_len, 0.5f);
        make_req(m, &r[1], jpg, jpg_len, 0.5f);
        make_req(m, &r[2], png, png_len, 0.5f);
        make_req(m, &r[3], NULL, 0, 0.5f);
        assert_int_equal(r[0].ip->n, r[1].ip->n); /* the same tokens: only the rows tell the images apart */
        me = round == 0 ? open_engine(m, 4, 48, 512, 0) : open_engine(m, 4, 48, 176, 12);
        for (int i = 0; i < 4; i++) submit(me.e, &r[i]);
        const uint64_t preempted = run_to_end(me.e);
        mllm_model_engine_close(&me);
        if (round == 1) assert_true(preempted > 0);
        same_answer(&r[0].out, &want_png, "png");
        same_answer(&r[1].out, &want_jpg, "jpg beside png");
        same_answer(&r[2].out, &want_png, "png again");
        same_answer(&r[3].out, &want_text, "text beside images");
        if (round == 0) {
            int first, end;
            image_span(&r[0], &first, &end);
            /* the same image shares the blocks past it; the other image none from its own on */
            assert_true(r[2].out.res.n_cached >= end - end % 16 && r[2].out.res.n_cached > first);
            assert_true(r[1].out.res.n_cached <= first);
        }
        for (int i = 0; i < 3; i++) mllm_engine_image_prompt_free(r[i].ip);
    }
    char *dir = (char *)tu_tmp(rel[0] == 'q' ? "store-qwen2vl" : "store-smolvlm");
    check_store(m, png, png_len, jpg, jpg_len, &want_png, &want_jpg, dir);
    free(dir);
    mllm_engine_image_prompt_free(alone.ip);
    mllm_model_free(m);
    free(png);
    free(jpg);
}

static void test_qwen2vl(void **state) {
    (void)state;
    check_model("qwen2vl/tiny");
}

static void test_smolvlm(void **state) {
    (void)state;
    check_model("smolvlm/tiny");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen2vl),
        cmocka_unit_test(test_smolvlm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
