/* mllm_chat_prefill (mllm.h) on the tiny random Qwen2.5-VL
   (tests/data/qwen2vl/tiny), through the public API only:
   - a conversation with one image: the logits equal those of the internal
     path the transformers comparison checks (test_qwen2vl_llm.c: the tower's
     rows in place of the expanded <|image_pad|>, M-RoPE positions; the
     greedy tokens of this very prompt equal transformers' in
     tests/e2e/run_image_cli.sh), bit for bit;
   - the second turn about the same image: its embeddings come from the
     model's cache (not encoded again), the image's KV is reused, and the
     logits equal a fresh model's full recomputation;
   - another image of the same size in the same place (photo.jpg, the same
     picture through JPEG): a cache miss, the KV from the image on is
     recomputed, and the logits equal a fresh model's (reusing the first
     image's KV would give other logits: checked);
   - errors: wrong image counts, a file that is no image, a paged session,
     NULL arguments; the session stays usable. */
#include "testutil.h"
#include "api/internal.h"
#include "core/alloc.h"
#include "image/image.h"
#include "image/qwen2vl_pre.h"
#include "models/decoder/mrope.h"
#include "models/vision/qwen2vl_vision.h"
#include <stdlib.h>
#include <string.h>

#define TURN1 "{\"role\":\"user\",\"content\":[{\"type\":\"image\"},{\"type\":\"text\",\"text\":\"What is this?\"}]}"
#define CONV1 "[" TURN1 "]"
#define CONV2 "[" TURN1 ",{\"role\":\"assistant\",\"content\":\"A photo.\"},{\"role\":\"user\",\"content\":\"And now?\"}]"

static mllm_model *open_model(void) {
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 1;
    lp.exact = 1;
    mllm_model *m = NULL;
    if (mllm_model_load(tu_datap("qwen2vl/tiny"), &lp, &m) != MLLM_OK) fail_msg("%s", mllm_last_error());
    return m;
}

static mllm_session *open_session(mllm_model *m, int kv_type) {
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = 512;
    sp.kv_type = kv_type;
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, &sp, &s), MLLM_OK);
    return s;
}

typedef struct {
    void *png, *jpg;
    size_t png_len, jpg_len;
} images;

static void prefill(mllm_session *s, const char *conv, const void *img, size_t len, size_t *reused) {
    const void *im[1] = {img};
    const size_t lens[1] = {len};
    mllm_status st = mllm_chat_prefill(s, conv, im, lens, 1, reused);
    if (st) fail_msg("%s: %s", mllm_status_str(st), mllm_last_error());
}

static float *copy_logits(const mllm_session *s) {
    const size_t nv = (size_t)mllm_model_n_vocab(s->m);
    float *l = malloc(nv * sizeof *l);
    memcpy(l, mllm_session_logits(s), nv * sizeof *l);
    return l;
}

/* The logits of conv with img on a fresh model (nothing cached anywhere). */
static float *fresh_logits(const char *conv, const void *img, size_t len) {
    mllm_model *m = open_model();
    mllm_session *s = open_session(m, MLLM_KV_CONTIGUOUS);
    prefill(s, conv, img, len, NULL);
    mllm_timings t = {.struct_size = sizeof t};
    mllm_session_timings(s, &t);
    assert_int_equal(t.n_images_cached, 0);
    float *l = copy_logits(s);
    mllm_session_free(s);
    mllm_model_free(m);
    return l;
}

/* The internal path (test_qwen2vl_llm.c's, checked against transformers). */
static float *internal_logits(mllm_model *m, const char *conv, const char *image_path) {
    int32_t ids[256];
    size_t n = 0;
    assert_int_equal(mllm_chat_tokenize(m, conv, ids, 256, &n), MLLM_OK);
    mllm_qwen2vl_vision *v = NULL;
    assert_int_equal(mllm_qwen2vl_vision_open(tu_datap("qwen2vl/tiny"), 1, &v), MLLM_OK);
    mllm_image im;
    assert_int_equal(mllm_image_load(image_path, 0, &im, NULL), MLLM_OK);
    mllm_qwen2vl_pre_params pp;
    mllm_qwen2vl_vision_pre_params(v, &pp);
    mllm_qwen2vl_pixels px;
    assert_int_equal(mllm_qwen2vl_preprocess(&im, &pp, &px), MLLM_OK);
    float *emb = NULL;
    int64_t n_emb = 0, n_ex = 0;
    assert_int_equal(mllm_qwen2vl_vision_encode(v, &px, &emb, &n_emb), MLLM_OK);
    const mllm_image_grid g = {px.grid_t, px.grid_h, px.grid_w};
    int32_t *ex = NULL;
    const int32_t pad = 261;
    assert_int_equal(mllm_mrope_expand_pads(ids, (int64_t)n, pad, &g, 1, 2, 512, &ex, &n_ex), MLLM_OK);
    mllm_session *s = open_session(m, MLLM_KV_CONTIGUOUS);
    const int thw[3] = {g.t, g.h, g.w};
    assert_int_equal(mllm_session_eval_image(s, ex, (size_t)n_ex, pad, emb, n_emb, thw, 1, 2), MLLM_OK);
    float *l = copy_logits(s);
    mllm_session_free(s);
    mllm_free(ex);
    mllm_free(emb);
    mllm_qwen2vl_pixels_free(&px);
    mllm_image_free(&im);
    mllm_qwen2vl_vision_free(v);
    return l;
}

static int setup(void **state) {
    images *im = calloc(1, sizeof *im);
    im->png = tu_read_file(tu_datap("images/photo.png"), &im->png_len);
    im->jpg = tu_read_file(tu_datap("images/photo.jpg"), &im->jpg_len);
    *state = im;
    return 0;
}

static int teardown(void **state) {
    images *im = *state;
    free(im->png);
    free(im->jpg);
    free(im);
    return 0;
}

static void test_turns(void **state) {
    images *im = *state;
    mllm_model *m = open_model();
    const size_t nv = (size_t)mllm_model_n_vocab(m);
    mllm_session *s = open_session(m, MLLM_KV_CONTIGUOUS);
    size_t reused = 99;

    /* turn 1 */
    prefill(s, CONV1, im->png, im->png_len, &reused);
    assert_int_equal(reused, 0);
    assert_int_equal(mllm_session_n_past(s), 111); /* 34 text tokens + 77 image tokens */
    mllm_timings t = {.struct_size = sizeof t};
    mllm_session_timings(s, &t);
    assert_int_equal(t.n_images, 1);
    assert_int_equal(t.n_images_cached, 0);
    assert_int_equal(t.n_image_tokens, 77);
    assert_true(t.vision_ms > 0 && t.image_decode_ms > 0);
    assert_int_equal(t.n_prompt, 111);
    float *want = internal_logits(m, CONV1, tu_datap("images/photo.png"));
    assert_memory_equal(mllm_session_logits(s), want, nv * sizeof(float));
    free(want);

    /* turn 2: the image again (cached), its KV kept */
    prefill(s, CONV2, im->png, im->png_len, &reused);
    mllm_session_timings(s, &t);
    assert_int_equal(t.n_images, 2);
    assert_int_equal(t.n_images_cached, 1);
    assert_true(reused >= 100); /* past the image's 77 tokens */
    float *got2 = copy_logits(s);
    want = fresh_logits(CONV2, im->png, im->png_len);
    const double e2 = tu_nmse(got2, want, nv);
    print_message("turn 2 (cached image, %zu tokens reused) vs recomputed: NMSE %.3g\n", reused, e2);
    assert_true(e2 < 1e-12);
    free(want);

    /* the same place, another image of the same size: recomputed from it */
    prefill(s, CONV2, im->jpg, im->jpg_len, &reused);
    assert_true(reused <= 10); /* the image starts after "<|im_start|>user\n<|vision_start|>" */
    mllm_session_timings(s, &t);
    assert_int_equal(t.n_images_cached, 1);
    float *got3 = copy_logits(s);
    want = fresh_logits(CONV2, im->jpg, im->jpg_len);
    const double e3 = tu_nmse(got3, want, nv), e_png = tu_nmse(got2, want, nv);
    print_message("other image vs recomputed: NMSE %.3g (the first image's logits: %.3g)\n", e3, e_png);
    assert_true(e3 < 1e-12);
    assert_true(e_png > 1e-9); /* the two images do give other logits */
    free(want);
    free(got2);
    free(got3);

    /* text only after images: the images' KV is not taken for text */
    assert_int_equal(mllm_chat_prefill(s, "[{\"role\":\"user\",\"content\":\"hi\"}]", NULL, NULL, 0, &reused), MLLM_OK);
    assert_int_equal(reused, 6); /* "<|im_start|>user\n" */
    mllm_session_free(s);
    mllm_model_free(m);
}

static void test_errors(void **state) {
    images *im = *state;
    mllm_model *m = open_model();
    mllm_session *s = open_session(m, MLLM_KV_CONTIGUOUS);
    const void *two[2] = {im->png, im->png};
    const size_t lens[2] = {im->png_len, im->png_len};
    assert_int_equal(mllm_chat_prefill(s, CONV1, NULL, NULL, 0, NULL), MLLM_ERR_INVALID_ARG);
    assert_non_null(strstr(mllm_last_error(), "places 1 images, 0 given"));
    assert_int_equal(mllm_chat_prefill(s, CONV1, two, lens, 2, NULL), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_chat_prefill(s, CONV1, two, lens, -1, NULL), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_chat_prefill(s, CONV1, NULL, lens, 1, NULL), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_chat_prefill(NULL, CONV1, two, lens, 1, NULL), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_chat_prefill(s, NULL, two, lens, 1, NULL), MLLM_ERR_INVALID_ARG);
    const char junk[] = "not an image at all";
    const void *bad[1] = {junk};
    const size_t bad_len[1] = {sizeof junk};
    assert_int_equal(mllm_chat_prefill(s, CONV1, bad, bad_len, 1, NULL), MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "image 0"));
    const size_t cut[1] = {im->png_len / 3};
    assert_int_equal(mllm_chat_prefill(s, CONV1, two, cut, 1, NULL), MLLM_ERR_FORMAT);
    /* still usable */
    assert_int_equal(mllm_chat_prefill(s, CONV1, two, lens, 1, NULL), MLLM_OK);
    assert_int_equal(mllm_session_n_past(s), 111);
    mllm_session *p = open_session(m, MLLM_KV_PAGED_F32);
    assert_int_equal(mllm_chat_prefill(p, CONV1, two, lens, 1, NULL), MLLM_ERR_UNSUPPORTED);
    mllm_session_free(p);
    mllm_session_free(s);
    mllm_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_turns),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
