/* The body of test_opencl_model.c and test_cuda_model.c: whole models on a
   device backend (backends/dev_backend.c over OpenCL or CUDA; PoCL on the
   CPU in CI for OpenCL) against the CPU: logits after a prefill and after
   decoding within a normalised MSE of the CPU's exact mode (f32
   activations, which is what the device matmuls compute) per weight type,
   and the same greedy tokens (also the same as the CPU's default mode for
   stories260K). The KV cache of the offloaded layers and their attention
   run on the device: the decode graph leaves nothing on the CPU but a
   k-quant embedding lookup, and a session hands its device caches back
   when freed. Models: ../shared's stories260K (f32, f16, q8_0, q4_0 with
   f16 ffn_down) and qwen3-tiny-random (q8_0); synthetic qwen3 tiny256
   quantized to q4_K and q6_K (rows of 256 for the k-quants), qwen2 (q/k/v
   biases) and gemma3 (GeGLU, post norms, scaled embeddings, sliding
   windows); stories260K with -ngl 2 (two of five layers on the device,
   the rest on the CPU) and qwen3-tiny with -ngl 1, and two sessions
   generating at once; the vision towers (device_vision_cases.h). Every NMSE
   is printed. Without the layer in the build, or without a device, every
   test prints SKIPPED with the reason. The including file names the
   backend:
     DEV_NAME             its registry name ("opencl")
     DEV_LABEL            its name in messages ("OpenCL")
     DEV_BUILT            1 when the build has the layer
     DEV_DEVICE()         the opened device's name
     DEV_SUPPORTS_GET_ROWS(t)  whether the layer looks rows up in tables of type t
     DEV_NOT_BUILT        why the build lacks it
   and this file defines main. */
#ifndef MLLM_TESTS_DEVICE_MODEL_CASES_H
#define MLLM_TESTS_DEVICE_MODEL_CASES_H
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mllm/mllm.h>
#include "api/internal.h"
#include "backends/cpu.h"
#include "backends/dev_internal.h"
#include "audio/audio.h"
#include "core/alloc.h"
#include "graph/sched.h"
#include "models/whisper/whisper_internal.h"
#include "quantize/quantize.h"
#include "synth/synth.h"
#include "testutil.h"

/* Tokens per case; models with a large vocabulary (qwen3-tiny's 151936
   rows of output) take fewer: PoCL runs their output matmul at a few
   passes per second. */
#define N_PREFILL 20
#define N_DECODE 6
#define N_GREEDY 24
#define BIG_VOCAB 10000
#define N_PREFILL_BIG 8
#define N_DECODE_BIG 2
#define N_GREEDY_BIG 8

/* Loads path on backend (NULL: the CPU) with -ngl ngl; exact: --exact. */
static mllm_model *load(const char *path, const char *backend, int ngl, int exact) {
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 2;
    lp.backend = backend;
    lp.n_gpu_layers = ngl;
    lp.exact = exact;
    mllm_model *m = NULL;
    if (mllm_model_load(path, &lp, &m)) fail_msg("load %s on %s: %s", path, backend ? backend : "cpu", mllm_last_error());
    return m;
}

/* Logits after a prefill of N_PREFILL ids and after N_DECODE single-token
   steps: 2 x n_vocab floats. */
static void eval_logits(mllm_model *m, float *out) {
    const int n_vocab = mllm_model_n_vocab(m);
    const int n_pre = n_vocab > BIG_VOCAB ? N_PREFILL_BIG : N_PREFILL, n_dec = n_vocab > BIG_VOCAB ? N_DECODE_BIG : N_DECODE;
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, NULL, &s), MLLM_OK);
    int32_t ids[N_PREFILL + N_DECODE];
    for (int i = 0; i < N_PREFILL + N_DECODE; i++) ids[i] = (int32_t)((i * 37 + 11) % n_vocab);
    assert_int_equal(mllm_session_eval(s, ids, n_pre), MLLM_OK);
    memcpy(out, mllm_session_logits(s), (size_t)n_vocab * sizeof(float));
    for (int i = n_pre; i < n_pre + n_dec; i++) assert_int_equal(mllm_session_eval(s, ids + i, 1), MLLM_OK);
    memcpy(out + n_vocab, mllm_session_logits(s), (size_t)n_vocab * sizeof(float));
    mllm_session_free(s);
}

typedef struct {
    int32_t ids[N_GREEDY];
    int n;
} greedy_out;

static int on_token(void *user, int32_t id, const char *piece, size_t len) {
    (void)piece, (void)len;
    greedy_out *g = user;
    if (g->n < N_GREEDY) g->ids[g->n++] = id;
    return 0;
}

static void greedy(mllm_model *m, greedy_out *g) {
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, NULL, &s), MLLM_OK);
    mllm_sampling smp;
    mllm_sampling_default(&smp);
    smp.temperature = 0;
    smp.max_tokens = mllm_model_n_vocab(m) > BIG_VOCAB ? N_GREEDY_BIG : N_GREEDY;
    smp.ignore_eos = 1;
    memset(g, 0, sizeof *g);
    assert_int_equal(mllm_generate(s, "Once upon a time", &smp, on_token, g), MLLM_OK);
    mllm_session_free(s);
}

static double nmse(const float *a, const float *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)a[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

#if DEV_BUILT

static bool no_device(void) {
    static int state; /* 0: not tried, 1: there, -1: absent */
    static char why[512];
    if (!state) {
        if (mllm_backend_by_name(DEV_NAME)) {
            state = 1;
            printf("device: %s\n", DEV_DEVICE());
        } else {
            state = -1;
            snprintf(why, sizeof why, "%s", mllm_last_error());
        }
    }
    if (state < 0) printf("SKIPPED: %s\n", why);
    return state < 0;
}

/* The schedule of m's decode graph (one token): runs, nodes on the device
   (index 0) and on the CPU (1). */
static mllm_sched_stats decode_schedule(mllm_model *m) {
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, NULL, &s), MLLM_OK);
    int32_t ids[2] = {1, 2};
    assert_int_equal(mllm_session_eval(s, ids, 2), MLLM_OK);
    assert_int_equal(mllm_session_eval(s, ids, 1), MLLM_OK);
    assert_non_null(s->decode.sched);
    mllm_sched_stats st;
    mllm_sched_get_stats(s->decode.sched, &st);
    mllm_session_free(s);
    return st;
}

/* path on the device with -ngl ngl against the CPU: logits NMSE below bound
   and greedy tokens equal, both against the CPU's exact mode (what the
   device computes); the greedy tokens also equal the default mode's where
   same_as_default (a trained model; a random one's nearly flat logits let
   the default mode's 8-bit activations flip an argmax). With only some
   layers offloaded (0 <= ngl < 99) the model is loaded in the exact mode,
   so that the layers left on the CPU compute what the CPU's exact mode
   does too (in the default mode they would round their activations to 8
   bits: NMSE 5e-5 on qwen3-tiny's q8_0, not an error of the device).
   Returns the weights placed on the device. */
static int model_case(const char *path, const char *label, int ngl, double bound, bool same_as_default) {
    const int partial = ngl >= 0 && ngl < 99;
    mllm_model *cpu = load(path, NULL, -1, 0), *cpux = load(path, NULL, -1, 1), *dv = load(path, DEV_NAME, ngl, partial);
    assert_int_equal(dv->dec.n_backends, 1);
    assert_string_equal(dv->dec.backends[0]->name, DEV_NAME);
    const int placed = mllm_placement_count(dv->dec.placed[0]);
    assert_true(placed > 0);
    const int n_vocab = mllm_model_n_vocab(cpu);
    const size_t n = 2 * (size_t)n_vocab;
    float *a = malloc(n * sizeof *a), *x = malloc(n * sizeof *x), *o = malloc(n * sizeof *o);
    eval_logits(cpu, a);
    eval_logits(cpux, x);
    eval_logits(dv, o);
    const double e_pre = nmse(o, x, (size_t)n_vocab), e_dec = nmse(o + n_vocab, x + n_vocab, (size_t)n_vocab);
    printf("%-34s -ngl %2d: %3d weights on the device; logits NMSE vs the CPU's exact mode: prefill %.3g, decode %.3g "
           "(vs its default mode %.3g); bound %.0e\n",
           label, ngl, placed, e_pre, e_dec, nmse(o, a, n), bound);
    assert_true(e_pre < bound && e_dec < bound);
    greedy_out gc, gx, go;
    greedy(cpu, &gc);
    greedy(cpux, &gx);
    greedy(dv, &go);
    assert_int_equal(go.n, n_vocab > BIG_VOCAB ? N_GREEDY_BIG : N_GREEDY);
    assert_int_equal(gx.n, go.n);
    assert_memory_equal(gx.ids, go.ids, sizeof gx.ids);
    const bool eq_default = gc.n == go.n && !memcmp(gc.ids, go.ids, sizeof gc.ids);
    printf("%-34s greedy %d tokens: equal to the CPU's exact mode; %s its default mode\n", "", go.n,
           eq_default ? "equal to" : "differs from");
    if (same_as_default) assert_true(eq_default);
    /* Everything offloaded: the KV store and attention of each layer on
       the device too, so one run (two with a k-quant embedding lookup on
       the CPU first) and nothing but the token ids and the logits crossing.
       Some: the CPU layers first, whole, then the offloaded layers on the
       device, then the output on the CPU. */
    const mllm_sched_stats st = decode_schedule(dv);
    const int n_layer = dv->dec.cfg.n_layer;
    printf("%-34s decode graph: %d runs, %d nodes on %s, %d on the CPU, %d copies of %zu bytes\n", "", st.n_runs,
           st.n_nodes[0], DEV_LABEL, st.n_nodes[1], st.n_copies, st.copy_bytes);
    const bool lookup = DEV_SUPPORTS_GET_ROWS((mllm_dtype)dv->dec.tok_embd->dtype); /* not k-quants on OpenCL */
    if (ngl < 0 || ngl > n_layer) {
        assert_int_equal(st.n_nodes[1], !lookup);
        assert_int_equal(st.n_runs, 1 + !lookup);
    } else {
        assert_int_equal(st.n_runs, 3);
    }
    free(a), free(x), free(o);
    mllm_model_free(cpu), mllm_model_free(cpux), mllm_model_free(dv);
    return placed;
}

static void shared_case(const char *file, int ngl, double bound, bool same_as_default) {
    if (no_device()) return;
    char rel[128];
    snprintf(rel, sizeof rel, "anchor-data/models/%s", file);
    const char *path = tu_shared(rel);
    if (access(path, R_OK) == 0) model_case(path, file, ngl, bound, same_as_default);
    free((void *)path); /* tu_shared's strings are malloc'd */
}

/* A synthetic model (k-quants: tiny256 in f32, quantized pure). */
static void synth_case(const char *arch, const char *dtype, double bound) {
    if (no_device()) return;
    const bool kq = !strcmp(dtype, "q4_k_s") || !strcmp(dtype, "q6_k");
    char name[64], src_name[64];
    snprintf(name, sizeof name, DEV_NAME "-%s-%s.gguf", arch, dtype);
    snprintf(src_name, sizeof src_name, DEV_NAME "-%s-%s-source.gguf", arch, dtype);
    char *path = (char *)tu_tmp(name), *src = (char *)tu_tmp(src_name);
    if (mllm_synth_write(arch, kq ? "tiny256" : "tiny", kq ? "f32" : dtype, "gguf", kq ? src : path, NULL, NULL))
        fail_msg("synth %s %s: %s", arch, dtype, mllm_last_error());
    if (kq) {
        mllm_quantize_params qp;
        mllm_quantize_default_params(&qp);
        qp.type = dtype;
        qp.pure = true;
        if (mllm_quantize_file(src, path, &qp, NULL)) fail_msg("quantize %s: %s", dtype, mllm_last_error());
    }
    model_case(path, name, -1, bound, false);
    free(path);
    free(src);
}

/* Bounds: about 1000x the NMSE measured on PoCL (docs/opencl.md). */
/* Whisper tiny.en ($MLLM_WHISPER_TINY_DIR) on the device against the CPU
   on jfk.wav's window: the encoder's states, then the decoder's logits
   after a prompt and after a step. The encoder runs there whole (the
   convolution columns, the attention, matmuls, norms, activations) but
   for the stores of the cross-attention cache, which is host memory (the
   slot cache); the decoder's slot stores and attentions stay on the CPU
   too (the device has no copy of the slot cache). The CPU rounds an f16 matmul's activations to f16, the device
   keeps them f32: f32 weights compare the arithmetic, f16 weights that
   rounding as well. */
static void whisper_case(int wtype, double bound, double dec_bound) {
    if (no_device()) return;
    const char *dir = getenv("MLLM_WHISPER_TINY_DIR");
    if (!dir || !*dir) {
        printf("SKIPPED: MLLM_WHISPER_TINY_DIR unset (scripts/fetch-whisper.sh whisper-tiny.en)\n");
        return;
    }
    mllm_whisper_params p = {.n_threads = 2, .weight_type = wtype};
    mllm_whisper *cpu = NULL, *dv = NULL;
    assert_int_equal(mllm_whisper_load(dir, &p, &cpu), MLLM_OK);
    p.backends = DEV_NAME;
    assert_int_equal(mllm_whisper_load(dir, &p, &dv), MLLM_OK);
    float *pcm = NULL;
    size_t n = 0;
    mllm_audio_info info;
    const char *wav = tu_shared("models/audio/jfk.wav");
    assert_int_equal(mllm_audio_load(wav, 16000, &pcm, &n, &info), MLLM_OK);
    free((void *)wav);
    const mllm_whisper_hparams *hp = mllm_whisper_hp(cpu);
    float *mel = malloc((size_t)hp->n_mels * MLLM_WHISPER_N_FRAMES * sizeof(float));
    assert_int_equal(mllm_whisper_mel(cpu, pcm, n, mel), MLLM_OK);
    assert_int_equal(mllm_whisper_encode(cpu, mel), MLLM_OK);
    assert_int_equal(mllm_whisper_encode(dv, mel), MLLM_OK);
    const size_t ne = (size_t)hp->n_audio_ctx * (size_t)hp->d_model;
    const double e = nmse(mllm_whisper_encoder_states(dv), mllm_whisper_encoder_states(cpu), ne);
    mllm_sched_stats st;
    mllm_sched_get_stats(dv->enc_g.sched, &st);
    printf("whisper tiny.en %s encoder: %d weights on %s; %d nodes there, %d on the CPU, %d runs; states NMSE vs "
           "the CPU %.3g (bound %.0e)\n",
           mllm_dtype_name((mllm_dtype)wtype), mllm_placement_count(dv->placed[0]), DEV_LABEL, st.n_nodes[0],
           st.n_nodes[1], st.n_runs, e, bound);
    assert_true(st.n_nodes[0] > 4 * hp->n_enc_layers); /* at least the matmuls */
    int n_slot_stores = 0;
    for (int i = 0; i < dv->enc_g.n_nodes; i++) n_slot_stores += dv->enc_g.nodes[i]->op == MLLM_OP_KV_SLOTS_STORE;
    assert_int_equal(n_slot_stores, hp->n_dec_layers);
    assert_int_equal(st.n_nodes[1], n_slot_stores); /* nothing else of the encoder on the CPU */
    assert_true(e < bound);
    /* the decoder: a prompt of 3 tokens (every row's logits), then a step */
    const mllm_whisper_special *sp = mllm_whisper_tokens(cpu);
    const int32_t toks[4] = {sp->sot, sp->no_timestamps, 440, 1029};
    const size_t nv = (size_t)hp->n_vocab;
    float *la = malloc(3 * nv * sizeof(float)), *lb = malloc(3 * nv * sizeof(float));
    assert_int_equal(mllm_whisper_decode(cpu, 1, toks, 3, 0, la, true), MLLM_OK);
    assert_int_equal(mllm_whisper_decode(dv, 1, toks, 3, 0, lb, true), MLLM_OK);
    const double e_pre = nmse(lb, la, 3 * nv);
    assert_int_equal(mllm_whisper_decode(cpu, 1, toks + 3, 1, 3, la, false), MLLM_OK);
    assert_int_equal(mllm_whisper_decode(dv, 1, toks + 3, 1, 3, lb, false), MLLM_OK);
    const double e_step = nmse(lb, la, nv);
    mllm_sched_get_stats(dv->dec_g.sched, &st);
    printf("whisper tiny.en %s decoder step: %d nodes on %s, %d on the CPU; logits NMSE vs the CPU: prompt %.3g, "
           "step %.3g (bound %.0e)\n",
           mllm_dtype_name((mllm_dtype)wtype), st.n_nodes[0], DEV_LABEL, st.n_nodes[1], e_pre, e_step, dec_bound);
    assert_true(st.n_nodes[0] > 4 * hp->n_dec_layers);
    assert_true(e_pre < dec_bound && e_step < dec_bound);
    free(la), free(lb);
    free(mel);
    mllm_free(pcm);
    mllm_whisper_free(cpu);
    mllm_whisper_free(dv);
}

/* f16: the CPU rounds every f16 matmul's activations to f16 (the dots'
   type), the device keeps them f32; the decoder's logits carry that of its
   own layers and of the encoder's (measured on PoCL: 3.3e-6 after the
   prompt, 2.3e-7 for the states) */
static void test_whisper_f32(void **state) { (void)state; whisper_case(MLLM_DTYPE_F32, 1e-10, 1e-10); }
static void test_whisper_f16(void **state) { (void)state; whisper_case(MLLM_DTYPE_F16, 1e-5, 5e-5); }

static void test_stories_f32(void **state) { (void)state; shared_case("stories260K.gguf", 99, 1e-10, true); }
static void test_stories_f16(void **state) { (void)state; shared_case("stories260K-F16.gguf", 99, 1e-10, true); }
static void test_stories_q8_0(void **state) { (void)state; shared_case("stories260K-Q8_0-ffn_down-F16.gguf", 99, 1e-10, true); }
static void test_stories_q4_0(void **state) { (void)state; shared_case("stories260K-Q4_0-ffn_down-F16.gguf", 99, 1e-10, true); }
static void test_qwen3_tiny_q8_0(void **state) { (void)state; shared_case("qwen3-tiny-random-Q8_0.gguf", 99, 1e-10, false); }
static void test_qwen3_tiny_partial(void **state) { (void)state; shared_case("qwen3-tiny-random-Q8_0.gguf", 1, 1e-10, false); }
static void test_synth_q4_K(void **state) { (void)state; synth_case("qwen3", "q4_k_s", 1e-9); }
static void test_synth_q6_K(void **state) { (void)state; synth_case("qwen3", "q6_k", 1e-10); }
static void test_synth_qwen2_f32(void **state) { (void)state; synth_case("qwen2", "f32", 1e-10); }
static void test_synth_gemma3_f16(void **state) { (void)state; synth_case("gemma3", "f16", 1e-9); }

/* -ngl 2 of stories260K's 5 layers: their 9 weights each on the device,
   the embeddings, the first 3 layers and the output on the CPU. */
static void test_stories_partial(void **state) {
    (void)state;
    if (no_device()) return;
    const char *path = tu_shared("anchor-data/models/stories260K.gguf");
    if (access(path, R_OK) == 0) assert_int_equal(model_case(path, "stories260K.gguf", 2, 1e-10, true), 2 * 9);
    free((void *)path);
}

/* Two sessions of one model generating at once on two threads: graph
   computes take turns on the device (kernel arguments are per kernel
   object), and each gets the tokens it gets alone. */
typedef struct {
    mllm_model *m;
    greedy_out out;
} greedy_job;

static void *greedy_thread(void *arg) {
    greedy_job *j = arg;
    greedy(j->m, &j->out);
    return NULL;
}

static void test_two_threads(void **state) {
    (void)state;
    if (no_device()) return;
    const char *path = tu_shared("anchor-data/models/stories260K.gguf");
    mllm_model *m = load(path, DEV_NAME, 99, 0);
    greedy_out alone;
    greedy(m, &alone);
    greedy_job j[2] = {{.m = m}, {.m = m}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, greedy_thread, &j[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(j[i].out.n, alone.n);
        assert_memory_equal(j[i].out.ids, alone.ids, sizeof alone.ids);
    }
    mllm_model_free(m);
    free((void *)path);
}

/* The device holds one K and one V copy per layer of each live session,
   and none once the sessions are freed, nor after an embedding. */
static void test_kv_release(void **state) {
    (void)state;
    if (no_device()) return;
    const char *path = tu_shared("anchor-data/models/stories260K.gguf");
    mllm_model *m = load(path, DEV_NAME, 99, 0);
    const mllm_dev_be *d = m->dec.backends[0]->ctx;
    const int before = d->n_kv, n_layer = m->dec.cfg.n_layer;
    mllm_session *s[2] = {NULL, NULL};
    int32_t ids[3] = {1, 2, 3};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(mllm_session_new(m, NULL, &s[i]), MLLM_OK);
        assert_int_equal(mllm_session_eval(s[i], ids, 3), MLLM_OK);
    }
    printf("device KV copies: %d before, %d with two sessions of a %d-layer model\n", before, d->n_kv, n_layer);
    assert_int_equal(d->n_kv, before + 2 * n_layer);
    for (int i = 0; i < 2; i++) mllm_session_free(s[i]);
    assert_int_equal(d->n_kv, before);
    /* mllm_embed over the decoder: its cache of one call, on the device
       and handed back; the vector that of the CPU's exact mode */
    mllm_model *cpux = load(path, NULL, -1, 1);
    float e_dev[64], e_cpu[64];
    size_t n_dev = 0, n_cpu = 0;
    assert_int_equal(mllm_embed_ids(m, ids, 3, NULL, e_dev, 64, &n_dev), MLLM_OK);
    assert_int_equal(mllm_embed_ids(cpux, ids, 3, NULL, e_cpu, 64, &n_cpu), MLLM_OK);
    assert_int_equal(n_dev, n_cpu);
    printf("embedding of 3 ids: NMSE %.3g vs the CPU's exact mode\n", nmse(e_dev, e_cpu, n_cpu));
    assert_true(nmse(e_dev, e_cpu, n_cpu) < 1e-10);
    assert_int_equal(d->n_kv, before);
    mllm_model_free(cpux);
    mllm_model_free(m);
    free((void *)path);
}

static void test_errors(void **state) {
    (void)state;
    const char *path = tu_shared("anchor-data/models/stories260K.gguf");
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.backend = DEV_NAME "-nope";
    mllm_model *m = NULL;
    assert_int_equal(mllm_model_load(path, &lp, &m), MLLM_ERR_INVALID_ARG);
    assert_null(m);
    assert_non_null(strstr(mllm_last_error(), "unknown backend '" DEV_NAME "-nope'"));
    assert_non_null(strstr(mllm_last_error(), "cpu"));
    assert_non_null(strstr(mllm_last_error(), ", " DEV_NAME));
    free((void *)path);
}

#include "device_vision_cases.h"

int main(void) {
    mllm_cpu_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stories_f32),     cmocka_unit_test(test_stories_f16),
        cmocka_unit_test(test_stories_q8_0),    cmocka_unit_test(test_stories_q4_0),
        cmocka_unit_test(test_qwen3_tiny_q8_0), cmocka_unit_test(test_qwen3_tiny_partial),
        cmocka_unit_test(test_synth_q4_K),      cmocka_unit_test(test_synth_q6_K),
        cmocka_unit_test(test_synth_qwen2_f32), cmocka_unit_test(test_synth_gemma3_f16),
        cmocka_unit_test(test_stories_partial), cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_kv_release),      cmocka_unit_test(test_errors),
        cmocka_unit_test(test_vision_idefics3), cmocka_unit_test(test_vision_qwen2vl),
        cmocka_unit_test(test_whisper_f32),      cmocka_unit_test(test_whisper_f16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else /* the layer is not in this build */

/* The backend is named but not built: a clear error, not "unknown". */
static void test_not_built(void **state) {
    (void)state;
    printf("SKIPPED: %s\n", DEV_NOT_BUILT);
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.backend = DEV_NAME;
    mllm_model *m = NULL;
    const char *path = tu_shared("anchor-data/models/stories260K.gguf");
    assert_int_equal(mllm_model_load(path, &lp, &m), MLLM_ERR_UNSUPPORTED);
    assert_non_null(strstr(mllm_last_error(), "not in this build"));
    free((void *)path);
    (void)eval_logits, (void)greedy, (void)nmse, (void)load;
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_not_built)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
#endif
