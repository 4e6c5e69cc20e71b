/* Part of device_model_cases.h: the vision towers on the device backend
   against the CPU. The committed tiny towers are bf16, which the device
   matmuls do not take, so each is copied with its tensors in f16 first;
   both sides then read the same f16 weights. Every NMSE is printed. */
#ifndef MLLM_TESTS_DEVICE_VISION_CASES_H
#define MLLM_TESTS_DEVICE_VISION_CASES_H
#include <sys/stat.h>
#include "core/alloc.h"
#include "core/dtype.h"
#include "formats/safetensors.h"
#include "image/image.h"
#include "models/vision/idefics3_vision_internal.h"
#include "models/vision/qwen2vl_vision_internal.h"

static void copy_file(const char *from_dir, const char *to_dir, const char *name) {
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/%s", from_dir, name);
    snprintf(b, sizeof b, "%s/%s", to_dir, name);
    size_t n = 0;
    void *buf = tu_read_file(a, &n);
    assert_non_null(buf);
    FILE *f = fopen(b, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
    free(buf);
}

/* to_dir/model.safetensors: from's tensors (f32 / f16 / bf16) as f16. */
static void write_f16_safetensors(const char *from, const char *to_dir) {
    mllm_safetensors *st = NULL;
    assert_int_equal(mllm_safetensors_open(from, &st), MLLM_OK);
    const size_t nt = mllm_safetensors_n_tensors(st);
    size_t cap = 4096 + nt * 256, len = 0, off = 0;
    char *hdr = malloc(cap);
    len += (size_t)snprintf(hdr + len, cap - len, "{");
    for (size_t i = 0; i < nt; i++) {
        const mllm_st_tensor *t = mllm_safetensors_tensor_at(st, i);
        const size_t n = (size_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
        len += (size_t)snprintf(hdr + len, cap - len, "%s\"%s\":{\"dtype\":\"F16\",\"shape\":[", i ? "," : "", t->name);
        /* past 4 dimensions (a Conv3d kernel) the loader reads the count only: its 4 collapsed ones */
        for (int d = (t->src_dims < 4 ? t->src_dims : 4) - 1; d >= 0; d--)
            len += (size_t)snprintf(hdr + len, cap - len, "%lld%s", (long long)t->ne[d], d ? "," : "");
        len += (size_t)snprintf(hdr + len, cap - len, "],\"data_offsets\":[%zu,%zu]}", off, off + 2 * n);
        off += 2 * n;
    }
    len += (size_t)snprintf(hdr + len, cap - len, "}");
    while (len % 8) hdr[len++] = ' ';
    assert_true(len < cap);
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", to_dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    const uint64_t hl = len;
    fwrite(&hl, 8, 1, f);
    fwrite(hdr, 1, len, f);
    for (size_t i = 0; i < nt; i++) {
        const mllm_st_tensor *t = mllm_safetensors_tensor_at(st, i);
        const size_t n = (size_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
        for (size_t j = 0; j < n; j++) {
            const float x = t->dtype == MLLM_DTYPE_F32   ? ((const float *)t->data)[j]
                            : t->dtype == MLLM_DTYPE_F16 ? mllm_f16_to_f32(((const mllm_f16 *)t->data)[j])
                                                         : mllm_bf16_to_f32(((const mllm_bf16 *)t->data)[j]);
            const mllm_f16 h = mllm_f32_to_f16(x);
            fwrite(&h, 2, 1, f);
        }
    }
    fclose(f);
    free(hdr);
    mllm_safetensors_close(st);
}

/* The tiny tower of tests/data/<rel> copied with f16 weights: its folder (malloc'd). */
static char *f16_copy(const char *rel, const char *name) {
    char src[512], st_path[600];
    snprintf(src, sizeof src, "%s", tu_datap(rel));
    char *dir = (char *)tu_tmp(name);
    mkdir(dir, 0755);
    copy_file(src, dir, "config.json");
    copy_file(src, dir, "preprocessor_config.json");
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", src);
    write_f16_safetensors(st_path, dir);
    return dir;
}

/* The NMSE bound, and the schedule of the encode just run on the device:
   every node of the tower there (RoPE from tables and attention over
   segments included), in one run. */
static void check_nmse(const char *what, int a, int b, const float *dev, const float *cpu, size_t n) {
    const double e = nmse(dev, cpu, n);
    mllm_sched_stats st;
    qv_last_schedule(&st);
    print_message("%s vision tower (f16), %d x %d: NMSE %.3g vs the CPU; %d nodes on %s, %d on the CPU, %d runs\n",
                  what, a, b, e, st.n_nodes[0], DEV_LABEL, st.n_nodes[1], st.n_runs);
    assert_true(e < 1e-10);
    assert_true(st.n_nodes[0] > 0);
    assert_int_equal(st.n_nodes[1], 0);
    assert_int_equal(st.n_runs, 1);
}

/* Both towers on the device and on the CPU (photo.png): embeddings within
   NMSE 1e-10 (PoCL: 1.9e-13 for SmolVLM's 5 tiles, 1.1e-12 for Qwen2.5-VL's
   14 x 22 patches). Every matrix and vector of a tower goes to the device,
   and every node runs there (check_nmse). */
static void test_vision_idefics3(void **state) {
    (void)state;
    if (no_device()) return;
    char *dir = f16_copy("smolvlm/tiny", DEV_NAME "-smolvlm-f16");
    mllm_idefics3_vision *v = NULL;
    if (mllm_idefics3_vision_open(dir, 2, &v)) fail_msg("%s", mllm_last_error());
    mllm_image im;
    assert_int_equal(mllm_image_load(tu_datap("images/photo.png"), 0, &im, NULL), MLLM_OK);
    mllm_idefics3_pre_params pp;
    mllm_idefics3_vision_pre_params(v, &pp);
    mllm_idefics3_pixels px;
    assert_int_equal(mllm_idefics3_preprocess(&im, &pp, &px), MLLM_OK);
    float *cpu = NULL, *dev = NULL;
    int64_t n_cpu = 0, n_dev = 0;
    assert_int_equal(mllm_idefics3_vision_encode(v, &px, &cpu, &n_cpu), MLLM_OK);
    mllm_backend *be = mllm_backend_by_name(DEV_NAME);
    assert_int_equal(mllm_idefics3_vision_use_backends(v, &be, 1), MLLM_OK);
    assert_int_equal(mllm_placement_count(v->w.placed[0]), v->w.n);
    assert_int_equal(mllm_idefics3_vision_encode(v, &px, &dev, &n_dev), MLLM_OK);
    assert_int_equal(n_cpu, n_dev);
    check_nmse("idefics3 (tiles x rows of a tile)", px.n_tiles, v->c.image_seq_len, dev, cpu, (size_t)n_cpu * (size_t)v->c.out_hidden);
    mllm_free(cpu), mllm_free(dev);
    mllm_idefics3_pixels_free(&px);
    mllm_image_free(&im);
    mllm_idefics3_vision_free(v);
    free(dir);
}

static void test_vision_qwen2vl(void **state) {
    (void)state;
    if (no_device()) return;
    char *dir = f16_copy("qwen2vl/tiny", DEV_NAME "-qwen2vl-f16");
    mllm_qwen2vl_vision *v = NULL;
    if (mllm_qwen2vl_vision_open(dir, 2, &v)) fail_msg("%s", mllm_last_error());
    mllm_image im;
    assert_int_equal(mllm_image_load(tu_datap("images/photo.png"), 0, &im, NULL), MLLM_OK);
    mllm_qwen2vl_pre_params pp;
    mllm_qwen2vl_vision_pre_params(v, &pp);
    mllm_qwen2vl_pixels px;
    assert_int_equal(mllm_qwen2vl_preprocess(&im, &pp, &px), MLLM_OK);
    float *cpu = NULL, *dev = NULL;
    int64_t n_cpu = 0, n_dev = 0;
    assert_int_equal(mllm_qwen2vl_vision_encode(v, &px, &cpu, &n_cpu), MLLM_OK);
    mllm_backend *be = mllm_backend_by_name(DEV_NAME);
    assert_int_equal(mllm_qwen2vl_vision_use_backends(v, &be, 1), MLLM_OK);
    assert_int_equal(mllm_placement_count(v->w.placed[0]), v->w.n);
    assert_int_equal(mllm_qwen2vl_vision_encode(v, &px, &dev, &n_dev), MLLM_OK);
    assert_int_equal(n_cpu, n_dev);
    check_nmse("qwen2vl (patch grid)", px.grid_h, px.grid_w, dev, cpu, (size_t)n_cpu * (size_t)v->c.out_hidden);
    mllm_free(cpu), mllm_free(dev);
    mllm_qwen2vl_pixels_free(&px);
    mllm_image_free(&im);
    mllm_qwen2vl_vision_free(v);
    free(dir);
}

#endif
