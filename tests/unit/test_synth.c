/* Synthetic models: the GGUF and HF forms of a preset open through
   mllm_model_file_open with the preset's config and the same weights; values
   have the promised statistics; output is deterministic; the tokenizer has
   byte tokens, learned merges and the family's special tokens. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "formats/gguf.h"
#include "formats/model_file.h"
#include "synth/synth.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_progress_calls;
static void count_progress(void *user, const char *msg) {
    (void)user;
    assert_non_null(msg);
    g_progress_calls++;
}

static mllm_model_file *synth_open(const char *arch, const char *dtype, const char *format, const char *name) {
    const char *path = tu_tmp(name);
    mllm_status st = mllm_synth_write(arch, "tiny", dtype, format, path, count_progress, NULL);
    if (st) fail_msg("synth %s %s %s: %s", arch, dtype, format, mllm_last_error());
    mllm_model_file *f = NULL;
    st = tu_open(path, &f);
    if (st) fail_msg("open %s: %s", path, mllm_last_error());
    free((void *)path);
    return f;
}

static bool str_eq(mllm_gguf_str s, const char *c) { return s.len == strlen(c) && memcmp(s.ptr, c, s.len) == 0; }

static void test_qwen3_tiny_gguf(void **state) {
    (void)state;
    g_progress_calls = 0;
    mllm_model_file *f = synth_open("qwen3", "f32", "gguf", "q.gguf");
    assert_int_equal(g_progress_calls, 1 + 2 * 11 + 1); /* one line per tensor */
    const mllm_hparams *c = tu_cfg(f);
    assert_string_equal(c->arch, "qwen3");
    assert_int_equal(c->n_embd, 64);
    assert_int_equal(c->n_layer, 2);
    assert_int_equal(c->n_head, 4);
    assert_int_equal(c->n_head_kv, 2);
    assert_int_equal(c->head_dim, 16);
    assert_int_equal(c->n_ff, 128);
    assert_int_equal(c->n_vocab, 512);
    assert_true(c->qk_norm);
    assert_true(c->tied_embd);
    assert_true(c->rope_neox);
    assert_true(c->rope_theta == 1e6f);
    const mllm_gguf *g = f->gguf;
    mllm_gguf_str s;
    assert_true(mllm_gguf_get_str(g, "tokenizer.ggml.model", &s) && str_eq(s, "gpt2"));
    assert_true(mllm_gguf_get_str(g, "tokenizer.ggml.pre", &s) && str_eq(s, "qwen2"));
    assert_true(mllm_gguf_get_str(g, "tokenizer.chat_template", &s));
    /* Bytes first, in GPT-2's spelling: 'A' is itself, ' ' is U+0120. */
    assert_true(mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 'A', &s) && str_eq(s, "A"));
    assert_true(mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", ' ', &s) && str_eq(s, "\xc4\xa0"));
    assert_true(mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 511, &s) && str_eq(s, "[PAD511]"));
    uint64_t n_merges;
    mllm_gguf_type et;
    assert_true(mllm_gguf_get_arr(g, "tokenizer.ggml.merges", &et, &n_merges, NULL));
    assert_true(n_merges > 200 && n_merges <= 512 - 256 - 5);
    /* Common words of the text became single tokens. */
    bool the = false, and_ = false;
    uint32_t eos, bos;
    for (uint64_t i = 256; i < 512; i++) {
        assert_true(mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", i, &s));
        the = the || str_eq(s, "\xc4\xa0the");
        and_ = and_ || str_eq(s, "\xc4\xa0" "and");
    }
    assert_true(the && and_);
    assert_true(mllm_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &eos));
    assert_true(mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", eos, &s) && str_eq(s, "<|im_end|>"));
    assert_true(mllm_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &bos));
    assert_true(mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", bos, &s) && str_eq(s, "<|endoftext|>"));
    bool add_bos = true;
    assert_true(mllm_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos));
    assert_false(add_bos);
    /* Statistics: matrices N(0, 0.02^2), norms 1 + N(0, 0.1^2). */
    const mllm_weight *w = mllm_model_file_find(f, "token_embd.weight");
    const float *x = w->data;
    size_t n = w->size / 4;
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++) { sum += x[i]; sq += (double)x[i] * x[i]; }
    assert_true(fabs(sum / n) < 0.001);
    assert_true(fabs(sqrt(sq / n) - 0.02) < 0.001);
    w = mllm_model_file_find(f, "blk.1.ffn_norm.weight");
    x = w->data;
    sum = sq = 0;
    for (int i = 0; i < 64; i++) { sum += x[i]; sq += (x[i] - 1.0) * (x[i] - 1.0); }
    assert_true(fabs(sum / 64 - 1.0) < 0.05);
    assert_true(fabs(sqrt(sq / 64) - 0.1) < 0.04);
    mllm_model_file_close(f);
}

static void test_deterministic(void **state) {
    (void)state;
    const char *a = tu_tmp("d1.gguf"), *b = tu_tmp("d2.gguf");
    assert_int_equal(mllm_synth_write("llama", "tiny", "bf16", "gguf", a, NULL, NULL), MLLM_OK);
    assert_int_equal(mllm_synth_write("llama", "tiny", "bf16", "gguf", b, NULL, NULL), MLLM_OK);
    size_t la, lb;
    void *da = tu_read_file(a, &la), *db = tu_read_file(b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(da, db, la);
    free(da);
    free(db);
    free((void *)a);
    free((void *)b);
}

/* HF and GGUF forms of one preset and dtype hold the same weights; for
   llama and smollm3 the GGUF stores q/k rows in interleaved-RoPE order; a
   Gemma HF folder's norm weights w become 1 + w at load, the GGUF's values. */
static void compare_forms(const char *arch, const char *dtype) {
    char n1[64], n2[64];
    snprintf(n1, sizeof n1, "%s-%s.gguf", arch, dtype);
    snprintf(n2, sizeof n2, "%s-%s-hf", arch, dtype);
    mllm_model_file *g = synth_open(arch, dtype, "gguf", n1);
    mllm_model_file *h = synth_open(arch, dtype, "hf", n2);
    assert_int_equal(h->kind, MLLM_FILE_HF);
    assert_non_null(h->tokenizer_json);
    assert_non_null(h->tokenizer_config);
    mllm_hparams cg = *tu_cfg(g), ch = *tu_cfg(h);
    bool llama = !strcmp(arch, "llama"), pairwise = llama || !strcmp(arch, "smollm3");
    assert_int_equal(ch.rope_neox, true);
    assert_int_equal(cg.rope_neox, !pairwise);
    if (llama) {
        assert_int_equal(ch.rope_scaling, MLLM_ROPE_SCALING_LLAMA3);
        assert_true(ch.rope_factor == 32.0f && ch.rope_low_freq_factor == 1.0f && ch.rope_high_freq_factor == 4.0f);
        assert_int_equal(ch.rope_orig_ctx, 8192);
        assert_non_null(mllm_model_file_find(g, "rope_freqs.weight"));
    }
    cg.rope_neox = ch.rope_neox;
    cg.rope_scaling = ch.rope_scaling;
    cg.rope_factor = ch.rope_factor;
    cg.rope_low_freq_factor = ch.rope_low_freq_factor;
    cg.rope_high_freq_factor = ch.rope_high_freq_factor;
    cg.rope_orig_ctx = ch.rope_orig_ctx;
    assert_memory_equal(&cg, &ch, sizeof cg);
    assert_int_equal(h->n_weights + (llama ? 1 : 0), g->n_weights);
    for (size_t i = 0; i < h->n_weights; i++) {
        const mllm_weight *wh = &h->weights[i], *wg = mllm_model_file_find(g, wh->name);
        if (!wg) fail_msg("GGUF lacks %s", wh->name);
        assert_int_equal(wh->dtype, wg->dtype);
        assert_memory_equal(wh->ne, wg->ne, sizeof wh->ne);
        assert_int_equal(wh->size, wg->size);
        int heads = strstr(wh->name, "attn_q.") ? cg.n_head : strstr(wh->name, "attn_k.") ? cg.n_head_kv : 0;
        if (!pairwise || !heads) {
            if (memcmp(wh->data, wg->data, wh->size)) fail_msg("%s differs", wh->name);
            continue;
        }
        size_t row = wh->size / (size_t)wh->ne[1];
        int64_t hd = wh->ne[1] / heads;
        for (int64_t r = 0; r < wh->ne[1]; r++) {
            int64_t j = r % hd, src = r - j + (j % 2) * (hd / 2) + j / 2;
            if (memcmp((const char *)wg->data + r * row, (const char *)wh->data + src * row, row)) {
                fail_msg("%s row %lld is not HF row %lld", wh->name, (long long)r, (long long)src);
            }
        }
    }
    mllm_model_file_close(g);
    mllm_model_file_close(h);
}

static void test_hf_round_trip(void **state) {
    (void)state;
    compare_forms("qwen3", "f16");
    compare_forms("llama", "bf16");
    compare_forms("llama", "f32");
    compare_forms("smollm3", "f16");
    compare_forms("gemma3", "f32");
    compare_forms("gemma3", "bf16");
}

/* The per-layer attention spec each family's tiny preset exists to test. */
static void test_family_layer_specs(void **state) {
    (void)state;
    static const char *formats[] = {"gguf", "hf"};
    for (int k = 0; k < 2; k++) {
        mllm_model_file *f = synth_open("gemma3", "f32", formats[k], k ? "g3-hf" : "g3.gguf");
        const mllm_hparams *c = tu_cfg(f);
        assert_string_equal(c->arch, "gemma3");
        assert_int_equal(c->n_layer, 6);
        assert_int_equal(c->swa_window, 4);
        assert_true(c->rope_theta == 1e6f && c->rope_theta_swa == 1e4f);
        assert_true(c->attn_scale == 1.0f / sqrtf(24.0f));
        assert_true(c->embd_scale == sqrtf(96.0f));
        assert_true(c->post_norms && c->qk_norm && c->tied_embd && c->rope_neox);
        assert_int_equal(c->act, MLLM_ACT_GELU_TANH);
        for (int l = 0; l < 6; l++) {
            mllm_layer_spec sp = mllm_hparams_layer(c, l);
            bool global = l == 2 || l == 5;
            assert_int_equal(sp.sliding, !global);
            assert_int_equal(sp.window, global ? 0 : 4);
            assert_true(sp.rope && sp.rope_theta == (global ? 1e6f : 1e4f));
        }
        /* Gemma's norms multiply by 1 + w: the loaded weights are near 1. */
        const mllm_weight *w = mllm_model_file_find(f, "blk.0.post_ffw_norm.weight");
        assert_non_null(w);
        assert_int_equal(w->dtype, MLLM_DTYPE_F32);
        assert_true(fabsf(((const float *)w->data)[0] - 1.0f) < 0.5f);
        mllm_model_file_close(f);
        f = synth_open("smollm3", "f32", formats[k], k ? "s3-hf" : "s3.gguf");
        c = tu_cfg(f);
        assert_string_equal(c->arch, "smollm3");
        assert_int_equal(c->n_layer, 8);
        assert_int_equal(c->rope_neox, k == 1);
        for (int l = 0; l < 8; l++) {
            mllm_layer_spec sp = mllm_hparams_layer(c, l);
            assert_int_equal(sp.rope, l != 3 && l != 7);
            assert_false(sp.sliding);
        }
        mllm_model_file_close(f);
    }
}

static void test_llama_tokenizer_keys(void **state) {
    (void)state;
    mllm_model_file *f = synth_open("llama", "f16", "gguf", "l.gguf");
    mllm_gguf_str s;
    uint32_t eos, bos;
    bool add_bos = false;
    assert_true(mllm_gguf_get_str(f->gguf, "tokenizer.ggml.pre", &s) && str_eq(s, "llama-bpe"));
    assert_true(mllm_gguf_get_u32(f->gguf, "tokenizer.ggml.bos_token_id", &bos));
    assert_true(mllm_gguf_get_arr_str(f->gguf, "tokenizer.ggml.tokens", bos, &s) && str_eq(s, "<|begin_of_text|>"));
    assert_true(mllm_gguf_get_u32(f->gguf, "tokenizer.ggml.eos_token_id", &eos));
    assert_true(mllm_gguf_get_arr_str(f->gguf, "tokenizer.ggml.tokens", eos, &s) && str_eq(s, "<|eot_id|>"));
    assert_true(mllm_gguf_get_bool(f->gguf, "tokenizer.ggml.add_bos_token", &add_bos) && add_bos);
    assert_false(tu_cfg(f)->rope_neox);
    assert_true(tu_cfg(f)->rope_theta == 5e5f);
    /* rope_freqs: 1 for the fastest pairs, 32 for the slowest. */
    const mllm_weight *rf = mllm_model_file_find(f, "rope_freqs.weight");
    const float *r = rf->data;
    assert_int_equal(rf->ne[0], 8);
    assert_true(r[0] == 1.0f);
    assert_true(r[7] == 32.0f);
    mllm_model_file_close(f);
}

static void test_bad_args(void **state) {
    (void)state;
    const char *p = tu_tmp("x.gguf");
    assert_int_equal(mllm_synth_write("gpt2", "tiny", "f32", "gguf", p, NULL, NULL), MLLM_ERR_INVALID_ARG);
    assert_non_null(strstr(mllm_last_error(), "gpt2"));
    assert_int_equal(mllm_synth_write("qwen3", "huge", "f32", "gguf", p, NULL, NULL), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "q4_k", "gguf", p, NULL, NULL), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "f32", "onnx", p, NULL, NULL), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "f32", "gguf", "/nonexistent/dir/x.gguf", NULL, NULL),
                     MLLM_ERR_IO);
    free((void *)p);
}

/* Allocation failures anywhere in synth and in opening its output give
   NOMEM (never a crash or a leak under ASan) and leave no file behind. */
static void test_out_of_memory(void **state) {
    (void)state;
    static const char *formats[] = {"gguf", "hf"};
    for (int fmt = 0; fmt < 2; fmt++) {
        const char *path = tu_tmp(fmt ? "oom-hf" : "oom.gguf");
        long n;
        for (n = 0;; n += 13) {
            mllm_alloc_fail_after(n);
            mllm_status st = mllm_synth_write("llama", "tiny", "f16", formats[fmt], path, NULL, NULL);
            mllm_alloc_fail_after(-1);
            if (st == MLLM_OK) break;
            assert_int_equal(st, MLLM_ERR_NOMEM);
            assert_int_not_equal(access(path, F_OK), 0);
        }
        assert_true(n > 13);
        for (n = 0;; n++) {
            mllm_model_file *f = (mllm_model_file *)1;
            mllm_alloc_fail_after(n);
            mllm_status st = tu_open(path, &f);
            mllm_alloc_fail_after(-1);
            if (st == MLLM_OK) {
                mllm_model_file_close(f);
                break;
            }
            assert_int_equal(st, MLLM_ERR_NOMEM);
            assert_null(f);
        }
        free((void *)path);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3_tiny_gguf),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_hf_round_trip),
        cmocka_unit_test(test_family_layer_specs),
        cmocka_unit_test(test_llama_tokenizer_keys),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
