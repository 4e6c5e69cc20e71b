/* Whole-model checks of mllm_quantize_file.
   1. llama.cpp's own quantized files: stories260K.gguf (F32) quantized to
      q8_0 and q4_0 with --tensor-type ffn_down=f16 gives exactly the tensor
      types and bytes of llama-quantize's stories260K-Q8_0/Q4_0-ffn_down-F16
      files in ../shared/anchor-data (same keys, same general.file_type).
   2. Logits: a qwen3-shaped model with 256-wide rows (so k-quants are not
      replaced by their fallbacks; built from the tiny synth model's
      tokenizer with E=256, F=512, 2 layers, random N(0, 0.02) weights) is
      quantized to every mix; the last-position logits of an 8-token prompt
      are compared with the f32 model's (activations quantized as the
      kernels do: q8_0 / q8_1 / q8_K; f32 for w4a32). NMSE bounds, about 1.6-2x
      the measured values (random weights amplify weight error ~20x):
        q8_0 1.5e-3 (measured 6.3e-4), q6_k 1e-2 (5.2e-3), q5_k_m / q5_k_s
        2e-2 (9.9e-3 / 1.0e-2), q5_0 / q5_1 2.5e-2 (1.3e-2 / 1.1e-2),
        q4_k_m / q4_k_s 6e-2 (3.6e-2 / 3.3e-2), q4_0 / q4_1 8e-2 (4.5e-2 /
        4.1e-2), w4a32 / w4a32_g64 8e-2 (4.3e-2 / 4.1e-2), mxfp4 0.2 (0.108);
      and the mix really changed the logits (NMSE > 0).
   3. Mix rules: tensor types of q4_k_m on that model (attn_v / ffn_down of
      layer 0 and 1 at q6_k per use_more_bits with 2 layers, the tied
      token_embd at q6_k, norms f32). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mllm/mllm.h>
#include "core/dtype.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "quantize/quantize.h"
#include "quantize/quantize_internal.h"
#include "synth/synth.h"
#include "testutil.h"

static void compare_with_llama_cpp(const char *type, const char *theirs_rel) {
    const char *src = tu_shared("anchor-data/models/stories260K.gguf");
    const char *theirs = tu_shared(theirs_rel);
    if (!src || !theirs) {
        free((void *)src), free((void *)theirs);
        return;
    }
    char name[64];
    snprintf(name, sizeof name, "stories-%s.gguf", type);
    const char *out = tu_tmp(name);
    const char *ov[] = {"ffn_down=f16"};
    mllm_quantize_params p;
    mllm_quantize_default_params(&p);
    p.type = type;
    p.n_threads = 2;
    p.tensor_types = ov;
    p.n_tensor_types = 1;
    mllm_quantize_stats s = {.struct_size = sizeof s};
    if (mllm_quantize_file(src, out, &p, &s)) fail_msg("quantize: %s", mllm_last_error());
    mllm_gguf *a = NULL, *b = NULL;
    assert_int_equal(mllm_gguf_open(out, &a), MLLM_OK);
    assert_int_equal(mllm_gguf_open(theirs, &b), MLLM_OK);
    assert_int_equal(mllm_gguf_n_tensors(a), mllm_gguf_n_tensors(b));
    int differ = 0;
    for (uint64_t i = 0; i < mllm_gguf_n_tensors(b); i++) {
        const mllm_gguf_tensor *tb = mllm_gguf_tensor_at(b, i);
        char tn[128];
        snprintf(tn, sizeof tn, "%.*s", (int)tb->name.len, tb->name.ptr);
        const mllm_gguf_tensor *ta = mllm_gguf_find_tensor(a, tn);
        assert_non_null(ta);
        if (ta->dtype != tb->dtype || ta->size != tb->size || memcmp(ta->data, tb->data, ta->size) != 0) {
            printf("%s: %s differs (ours %s, llama.cpp %s)\n", type, tn, mllm_dtype_name(ta->dtype),
                   mllm_dtype_name(tb->dtype));
            differ++;
        }
    }
    uint32_t fa = 0, fb = 0;
    assert_true(mllm_gguf_get_u32(a, "general.file_type", &fa) && mllm_gguf_get_u32(b, "general.file_type", &fb));
    assert_int_equal(fa, fb);
    assert_int_equal(mllm_gguf_n_kv(a), mllm_gguf_n_kv(b));
    printf("%s: %llu tensors, %d differ from llama-quantize's file\n", type,
           (unsigned long long)mllm_gguf_n_tensors(b), differ);
    assert_int_equal(differ, 0);
    mllm_gguf_close(a), mllm_gguf_close(b);
    free((void *)src), free((void *)theirs), free((void *)out);
}

static void test_stories_matches_llama_cpp(void **state) {
    (void)state;
    compare_with_llama_cpp("q8_0", "anchor-data/models/stories260K-Q8_0-ffn_down-F16.gguf");
    compare_with_llama_cpp("q4_0", "anchor-data/models/stories260K-Q4_0-ffn_down-F16.gguf");
}

/* ---- a 256-wide qwen3 model ---- */
enum { E = 256, H = 4, HKV = 2, D = 64, F = 512, L = 2, V = 512 };

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float gauss(void) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    const double u1 = ((double)(g_rng >> 11) + 0.5) / 9007199254740992.0;
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    const double u2 = (double)(g_rng >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static float *random_matrix(int64_t n, float scale, float offset) {
    float *x = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) x[i] = offset + scale * gauss();
    return x;
}

/* The tiny synth model's tokenizer and keys with a 256-wide shape. */
static const char *wide_model(void) {
    static const char *path;
    if (path) return path;
    const char *tiny = tu_tmp("tiny-src.gguf"), *out = tu_tmp("wide-f32.gguf");
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "f32", "gguf", tiny, NULL, NULL), MLLM_OK);
    mllm_gguf *g = NULL;
    mllm_gguf_writer *w = NULL;
    assert_int_equal(mllm_gguf_open(tiny, &g), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_new(&w), MLLM_OK);
    assert_int_equal(quant_meta_copy_gguf(g, w, "qwen3."), MLLM_OK);
    mllm_gguf_close(g);
    static const struct { const char *k; uint32_t v; } u[] = {
        {"qwen3.block_count", L}, {"qwen3.context_length", 4096}, {"qwen3.embedding_length", E},
        {"qwen3.feed_forward_length", F}, {"qwen3.attention.head_count", H}, {"qwen3.attention.head_count_kv", HKV},
        {"qwen3.attention.key_length", D}, {"qwen3.attention.value_length", D}};
    for (size_t i = 0; i < sizeof u / sizeof *u; i++) assert_int_equal(mllm_gguf_writer_add_u32(w, u[i].k, u[i].v), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_f32(w, "qwen3.rope.freq_base", 1e6f), MLLM_OK);
    assert_int_equal(mllm_gguf_writer_add_f32(w, "qwen3.attention.layer_norm_rms_epsilon", 1e-6f), MLLM_OK);
    float *keep[64];
    int nk = 0;
#define MAT(name, ne0, ne1) do { const int64_t ne[2] = {ne0, ne1}; keep[nk] = random_matrix((int64_t)(ne0) * (ne1), 0.02f, 0.0f); \
        assert_int_equal(mllm_gguf_writer_add_tensor(w, name, MLLM_DTYPE_F32, 2, ne, keep[nk++]), MLLM_OK); } while (0)
#define VEC(name, ne0) do { const int64_t ne[1] = {ne0}; keep[nk] = random_matrix(ne0, 0.1f, 1.0f); \
        assert_int_equal(mllm_gguf_writer_add_tensor(w, name, MLLM_DTYPE_F32, 1, ne, keep[nk++]), MLLM_OK); } while (0)
    MAT("token_embd.weight", E, V);
    char n[64];
    for (int l = 0; l < L; l++) {
#define NM(s) (snprintf(n, sizeof n, "blk.%d." s, l), n)
        VEC(NM("attn_norm.weight"), E);
        MAT(NM("attn_q.weight"), E, H * D);
        MAT(NM("attn_k.weight"), E, HKV * D);
        MAT(NM("attn_v.weight"), E, HKV * D);
        MAT(NM("attn_output.weight"), H * D, E);
        VEC(NM("attn_q_norm.weight"), D);
        VEC(NM("attn_k_norm.weight"), D);
        VEC(NM("ffn_norm.weight"), E);
        MAT(NM("ffn_gate.weight"), E, F);
        MAT(NM("ffn_up.weight"), E, F);
        MAT(NM("ffn_down.weight"), F, E);
#undef NM
    }
    VEC("output_norm.weight", E);
    assert_int_equal(mllm_gguf_writer_write(w, out), MLLM_OK);
    mllm_gguf_writer_free(w);
    for (int i = 0; i < nk; i++) free(keep[i]);
    free((void *)tiny);
    path = out;
    return path;
}

static void run_logits(const char *path, float *logits) {
    static const int32_t ids[] = {1, 300, 42, 7, 255, 400, 13, 99};
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 2;
    mllm_model *m = NULL;
    if (mllm_model_load(path, &lp, &m)) fail_msg("load %s: %s", path, mllm_last_error());
    assert_int_equal(mllm_model_n_vocab(m), V);
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = 32;
    mllm_session *s = NULL;
    if (mllm_session_new(m, &sp, &s)) fail_msg("session %s: %s", path, mllm_last_error());
    if (mllm_session_eval(s, ids, sizeof ids / sizeof *ids)) fail_msg("eval %s: %s", path, mllm_last_error());
    memcpy(logits, mllm_session_logits(s), V * sizeof(float));
    mllm_session_free(s);
    mllm_model_free(m);
}

static const struct { const char *type; double bound; } k_mixes[] = {
    {"q8_0", 1.5e-3}, {"q6_k", 1e-2},   {"q5_k_m", 2e-2}, {"q5_k_s", 2e-2},  {"q4_k_m", 6e-2},
    {"q4_k_s", 6e-2}, {"q5_0", 2.5e-2}, {"q5_1", 2.5e-2}, {"q4_0", 8e-2},    {"q4_1", 8e-2},
    {"mxfp4", 0.2},   {"w4a32", 8e-2},  {"w4a32_g64", 8e-2},
};

static void test_logits_vs_f32(void **state) {
    (void)state;
    const char *src = wide_model();
    static float ref[V], got[V];
    run_logits(src, ref);
    for (size_t i = 0; i < sizeof k_mixes / sizeof *k_mixes; i++) {
        char name[64];
        snprintf(name, sizeof name, "wide-%s.gguf", k_mixes[i].type);
        const char *out = tu_tmp(name);
        mllm_quantize_params p;
        mllm_quantize_default_params(&p);
        p.type = k_mixes[i].type;
        p.n_threads = 2;
        mllm_quantize_stats st = {.struct_size = sizeof st};
        if (mllm_quantize_file(src, out, &p, &st)) fail_msg("quantize %s: %s", p.type, mllm_last_error());
        run_logits(out, got);
        const double e = tu_nmse(got, ref, V);
        printf("%-10s %6.3f MiB -> %6.3f MiB, last-logit NMSE vs f32 %.3g (bound %.0e)\n", p.type,
               (double)st.bytes_in / 1048576.0, (double)st.bytes_out / 1048576.0, e, k_mixes[i].bound);
        assert_true(e > 0);
        assert_true(e < k_mixes[i].bound);
        free((void *)out);
    }
}

static void test_q4_k_m_types(void **state) {
    (void)state;
    const char *src = wide_model(), *out = tu_tmp("wide-mix.gguf");
    mllm_quantize_params p;
    mllm_quantize_default_params(&p);
    p.type = "q4_k_m";
    if (mllm_quantize_file(src, out, &p, NULL)) fail_msg("quantize: %s", mllm_last_error());
    mllm_gguf *g = NULL;
    assert_int_equal(mllm_gguf_open(out, &g), MLLM_OK);
    /* use_more_bits(i, 2): i < 0 || i >= 1 || (i - 0) % 3 == 2 -> layer 1 only */
    static const struct { const char *name; int dtype; } want[] = {
        {"token_embd.weight", MLLM_DTYPE_Q6_K},     {"blk.0.attn_v.weight", MLLM_DTYPE_Q4_K},
        {"blk.1.attn_v.weight", MLLM_DTYPE_Q6_K},   {"blk.0.ffn_down.weight", MLLM_DTYPE_Q4_K},
        {"blk.1.ffn_down.weight", MLLM_DTYPE_Q6_K}, {"blk.0.attn_q.weight", MLLM_DTYPE_Q4_K},
        {"blk.0.attn_norm.weight", MLLM_DTYPE_F32}, {"output_norm.weight", MLLM_DTYPE_F32},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const mllm_gguf_tensor *t = mllm_gguf_find_tensor(g, want[i].name);
        assert_non_null(t);
        if (t->dtype != want[i].dtype) fail_msg("%s: %s, want %s", want[i].name, mllm_dtype_name(t->dtype), mllm_dtype_name(want[i].dtype));
    }
    uint32_t ft = 0;
    assert_true(mllm_gguf_get_u32(g, "general.file_type", &ft));
    assert_int_equal(ft, 15);
    mllm_gguf_close(g);
    free((void *)out);
}

static void test_bad_args(void **state) {
    (void)state;
    const char *out = tu_tmp("bad.gguf");
    mllm_quantize_params p;
    mllm_quantize_default_params(&p);
    p.type = "q3_x";
    assert_int_equal(mllm_quantize_file(wide_model(), out, &p, NULL), MLLM_ERR_INVALID_ARG);
    const char *bad[] = {"ffn_down"};
    p.type = "q8_0";
    p.tensor_types = bad;
    p.n_tensor_types = 1;
    assert_int_equal(mllm_quantize_file(wide_model(), out, &p, NULL), MLLM_ERR_INVALID_ARG);
    p.n_tensor_types = 0;
    assert_int_not_equal(mllm_quantize_file("/nonexistent/model.gguf", out, &p, NULL), MLLM_OK);
    free((void *)out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stories_matches_llama_cpp),
        cmocka_unit_test(test_q4_k_m_types),
        cmocka_unit_test(test_logits_vs_f32),
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
