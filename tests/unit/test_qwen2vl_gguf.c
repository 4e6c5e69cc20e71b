/* The GGUF pair of the tiny Qwen2.5-VL as llama.cpp's convert_hf_to_gguf.py
   writes it (tools/reference/make_qwen2_5_vl_tiny_gguf.py; committed
   compressed in tests/data/qwen2vl/gguf, unpacked into the build folder by
   the qwen2vl_gguf_unpack fixture):
   - the mmproj's tower has the HF folder's config (n_wa_pattern 2 = full
     attention at blocks 1 and 3) and preprocessing, and embeds photo.png
     into exactly the HF tower's rows (bit for bit: the same bf16 weights;
     q/k/v joined and the two-frame patch kernel rebuilt from llama.cpp's
     layout), which match transformers' (NMSE < 1e-8, vision_photo.f32);
   - text.gguf + mmproj through mllm_load_params.mmproj and
     mllm_chat_prefill give the HF folder's logits bit for bit;
   - a text GGUF given as mmproj, a missing file: clear errors. */
#include "testutil.h"
#include "core/alloc.h"
#include "image/image.h"
#include "image/qwen2vl_pre.h"
#include "models/vision/qwen2vl_vision.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIR MLLM_BINARY_DIR "/qwen2vl_gguf/"
#define CONV "[{\"role\":\"user\",\"content\":[{\"type\":\"image\"},{\"type\":\"text\",\"text\":\"What is this?\"}]}]"

static bool have_pair(void) {
    FILE *f = fopen(DIR "mmproj.gguf", "rb");
    if (f) fclose(f);
    if (!f) print_message("SKIPPED: %smmproj.gguf absent (ctest runs the qwen2vl_gguf_unpack fixture)\n", DIR);
    return f != NULL;
}

static float *embed(mllm_qwen2vl_vision *v, int64_t *n) {
    mllm_image im;
    assert_int_equal(mllm_image_load(tu_datap("images/photo.png"), 0, &im, NULL), MLLM_OK);
    mllm_qwen2vl_pre_params pp;
    mllm_qwen2vl_vision_pre_params(v, &pp);
    mllm_qwen2vl_pixels px;
    assert_int_equal(mllm_qwen2vl_preprocess(&im, &pp, &px), MLLM_OK);
    float *e = NULL;
    assert_int_equal(mllm_qwen2vl_vision_encode(v, &px, &e, n), MLLM_OK);
    mllm_qwen2vl_pixels_free(&px);
    mllm_image_free(&im);
    return e;
}

static void test_tower(void **state) {
    (void)state;
    if (!have_pair()) return;
    mllm_qwen2vl_vision *g = NULL, *h = NULL;
    mllm_status st = mllm_qwen2vl_vision_open_gguf(DIR "mmproj.gguf", 1, &g);
    if (st) fail_msg("%s", mllm_last_error());
    assert_int_equal(mllm_qwen2vl_vision_open(tu_datap("qwen2vl/tiny"), 1, &h), MLLM_OK);
    const mllm_qwen2vl_vision_config *cg = mllm_qwen2vl_vision_config_of(g), *ch = mllm_qwen2vl_vision_config_of(h);
    assert_int_equal(cg->depth, ch->depth);
    assert_int_equal(cg->hidden, ch->hidden);
    assert_int_equal(cg->intermediate, ch->intermediate);
    assert_int_equal(cg->heads, ch->heads);
    assert_int_equal(cg->out_hidden, ch->out_hidden);
    assert_int_equal(cg->window, ch->window);
    assert_int_equal(cg->temporal, ch->temporal);
    assert_int_equal(cg->n_fullatt, 2);
    assert_memory_equal(cg->fullatt, ch->fullatt, 2 * sizeof(int));
    assert_true(cg->rope_theta == ch->rope_theta);
    mllm_qwen2vl_pre_params pg, ph;
    mllm_qwen2vl_vision_pre_params(g, &pg);
    mllm_qwen2vl_vision_pre_params(h, &ph);
    assert_int_equal(pg.min_pixels, ph.min_pixels);
    assert_int_equal(pg.max_pixels, ph.max_pixels);
    for (int c = 0; c < 3; c++) assert_true(pg.mean[c] == ph.mean[c] && pg.std[c] == ph.std[c]);
    int64_t ng = 0, nh = 0;
    float *eg = embed(g, &ng), *eh = embed(h, &nh);
    assert_int_equal(ng, 77);
    assert_int_equal(nh, 77);
    assert_memory_equal(eg, eh, (size_t)ng * 64 * sizeof(float));
    size_t len = 0;
    float *want = tu_read_file(tu_datap("qwen2vl/vision_photo.f32"), &len);
    assert_int_equal(len, 77 * 64 * sizeof(float));
    const double e = tu_nmse(eg, want, 77 * 64);
    print_message("mmproj GGUF tower vs transformers: NMSE %.3g (vs the HF folder's: equal)\n", e);
    assert_true(e < 1e-8);
    free(want);
    mllm_free(eg);
    mllm_free(eh);
    mllm_qwen2vl_vision_free(g);
    mllm_qwen2vl_vision_free(h);
}

static float *logits_of(const char *model, const char *mmproj, mllm_status *st) {
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 1;
    lp.exact = 1;
    lp.mmproj = mmproj;
    mllm_model *m = NULL;
    if (mllm_model_load(model, &lp, &m) != MLLM_OK) fail_msg("%s", mllm_last_error());
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, NULL, &s), MLLM_OK);
    size_t len = 0;
    void *png = tu_read_file(tu_datap("images/photo.png"), &len);
    const void *im[1] = {png};
    *st = mllm_chat_prefill(s, CONV, im, &len, 1, NULL);
    float *l = NULL;
    if (*st == MLLM_OK) {
        l = malloc(1024 * sizeof *l);
        memcpy(l, mllm_session_logits(s), 1024 * sizeof *l);
    }
    free(png);
    mllm_session_free(s);
    mllm_model_free(m);
    return l;
}

static void test_pair_logits(void **state) {
    (void)state;
    if (!have_pair()) return;
    mllm_status st;
    float *g = logits_of(DIR "text.gguf", DIR "mmproj.gguf", &st);
    if (st) fail_msg("%s", mllm_last_error());
    float *h = logits_of(tu_datap("qwen2vl/tiny"), NULL, &st);
    assert_int_equal(st, MLLM_OK);
    assert_memory_equal(g, h, 1024 * sizeof(float));
    free(g);
    free(h);
    /* the text GGUF is not a tower; a missing mmproj */
    assert_null(logits_of(DIR "text.gguf", DIR "text.gguf", &st));
    assert_int_equal(st, MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "not an mmproj GGUF"));
    assert_null(logits_of(DIR "text.gguf", DIR "none.gguf", &st));
    assert_int_equal(st, MLLM_ERR_IO);
    assert_null(logits_of(DIR "text.gguf", NULL, &st));
    assert_int_equal(st, MLLM_ERR_UNSUPPORTED);
    assert_non_null(strstr(mllm_last_error(), "holds no vision tower"));
    /* the mmproj given as the model: its registry row (general.architecture
       "clip") says what it is and how to give it */
    mllm_model *m = NULL;
    assert_int_equal(mllm_model_load(DIR "mmproj.gguf", NULL, &m), MLLM_ERR_UNSUPPORTED);
    assert_null(m);
    assert_non_null(strstr(mllm_last_error(), "a vision tower (qwen2vl_vision): give it with --mmproj"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tower),
        cmocka_unit_test(test_pair_logits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
