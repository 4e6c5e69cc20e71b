/* Qwen2.5-VL M-RoPE helpers against transformers
   (tools/reference/qwen2vl_mrope_reference.py): the <|image_pad|>
   expansion and get_rope_index's positions of a prompt with two images
   (14 x 22 and 4 x 6 patch grids) exactly, and the rotation angles of 11
   of its tokens with the 3B's text config (head 128, sections 16/24/24,
   theta 1e6) within 2e-6 (float32 sin/cos of angles up to 25 rad, libm
   against torch; measured 6e-8). */
#include "testutil.h"
#include "core/alloc.h"
#include "models/decoder/mrope.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PAD 151655

typedef struct {
    int32_t *ids, *pos;
    int64_t n, next;
    mllm_image_grid grids[4];
    int n_grids;
    int toks[32], n_toks;
} ref;

static int64_t read_ints(char *p, int32_t *out, int64_t cap) {
    int64_t n = 0;
    char *e;
    for (long v = strtol(p, &e, 10); e != p && n < cap; v = strtol(p, &e, 10)) out[n++] = (int32_t)v, p = e;
    return n;
}

static void read_ref(ref *r) {
    memset(r, 0, sizeof *r);
    size_t len = 0;
    char *txt = tu_read_file(tu_datap("qwen2vl/mrope.txt"), &len);
    assert_non_null(txt);
    r->ids = calloc(4096, sizeof(int32_t));
    r->pos = calloc(3 * 4096, sizeof(int32_t));
    char *save = NULL;
    for (char *ln = strtok_r(txt, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(ln, "ids ", 4)) r->n = read_ints(ln + 4, r->ids, 4096);
        else if (!strncmp(ln, "pos_t ", 6)) assert_int_equal(read_ints(ln + 6, r->pos, 4096), r->n);
        else if (!strncmp(ln, "pos_h ", 6)) assert_int_equal(read_ints(ln + 6, r->pos + r->n, 4096), r->n);
        else if (!strncmp(ln, "pos_w ", 6)) assert_int_equal(read_ints(ln + 6, r->pos + 2 * r->n, 4096), r->n);
        else if (!strncmp(ln, "next ", 5)) r->next = atoll(ln + 5);
        else if (!strncmp(ln, "grids ", 6)) {
            int32_t g[12];
            int64_t k = read_ints(ln + 6, g, 12);
            r->n_grids = (int)(k / 3);
            for (int i = 0; i < r->n_grids; i++) r->grids[i] = (mllm_image_grid){g[3 * i], g[3 * i + 1], g[3 * i + 2]};
        } else if (!strncmp(ln, "cos_sin_tokens ", 15)) {
            int32_t t[32];
            r->n_toks = (int)read_ints(ln + 15, t, 32);
            for (int i = 0; i < r->n_toks; i++) r->toks[i] = t[i];
        }
    }
    free(txt);
}

static void test_expand_and_positions(void **state) {
    (void)state;
    ref r;
    read_ref(&r);
    assert_int_equal(r.n_grids, 2);
    /* the prompt before expansion: one pad per image */
    int32_t *short_ids = malloc(sizeof(int32_t) * (size_t)r.n);
    int64_t m = 0;
    for (int64_t i = 0; i < r.n; i++)
        if (r.ids[i] != PAD || i == 0 || r.ids[i - 1] != PAD) short_ids[m++] = r.ids[i];
    int32_t *ex = NULL;
    int64_t n_ex = 0;
    assert_int_equal(mllm_mrope_expand_pads(short_ids, m, PAD, r.grids, 2, 2, 1 << 20, &ex, &n_ex), MLLM_OK);
    assert_int_equal(n_ex, r.n);
    assert_memory_equal(ex, r.ids, sizeof(int32_t) * (size_t)r.n);
    mllm_free(ex);
    assert_int_equal(mllm_mrope_expand_pads(short_ids, m, PAD, r.grids, 1, 2, 1 << 20, &ex, &n_ex),
                     MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_mrope_expand_pads(short_ids, m, PAD, r.grids, 2, 2, 50, &ex, &n_ex), MLLM_ERR_CONTEXT_FULL);
    assert_null(ex);
    int32_t *pos = malloc(sizeof(int32_t) * 3 * (size_t)r.n);
    int64_t next = 0;
    assert_int_equal(mllm_mrope_positions(r.ids, r.n, PAD, r.grids, 2, 2, pos, &next), MLLM_OK);
    assert_memory_equal(pos, r.pos, sizeof(int32_t) * 3 * (size_t)r.n);
    assert_int_equal(next, r.next);
    /* a run that does not match its grid */
    assert_int_equal(mllm_mrope_positions(r.ids, r.n - 10, PAD, r.grids, 2, 2, pos, &next) != MLLM_OK, 1);
    mllm_image_grid odd = {1, 3, 4};
    assert_int_equal(mllm_mrope_expand_pads(short_ids, m, PAD, (mllm_image_grid[]){odd, odd}, 2, 2, 1 << 20, &ex,
                                              &n_ex),
                     MLLM_ERR_INVALID_ARG);
    free(pos);
    free(short_ids);
    free(r.ids);
    free(r.pos);
}

static void test_angles(void **state) {
    (void)state;
    ref r;
    read_ref(&r);
    size_t len = 0;
    float *want = tu_read_file(tu_datap("qwen2vl/mrope_cos_sin.f32"), &len);
    assert_int_equal(len, (size_t)r.n_toks * 128 * sizeof(float));
    const int sections[3] = {16, 24, 24};
    double worst = 0;
    for (int k = 0; k < r.n_toks; k++) {
        const int t = r.toks[k];
        const int32_t p[3] = {r.pos[t], r.pos[r.n + t], r.pos[2 * r.n + t]};
        float c[64], s[64];
        mllm_mrope_angles(p, 128, sections, 1e6f, c, s);
        for (int i = 0; i < 64; i++) {
            double e = fmax(fabs(c[i] - want[k * 128 + i]), fabs(s[i] - want[k * 128 + 64 + i]));
            if (e > worst) worst = e;
        }
    }
    print_message("M-RoPE cos/sin: largest error %.3g vs transformers\n", worst);
    assert_true(worst < 2e-6);
    free(want);
    free(r.ids);
    free(r.pos);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expand_and_positions),
        cmocka_unit_test(test_angles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
