/* Qwen2-VL preprocessing against transformers' Qwen2VLImageProcessorPil
   (tools/reference/qwen2vl_preprocess_reference.py, outputs in
   tests/data/qwen2vl): smart_resize on 48 sizes, and the patches of four
   images. The resize is Pillow's bicubic bit for bit, so the patches of
   PNG / GIF inputs must be equal (every float: the reference prints 9
   significant digits, which round-trip float32); photo.jpg decoded by stb
   instead of libjpeg is held to an NMSE bound. */
#include "testutil.h"
#include "core/alloc.h"
#include "image/image.h"
#include "image/qwen2vl_pre.h"
#include "image/resample.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_smart_resize(void **state) {
    (void)state;
    FILE *f = fopen(tu_datap("qwen2vl/smart_resize.txt"), "r");
    assert_non_null(f);
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        int h, w, eh, ew;
        long long lo, hi;
        assert_int_equal(sscanf(line, "%d %d %lld %lld %d %d", &h, &w, &lo, &hi, &eh, &ew), 6);
        int rh = 0, rw = 0;
        mllm_status st = mllm_qwen2vl_smart_resize(h, w, 28, lo, hi, &rh, &rw);
        if (eh < 0) {
            assert_int_equal(st, MLLM_ERR_INVALID_ARG);
        } else {
            if (st || rh != eh || rw != ew)
                fail_msg("%d x %d [%lld, %lld]: got %d x %d (st %d), transformers %d x %d", h, w, lo, hi, rh, rw, st,
                         eh, ew);
        }
        n++;
    }
    fclose(f);
    assert_int_equal(n, 48);
    int rh, rw;
    assert_int_equal(mllm_qwen2vl_smart_resize(1, 201, 28, 3136, 1 << 24, &rh, &rw), MLLM_ERR_INVALID_ARG);
}

typedef struct {
    char file[128];
    long long lo, hi;
    int t, h, w, dim, n_rows;
    int row_idx[8];
    float *rows[8];
    double *sums;
    int n_sums;
} ref_case;

static void read_case(const char *rel, ref_case *c) {
    memset(c, 0, sizeof *c);
    size_t len = 0;
    char *txt = tu_read_file(tu_datap(rel), &len);
    assert_non_null(txt);
    char *save = NULL;
    for (char *ln = strtok_r(txt, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        char *p = ln;
        if (!strncmp(ln, "file ", 5)) {
            assert_int_equal(sscanf(ln, "file %127s min_pixels %lld max_pixels %lld", c->file, &c->lo, &c->hi), 3);
        } else if (!strncmp(ln, "grid ", 5)) {
            assert_int_equal(sscanf(ln, "grid %d %d %d", &c->t, &c->h, &c->w), 3);
        } else if (!strncmp(ln, "dim ", 4)) {
            c->dim = atoi(ln + 4);
        } else if (!strncmp(ln, "row ", 4)) {
            assert_true(c->n_rows < 8 && c->dim > 0);
            p = ln + 4;
            c->row_idx[c->n_rows] = (int)strtol(p, &p, 10);
            float *r = malloc(sizeof(float) * (size_t)c->dim);
            for (int i = 0; i < c->dim; i++) r[i] = strtof(p, &p);
            c->rows[c->n_rows++] = r;
        } else if (!strncmp(ln, "sums ", 5)) {
            int n = c->h * c->w;
            c->sums = malloc(sizeof(double) * (size_t)n);
            p = ln + 5;
            for (int i = 0; i < n; i++) c->sums[i] = strtod(p, &p);
            c->n_sums = n;
        }
    }
    free(txt);
}

static void free_case(ref_case *c) {
    for (int i = 0; i < c->n_rows; i++) free(c->rows[i]);
    free(c->sums);
}

/* Preprocesses `image` (a path under tests/data) with the case's limits;
   returns the NMSE of the reference rows and the largest row-sum error. */
static double run_case(const ref_case *c, const char *image, double *max_sum_err) {
    mllm_image im;
    mllm_status st = mllm_image_load(tu_datap(image), 0, &im, NULL);
    if (st) fail_msg("%s: %s", image, mllm_last_error());
    mllm_qwen2vl_pre_params p;
    mllm_qwen2vl_pre_defaults(&p);
    p.min_pixels = c->lo;
    p.max_pixels = c->hi;
    mllm_qwen2vl_pixels px;
    st = mllm_qwen2vl_preprocess(&im, &p, &px);
    if (st) fail_msg("%s: %s", image, mllm_last_error());
    assert_int_equal(px.grid_t, c->t);
    assert_int_equal(px.grid_h, c->h);
    assert_int_equal(px.grid_w, c->w);
    assert_int_equal(px.patch_dim, c->dim);
    assert_int_equal(px.n_patches, c->n_sums);
    double num = 0, den = 0;
    for (int r = 0; r < c->n_rows; r++) {
        const float *got = px.patches + (int64_t)c->row_idx[r] * c->dim;
        for (int i = 0; i < c->dim; i++) {
            double d = (double)got[i] - c->rows[r][i];
            num += d * d;
            den += (double)c->rows[r][i] * c->rows[r][i];
        }
    }
    *max_sum_err = 0;
    for (int64_t r = 0; r < px.n_patches; r++) {
        double s = 0;
        for (int64_t i = 0; i < px.patch_dim; i++) s += px.patches[r * px.patch_dim + i];
        double e = fabs(s - c->sums[r]);
        if (e > *max_sum_err) *max_sum_err = e;
    }
    mllm_qwen2vl_pixels_free(&px);
    mllm_image_free(&im);
    return num / den;
}

static void test_patches_exact(void **state) {
    (void)state;
    const char *cases[] = {"qwen2vl/pre_photo.txt", "qwen2vl/pre_photo_small.txt", "qwen2vl/pre_gif_up.txt",
                           "qwen2vl/pre_alpha.txt"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ref_case c;
        read_case(cases[i], &c);
        double sum_err, nmse = run_case(&c, c.file, &sum_err);
        print_message("%s (%s): %d x %d patches, NMSE %.3g, row-sum error %.3g\n", cases[i], c.file, c.h, c.w, nmse,
                      sum_err);
        if (nmse != 0 || sum_err > 1e-6) fail_msg("%s: not bit-exact", cases[i]);
        free_case(&c);
    }
}

/* The JPEG the PNG was decoded from, through stb (mean 0.08 levels from
   libjpeg): measured NMSE 2.1e-5 of the patches, held to 1e-4. */
static void test_patches_jpeg(void **state) {
    (void)state;
    ref_case c;
    read_case("qwen2vl/pre_photo.txt", &c);
    double sum_err, nmse = run_case(&c, "images/photo.jpg", &sum_err);
    print_message("photo.jpg through stb: NMSE %.3g, row-sum error %.3g\n", nmse, sum_err);
    assert_true(nmse < 1e-4);
    free_case(&c);
}

/* Pillow's resize of photo.png to 16 sizes (tests/data/qwen2vl/resize.txt:
   both pass orders, single passes, 1 x 1, up and down): exact sums. */
static void test_resize_vs_pillow(void **state) {
    (void)state;
    mllm_image im;
    assert_int_equal(mllm_image_load(tu_datap("images/photo.png"), 0, &im, NULL), MLLM_OK);
    FILE *f = fopen(tu_datap("qwen2vl/resize.txt"), "r");
    assert_non_null(f);
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        int w, h;
        long long sum, wsum;
        assert_int_equal(sscanf(line, "%d %d %lld %lld", &w, &h, &sum, &wsum), 4);
        mllm_image r;
        assert_int_equal(mllm_image_resize_bicubic(&im, w, h, &r), MLLM_OK);
        long long s = 0, ws = 0;
        for (size_t i = 0; i < (size_t)w * h * 3; i++) {
            s += r.rgb[i];
            ws += (long long)r.rgb[i] * (long long)(i % 251 + 1);
        }
        if (s != sum || ws != wsum) fail_msg("300 x 199 -> %d x %d: sums %lld %lld, Pillow %lld %lld", w, h, s, ws, sum, wsum);
        mllm_image_free(&r);
        n++;
    }
    fclose(f);
    assert_int_equal(n, 16);
    mllm_image_free(&im);
}

/* Resize corner cases: 1-pixel images, equal sizes, extreme ratios. */
static void test_resize_edges(void **state) {
    (void)state;
    uint8_t px[3] = {10, 200, 30};
    mllm_image one = {px, 1, 1}, out;
    assert_int_equal(mllm_image_resize_bicubic(&one, 28, 56, &out), MLLM_OK);
    for (int i = 0; i < 28 * 56; i++) assert_memory_equal(out.rgb + 3 * i, px, 3);
    mllm_image_free(&out);
    assert_int_equal(mllm_image_resize_bicubic(&one, 0, 5, &out), MLLM_ERR_INVALID_ARG);
    assert_null(out.rgb);
    uint8_t *wide = malloc(3 * 4000);
    for (int i = 0; i < 3 * 4000; i++) wide[i] = (uint8_t)(i * 7);
    mllm_image w = {wide, 4000, 1};
    assert_int_equal(mllm_image_resize_bicubic(&w, 3, 2, &out), MLLM_OK);
    mllm_image_free(&out);
    free(wide);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smart_resize),
        cmocka_unit_test(test_patches_exact),
        cmocka_unit_test(test_patches_jpeg),
        cmocka_unit_test(test_resize_vs_pillow),
        cmocka_unit_test(test_resize_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
