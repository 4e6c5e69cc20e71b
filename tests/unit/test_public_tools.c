/* The public API the CLI's commands moved onto (mllm_info.h, mllm_tools.h,
   mllm_server.h and the additions to mllm.h): struct_size is checked, the
   registry, tensor tables and graphs agree with what the library loaded,
   a .mllm written by mllm_convert verifies and lists the model's tensors,
   built-in templates render, grammar samples are reproducible and match. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <mllm/mllm.h>
#include "testutil.h"

typedef struct { char buf[8192]; size_t n; int calls; } text_buf;

static void collect(void *user, const char *text, size_t len) {
    text_buf *t = user;
    if (t->n + len < sizeof t->buf) {
        memcpy(t->buf + t->n, text, len);
        t->n += len;
        t->buf[t->n] = 0;
    }
    t->calls++;
}

static void test_struct_size_checked(void **state) {
    (void)state;
    mllm_convert_params cp;
    mllm_convert_default_params(&cp);
    char *never_mllm = (char *)tu_tmp("never.mllm"), *never_gguf = (char *)tu_tmp("never.gguf");
    cp.in = "in.gguf", cp.out = never_mllm;
    cp.struct_size--;
    assert_int_equal(mllm_convert(&cp), MLLM_ERR_INVALID_ARG);
    mllm_quantize_params qp;
    mllm_quantize_default_params(&qp);
    qp.struct_size = 4;
    assert_int_equal(mllm_quantize_file("in.gguf", never_gguf, &qp, NULL), MLLM_ERR_INVALID_ARG);
    free(never_mllm);
    free(never_gguf);
    mllm_chat_template_params tp;
    mllm_chat_template_default_params(&tp);
    tp.chat_template = "chatml";
    tp.struct_size = 0;
    text_buf out = {0};
    assert_int_equal(mllm_chat_template_render(&tp, "{}", SIZE_MAX, collect, &out), MLLM_ERR_INVALID_ARG);
    mllm_server_config sc;
    mllm_server_default_config(&sc);
    assert_int_equal(sc.port, MLLM_SERVER_DEFAULT_PORT);
    sc.struct_size = 8;
    mllm_server *srv = NULL;
    mllm_model *m = tu_synth_load("tools", "qwen3", "f32");
    /* A build without the server refuses before it looks at the config. */
    const mllm_status st = mllm_server_start(m, &sc, &srv);
    if (st == MLLM_ERR_UNSUPPORTED) assert_non_null(strstr(mllm_last_error(), "no HTTP server"));
    else assert_int_equal(st, MLLM_ERR_INVALID_ARG);
    assert_null(srv);
    mllm_model_free(m);
}

static void test_architectures(void **state) {
    (void)state;
    size_t n = mllm_architecture_count();
    assert_true(n > 0);
    bool llama = false;
    for (size_t i = 0; i < n; i++) {
        mllm_architecture_info a = {.struct_size = sizeof a};
        assert_int_equal(mllm_architecture_get(i, &a), MLLM_OK);
        assert_non_null(a.name);
        assert_non_null(a.kind);
        if (!strcmp(a.name, "llama")) llama = !strcmp(a.kind, "decoder");
    }
    assert_true(llama);
    mllm_architecture_info a = {.struct_size = sizeof a};
    assert_int_equal(mllm_architecture_get(n, &a), MLLM_ERR_INVALID_ARG);
    a.struct_size = sizeof(uint32_t);
    assert_int_equal(mllm_architecture_get(0, &a), MLLM_ERR_INVALID_ARG);
}

static void test_model_tensors_graph_and_file(void **state) {
    (void)state;
    const char *gguf = tu_tmp("tools-q.gguf");
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "f32", "gguf", gguf, NULL, NULL), MLLM_OK);
    mllm_model *m = NULL;
    assert_int_equal(mllm_model_load(gguf, NULL, &m), MLLM_OK);
    const size_t n = mllm_model_n_tensors(m);
    assert_true(n > 0);
    mllm_tensor_info t = {.struct_size = sizeof t};
    assert_int_equal(mllm_model_tensor_info(m, 0, &t), MLLM_OK);
    assert_int_equal(t.name_len, strlen(t.name));
    assert_true(t.n_dims >= 1 && t.size > 0);
    assert_int_equal(mllm_model_tensor_info(m, n, &t), MLLM_ERR_INVALID_ARG);
    assert_true(mllm_model_load_ms(m) > 0);

    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, NULL, &s), MLLM_OK);
    int n_nodes = 0;
    size_t act = 0;
    text_buf lines = {0};
    assert_int_equal(mllm_session_decode_graph(s, &n_nodes, &act, collect, &lines), MLLM_OK);
    assert_true(n_nodes > 0 && act > 0);
    assert_int_equal(lines.calls, n_nodes); /* one line per node */
    float *logits = malloc((size_t)mllm_model_n_vocab(m) * 2 * sizeof(float));
    const int32_t ids[2] = {1, 2};
    assert_int_equal(mllm_session_eval_logits(s, ids, 2, 0, NULL), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_session_eval_logits(s, ids, 2, 0, logits), MLLM_OK);
    assert_int_equal(mllm_session_n_past(s), 2);
    free(logits);
    mllm_session_free(s);

    /* The same tensors, converted to .mllm, read without loading. */
    mllm_convert_params cp;
    mllm_convert_default_params(&cp);
    cp.in = gguf;
    cp.out = tu_tmp("tools-q.mllm");
    assert_int_equal(mllm_convert(&cp), MLLM_OK);
    size_t checked = 0;
    assert_int_equal(mllm_file_verify(cp.out, &checked), MLLM_OK);
    assert_int_equal(checked, n);
    assert_false(mllm_file_is_ctranslate2(cp.out));
    mllm_file_info *f = NULL;
    assert_int_equal(mllm_file_info_open(cp.out, &f), MLLM_OK);
    assert_int_equal(mllm_file_info_format(f), MLLM_FILE_MLLM);
    assert_int_equal(mllm_file_info_version(f), 3);
    assert_null(mllm_file_info_spec(f, NULL));
    size_t cfg_len = 0;
    assert_non_null(mllm_file_info_config(f, &cfg_len));
    assert_true(cfg_len > 0);
    assert_int_equal(mllm_file_info_n_tensors(f), n);
    assert_int_equal(mllm_file_info_n_aliases(f), 0);
    mllm_file_info_close(f);
    assert_int_not_equal(mllm_file_info_open(gguf, &f), MLLM_OK); /* GGUF is neither format */
    assert_null(f);
    mllm_model_free(m);
    free((void *)cp.out);
    free((void *)gguf);
}

static void test_template_render(void **state) {
    (void)state;
    mllm_chat_template_params p;
    mllm_chat_template_default_params(&p);
    p.chat_template = "chatml";
    assert_non_null(mllm_chat_template_builtin("chatml"));
    assert_non_null(strstr(mllm_chat_template_builtin_names(), "chatml"));
    text_buf out = {0};
    const char *ctx = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"add_generation_prompt\": true}";
    assert_int_equal(mllm_chat_template_render(&p, ctx, SIZE_MAX, collect, &out), MLLM_OK);
    assert_int_equal(out.calls, 1);
    assert_string_equal(out.buf, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    p.chat_template = "no-such-template";
    assert_int_equal(mllm_chat_template_render(&p, ctx, SIZE_MAX, collect, &out), MLLM_ERR_INVALID_ARG);
    assert_non_null(strstr(mllm_last_error(), "neither a file nor a built-in"));
}

static void test_grammar_sample(void **state) {
    (void)state;
    mllm_grammar *g = NULL;
    assert_int_equal(mllm_grammar_new("root ::= \"a\" [0-9]+ (\"-\" | \"+\")?", NULL, &g), MLLM_OK);
    text_buf a = {0}, b = {0};
    assert_int_equal(mllm_grammar_sample(g, 5, 7, collect, &a), MLLM_OK);
    assert_int_equal(mllm_grammar_sample(g, 5, 7, collect, &b), MLLM_OK);
    assert_int_equal(a.calls, 5);
    assert_string_equal(a.buf, b.buf); /* the same seed, the same texts */
    /* Every sample, alone, is a complete match. */
    text_buf one = {0};
    for (uint64_t seed = 0; seed < 8; seed++) {
        one.n = 0;
        assert_int_equal(mllm_grammar_sample(g, 1, seed, collect, &one), MLLM_OK);
        mllm_grammar_reset(g);
        assert_int_equal(mllm_grammar_accept(g, one.buf, one.n), MLLM_OK);
        assert_true(mllm_grammar_complete(g));
    }
    assert_int_equal(mllm_grammar_sample(g, -1, 0, collect, &one), MLLM_ERR_INVALID_ARG);
    mllm_grammar_free(g);
}

static void test_small_getters(void **state) {
    (void)state;
    assert_null(mllm_backend_device("cpu"));
    assert_null(mllm_backend_device(NULL));
    assert_int_equal(mllm_model_add_bos(NULL), 0);
    assert_int_equal(mllm_model_n_tensors(NULL), 0);
    assert_int_equal(mllm_think_filter_new(0, NULL), MLLM_ERR_INVALID_ARG);
    assert_true(MLLM_IMAGE_MAX_FILE_BYTES > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_struct_size_checked),       cmocka_unit_test(test_architectures),
        cmocka_unit_test(test_model_tensors_graph_and_file), cmocka_unit_test(test_template_render),
        cmocka_unit_test(test_grammar_sample),            cmocka_unit_test(test_small_getters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
