/* The Qwen2.5-VL vision tower against transformers on a tiny random tower
   of the 3B's structure (tools/reference/make_qwen2_5_vl_tiny.py: 4 blocks,
   width 64, full attention at blocks 1 and 3, bf16 weights in
   tests/data/qwen2vl/tiny): the merged embeddings of three images
   (a 14 x 22 patch grid, 6 windows of 4 sizes; 6 x 8, one window; 4 x 6)
   through our preprocessing. Bound: NMSE 1e-8 (float32 both sides; the
   sums run in other orders), measured 1.0e-12 to 1.6e-12. Also: the loader's
   errors on a missing folder, a config that is not Qwen2.5-VL, a bad grid. */
#include "testutil.h"
#include "core/alloc.h"
#include "image/image.h"
#include "image/qwen2vl_pre.h"
#include "models/vision/qwen2vl_vision.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_embeddings_match_transformers(void **state) {
    (void)state;
    mllm_qwen2vl_vision *v = NULL;
    mllm_status st = mllm_qwen2vl_vision_open(tu_datap("qwen2vl/tiny"), 2, &v);
    if (st) fail_msg("%s", mllm_last_error());
    FILE *f = fopen(tu_datap("qwen2vl/vision_cases.txt"), "r");
    assert_non_null(f);
    char line[512];
    int cases = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char name[64], rel[128];
        long long lo, hi;
        int t, h, w, ntok;
        assert_int_equal(sscanf(line, "%63s %127s %lld %lld %d %d %d %d", name, rel, &lo, &hi, &t, &h, &w, &ntok), 8);
        mllm_image im;
        assert_int_equal(mllm_image_load(tu_datap(rel), 0, &im, NULL), MLLM_OK);
        mllm_qwen2vl_pre_params p;
        mllm_qwen2vl_vision_pre_params(v, &p);
        p.min_pixels = lo;
        p.max_pixels = hi;
        mllm_qwen2vl_pixels px;
        assert_int_equal(mllm_qwen2vl_preprocess(&im, &p, &px), MLLM_OK);
        assert_int_equal(px.grid_h, h);
        assert_int_equal(px.grid_w, w);
        float *emb = NULL;
        int64_t n = 0;
        st = mllm_qwen2vl_vision_encode(v, &px, &emb, &n);
        if (st) fail_msg("%s: %s", name, mllm_last_error());
        assert_int_equal(n, ntok);
        char ref[160];
        snprintf(ref, sizeof ref, "qwen2vl/vision_%s.f32", name);
        size_t len = 0;
        float *want = tu_read_file(tu_datap(ref), &len);
        assert_int_equal(len, (size_t)n * 64 * sizeof(float));
        double nmse = tu_nmse(emb, want, (size_t)n * 64);
        print_message("%s: %lld tokens, NMSE %.3g vs transformers\n", name, (long long)n, nmse);
        assert_true(nmse < 1e-8);
        free(want);
        mllm_free(emb);
        mllm_qwen2vl_pixels_free(&px);
        mllm_image_free(&im);
        cases++;
    }
    fclose(f);
    assert_int_equal(cases, 3);
    /* a grid that does not match the patches */
    mllm_qwen2vl_pixels bad = {.patches = (float[1176]){0}, .n_patches = 1, .patch_dim = 1176, .grid_t = 1,
                               .grid_h = 1, .grid_w = 1};
    float *emb = NULL;
    int64_t n = 0;
    assert_int_equal(mllm_qwen2vl_vision_encode(v, &bad, &emb, &n), MLLM_ERR_INVALID_ARG);
    bad.grid_t = 2;
    assert_int_equal(mllm_qwen2vl_vision_encode(v, &bad, &emb, &n), MLLM_ERR_UNSUPPORTED);
    assert_null(emb);
    mllm_qwen2vl_vision_free(v);
}

static void test_open_errors(void **state) {
    (void)state;
    mllm_qwen2vl_vision *v = (mllm_qwen2vl_vision *)1;
    assert_int_equal(mllm_qwen2vl_vision_open(tu_datap("qwen2vl/no-such-folder"), 1, &v), MLLM_ERR_IO);
    assert_null(v);
    /* a text-only config: no vision_config */
    const char *dir = tu_tmp("qwen2vl-textonly");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    assert_int_equal(system(cmd), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"model_type\": \"qwen2_5_vl\", \"hidden_size\": 64}", f);
    fclose(f);
    assert_int_equal(mllm_qwen2vl_vision_open(dir, 1, &v), MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "vision_config.depth is missing"));
    f = fopen(path, "w");
    fputs("{\"model_type\": \"llama\"}", f);
    fclose(f);
    assert_int_equal(mllm_qwen2vl_vision_open(dir, 1, &v), MLLM_ERR_UNSUPPORTED);
    free((void *)dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embeddings_match_transformers),
        cmocka_unit_test(test_open_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
