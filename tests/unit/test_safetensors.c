/* safetensors headers (valid, truncated, corrupted), config.json (real model
   configs from ../shared, missing and wrong-typed fields), HF<->GGUF names,
   and sharded HF folders. */
#include "testutil.h"
#include "core/dtype.h"
#include "formats/hf_config.h"
#include "models/registry.h"
#include "formats/model_file.h"
#include "formats/safetensors.h"
#include "synth/synth.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct { uint8_t *buf; size_t len; } image;

/* u64 header length + header + `data` bytes of ramp data. */
static image make_st(const char *header, size_t data) {
    size_t hl = strlen(header);
    image im = {malloc(8 + hl + data), 8 + hl + data};
    uint64_t h = hl;
    memcpy(im.buf, &h, 8);
    memcpy(im.buf + 8, header, hl);
    for (size_t i = 0; i < data; i++) im.buf[8 + hl + i] = (uint8_t)i;
    return im;
}

static const char k_valid[] =
    "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
    "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]}}";

static void test_valid(void **state) {
    (void)state;
    image im = make_st(k_valid, 32);
    mllm_safetensors *s;
    assert_int_equal(mllm_safetensors_open_memory(im.buf, im.len, "v.st", &s), MLLM_OK);
    assert_int_equal(mllm_safetensors_n_tensors(s), 2);
    const mllm_st_tensor *a = mllm_safetensors_find(s, "a"), *b = mllm_safetensors_find(s, "b");
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->dtype, MLLM_DTYPE_F32);
    assert_int_equal(a->n_dims, 2);
    assert_int_equal(a->ne[0], 3); /* reversed: fastest first */
    assert_int_equal(a->ne[1], 2);
    assert_int_equal(a->size, 24);
    assert_ptr_equal(a->data, im.buf + 8 + strlen(k_valid));
    assert_int_equal(b->dtype, MLLM_DTYPE_BF16);
    assert_int_equal(((const uint8_t *)b->data)[0], 24);
    assert_null(mllm_safetensors_find(s, "__metadata__"));
    mllm_safetensors_close(s);
    /* Every shorter prefix fails. */
    for (size_t len = 0; len < im.len; len++) {
        s = (mllm_safetensors *)1;
        if (mllm_safetensors_open_memory(im.buf, len, "v.st", &s) == MLLM_OK) fail_msg("prefix %zu accepted", len);
        assert_null(s);
        assert_non_null(strstr(mllm_last_error(), "v.st"));
    }
    free(im.buf);
}

static void expect_bad(const char *header, size_t data, mllm_status want, const char *needle) {
    image im = make_st(header, data);
    mllm_safetensors *s = (mllm_safetensors *)1;
    mllm_status st = mllm_safetensors_open_memory(im.buf, im.len, "bad.st", &s);
    if (st != want) fail_msg("%s: status %d, want %d (%s)", header, st, want, mllm_last_error());
    assert_null(s);
    if (!strstr(mllm_last_error(), needle)) fail_msg("expected '%s' in: %s", needle, mllm_last_error());
    free(im.buf);
}

static void test_corrupt(void **state) {
    (void)state;
    image im = make_st(k_valid, 32);
    uint64_t huge = UINT64_MAX - 4;
    memcpy(im.buf, &huge, 8);
    mllm_safetensors *s;
    assert_int_equal(mllm_safetensors_open_memory(im.buf, im.len, "h.st", &s), MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "header length"));
    free(im.buf);
    expect_bad("{\"a\":", 0, MLLM_ERR_FORMAT, "not valid JSON");
    expect_bad("[1,2]", 0, MLLM_ERR_FORMAT, "not a JSON object");
    expect_bad("{\"a\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, MLLM_ERR_UNSUPPORTED, "I8");
    expect_bad("{\"a\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, MLLM_ERR_FORMAT, "dtype");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", 8, MLLM_ERR_FORMAT, "shape");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, MLLM_ERR_FORMAT, "shape[0]");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8, MLLM_ERR_FORMAT, "shape[0]");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}", 8,
               MLLM_ERR_UNSUPPORTED, "dimensions");
    /* a 5-D Conv3d kernel [out, in, t, h, w] folds its outer dims into ne[3] */
    im = make_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[3,2,1,1,2],\"data_offsets\":[0,48]}}", 48);
    assert_int_equal(mllm_safetensors_open_memory(im.buf, im.len, "5d.st", &s), MLLM_OK);
    const mllm_st_tensor *t5 = mllm_safetensors_find(s, "a");
    assert_int_equal(t5->n_dims, 4);
    assert_int_equal(t5->src_dims, 5);
    assert_int_equal(t5->ne[0], 2);
    assert_int_equal(t5->ne[1], 1);
    assert_int_equal(t5->ne[2], 1);
    assert_int_equal(t5->ne[3], 6);
    mllm_safetensors_close(s);
    free(im.buf);
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
               MLLM_ERR_FORMAT, "overflow");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, MLLM_ERR_FORMAT, "begin <= end");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8, MLLM_ERR_FORMAT, "data_offsets");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, MLLM_ERR_FORMAT, "past the end");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, MLLM_ERR_FORMAT, "shape needs 12");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, MLLM_ERR_FORMAT, "overlap");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16, MLLM_ERR_FORMAT, "duplicate");
    expect_bad("{\"a\":[1]}", 0, MLLM_ERR_FORMAT, "not a JSON object");
    assert_int_equal(mllm_safetensors_open("/nonexistent.st", &s), MLLM_ERR_IO);
}

static mllm_hparams load_shared_cfg(const char *rel, mllm_status want) {
    mllm_hparams c;
    memset(&c, 0, sizeof c);
    const char *p = tu_shared(rel);
    if (!p) return c;
    mllm_status st = tu_hf_config_load(p, &c);
    if (st != want) fail_msg("%s: %d (%s)", rel, st, mllm_last_error());
    free((void *)p);
    return c;
}

static void test_real_configs(void **state) {
    (void)state;
    mllm_hparams c = load_shared_cfg("models/configs/Llama-3.2-1B/config.json", MLLM_OK);
    if (!c.arch[0]) return;
    assert_string_equal(c.arch, "llama");
    assert_int_equal(c.n_embd, 2048);
    assert_int_equal(c.n_layer, 16);
    assert_int_equal(c.n_head, 32);
    assert_int_equal(c.n_head_kv, 8);
    assert_int_equal(c.head_dim, 64);
    assert_int_equal(c.n_ff, 8192);
    assert_int_equal(c.n_vocab, 128256);
    assert_int_equal(c.n_ctx_train, 131072);
    assert_true(c.rope_theta == 5e5f);
    assert_true(c.rms_eps == 1e-5f);
    assert_int_equal(c.rope_scaling, MLLM_ROPE_SCALING_LLAMA3);
    assert_true(c.rope_factor == 32.0f && c.rope_low_freq_factor == 1.0f && c.rope_high_freq_factor == 4.0f);
    assert_int_equal(c.rope_orig_ctx, 8192);
    assert_true(c.tied_embd && c.rope_neox); /* biases and q/k norms are found from the tensors */
    c = load_shared_cfg("models/configs/Qwen3-0.6B/config.json", MLLM_OK);
    assert_string_equal(c.arch, "qwen3");
    assert_int_equal(c.head_dim, 128);
    assert_int_equal(c.n_embd, 1024);
    assert_int_equal(c.n_layer, 28);
    assert_int_equal(c.n_ff, 3072);
    assert_true(c.rope_theta == 1e6f);
    assert_true(c.rms_eps == 1e-6f);
    assert_true(c.tied_embd);
    assert_int_equal(c.rope_scaling, MLLM_ROPE_SCALING_NONE);
    c = load_shared_cfg("models/configs/SmolLM2-135M/config.json", MLLM_OK);
    assert_int_equal(c.head_dim, 64); /* no head_dim: 576 / 9 */
    assert_int_equal(c.n_head_kv, 3);
    assert_true(c.rope_theta == 1e5f);
    c = load_shared_cfg("models/configs/TinyLlama-1.1B-Chat-v1.0/config.json", MLLM_OK);
    assert_false(c.tied_embd);
    assert_int_equal(c.n_head_kv, 4);
    c = load_shared_cfg("models/configs/Qwen3-1.7B/config.json", MLLM_OK);
    assert_int_equal(c.n_ff, 6144);
    /* Qwen2.5-VL's language model, read as a decoder (rope_scaling "mrope") */
    c = load_shared_cfg("models/configs/Qwen2.5-VL-3B-Instruct/config.json", MLLM_OK);
    assert_string_equal(c.arch, "qwen2vl");
    assert_int_equal(c.n_layer, 36);
    assert_int_equal(c.n_embd, 2048);
    assert_int_equal(c.n_head_kv, 2);
    assert_true(c.rope_theta == 1000000.0f);
}

static void expect_cfg_error(const char *json, mllm_status want, const char *needle) {
    mllm_hparams c;
    mllm_status st = mllm_family_read_hf_config(json, strlen(json), "cfg.json", &c);
    if (st != want) fail_msg("%s: status %d, want %d (%s)", json, st, want, mllm_last_error());
    if (!strstr(mllm_last_error(), needle) || !strstr(mllm_last_error(), "cfg.json")) {
        fail_msg("expected '%s' in: %s", needle, mllm_last_error());
    }
}

#define BASE "\"hidden_size\":64,\"intermediate_size\":128,\"num_hidden_layers\":2,\"num_attention_heads\":4,\"vocab_size\":512"

static void test_config_errors(void **state) {
    (void)state;
    mllm_hparams c;
    const char *ok = "{\"model_type\":\"llama\"," BASE "}";
    assert_int_equal(mllm_family_read_hf_config(ok, strlen(ok), "cfg.json", &c), MLLM_OK);
    assert_int_equal(c.n_head_kv, 4);
    assert_int_equal(c.head_dim, 16);
    assert_true(c.rope_theta == 10000.0f);
    assert_false(c.tied_embd);
    const char *q2 = "{\"architectures\":[\"Qwen2ForCausalLM\"]," BASE ",\"rope_scaling\":null,\"head_dim\":null}";
    assert_int_equal(mllm_family_read_hf_config(q2, strlen(q2), "cfg.json", &c), MLLM_OK);
    assert_string_equal(c.arch, "qwen2");
    assert_int_equal(c.head_dim, 16);
    const char *lin = "{\"model_type\":\"llama\"," BASE ",\"rope_scaling\":{\"type\":\"linear\",\"factor\":2.0}}";
    assert_int_equal(mllm_family_read_hf_config(lin, strlen(lin), "cfg.json", &c), MLLM_OK);
    assert_int_equal(c.rope_scaling, MLLM_ROPE_SCALING_LINEAR);
    assert_true(c.rope_factor == 2.0f);
    expect_cfg_error("{\"model_type\":\"llama\",", MLLM_ERR_FORMAT, "not valid JSON");
    expect_cfg_error("[]", MLLM_ERR_FORMAT, "not a JSON object");
    expect_cfg_error("{" BASE "}", MLLM_ERR_FORMAT, "model_type");
    expect_cfg_error("{\"model_type\":\"mistral\"," BASE "}", MLLM_ERR_UNSUPPORTED, "mistral");
    expect_cfg_error("{\"model_type\":3," BASE "}", MLLM_ERR_FORMAT, "model_type");
    expect_cfg_error("{\"model_type\":\"llama\",\"intermediate_size\":128,\"num_hidden_layers\":2,"
                     "\"num_attention_heads\":4,\"vocab_size\":512}", MLLM_ERR_FORMAT, "missing field 'hidden_size'");
    expect_cfg_error("{\"model_type\":\"llama\"," BASE ",\"num_key_value_heads\":\"2\"}", MLLM_ERR_FORMAT,
                     "'num_key_value_heads' must be an integer");
    expect_cfg_error("{\"model_type\":\"llama\"," BASE ",\"head_dim\":16.5}", MLLM_ERR_FORMAT, "'head_dim'");
    expect_cfg_error("{\"model_type\":\"llama\"," BASE ",\"max_position_embeddings\":-1}", MLLM_ERR_FORMAT,
                     "out of range");
    expect_cfg_error("{\"model_type\":\"llama\"," BASE ",\"rope_theta\":\"big\"}", MLLM_ERR_FORMAT, "'rope_theta'");
    expect_cfg_error("{\"model_type\":\"llama\"," BASE ",\"tie_word_embeddings\":1}", MLLM_ERR_FORMAT,
                     "'tie_word_embeddings' must be true or false");
    expect_cfg_error("{\"model_type\":\"llama\"," BASE ",\"rope_scaling\":5}", MLLM_ERR_FORMAT, "'rope_scaling'");
    expect_cfg_error("{\"model_type\":\"llama\"," BASE ",\"rope_scaling\":{\"rope_type\":\"dynamic\",\"factor\":4}}",
                     MLLM_ERR_UNSUPPORTED, "dynamic");
    expect_cfg_error("{\"model_type\":\"llama\"," BASE ",\"rope_scaling\":{\"factor\":4}}", MLLM_ERR_FORMAT,
                     "rope_type");
}

static void test_names(void **state) {
    (void)state;
    static const char *pairs[][2] = {
        {"model.embed_tokens.weight", "token_embd.weight"}, {"model.norm.weight", "output_norm.weight"},
        {"lm_head.weight", "output.weight"}, {"model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight"},
        {"model.layers.12.self_attn.k_proj.bias", "blk.12.attn_k.bias"},
        {"model.layers.3.self_attn.o_proj.weight", "blk.3.attn_output.weight"},
        {"model.layers.3.self_attn.q_norm.weight", "blk.3.attn_q_norm.weight"},
        {"model.layers.27.input_layernorm.weight", "blk.27.attn_norm.weight"},
        {"model.layers.27.post_attention_layernorm.weight", "blk.27.ffn_norm.weight"},
        {"model.layers.1.mlp.down_proj.weight", "blk.1.ffn_down.weight"}};
    char buf[128];
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        assert_true(mllm_hf_name_to_gguf(pairs[i][0], buf, sizeof buf));
        assert_string_equal(buf, pairs[i][1]);
        assert_true(mllm_gguf_name_to_hf(pairs[i][1], buf, sizeof buf));
        assert_string_equal(buf, pairs[i][0]);
    }
    assert_false(mllm_hf_name_to_gguf("model.layers.x.mlp.up_proj.weight", buf, sizeof buf));
    assert_false(mllm_hf_name_to_gguf("model.layers.-1.mlp.up_proj.weight", buf, sizeof buf));
    assert_false(mllm_hf_name_to_gguf("model.rotary_emb.inv_freq", buf, sizeof buf));
    assert_false(mllm_gguf_name_to_hf("blk.1.nothing", buf, sizeof buf));
}

static void write_text(const char *path, const char *text, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
}

static char *path_in(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Splits a single-file HF folder into two shards + index, then checks both
   open to the same weights; then breaks the folder in several ways. */
static void test_sharded(void **state) {
    (void)state;
    const char *one = tu_tmp("one-hf"), *two = tu_tmp("two-hf");
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "f32", "hf", one, NULL, NULL), MLLM_OK);
    mkdir(two, 0755);
    char *src = path_in(one, "model.safetensors");
    size_t len;
    uint8_t *buf = tu_read_file(src, &len);
    uint64_t hl;
    memcpy(&hl, buf, 8);
    cJSON *hdr = cJSON_ParseWithLength((const char *)buf + 8, (size_t)hl);
    assert_non_null(hdr);
    cJSON *shard[2] = {cJSON_CreateObject(), cJSON_CreateObject()}, *index = cJSON_CreateObject();
    cJSON *map = cJSON_AddObjectToObject(index, "weight_map");
    uint64_t used[2] = {0, 0};
    uint8_t *data[2] = {malloc(len), malloc(len)};
    int k = 0;
    for (cJSON *e = hdr->child; e; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) continue;
        int s = k++ % 2;
        cJSON *offs = cJSON_GetObjectItem(e, "data_offsets");
        uint64_t b = (uint64_t)cJSON_GetArrayItem(offs, 0)->valuedouble, en = (uint64_t)cJSON_GetArrayItem(offs, 1)->valuedouble;
        memcpy(data[s] + used[s], buf + 8 + hl + b, en - b);
        cJSON *d = cJSON_Duplicate(e, 1);
        double r[2] = {(double)used[s], (double)(used[s] + en - b)};
        cJSON_ReplaceItemInObject(d, "data_offsets", cJSON_CreateDoubleArray(r, 2));
        cJSON_AddItemToObject(shard[s], e->string, d);
        used[s] += en - b;
        cJSON_AddStringToObject(map, e->string, s ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors");
    }
    for (int s = 0; s < 2; s++) {
        char *text = cJSON_PrintUnformatted(shard[s]);
        uint64_t n = strlen(text);
        char name[64];
        snprintf(name, sizeof name, "model-0000%d-of-00002.safetensors", s + 1);
        char *p = path_in(two, name);
        FILE *f = fopen(p, "wb");
        fwrite(&n, 8, 1, f);
        fwrite(text, 1, n, f);
        fwrite(data[s], 1, used[s], f);
        fclose(f);
        free(p);
        free(text);
        free(data[s]);
        cJSON_Delete(shard[s]);
    }
    char *idx_text = cJSON_Print(index);
    char *idx = path_in(two, "model.safetensors.index.json");
    write_text(idx, idx_text, strlen(idx_text));
    size_t cl;
    char *cfg_src = path_in(one, "config.json"), *cfg_dst = path_in(two, "config.json");
    char *cfg = tu_read_file(cfg_src, &cl);
    write_text(cfg_dst, cfg, cl);
    mllm_model_file *a, *b;
    assert_int_equal(tu_open(one, &a), MLLM_OK);
    if (tu_open(two, &b) != MLLM_OK) fail_msg("%s", mllm_last_error());
    assert_null(b->tokenizer_json); /* not copied to the sharded folder */
    assert_int_equal(a->n_weights, b->n_weights);
    for (size_t i = 0; i < a->n_weights; i++) {
        const mllm_weight *wb = mllm_model_file_find(b, a->weights[i].name);
        assert_non_null(wb);
        assert_int_equal(wb->size, a->weights[i].size);
        assert_memory_equal(wb->data, a->weights[i].data, wb->size);
    }
    mllm_model_file_close(a);
    mllm_model_file_close(b);
    /* A shard name escaping the folder is refused. */
    cJSON_ReplaceItemInObject(map, "model.norm.weight", cJSON_CreateString("../one-hf/model.safetensors"));
    char *bad = cJSON_Print(index);
    write_text(idx, bad, strlen(bad));
    assert_int_equal(tu_open(two, &b), MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "plain file name"));
    free(bad);
    /* Wrong shapes for the config: the first mis-shaped tensor is named. */
    char *wrong = strstr(cfg, "\"intermediate_size\":\t128");
    if (!wrong) wrong = strstr(cfg, "\"intermediate_size\": 128");
    assert_non_null(wrong);
    memcpy(strstr(wrong, "128"), "120", 3);
    char *cfg_one = path_in(one, "config.json");
    write_text(cfg_one, cfg, cl);
    assert_int_equal(tu_open(one, &a), MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "'blk.0.ffn_gate.weight'"));
    /* No weights at all. */
    remove(idx);
    assert_int_equal(tu_open(two, &b), MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "model.safetensors"));
    remove(cfg_dst);
    assert_int_equal(tu_open(two, &b), MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "config.json"));
    free(cfg_one);
    free(cfg);
    free(cfg_src);
    free(cfg_dst);
    free(idx);
    free(idx_text);
    cJSON_Delete(index);
    cJSON_Delete(hdr);
    free(buf);
    free(src);
    free((void *)one);
    free((void *)two);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_corrupt),
        cmocka_unit_test(test_real_configs),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_sharded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
