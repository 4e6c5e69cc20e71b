/* Split GGUF files (llama.cpp's gguf-split: "<name>-00001-of-0000N.gguf",
   keys split.no / split.count / split.tensors.count): a model written as
   three files loads from the first and gives the logits of the one-file
   model; a missing, mislabelled or extra part is an error that names it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <mllm/mllm.h>
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "quantize/quantize_internal.h"
#include "synth/synth.h"
#include "testutil.h"

#define PARTS 3

static char g_one[512], g_dir[512];

/* Writes part `no` (0-based) of `parts` with tensors [t0, t1) of g; part 0
   also gets every metadata key. split_no_override >= 0 lies about no. */
static void write_part(const mllm_gguf *g, const char *path, int no, int parts, uint64_t t0, uint64_t t1,
                       int split_no_override) {
    mllm_gguf_writer *w = NULL;
    assert_int_equal(mllm_gguf_writer_new(&w), MLLM_OK);
    if (no == 0) assert_int_equal(quant_meta_copy_gguf(g, w, NULL), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_u16(w, "split.no", (uint16_t)(split_no_override >= 0 ? split_no_override : no)),
                     MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_u16(w, "split.count", (uint16_t)parts), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_i32(w, "split.tensors.count", (int32_t)mllm_gguf_n_tensors(g)), MLLM_OK);
    char name[256];
    for (uint64_t i = t0; i < t1; i++) {
        const mllm_gguf_tensor *t = mllm_gguf_tensor_at(g, i);
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        assert_int_equal(mllm_gguf_writer_add_tensor(w, name, t->dtype, (int)t->n_dims, t->ne, t->data), MLLM_OK);
    }
    assert_int_equal(mllm_gguf_writer_write(w, path), MLLM_OK);
    mllm_gguf_writer_free(w);
}

static void part_path(char *out, size_t cap, int no, int parts) {
    snprintf(out, cap, "%s/model-%05d-of-%05d.gguf", g_dir, no + 1, parts);
}

static void write_split(int parts, int bad_part, int bad_no) {
    mllm_gguf *g = NULL;
    assert_int_equal(mllm_gguf_open(g_one, &g), MLLM_OK);
    const uint64_t n = mllm_gguf_n_tensors(g);
    for (int p = 0; p < parts; p++) {
        char path[600];
        part_path(path, sizeof path, p, parts);
        write_part(g, path, p, parts, n * (uint64_t)p / (uint64_t)parts, n * (uint64_t)(p + 1) / (uint64_t)parts,
                   p == bad_part ? bad_no : -1);
    }
    mllm_gguf_close(g);
}

static float *logits_of(const char *path) {
    mllm_model *m = NULL;
    if (mllm_model_load(path, NULL, &m) != MLLM_OK) fail_msg("%s: %s", path, mllm_last_error());
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, NULL, &s), MLLM_OK);
    const int32_t ids[] = {1, 5, 9, 300, 7};
    assert_int_equal(mllm_session_eval(s, ids, 5), MLLM_OK);
    const int nv = mllm_model_n_vocab(m);
    float *out = malloc((size_t)nv * sizeof *out);
    memcpy(out, mllm_session_logits(s), (size_t)nv * sizeof *out);
    mllm_session_free(s);
    mllm_model_free(m);
    return out;
}

static void expect_error(const char *path, mllm_status want, const char *needle) {
    mllm_model *m = NULL;
    mllm_status st = mllm_model_load(path, NULL, &m);
    mllm_model_free(m);
    if (st != want || !strstr(mllm_last_error(), needle))
        fail_msg("%s: status %d (want %d), '%s' lacks '%s'", path, st, want, mllm_last_error(), needle);
}

static void test_split(void **state) {
    (void)state;
    const char *one = tu_tmp("split-one.gguf");
    snprintf(g_one, sizeof g_one, "%s", one);
    free((void *)one);
    const char *dir = tu_tmp("split-parts");
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    free((void *)dir);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_dir, g_dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "f32", "gguf", g_one, NULL, NULL), MLLM_OK);
    write_split(PARTS, -1, -1);
    char first[600], second[600], last[600];
    part_path(first, sizeof first, 0, PARTS);
    part_path(second, sizeof second, 1, PARTS);
    part_path(last, sizeof last, PARTS - 1, PARTS);
    float *a = logits_of(g_one), *b = logits_of(first);
    assert_memory_equal(a, b, 512 * sizeof(float)); /* the synth tiny vocabulary */
    free(a);
    free(b);
    /* Opening another part names the first. */
    expect_error(second, MLLM_ERR_INVALID_ARG, "-00001-of-00003.gguf");
    /* A missing part is named. */
    assert_int_equal(unlink(last), 0);
    expect_error(first, MLLM_ERR_IO, "-00003-of-00003.gguf");
    /* A part whose split.no lies. */
    write_split(PARTS, 1, 2);
    expect_error(first, MLLM_ERR_FORMAT, "split keys say file 3 of 3");
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", g_dir, g_one);
    assert_int_equal(system(cmd), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_split)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
