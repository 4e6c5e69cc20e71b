/* mllm convert: HF folder -> .mllm and GGUF -> .mllm -> GGUF give the same
   logits as the source (bit for bit: no dtype changes), on synth models and
   on the reference models in ../shared/anchor-data; quantizing with --quant
   or a pipeline gives the same bytes as synth's independent quantized GGUF
   files; 1-D tensors are f32; refusals carry clear messages. */
#include "backends/cpu.h"
#include "testutil.h"
#include "convert/convert.h"
#include "convert/pipeline.h"
#include "core/dtype.h"
#include "formats/model_file.h"
#include "synth/synth.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int32_t k_ids[] = {1, 5, 9, 42, 7, 3, 100, 11};
#define N_IDS (sizeof k_ids / sizeof *k_ids)

static void expect_same_logits(const char *a, const char *b) { tu_expect_same_logits(a, b, k_ids, N_IDS); }

static mllm_status convert_pack(const char *in, const char *out, const char *quant, const char *pipeline, bool gguf,
                                int pack) {
    mllm_convert_params p;
    mllm_convert_default_params(&p);
    p.in = in, p.out = out, p.quant = quant, p.pipeline_path = pipeline, p.to_gguf = gguf, p.pack = pack;
    return mllm_convert(&p);
}

/* With the default layout (x8 kernel packing for .mllm output). */
static mllm_status convert(const char *in, const char *out, const char *quant, const char *pipeline, bool gguf) {
    return convert_pack(in, out, quant, pipeline, gguf, MLLM_CONVERT_PACK_X8);
}

static void test_hf_to_mllm_bit_exact(void **state) {
    (void)state;
    static const char *archs[] = {"qwen3", "qwen2", "llama"};
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-hf", archs[i]);
        const char *hf = tu_tmp(name);
        snprintf(name, sizeof name, "%s.mllm", archs[i]);
        const char *out = tu_tmp(name);
        assert_int_equal(mllm_synth_write(archs[i], "tiny", "f32", "hf", hf, NULL, NULL), MLLM_OK);
        if (convert(hf, out, NULL, NULL, false)) fail_msg("%s", mllm_last_error());
        expect_same_logits(hf, out);
        /* The embedded tokenizer.json tokenizes like the folder's. */
        mllm_model *a, *b;
        assert_int_equal(mllm_model_load(hf, NULL, &a), MLLM_OK);
        assert_int_equal(mllm_model_load(out, NULL, &b), MLLM_OK);
        const char *text = "Hello world, 123 tokens!";
        int32_t ia[64], ib[64];
        size_t na, nb;
        assert_int_equal(mllm_tokenize(a, text, strlen(text), 1, ia, 64, &na), MLLM_OK);
        assert_int_equal(mllm_tokenize(b, text, strlen(text), 1, ib, 64, &nb), MLLM_OK);
        assert_int_equal(na, nb);
        assert_memory_equal(ia, ib, na * sizeof *ia);
        mllm_model_free(a);
        mllm_model_free(b);
        free((void *)hf);
        free((void *)out);
    }
}

static void test_gguf_mllm_gguf(void **state) {
    (void)state;
    const char *g = tu_tmp("l.gguf"), *m = tu_tmp("l.mllm"), *g2 = tu_tmp("l2.gguf");
    assert_int_equal(mllm_synth_write("llama", "tiny", "f16", "gguf", g, NULL, NULL), MLLM_OK);
    if (convert(g, m, NULL, NULL, false)) fail_msg("%s", mllm_last_error());
    if (convert(m, g2, NULL, NULL, true)) fail_msg("%s", mllm_last_error());
    expect_same_logits(g, m);
    expect_same_logits(g, g2);
    free((void *)g);
    free((void *)m);
    free((void *)g2);
}

/* synth's q8_0 / q4_0 GGUFs are the f32 file quantized row by row with the
   reference quantizers (token_embd q8_0 in q4 files): converting the f32
   file must give the same bytes (in the plain layouts: --pack none; the
   packed layouts are test_convert_pack.c's). */
static void test_quant_matches_synth(void **state) {
    (void)state;
    const char *f32 = tu_tmp("s32.gguf"), *q8 = tu_tmp("s8.gguf"), *q4 = tu_tmp("s4.gguf");
    const char *c8 = tu_tmp("c8.mllm"), *c4 = tu_tmp("c4.mllm"), *pl = tu_tmp("q4.json");
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "f32", "gguf", f32, NULL, NULL), MLLM_OK);
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "q8_0", "gguf", q8, NULL, NULL), MLLM_OK);
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "q4_0", "gguf", q4, NULL, NULL), MLLM_OK);
    if (convert_pack(f32, c8, "q8_0", NULL, false, MLLM_CONVERT_PACK_NONE)) fail_msg("%s", mllm_last_error());
    FILE *fp = fopen(pl, "w");
    fputs("{\"default\": \"q4_0\", \"rules\": [{\"pattern\": \"^token_embd\", \"dtype\": \"q8_0\"},"
          "{\"pattern\": \"^output\\\\.weight$\", \"dtype\": \"Q8_0\"}]}", fp);
    fclose(fp);
    if (convert_pack(f32, c4, NULL, pl, false, MLLM_CONVERT_PACK_NONE)) fail_msg("%s", mllm_last_error());
    const char *pairs[2][2] = {{q8, c8}, {q4, c4}};
    for (int k = 0; k < 2; k++) {
        mllm_model_file *a, *b;
        assert_int_equal(mllm_model_file_open(pairs[k][0], &a), MLLM_OK);
        assert_int_equal(mllm_model_file_open(pairs[k][1], &b), MLLM_OK);
        assert_int_equal(a->n_weights, b->n_weights);
        for (size_t i = 0; i < a->n_weights; i++) {
            const mllm_weight *wa = &a->weights[i], *wb = mllm_model_file_find(b, wa->name);
            assert_non_null(wb);
            if (wa->dtype != wb->dtype) fail_msg("%s: %s vs %s", wa->name, mllm_dtype_name(wa->dtype), mllm_dtype_name(wb->dtype));
            assert_int_equal(wa->size, wb->size);
            if (memcmp(wa->data, wb->data, wa->size)) fail_msg("%s: bytes differ", wa->name);
            if (wb->ne[1] == 1) assert_int_equal(wb->dtype, MLLM_DTYPE_F32);
        }
        mllm_model_file_close(a);
        mllm_model_file_close(b);
        expect_same_logits(pairs[k][0], pairs[k][1]);
    }
    /* No quantizer: refused, naming the dtype. */
    assert_int_equal(convert(f32, c8, "q2_k", NULL, false), MLLM_ERR_UNSUPPORTED);
    assert_non_null(strstr(mllm_last_error(), "q2_k"));
    const char *paths[] = {f32, q8, q4, c8, c4, pl};
    for (int i = 0; i < 6; i++) free((void *)paths[i]);
}

static void test_pipeline_rules(void **state) {
    (void)state;
    mllm_pipeline *p;
    const char *ours = "{\"default\": \"f16\", \"rules\": [{\"pattern\": \"attn_q\", \"dtype\": \"q4_0\"},"
                       "{\"pattern\": \"^blk\\\\.0\\\\.\", \"dtype\": \"q8_0\"}, {\"pattern\": \"ffn\", \"dtype\": \"keep\"}]}";
    assert_int_equal(mllm_pipeline_parse(ours, strlen(ours), "ours", &p), MLLM_OK);
    int rule;
    assert_int_equal(mllm_pipeline_pick(p, "blk.0.attn_q.weight", NULL, &rule), MLLM_DTYPE_Q4_0); /* first wins */
    assert_int_equal(rule, 0);
    assert_int_equal(mllm_pipeline_pick(p, "blk.0.attn_k.weight", NULL, &rule), MLLM_DTYPE_Q8_0);
    assert_int_equal(mllm_pipeline_pick(p, "blk.1.ffn_up.weight", NULL, &rule), MLLM_PIPELINE_KEEP);
    assert_int_equal(mllm_pipeline_pick(p, "token_embd.weight", NULL, &rule), MLLM_DTYPE_F16);
    assert_int_equal(rule, -1);
    mllm_pipeline_free(p);
    /* MLLM's quantization config: regex keys over HF names, GGUF type hints. */
    const char *theirs = "{\"model\\\\.layers\\\\.\\\\d+\\\\.mlp\\\\..*\": {\"hints\": {\"quant_method\": \"gguf\","
                         " \"gguf_type\": \"Q4_K\"}}, \"lm_head\": {\"hints\": {\"quant_method\": \"gguf\", \"gguf_type\": \"Q8_0\"}}}";
    assert_int_equal(mllm_pipeline_parse(theirs, strlen(theirs), "theirs", &p), MLLM_OK);
    assert_int_equal(mllm_pipeline_pick(p, "blk.3.ffn_down.weight", "model.layers.3.mlp.down_proj.weight", &rule),
                     MLLM_DTYPE_Q4_K);
    assert_int_equal(mllm_pipeline_pick(p, "output.weight", "lm_head.weight", &rule), MLLM_DTYPE_Q8_0);
    assert_int_equal(mllm_pipeline_pick(p, "blk.3.attn_q.weight", "model.layers.3.self_attn.q_proj.weight", &rule),
                     MLLM_PIPELINE_KEEP);
    mllm_pipeline_free(p);
    /* Refusals name the problem. */
    static const struct { const char *json, *want; } bad[] = {
        {"{\"rules\": [{\"pattern\": \"(\", \"dtype\": \"q4_0\"}]}", "bad regex"},
        {"{\"rules\": [{\"pattern\": \"a\", \"dtype\": \"q3_k\"}]}", "no quantizer"},
        {"{\"rules\": [{\"pattern\": \"a\", \"dtype\": \"q9_9\"}]}", "unknown dtype"},
        {"{\"x\": {\"hints\": {\"quant_method\": \"awq\", \"gguf_type\": \"Q4_0\"}}}", "awq"},
        {"{\"rules\": 3}", "rules"},
        {"[1]", "not a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_not_equal(mllm_pipeline_parse(bad[i].json, strlen(bad[i].json), "bad", &p), MLLM_OK);
        if (!strstr(mllm_last_error(), bad[i].want)) fail_msg("'%s': '%s'", bad[i].json, mllm_last_error());
    }
}

static void test_shipped_pipelines_parse(void **state) {
    (void)state;
    static const char *names[] = {"llama", "qwen2", "qwen3", "mllm-q4k-example"};
    for (int i = 0; i < 4; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/../../pipelines/%s.json", MLLM_TEST_DATA, names[i]);
        mllm_pipeline *p;
        if (mllm_pipeline_load(path, &p)) fail_msg("%s", mllm_last_error());
        assert_int_equal(mllm_pipeline_pick(p, "blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight", NULL),
                         i < 3 ? MLLM_DTYPE_F32 : MLLM_PIPELINE_KEEP);
        mllm_pipeline_free(p);
    }
}

static void test_refusals(void **state) {
    (void)state;
    const char *hf = tu_tmp("r-hf"), *out = tu_tmp("r.gguf");
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "f32", "hf", hf, NULL, NULL), MLLM_OK);
    assert_int_equal(convert(hf, out, NULL, NULL, true), MLLM_ERR_UNSUPPORTED); /* HF tokenizer -> GGUF */
    assert_non_null(strstr(mllm_last_error(), "tokenizer"));
    assert_int_equal(convert(hf, out, "q4_0", "x.json", false), MLLM_ERR_INVALID_ARG);
    free((void *)hf);
    free((void *)out);
}

/* The reference models: converted, they give their source's logits. */
static void test_anchor_models(void **state) {
    (void)state;
    static const char *models[] = {"stories260K.gguf", "stories260K-F16.gguf", "stories260K-Q8_0-ffn_down-F16.gguf",
                                   "stories260K-Q4_0-ffn_down-F16.gguf", "qwen3-tiny-random-Q8_0.gguf",
                                   "qwen3-tiny-random-Q4_0.gguf"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "anchor-data/models/%s", models[i]);
        const char *src = tu_shared(rel);
        if (!src) return;
        const char *m = tu_tmp("anchor.mllm"), *g = tu_tmp("anchor.gguf");
        if (convert(src, m, NULL, NULL, false)) fail_msg("%s: %s", models[i], mllm_last_error());
        if (convert(m, g, NULL, NULL, true)) fail_msg("%s: %s", models[i], mllm_last_error());
        expect_same_logits(src, m);
        expect_same_logits(src, g);
        free((void *)src);
        free((void *)m);
        free((void *)g);
    }
}

int main(void) {
    /* A packed .mllm and its GGUF source give the same bits only if the
       loader repacks the GGUF too: force it, whatever this CPU's path. */
    setenv("MLLM_REPACK", "1", 1);
    mllm_cpu_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hf_to_mllm_bit_exact),
        cmocka_unit_test(test_gguf_mllm_gguf),
        cmocka_unit_test(test_quant_matches_synth),
        cmocka_unit_test(test_pipeline_rules),
        cmocka_unit_test(test_shipped_pipelines_parse),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_anchor_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
