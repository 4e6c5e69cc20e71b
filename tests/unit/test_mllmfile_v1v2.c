/* MLLM .mllm v1/v2: files written in those layouts from a synth HF model
   (HF tensor names, config.json and tokenizer.json beside) load through
   mllm_model_load with the HF folder's logits, bit for bit, and convert to
   v3 the same way; refused dtype codes; every header/index byte flipped and
   every truncation gives an error or an in-bounds model, never a crash. */
#include "backends/cpu.h"
#include "testutil.h"
#include "convert/convert.h"
#include "core/dtype.h"
#include "formats/hf_config.h"
#include "formats/mllm_v1v2.h"
#include "formats/model_file.h"
#include "synth/synth.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void copy_file(const char *from_dir, const char *to_dir, const char *name) {
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s/%s", from_dir, name);
    snprintf(b, sizeof b, "%s/%s", to_dir, name);
    size_t n;
    void *data = tu_read_file(a, &n);
    assert_non_null(data);
    FILE *fp = fopen(b, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, n, fp), n);
    fclose(fp);
    free(data);
}

static float *logits_of(const char *path, int *nv) {
    mllm_model *m = NULL;
    if (mllm_model_load(path, NULL, &m) != MLLM_OK) fail_msg("load %s: %s", path, mllm_last_error());
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = 16;
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, &sp, &s), MLLM_OK);
    int32_t ids[] = {1, 2, 3, 50, 7};
    assert_int_equal(mllm_session_eval(s, ids, 5), MLLM_OK);
    *nv = mllm_model_n_vocab(m);
    float *out = malloc((size_t)*nv * sizeof *out);
    memcpy(out, mllm_session_logits(s), (size_t)*nv * sizeof *out);
    mllm_session_free(s);
    mllm_model_free(m);
    return out;
}

static void expect_same_logits(const char *a, const char *b) {
    int na, nb;
    float *la = logits_of(a, &na), *lb = logits_of(b, &nb);
    assert_int_equal(na, nb);
    if (memcmp(la, lb, (size_t)na * 4)) fail_msg("%s vs %s: logits differ", a, b);
    free(la);
    free(lb);
}

/* The HF folder's tensors under their HF names (mllm_model_file_open keeps
   them; only the registry renames), as v1v2 write entries. */
static mllm_v1v2_tensor *tensors_of(mllm_model_file *f, char names[][128]) {
    mllm_v1v2_tensor *t = calloc(f->n_weights, sizeof *t);
    for (size_t i = 0; i < f->n_weights; i++) {
        const mllm_weight *w = &f->weights[i];
        assert_true(strncmp(w->name, "blk.", 4) != 0);
        snprintf(names[i], 128, "%s", w->name);
        t[i] = (mllm_v1v2_tensor){.name = names[i], .code = w->dtype == MLLM_DTYPE_BF16 ? 128 : w->dtype,
                                  .n_dims = w->n_dims, .data = w->data, .size = w->size};
        memcpy(t[i].ne, w->ne, sizeof t[i].ne);
    }
    return t;
}

static char g_dir[3][1024];
static const char *g_hf;

static int setup(void **state) {
    (void)state;
    mllm_cpu_init();
    g_hf = tu_tmp("v-hf");
    if (mllm_synth_write("qwen2", "tiny", "f32", "hf", g_hf, NULL, NULL)) return -1;
    mllm_model_file *f;
    if (mllm_model_file_open(g_hf, &f)) return -1;
    static char names[64][128];
    if (f->n_weights > 64) return -1;
    mllm_v1v2_tensor *t = tensors_of(f, names);
    for (int v = 1; v <= 2; v++) {
        const char *d = tu_tmp(v == 1 ? "v1" : "v2");
        snprintf(g_dir[v], sizeof g_dir[v], "%s", d);
        free((void *)d);
        mkdir(g_dir[v], 0755);
        copy_file(g_hf, g_dir[v], "config.json");
        copy_file(g_hf, g_dir[v], "tokenizer.json");
        copy_file(g_hf, g_dir[v], "tokenizer_config.json");
        char path[1100];
        snprintf(path, sizeof path, "%s/model.mllm", g_dir[v]);
        mllm_status st = v == 1 ? mllm_v1_write(path, t, f->n_weights) : mllm_v2_write(path, "qwen2-tiny", t, f->n_weights);
        if (st) return -1;
    }
    free(t);
    mllm_model_file_close(f);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free((void *)g_hf);
    return 0;
}

static void test_load_and_convert(void **state) {
    (void)state;
    for (int v = 1; v <= 2; v++) {
        char path[1100], out[1100];
        snprintf(path, sizeof path, "%s/model.mllm", g_dir[v]);
        snprintf(out, sizeof out, "%s/v3.mllm", g_dir[v]);
        expect_same_logits(g_hf, path);
        mllm_convert_params p;
        mllm_convert_default_params(&p);
        p.in = path, p.out = out;
        if (v == 1) { /* an explicit config, as `--config` */
            static char cfg[1100];
            snprintf(cfg, sizeof cfg, "%s/config.json", g_hf);
            p.config_path = cfg;
        }
        if (mllm_convert(&p)) fail_msg("%s", mllm_last_error());
        expect_same_logits(g_hf, out);
    }
}

static void test_v2_header_fields(void **state) {
    (void)state;
    char path[1100];
    snprintf(path, sizeof path, "%s/model.mllm", g_dir[2]);
    size_t len;
    uint8_t *b = tu_read_file(path, &len);
    mllm_v1v2_index ix;
    assert_int_equal(mllm_v1v2_parse(b, len, "v2", &ix), MLLM_OK);
    assert_int_equal(ix.version, 2);
    assert_string_equal(ix.model_name, "qwen2-tiny");
    assert_string_equal(ix.e[0].name, "model.embed_tokens.weight");
    assert_int_equal(ix.e[0].n_dims, 2);
    mllm_v1v2_index_free(&ix);
    free(b);
}

static void test_refused_codes(void **state) {
    (void)state;
    const char *why;
    assert_int_equal(mllm_v1v2_dtype(128, &why), MLLM_DTYPE_BF16);
    assert_int_equal(mllm_v1v2_dtype(8, &why), MLLM_DTYPE_Q8_0);
    assert_int_equal(mllm_v1v2_dtype(134, &why), -1);
    assert_non_null(strstr(why, "packed"));
    assert_int_equal(mllm_v1v2_dtype(77, &why), -1);
    /* A file with a 134 tensor is refused by name. */
    uint8_t data[64] = {0};
    mllm_v1v2_tensor t = {.name = "model.norm.weight", .code = 134, .n_dims = 1, .ne = {16, 1, 1, 1}, .data = data, .size = 64};
    const char *path = tu_tmp("packed.mllm");
    assert_int_equal(mllm_v1_write(path, &t, 1), MLLM_OK);
    size_t len;
    uint8_t *b = tu_read_file(path, &len);
    mllm_v1v2_index ix;
    assert_int_equal(mllm_v1v2_parse(b, len, "packed.mllm", &ix), MLLM_ERR_UNSUPPORTED);
    assert_non_null(strstr(mllm_last_error(), "model.norm.weight"));
    assert_non_null(strstr(mllm_last_error(), "134"));
    free(b);
    free((void *)path);
}

/* Every bit of the header and index region, and every truncation: an error
   or entries that stay inside the buffer. */
static void test_corruption(void **state) {
    (void)state;
    for (int v = 1; v <= 2; v++) {
        char path[1100];
        snprintf(path, sizeof path, "%s/model.mllm", g_dir[v]);
        size_t len;
        uint8_t *b = tu_read_file(path, &len);
        mllm_v1v2_index ix;
        assert_int_equal(mllm_v1v2_parse(b, len, "c", &ix), MLLM_OK);
        uint64_t region = ix.e[0].offset;
        for (size_t i = 0; i < ix.n; i++) region = ix.e[i].offset < region ? ix.e[i].offset : region;
        mllm_v1v2_index_free(&ix);
        size_t rejected = 0;
        for (size_t i = 0; i < region; i++) {
            for (int bit = 0; bit < 8; bit += 7) {
                b[i] ^= (uint8_t)(1u << bit);
                if (mllm_v1v2_parse(b, len, "c", &ix) == MLLM_OK) {
                    for (size_t k = 0; k < ix.n; k++) assert_true(ix.e[k].offset + ix.e[k].size <= len);
                    mllm_v1v2_index_free(&ix);
                } else {
                    rejected++;
                }
                b[i] ^= (uint8_t)(1u << bit);
            }
        }
        assert_true(rejected > 0);
        for (size_t n = 0; n < len; n += (n < region + 64 ? 1 : 997)) {
            if (mllm_v1v2_parse(b, n, "t", &ix) == MLLM_OK) fail_msg("v%d truncated to %zu accepted", v, n);
        }
        free(b);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_and_convert),
        cmocka_unit_test(test_v2_header_fields),
        cmocka_unit_test(test_refused_codes),
        cmocka_unit_test(test_corruption),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
