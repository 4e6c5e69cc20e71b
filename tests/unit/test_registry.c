/* The model registry: one list of architectures; HF configs and GGUF keys of
   Gemma 3 and SmolLM3 become the right per-layer attention spec; the
   sliding-window attention op equals a naive double reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backends/cpu.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/meta.h"
#include "formats/mllmfile_model.h"
#include "graph/graph.h"
#include "models/registry.h"
#include "testutil.h"

static void test_one_list(void **state) {
    (void)state;
    const char *names = mllm_arch_names();
    const char *want[] = {"llama",    "qwen2",   "qwen2vl",        "qwen3",          "smollm3", "gemma3",
                          "bert",     "idefics3", "whisper",       "qwen2vl_vision", "idefics3_vision"};
    const mllm_model_kind kind[] = {MLLM_KIND_DECODER, MLLM_KIND_DECODER, MLLM_KIND_DECODER, MLLM_KIND_DECODER,
                                    MLLM_KIND_DECODER, MLLM_KIND_DECODER, MLLM_KIND_ENCODER, MLLM_KIND_DECODER,
                                    MLLM_KIND_SPEECH,  MLLM_KIND_VISION,  MLLM_KIND_VISION};
    assert_int_equal(mllm_arch_count(), 11);
    for (int i = 0; i < 11; i++) {
        const mllm_arch *a = mllm_arch_at((size_t)i);
        assert_non_null(strstr(names, want[i]));
        assert_ptr_equal(mllm_arch_find(want[i]), a);
        assert_int_equal(a->kind, kind[i]);
        /* each kind carries its hooks */
        assert_true(a->kind != MLLM_KIND_ENCODER || a->encoder);
        assert_true(a->kind != MLLM_KIND_SPEECH || a->speech);
        assert_true(a->kind != MLLM_KIND_VISION || a->vision);
    }
    /* the vision-language decoders name their towers */
    assert_ptr_equal(mllm_arch_find("qwen2vl")->vision, mllm_arch_find("qwen2vl_vision")->vision);
    assert_ptr_equal(mllm_arch_find("idefics3")->vision, mllm_arch_find("idefics3_vision")->vision);
    assert_null(mllm_arch_find("qwen3")->vision);
    assert_null(mllm_arch_find("mistral"));
    /* SmolVLM: its own row, though its text_config says llama */
    mllm_hparams shp;
    const char *sv = "{\"model_type\":\"smolvlm\",\"text_config\":{\"model_type\":\"llama\",\"hidden_size\":64,"
                     "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"intermediate_size\":128,"
                     "\"vocab_size\":320}}";
    if (mllm_family_read_hf_config(sv, strlen(sv), "c.json", &shp)) fail_msg("%s", mllm_last_error());
    assert_string_equal(shp.arch, "idefics3");
    mllm_hparams hp;
    const char *js = "{\"model_type\":\"mamba\",\"hidden_size\":8}";
    assert_int_equal(mllm_family_read_hf_config(js, strlen(js), "c.json", &hp), MLLM_ERR_UNSUPPORTED);
    assert_non_null(strstr(mllm_last_error(), "gemma3")); /* the error lists what is supported */
}

/* all-MiniLM-L6-v2's config.json: BERT's own fields and defaults. */
static void test_bert_hf_config(void **state) {
    (void)state;
    const char *js = "{\"architectures\":[\"BertModel\"],\"model_type\":\"bert\",\"hidden_act\":\"gelu\","
                     "\"hidden_size\":384,\"intermediate_size\":1536,\"layer_norm_eps\":1e-12,"
                     "\"max_position_embeddings\":512,\"num_attention_heads\":12,\"num_hidden_layers\":6,"
                     "\"position_embedding_type\":\"absolute\",\"type_vocab_size\":2,\"vocab_size\":30522}";
    mllm_hparams hp;
    assert_int_equal(mllm_family_read_hf_config(js, strlen(js), "c.json", &hp), MLLM_OK);
    assert_string_equal(hp.arch, "bert");
    assert_int_equal(hp.row->kind, MLLM_KIND_ENCODER);
    assert_int_equal(hp.act, MLLM_ACT_GELU_ERF);
    assert_int_equal(hp.n_token_types, 2);
    assert_int_equal(hp.head_dim, 32);
    assert_int_equal(hp.n_ctx_train, 512);
    assert_true(fabsf(hp.rms_eps - 1e-12f) < 1e-18f);
    /* BertConfig's default eps when the field is absent; unsupported activations by name */
    const char *js2 = "{\"model_type\":\"bert\",\"hidden_size\":8,\"intermediate_size\":16,"
                      "\"num_attention_heads\":2,\"num_hidden_layers\":1,\"vocab_size\":10,\"hidden_act\":\"relu\"}";
    assert_int_equal(mllm_family_read_hf_config(js2, strlen(js2), "c.json", &hp), MLLM_ERR_UNSUPPORTED);
    assert_non_null(strstr(mllm_last_error(), "relu"));
}

/* gemma-3-270m's config.json (the fields that matter). */
static const char k_gemma3_270m[] =
    "{\"architectures\":[\"Gemma3ForCausalLM\"],\"model_type\":\"gemma3_text\",\"hidden_size\":640,"
    "\"intermediate_size\":2048,\"num_hidden_layers\":18,\"num_attention_heads\":4,\"num_key_value_heads\":1,"
    "\"head_dim\":256,\"vocab_size\":262144,\"max_position_embeddings\":32768,\"rms_norm_eps\":1e-06,"
    "\"rope_theta\":1000000.0,\"rope_local_base_freq\":10000.0,\"query_pre_attn_scalar\":256,"
    "\"sliding_window\":512,\"rope_scaling\":null,\"final_logit_softcapping\":null,\"tie_word_embeddings\":true,"
    "\"layer_types\":[\"sliding_attention\",\"sliding_attention\",\"sliding_attention\",\"sliding_attention\","
    "\"sliding_attention\",\"full_attention\",\"sliding_attention\",\"sliding_attention\",\"sliding_attention\","
    "\"sliding_attention\",\"sliding_attention\",\"full_attention\",\"sliding_attention\",\"sliding_attention\","
    "\"sliding_attention\",\"sliding_attention\",\"sliding_attention\",\"full_attention\"]}";

static void test_gemma3_hf_config(void **state) {
    (void)state;
    mllm_hparams hp;
    assert_int_equal(mllm_family_read_hf_config(k_gemma3_270m, strlen(k_gemma3_270m), "g.json", &hp), MLLM_OK);
    assert_string_equal(hp.arch, "gemma3");
    assert_int_equal(hp.n_layer, 18);
    assert_int_equal(hp.head_dim, 256);
    assert_int_equal(hp.swa_window, 512);
    assert_true(hp.rope_neox && hp.tied_embd);
    assert_int_equal(hp.act, MLLM_ACT_GELU_TANH);
    assert_true(fabsf(hp.embd_scale - sqrtf(640.0f)) < 1e-6f);
    assert_true(fabsf(hp.attn_scale - 1.0f / 16.0f) < 1e-9f);
    for (int l = 0; l < 18; l++) {
        mllm_layer_spec s = mllm_hparams_layer(&hp, l);
        const bool global = l % 6 == 5;
        assert_int_equal(s.sliding, !global);
        assert_int_equal(s.window, global ? 0 : 512);
        assert_true(s.rope);
        assert_true(s.rope_theta == (global ? 1e6f : 1e4f));
    }
    /* Fields a config leaves out take Gemma3TextConfig's defaults. */
    const char *bare = "{\"model_type\":\"gemma3_text\",\"hidden_size\":640,\"intermediate_size\":2048,"
                       "\"num_hidden_layers\":6,\"num_attention_heads\":4,\"num_key_value_heads\":1,"
                       "\"head_dim\":128,\"vocab_size\":1000}";
    assert_int_equal(mllm_family_read_hf_config(bare, strlen(bare), "b.json", &hp), MLLM_OK);
    assert_true(hp.rope_theta == 1e6f && hp.rope_theta_swa == 1e4f);
    assert_int_equal(hp.swa_window, 4096);
    assert_true(fabsf(hp.attn_scale - 1.0f / 16.0f) < 1e-9f); /* 1/sqrt(256), not 1/sqrt(head_dim) */
    assert_true(mllm_hparams_layer(&hp, 5).sliding == false && mllm_hparams_layer(&hp, 4).sliding);
    /* A bad layer type is refused by name. */
    char *bad = strdup(k_gemma3_270m);
    char *p = strstr(bad, "full_attention");
    memcpy(p, "chunk_attention", 14);
    assert_int_equal(mllm_family_read_hf_config(bad, strlen(bad), "g.json", &hp), MLLM_ERR_UNSUPPORTED);
    assert_non_null(strstr(mllm_last_error(), "chunk_attentio"));
    free(bad);
}

/* GGUF-style keys as llama.cpp's converter writes them (no layer list:
   the pattern is every 6th layer global, as llama.cpp assumes). */
static void test_gemma3_gguf_keys(void **state) {
    (void)state;
    mllm_model_file f;
    memset(&f, 0, sizeof f);
    f.path = "g.gguf";
    mllm_meta *m = &f.meta;
    assert_int_equal(mllm_meta_set_str(m, "general.architecture", "gemma3", 6), MLLM_OK);
    mllm_meta_set_int(m, "gemma3.block_count", 26);
    mllm_meta_set_int(m, "gemma3.embedding_length", 1152);
    mllm_meta_set_int(m, "gemma3.feed_forward_length", 6912);
    mllm_meta_set_int(m, "gemma3.attention.head_count", 4);
    mllm_meta_set_int(m, "gemma3.attention.head_count_kv", 1);
    mllm_meta_set_int(m, "gemma3.attention.key_length", 256);
    mllm_meta_set_int(m, "gemma3.attention.sliding_window", 512);
    mllm_meta_set_int(m, "gemma3.vocab_size", 100);
    mllm_meta_set_float(m, "gemma3.rope.freq_base", 1e6);
    mllm_hparams hp;
    /* Resolving needs tensors; the hyper-parameters alone: */
    assert_int_equal(mllm_hparams_read_decoder(m, mllm_arch_find("gemma3"), f.path, &hp), MLLM_OK);
    int n_global = 0;
    for (int l = 0; l < 26; l++) n_global += !mllm_hparams_layer(&hp, l).sliding;
    assert_int_equal(n_global, 4); /* layers 5, 11, 17, 23 */
    assert_false(mllm_hparams_layer(&hp, 23).sliding);
    /* The whole file is refused with the missing tensor named. */
    assert_int_equal(mllm_family_resolve(&f, &hp), MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "token_embd.weight"));
    mllm_meta_free(m);
}

static void test_smollm3_no_rope(void **state) {
    (void)state;
    const char *js = "{\"model_type\":\"smollm3\",\"hidden_size\":64,\"intermediate_size\":128,"
                     "\"num_hidden_layers\":8,\"num_attention_heads\":4,\"num_key_value_heads\":2,"
                     "\"vocab_size\":512,\"rope_theta\":5000000.0,"
                     "\"no_rope_layers\":[1,1,1,0,1,1,1,0]}";
    mllm_hparams hp;
    assert_int_equal(mllm_family_read_hf_config(js, strlen(js), "s.json", &hp), MLLM_OK);
    for (int l = 0; l < 8; l++) assert_int_equal(mllm_hparams_layer(&hp, l).rope, (l + 1) % 4 != 0);
    const char *wrong = "{\"model_type\":\"smollm3\",\"hidden_size\":64,\"intermediate_size\":128,"
                        "\"num_hidden_layers\":8,\"num_attention_heads\":4,\"vocab_size\":512,"
                        "\"no_rope_layers\":[1,1,0]}";
    assert_int_equal(mllm_family_read_hf_config(wrong, strlen(wrong), "s.json", &hp), MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "no_rope_layers"));
}

/* Causal attention over T tokens at positions pos0.., window W, scale s,
   one KV head and H query heads, against double precision. */
static void attention_case(int T, int pos0, int W, float scale, int nt, bool causal) {
    enum { D = 8, H = 2, NCTX = 64 };
    const int kvd = D;
    mllm_kv_layer kv = {0};
    kv.n_ctx = NCTX;
    kv.kv_dim = kvd;
    kv.k = calloc((size_t)MLLM_KV_CAP(NCTX) * kvd, sizeof(float));
    kv.v = calloc((size_t)MLLM_KV_CAP(NCTX) * kvd, sizeof(float));
    const int n = pos0 + T;
    float *K = malloc((size_t)n * D * 4), *V = malloc((size_t)n * D * 4), *Q = malloc((size_t)T * H * D * 4);
    tu_fill_random(K, n * D, 11);
    tu_fill_random(V, n * D, 12);
    tu_fill_random(Q, T * H * D, 13);
    mllm_pool *pool = mllm_pool_new(nt);
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_EAGER, pool, 1 << 16);
    /* Fill the cache with the earlier positions, then attend with T queries. */
    for (int step = 0; step < 2; step++) {
        const int p0 = step ? pos0 : 0, cnt = step ? T : pos0;
        if (cnt == 0) continue;
        mllm_tensor *pos = mllm_graph_input_i32(&g, cnt, "pos");
        for (int i = 0; i < cnt; i++) mllm_tensor_i32(pos)[i] = p0 + i;
        int64_t ks[2] = {kvd, cnt};
        mllm_tensor *k = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, ks, K + (size_t)p0 * D, "k");
        mllm_tensor *v = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, ks, V + (size_t)p0 * D, "v");
        mllm_tensor *st = mllm_op_kv_store(&g, k, v, pos, &kv);
        if (!step) continue;
        int64_t qs[3] = {D, H, T};
        mllm_tensor *q = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 3, qs, Q, "q");
        mllm_tensor *a = NULL;
        if (causal) {
            a = mllm_op_attention(&g, q, st, pos, &kv, 1, scale, W);
        } else { /* eager runs at once: trace the node, then run it */
            mllm_graph tg;
            mllm_graph_init(&tg, MLLM_MODE_TRACE, pool, 1 << 16);
            mllm_tensor *tpos = mllm_graph_input_i32(&tg, cnt, "pos");
            memcpy(mllm_tensor_i32(tpos), mllm_tensor_i32(pos), (size_t)cnt * sizeof(int32_t));
            mllm_tensor *dep = mllm_tensor_wrap(&tg, MLLM_DTYPE_F32, 2, ks, K, "dep");
            mllm_tensor *tq = mllm_tensor_wrap(&tg, MLLM_DTYPE_F32, 3, qs, Q, "q");
            mllm_tensor *ta = mllm_op_attention_noncausal(mllm_op_attention(&tg, tq, dep, tpos, &kv, 1, scale, W));
            assert_true(mllm_graph_plan(&tg, &ta, 1));
            mllm_graph_execute(&tg);
            float *copy = malloc((size_t)T * H * D * sizeof(float));
            memcpy(copy, ta->data, (size_t)T * H * D * sizeof(float));
            mllm_graph_free(&tg);
            a = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 3, qs, copy, "a");
        }
        assert_non_null(a);
        double *ref = malloc((size_t)T * H * D * sizeof(double));
        float *rf = malloc((size_t)T * H * D * sizeof(float));
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                const int p = causal ? pos0 + t : pos0 + T - 1, lo = W > 0 && p + 1 > W ? p + 1 - W : 0;
                double mx = -INFINITY, sum = 0, sc[64];
                for (int j = lo; j <= p; j++) {
                    double d = 0;
                    for (int e = 0; e < D; e++) d += (double)Q[(t * H + h) * D + e] * K[j * D + e];
                    sc[j] = d * scale;
                    mx = fmax(mx, sc[j]);
                }
                for (int j = lo; j <= p; j++) sum += exp(sc[j] - mx);
                for (int e = 0; e < D; e++) {
                    double o = 0;
                    for (int j = lo; j <= p; j++) o += exp(sc[j] - mx) / sum * V[j * D + e];
                    ref[(t * H + h) * D + e] = o;
                    rf[(t * H + h) * D + e] = (float)o;
                }
            }
        double e = tu_nmse(a->data, rf, T * H * D);
        if (!(e < 1e-10)) fail_msg("T %d pos0 %d window %d: nmse %g", T, pos0, W, e);
        free(ref);
        free(rf);
        if (!causal) free(a->data);
    }
    mllm_graph_free(&g);
    mllm_pool_free(pool);
    free(K), free(V), free(Q), free(kv.k), free(kv.v);
}

static void test_sliding_window_attention(void **state) {
    (void)state;
    mllm_cpu_init();
    for (int nt = 1; nt <= 2; nt++) {
        attention_case(5, 0, 0, 0.35f, nt, true);    /* full attention, prefill */
        attention_case(5, 0, 3, 0.35f, nt, true);    /* window inside a prefill */
        attention_case(1, 20, 7, 0.125f, nt, true);  /* decode with a window */
        attention_case(19, 11, 4, 0.5f, nt, true);   /* a chunk past the window, odd sizes */
        attention_case(3, 2, 100, 0.25f, nt, true);  /* window wider than the context */
        attention_case(7, 0, 0, 0.3f, nt, false);    /* encoder: every token sees all 7 */
        attention_case(21, 0, 0, 0.2f, nt, false);   /* more than one block of queries */
    }
}

/* YaRN RoPE (neox pairs) at a few positions against HF's formula in double:
   inv_freq = interp * (1 - ef) + extrap * ef, ef = 1 - ramp(low, high),
   cos/sin scaled by 0.1 ln(factor) + 1. */
static void test_yarn_rope(void **state) {
    (void)state;
    enum { D = 32 };
    const double base = 10000.0, factor = 4.0, orig = 64, bf = 32, bs = 1;
    double lo = floor(D * log(orig / (bf * 2 * M_PI)) / (2 * log(base)));
    double hi = ceil(D * log(orig / (bs * 2 * M_PI)) / (2 * log(base)));
    lo = fmax(lo, 0), hi = fmin(hi, D - 1);
    mllm_rope_params rp = {0};
    rp.n_rot = D;
    rp.neox = true;
    rp.theta_scale = powf((float)base, -2.0f / D);
    rp.freq_scale = (float)(1.0 / factor);
    rp.ext_factor = 1.0f;
    rp.attn_factor = 1.0f;
    rp.corr[0] = (float)lo, rp.corr[1] = (float)hi;
    mllm_pool *pool = mllm_pool_new(1);
    for (int pos = 0; pos < 200; pos += 37) {
        mllm_graph g;
        mllm_graph_init(&g, MLLM_MODE_EAGER, pool, 1 << 14);
        mllm_tensor *pin = mllm_graph_input_i32(&g, 1, "pos");
        mllm_tensor_i32(pin)[0] = pos;
        float x[D];
        tu_fill_random(x, D, 5 + (uint64_t)pos);
        int64_t ne[3] = {D, 1, 1};
        mllm_tensor *t = mllm_op_rope(&g, mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 3, ne, x, "x"), pin, &rp);
        assert_non_null(t);
        float ref[D];
        const double ms = 0.1 * log(factor) + 1.0;
        for (int i = 0; i < D / 2; i++) {
            const double extrap = pow(base, -2.0 * i / D), interp = extrap / factor;
            double y = (i - lo) / (hi - lo > 0.001 ? hi - lo : 0.001);
            const double ef = 1.0 - fmin(1.0, fmax(0.0, y));
            const double th = pos * (interp * (1 - ef) + extrap * ef);
            ref[i] = (float)(ms * (x[i] * cos(th) - x[i + D / 2] * sin(th)));
            ref[i + D / 2] = (float)(ms * (x[i + D / 2] * cos(th) + x[i] * sin(th)));
        }
        const double e = tu_nmse(t->data, ref, D);
        if (!(e < 1e-9)) fail_msg("pos %d: nmse %g", pos, e);
        mllm_graph_free(&g);
    }
    mllm_pool_free(pool);
}

/* .mllm config sections: the pre-registry Llama format still reads (into
   the GGUF keys), and the current one round-trips the metadata. */
static void test_mllm_config_sections(void **state) {
    (void)state;
    const char *legacy =
        "{\"format\":\"mllm-llama-config\",\"arch\":\"qwen3\",\"n_vocab\":512,\"n_embd\":64,\"n_layer\":2,"
        "\"n_head\":4,\"n_head_kv\":2,\"head_dim\":16,\"n_ff\":128,\"n_ctx_train\":4096,\"n_rot\":16,"
        "\"rope_theta\":1000000,\"rope_neox\":true,\"rope_scaling\":\"none\",\"rope_factor\":0,"
        "\"rope_low_freq_factor\":0,\"rope_high_freq_factor\":0,\"rope_orig_ctx\":0,\"rms_eps\":9.99999997e-07,"
        "\"qkv_bias\":false,\"qk_norm\":true,\"tied_embd\":true}";
    mllm_meta m = {0};
    assert_int_equal(mllm_mllmfile_config_parse(legacy, strlen(legacy), "x.mllm", &m), MLLM_OK);
    mllm_hparams hp;
    assert_int_equal(mllm_hparams_read_decoder(&m, mllm_arch_find("qwen3"), "x.mllm", &hp), MLLM_OK);
    assert_int_equal(hp.n_vocab, 512);
    assert_int_equal(hp.head_dim, 16);
    assert_int_equal(hp.n_head_kv, 2);
    assert_true(hp.rope_theta == 1e6f && hp.rms_eps == 9.99999997e-07f && hp.rope_neox);
    /* round trip of the current format */
    char *js = NULL;
    size_t n = 0;
    assert_int_equal(mllm_mllmfile_config_to_json(&m, &js, &n), MLLM_OK);
    assert_non_null(strstr(js, "\"mllm-meta\""));
    mllm_meta back = {0};
    assert_int_equal(mllm_mllmfile_config_parse(js, n, "y.mllm", &back), MLLM_OK);
    mllm_hparams hp2;
    assert_int_equal(mllm_hparams_read_decoder(&back, mllm_arch_find("qwen3"), "y.mllm", &hp2), MLLM_OK);
    assert_memory_equal(&hp, &hp2, sizeof hp);
    mllm_free(js);
    mllm_meta_free(&back);
    mllm_meta_free(&m);
    /* an unknown section format is refused by name */
    const char *other = "{\"format\":\"mllm-x\"}";
    assert_int_equal(mllm_mllmfile_config_parse(other, strlen(other), "z.mllm", &m), MLLM_ERR_UNSUPPORTED);
    assert_non_null(strstr(mllm_last_error(), "mllm-x"));
    mllm_meta_free(&m);
}

/* LayerNorm against double math, with and without weight and bias, odd sizes. */
static void test_layernorm(void **state) {
    (void)state;
    const int sizes[] = {1, 7, 64, 385};
    for (int si = 0; si < 4; si++) {
        const int n = sizes[si], rows = 3;
        float *x = malloc((size_t)n * rows * 4), *w = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
        float *ref = malloc((size_t)n * rows * 4);
        tu_fill_random(x, (size_t)n * rows, 21 + (uint64_t)si);
        tu_fill_random(w, (size_t)n, 31);
        tu_fill_random(b, (size_t)n, 41);
        for (int i = 0; i < n * rows; i++) x[i] = x[i] * 3.0f + 1.5f; /* a mean far from 0 */
        mllm_pool *pool = mllm_pool_new(2);
        for (int variant = 0; variant < 2; variant++) {
            mllm_graph g;
            mllm_graph_init(&g, MLLM_MODE_EAGER, pool, 1 << 14);
            int64_t ne[2] = {n, rows}, vn[1] = {n};
            mllm_tensor *W = variant ? mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 1, vn, w, "w") : NULL;
            mllm_tensor *B = variant ? mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 1, vn, b, "b") : NULL;
            mllm_tensor *y = mllm_op_layernorm(&g, mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, ne, x, "x"), W, B, 1e-5f);
            assert_non_null(y);
            for (int r = 0; r < rows; r++) {
                double mean = 0, var = 0;
                for (int i = 0; i < n; i++) mean += x[r * n + i] / (double)n;
                for (int i = 0; i < n; i++) var += (x[r * n + i] - mean) * (x[r * n + i] - mean) / n;
                for (int i = 0; i < n; i++) {
                    const double v = (x[r * n + i] - mean) / sqrt(var + 1e-5);
                    ref[r * n + i] = (float)(variant ? v * w[i] + b[i] : v);
                }
            }
            const double e = tu_nmse(y->data, ref, (size_t)n * rows);
            if (!(e < 1e-12)) fail_msg("layernorm n %d variant %d: nmse %g", n, variant, e);
            mllm_graph_free(&g);
        }
        mllm_pool_free(pool);
        free(x), free(w), free(b), free(ref);
    }
}

/* GELU (erf form) against double math, over a range that covers both tails. */
static void test_gelu_erf(void **state) {
    (void)state;
    enum { N = 1001 };
    float x[N], ref[N];
    for (int i = 0; i < N; i++) x[i] = -10.0f + 20.0f * (float)i / (N - 1);
    for (int i = 0; i < N; i++) ref[i] = (float)(0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0))));
    mllm_pool *pool = mllm_pool_new(3);
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_EAGER, pool, 1 << 14);
    int64_t ne[1] = {N};
    mllm_tensor *y = mllm_op_gelu(&g, mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 1, ne, x, "x"));
    assert_non_null(y);
    for (int i = 0; i < N; i++)
        if (!(fabsf(((float *)y->data)[i] - ref[i]) <= 1e-6f * (1.0f + fabsf(ref[i]))))
            fail_msg("gelu(%g) = %g, expected %g", (double)x[i], (double)((float *)y->data)[i], (double)ref[i]);
    /* the tanh form differs by up to ~1e-3 here: the test tells them apart */
    mllm_graph_free(&g);
    mllm_pool_free(pool);
}

/* Planning a traced graph (what a session does) keeps the attention's
   window: the planner's shared-input flag is a matmul's ip[1], and it once
   cleared every node's, so sliding layers attended to everything. */
static void test_plan_keeps_window(void **state) {
    (void)state;
    enum { D = 8, NCTX = 16 };
    mllm_kv_layer kv = {0};
    kv.n_ctx = NCTX;
    kv.kv_dim = D;
    kv.k = calloc((size_t)MLLM_KV_CAP(NCTX) * D, sizeof(float));
    kv.v = calloc((size_t)MLLM_KV_CAP(NCTX) * D, sizeof(float));
    float K[2 * D] = {0}, Q[2 * D] = {0};
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_TRACE, NULL, 1 << 16);
    mllm_tensor *pos = mllm_graph_input_i32(&g, 2, "pos");
    int64_t ks[2] = {D, 2}, qs[3] = {D, 1, 2};
    mllm_tensor *k = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, ks, K, "k");
    mllm_tensor *v = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, ks, K, "v");
    mllm_tensor *q = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 3, qs, Q, "q");
    mllm_tensor *a = mllm_op_attention(&g, q, mllm_op_kv_store(&g, k, v, pos, &kv), pos, &kv, 1, 0.5f, 5);
    assert_non_null(a);
    assert_true(mllm_graph_plan(&g, &a, 1));
    assert_int_equal(a->ip[1], 5);
    mllm_graph_free(&g);
    free(kv.k), free(kv.v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_list),
        cmocka_unit_test(test_gemma3_hf_config),
        cmocka_unit_test(test_bert_hf_config),
        cmocka_unit_test(test_gemma3_gguf_keys),
        cmocka_unit_test(test_smollm3_no_rope),
        cmocka_unit_test(test_sliding_window_attention),
        cmocka_unit_test(test_yarn_rope),
        cmocka_unit_test(test_mllm_config_sections),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_gelu_erf),
        cmocka_unit_test(test_plan_keeps_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
