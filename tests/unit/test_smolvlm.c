/* SmolVLM / Idefics3 against transformers, on the tiny random SmolVLM of
   tools/reference/make_smolvlm_tiny.py (tests/data/smolvlm/tiny: bf16
   weights, a 2-block SigLIP tower on 64 x 64 tiles of 8 x 8 patches, pixel
   shuffle 2, a 2-layer Llama), f32 activations:
   - preprocessing: four cases (photo.png split into 2 x 2 tiles + global
     and unsplit, an RGBA PNG, a GIF upscaled into 1 x 2 tiles): the tiles'
     8-bit pixels equal transformers' (Pillow LANCZOS, bit for bit), the
     row / column counts too;
   - the vision side (tower + connector) on those tiles: NMSE bound 1e-8;
   - the processor's prompt: mllm_chat_prefill on the chat template with
     photo.png gives its 125 input_ids (80 <image> tokens among the tile
     markers) and its last position's logits; the same ids through
     mllm_session_eval_image, then 7 tokens one at a time: each position's
     logits. NMSE bound 1e-8. */
#include "testutil.h"
#include "api/internal.h"
#include "api/vision.h"
#include "core/alloc.h"
#include "image/idefics3_pre.h"
#include "image/image.h"
#include "models/vision/idefics3_vision.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMAGE_ID 261
#define VOCAB 320

typedef struct {
    char name[32], image[64];
    int split, rows, cols, tiles, tokens;
} vcase;

static int read_cases(vcase *c, int cap) {
    size_t len = 0;
    char *txt = tu_read_file(tu_datap("smolvlm/cases.txt"), &len);
    int n = 0;
    for (char *line = strtok(txt, "\n"); line && n < cap; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        vcase *k = &c[n];
        assert_int_equal(sscanf(line, "%31s %63s %d %d %d %d %d", k->name, k->image, &k->split, &k->rows, &k->cols,
                                &k->tiles, &k->tokens),
                         7);
        n++;
    }
    free(txt);
    return n;
}

static void test_prompt_string(void **state) {
    (void)state;
    char *p = mllm_idefics3_image_prompt(0, 0, 2);
    assert_string_equal(p, "<fake_token_around_image><global-img><image><image><fake_token_around_image>");
    mllm_free(p);
    p = mllm_idefics3_image_prompt(1, 2, 1);
    assert_string_equal(p, "<fake_token_around_image><row_1_col_1><image><fake_token_around_image><row_1_col_2>"
                           "<image>\n\n<fake_token_around_image><global-img><image><fake_token_around_image>");
    mllm_free(p);
    assert_null(mllm_idefics3_image_prompt(1, 0, 1));
    assert_null(mllm_idefics3_image_prompt(0, 0, 0));
}

static void test_vision(void **state) {
    (void)state;
    vcase cs[8];
    const int nc = read_cases(cs, 8);
    assert_int_equal(nc, 4);
    mllm_idefics3_vision *v = NULL;
    if (mllm_idefics3_vision_open(tu_datap("smolvlm/tiny"), 2, &v)) fail_msg("%s", mllm_last_error());
    const mllm_idefics3_vision_config *c = mllm_idefics3_vision_config_of(v);
    assert_int_equal(c->image_seq_len, 16);
    assert_int_equal(c->out_hidden, 64);
    for (int i = 0; i < nc; i++) {
        char p[1024];
        mllm_image im;
        assert_int_equal(mllm_image_load(tu_datap(cs[i].image), 0, &im, NULL), MLLM_OK);
        mllm_idefics3_pre_params pp;
        mllm_idefics3_vision_pre_params(v, &pp);
        assert_int_equal(pp.tile, 64);
        assert_int_equal(pp.longest_edge, 128);
        pp.do_split = cs[i].split;
        mllm_idefics3_pixels px;
        assert_int_equal(mllm_idefics3_preprocess(&im, &pp, &px), MLLM_OK);
        assert_int_equal(px.rows, cs[i].rows);
        assert_int_equal(px.cols, cs[i].cols);
        assert_int_equal(px.n_tiles, cs[i].tiles);
        size_t len = 0;
        snprintf(p, sizeof p, "smolvlm/tiles_%s.u8", cs[i].name);
        uint8_t *want = tu_read_file(tu_datap(p), &len);
        assert_int_equal(len, (size_t)px.n_tiles * 3 * 64 * 64);
        size_t diff = 0;
        for (size_t j = 0; j < len; j++) diff += want[j] != px.tiles[j];
        assert_int_equal(diff, 0);
        free(want);
        float *emb = NULL;
        int64_t n = 0;
        if (mllm_idefics3_vision_encode(v, &px, &emb, &n)) fail_msg("%s", mllm_last_error());
        assert_int_equal(n, cs[i].tokens);
        snprintf(p, sizeof p, "smolvlm/vision_%s.f32", cs[i].name);
        float *ref = tu_read_file(tu_datap(p), &len);
        assert_int_equal(len, (size_t)n * 64 * sizeof(float));
        const double e = tu_nmse(emb, ref, (size_t)n * 64);
        print_message("%s: %d x %d tiles + global = %d, pixels equal, %lld embeddings: NMSE %.3g\n", cs[i].name,
                      px.rows, px.cols, px.n_tiles, (long long)n, e);
        assert_true(e < 1e-8);
        free(ref);
        mllm_free(emb);
        mllm_idefics3_pixels_free(&px);
        mllm_image_free(&im);
    }
    mllm_idefics3_vision_free(v);
}

static void test_prompt_logits(void **state) {
    (void)state;
    size_t len = 0;
    char *txt = tu_read_file(tu_datap("smolvlm/prompt.txt"), &len);
    int32_t ids[256];
    const int n = tu_read_ints(txt, "\nids ", ids, 256);
    free(txt);
    assert_int_equal(n, 125);
    float *want = tu_read_file(tu_datap("smolvlm/logits.f32"), &len);
    assert_int_equal(len, 8 * VOCAB * sizeof(float));
    void *img = tu_read_file(tu_datap("images/photo.png"), &len);
    const size_t img_len = len;

    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 1;
    lp.exact = 1;
    mllm_model *m = NULL;
    if (mllm_model_load(tu_datap("smolvlm/tiny"), &lp, &m) != MLLM_OK) fail_msg("%s", mllm_last_error());
    assert_int_equal(mllm_model_n_vocab(m), VOCAB);
    assert_int_equal(mllm_model_takes_images(m), 1);
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = 256;
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, &sp, &s), MLLM_OK);
    const char *conv = "[{\"role\": \"user\", \"content\": [{\"type\": \"image\"}, {\"type\": \"text\", \"text\": "
                       "\"What is this?\"}]}]";
    const void *imgs[1] = {img};
    if (mllm_chat_prefill(s, conv, imgs, &img_len, 1, NULL)) fail_msg("%s", mllm_last_error());
    assert_int_equal(s->n_past, n);
    assert_memory_equal(s->tokens, ids, (size_t)n * sizeof(int32_t));
    const double ep = tu_nmse(mllm_session_logits(s), want + 7 * VOCAB, VOCAB);
    /* a second prefill of the same conversation: the image from the cache,
       its KV kept */
    size_t reused = 0;
    assert_int_equal(mllm_chat_prefill(s, conv, imgs, &img_len, 1, &reused), MLLM_OK);
    assert_int_equal(reused, (size_t)n - 1);
    mllm_timings t = {.struct_size = sizeof t};
    mllm_session_timings(s, &t);
    assert_int_equal(t.n_images, 2);
    assert_int_equal(t.n_images_cached, 1);
    assert_true(tu_nmse(mllm_session_logits(s), want + 7 * VOCAB, VOCAB) < 1e-8);

    /* the same ids position by position: the image prompt up to 7 before
       the end, then the rest one token at a time (plain RoPE positions) */
    mllm_vision_embedding e;
    assert_int_equal(mllm_model_vision_embed(m, img, img_len, "photo", &e), MLLM_OK);
    assert_int_equal(e.n_rows, 80);
    mllm_session_reset(s);
    if (mllm_session_eval_image(s, ids, (size_t)n - 7, IMAGE_ID, e.emb, e.n_rows, e.grid, 1, e.merge))
        fail_msg("%s", mllm_last_error());
    double worst = tu_nmse(mllm_session_logits(s), want, VOCAB);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(mllm_session_eval(s, ids + n - 7 + i, 1), MLLM_OK);
        const double x = tu_nmse(mllm_session_logits(s), want + (size_t)(i + 1) * VOCAB, VOCAB);
        if (x > worst) worst = x;
    }
    print_message("prompt ids equal the processor's (%d); logits vs transformers: NMSE %.3g (chat prefill), "
                  "largest %.3g over the last 8 positions\n", n, ep, worst);
    assert_true(ep < 1e-8 && worst < 1e-8);
    /* the image cannot be recomputed from its token ids */
    assert_int_equal(mllm_session_sync(s, ids, 40, NULL), MLLM_ERR_UNSUPPORTED);
    mllm_vision_embedding_free(&e);
    mllm_session_free(s);
    mllm_model_free(m);
    free(img);
    free(want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prompt_string),
        cmocka_unit_test(test_vision),
        cmocka_unit_test(test_prompt_logits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
