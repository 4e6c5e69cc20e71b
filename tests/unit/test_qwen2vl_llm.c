/* Qwen2.5-VL's language model against transformers, on the tiny random
   Qwen2.5-VL of tools/reference/make_qwen2_5_vl_tiny.py (tests/data/qwen2vl/
   tiny: bf16 throughout, norms and biases too, like real checkpoints; the
   vision tower's tensors among them, a 5-D patch kernel included), f32
   activations (exact):
   - text alone (M-RoPE's three rows equal: Qwen2's rotation): the logits
     of all 14 positions of a prompt; measured NMSE 3e-13;
   - an image: the vision tower embeds photo.png (77 tokens, a 7 x 11
     merged grid), the session takes the prompt with those rows in place of
     its image tokens and M-RoPE's three position rows
     (mllm_session_eval_image), then two more text tokens through the plain
     decode path, which must keep the rotation offset the image left (NMSE
     0.15 without it); measured NMSE 6e-13.
   Bound NMSE 1e-8 per position. */
#include "testutil.h"
#include "api/internal.h"
#include "core/alloc.h"
#include "image/image.h"
#include "image/qwen2vl_pre.h"
#include "models/vision/qwen2vl_vision.h"
#include <stdlib.h>
#include <string.h>

/* The tiny model with f32 activations, and a session of n_ctx tokens. */
static void open_exact(int n_ctx, mllm_model **m, mllm_session **s) {
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 1;
    lp.exact = 1;
    if (mllm_model_load(tu_datap("qwen2vl/tiny"), &lp, m) != MLLM_OK) fail_msg("%s", mllm_last_error());
    assert_int_equal(mllm_model_n_vocab(*m), 1024);
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = n_ctx;
    assert_int_equal(mllm_session_new(*m, &sp, s), MLLM_OK);
}

static void test_text_logits(void **state) {
    (void)state;
    size_t len = 0;
    char *txt = tu_read_file(tu_datap("qwen2vl/text_logits.txt"), &len);
    int32_t ids[64];
    const int n = tu_read_ints(txt, "\n", ids, 64);
    free(txt);
    assert_int_equal(n, 14);
    float *want = tu_read_file(tu_datap("qwen2vl/text_logits.f32"), &len);
    assert_int_equal(len, (size_t)n * 1024 * sizeof(float));
    mllm_model *m = NULL;
    mllm_session *s = NULL;
    open_exact(32, &m, &s);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(mllm_session_eval(s, ids + i, 1), MLLM_OK);
        double e = tu_nmse(mllm_session_logits(s), want + (size_t)i * 1024, 1024);
        if (e > worst) worst = e;
    }
    print_message("text logits vs transformers: largest NMSE %.3g over %d positions\n", worst, n);
    assert_true(worst < 1e-8);
    mllm_session_free(s);
    mllm_model_free(m);
    free(want);
}

static void test_image_prompt_logits(void **state) {
    (void)state;
    size_t len = 0;
    char *txt = tu_read_file(tu_datap("qwen2vl/image_logits.txt"), &len);
    int32_t ids[512], extra[8], g[3];
    const int n = tu_read_ints(txt, "\nids ", ids, 512), ne = tu_read_ints(txt, "\nextra ", extra, 8);
    assert_int_equal(tu_read_ints(txt, "\ngrid ", g, 3), 3);
    free(txt);
    float *want = tu_read_file(tu_datap("qwen2vl/image_logits.f32"), &len);
    assert_int_equal(len, 8 * 1024 * sizeof(float));
    assert_int_equal(ne, 2);

    mllm_model *m = NULL;
    mllm_session *s = NULL;
    open_exact(128, &m, &s);
    mllm_qwen2vl_vision *v = NULL;
    assert_int_equal(mllm_qwen2vl_vision_open(tu_datap("qwen2vl/tiny"), 1, &v), MLLM_OK);
    mllm_image im;
    assert_int_equal(mllm_image_load(tu_datap("images/photo.png"), 0, &im, NULL), MLLM_OK);
    mllm_qwen2vl_pre_params pp;
    mllm_qwen2vl_vision_pre_params(v, &pp);
    pp.max_pixels = 12845056;
    mllm_qwen2vl_pixels px;
    assert_int_equal(mllm_qwen2vl_preprocess(&im, &pp, &px), MLLM_OK);
    assert_int_equal(px.grid_h, g[1]);
    assert_int_equal(px.grid_w, g[2]);
    float *emb = NULL;
    int64_t n_emb = 0;
    assert_int_equal(mllm_qwen2vl_vision_encode(v, &px, &emb, &n_emb), MLLM_OK);

    mllm_status st = mllm_session_eval_image(s, ids, (size_t)n, 261, emb, n_emb, g, 1, 2);
    if (st) fail_msg("%s", mllm_last_error());
    double e0 = tu_nmse(mllm_session_logits(s), want + 5 * 1024, 1024);
    assert_int_equal(mllm_session_eval(s, extra, 1), MLLM_OK);
    double e1 = tu_nmse(mllm_session_logits(s), want + 6 * 1024, 1024);
    assert_int_equal(mllm_session_eval(s, extra + 1, 1), MLLM_OK);
    double e2 = tu_nmse(mllm_session_logits(s), want + 7 * 1024, 1024);
    print_message("image prompt logits vs transformers: NMSE %.3g (prompt end), %.3g, %.3g (after)\n", e0, e1, e2);
    assert_true(e0 < 1e-8 && e1 < 1e-8 && e2 < 1e-8);
    /* the image cannot be recomputed from its token ids; the text before it can */
    assert_int_equal(mllm_session_sync(s, ids, (size_t)n, NULL), MLLM_OK); /* all kept: the last token again */
    assert_int_equal(mllm_session_sync(s, ids, 20, NULL), MLLM_ERR_UNSUPPORTED); /* cut inside the image */
    assert_int_equal(mllm_session_sync(s, ids, 3, NULL), MLLM_OK);
    /* a wrong number of rows */
    mllm_session_reset(s);
    assert_int_equal(mllm_session_eval_image(s, ids, (size_t)n, 261, emb, n_emb - 1, g, 1, 2), MLLM_ERR_INVALID_ARG);

    mllm_session_free(s);
    mllm_free(emb);
    mllm_qwen2vl_pixels_free(&px);
    mllm_image_free(&im);
    mllm_qwen2vl_vision_free(v);
    mllm_model_free(m);
    free(want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_logits),
        cmocka_unit_test(test_image_prompt_logits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
