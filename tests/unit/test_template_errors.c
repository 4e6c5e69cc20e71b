/* Template errors name the construct and the line; broken templates and
   contexts (truncated, mutated, nested too deep, out of memory) give an
   error, never a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"
#include "template/template.h"
#include "testutil.h"

/* Compiles (and renders with ctx when it compiles); returns the status and
   leaves the message in mllm_last_error(). */
static mllm_status run(const char *src, const char *ctx) {
    mllm_template *t = NULL;
    mllm_status st = mllm_template_compile(src, strlen(src), "t", &t);
    if (st != MLLM_OK) return st;
    char *out = NULL;
    st = mllm_template_render_json(t, ctx, SIZE_MAX, NULL, &out, NULL);
    mllm_free(out);
    mllm_template_free(t);
    return st;
}

static void expect_error(const char *src, const char *ctx, mllm_status want, const char *line,
                         const char *what) {
    mllm_status st = run(src, ctx);
    if (st != want || !strstr(mllm_last_error(), line) || !strstr(mllm_last_error(), what))
        fail_msg("template %s: status %d, message '%s' (want %d with '%s' and '%s')", src, st,
                 mllm_last_error(), want, line, what);
}

static void test_syntax_errors(void **state) {
    (void)state;
    expect_error("line one\n{{ x|nope }}", "{}", MLLM_ERR_FORMAT, "line 2", "unknown filter 'nope'");
    expect_error("{{ x is nope }}", "{}", MLLM_ERR_FORMAT, "line 1", "unknown test 'nope'");
    expect_error("a\n{% if x %}\nb\n", "{}", MLLM_ERR_FORMAT, "line 2", "'if' block opened here is never closed");
    expect_error("{% for x in y %}\n{% endif %}", "{}", MLLM_ERR_FORMAT, "line 2", "unexpected 'endif'");
    expect_error("\n\n{% include 'other.jinja' %}", "{}", MLLM_ERR_FORMAT, "line 3", "'include' tag is not supported");
    expect_error("{% frobnicate %}", "{}", MLLM_ERR_FORMAT, "line 1", "unknown tag 'frobnicate'");
    expect_error("x {{ 'abc' ", "{}", MLLM_ERR_FORMAT, "line 1", "never closed");
    expect_error("{{ 1 + }}", "{}", MLLM_ERR_FORMAT, "line 1", "unexpected");
    expect_error("{% macro m() %}x", "{}", MLLM_ERR_FORMAT, "line 1", "'macro' block");
    expect_error("{% break %}", "{}", MLLM_ERR_FORMAT, "line 1", "'break' outside of a for loop");
    expect_error("{# never closed", "{}", MLLM_ERR_FORMAT, "line 1", "comment");
    expect_error("{{ (1 }}", "{}", MLLM_ERR_FORMAT, "line 1", "'}'");
    expect_error("{{ 'a' ]] }}", "{}", MLLM_ERR_FORMAT, "line 1", "unexpected ']'");
    expect_error("{% raw %}abc", "{}", MLLM_ERR_FORMAT, "line 1", "endraw");
    expect_error("{{ '\\x4' }}", "{}", MLLM_ERR_FORMAT, "line 1", "escape");
}

static void test_runtime_errors(void **state) {
    (void)state;
    expect_error("ok\n{{ raise_exception('boom: ' ~ 3) }}", "{}", MLLM_ERR_INVALID_ARG, "line 2",
                 "raise_exception: boom: 3");
    expect_error("\n\n{{ x.y }}", "{}", MLLM_ERR_INVALID_ARG, "line 3", "'x' is undefined");
    expect_error("{{ 'a' + 1 }}", "{}", MLLM_ERR_INVALID_ARG, "line 1", "can only concatenate str");
    expect_error("{{ 1 / 0 }}", "{}", MLLM_ERR_INVALID_ARG, "line 1", "division by zero");
    expect_error("{{ nofunc(1) }}", "{}", MLLM_ERR_INVALID_ARG, "line 1", "'nofunc' is undefined");
    expect_error("{{ x|tojson }}", "{\"y\": 1}", MLLM_ERR_INVALID_ARG, "line 1", "not JSON serializable");
    expect_error("{% for a in 5 %}{% endfor %}", "{}", MLLM_ERR_INVALID_ARG, "line 1", "not iterable");
    expect_error("{% set n = 1 %}{% set n.a = 2 %}", "{}", MLLM_ERR_INVALID_ARG, "line 1", "not a namespace");
    expect_error("{% if false %}{{ x|nope }}{% else %}{{ y|nope }}{% endif %}", "{}", MLLM_ERR_INVALID_ARG, "line 1", "unknown filter 'nope'");
    expect_error("{{ 'x' * 1000000000000 }}", "{}", MLLM_ERR_NOMEM, "line 1", "out of memory");
    expect_error("{{ range(1000000)|length }}", "{}", MLLM_ERR_INVALID_ARG, "line 1", "range() too big");
    expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "{}", MLLM_ERR_INVALID_ARG, "line 1",
                 "nested too deeply");
    /* contexts */
    expect_error("x", "[1, 2]", MLLM_ERR_INVALID_ARG, "context", "must be an object");
    expect_error("x", "{\"a\": ", MLLM_ERR_INVALID_ARG, "context", "unexpected end");
    expect_error("x", "{\"a\": \"\xff\"}", MLLM_ERR_INVALID_ARG, "context", "invalid UTF-8");
    expect_error("x", "{\"a\": 99999999999999999999}", MLLM_ERR_INVALID_ARG, "context", "integer too large");
    expect_error("x", "{\"a\": 1} x", MLLM_ERR_INVALID_ARG, "context", "extra data");
}

static void test_deep_nesting(void **state) {
    (void)state;
    enum { N = 20000 };
    char *s = malloc(N * 13 + 64);
    assert_non_null(s);
    memcpy(s, "{{ ", 3);
    memset(s + 3, '(', N);
    strcpy(s + 3 + N, "1 }}");
    assert_int_equal(run(s, "{}"), MLLM_ERR_FORMAT);
    s[0] = 0;
    for (int i = 0; i < N; i++) memcpy(s + 13 * i, "{% if true %}", 13);
    s[13 * N] = 0;
    assert_int_equal(run(s, "{}"), MLLM_ERR_FORMAT);
    strcpy(s, "{{ x }}");
    char *ctx = malloc(2 * N + 16);
    assert_non_null(ctx);
    strcpy(ctx, "{\"x\": ");
    size_t k = strlen(ctx);
    for (int i = 0; i < N; i++) ctx[k++] = '[';
    for (int i = 0; i < N; i++) ctx[k++] = ']';
    ctx[k++] = '}';
    ctx[k] = 0;
    assert_int_equal(run(s, ctx), MLLM_ERR_INVALID_ARG);
    /* a value nested deeper than the stack allows, built by the template */
    assert_int_equal(run("{% set ns = namespace(x=[]) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}"
                         "{{ ns.x|length }}{{ ns.x == ns.x }}{{ ns.x|string|length > 0 }}", "{}"), MLLM_OK);
    free(ctx);
    free(s);
}

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static const char *CTX =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"Hi\"},"
    " {\"role\": \"assistant\", \"content\": \"<think>x</think>y\", \"tool_calls\": [{\"function\": {\"name\": \"f\","
    " \"arguments\": {\"a\": 1}}}]}, {\"role\": \"tool\", \"content\": \"r\"}, {\"role\": \"user\", \"content\": \"Bye\"}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}], \"add_generation_prompt\": true,"
    " \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}";

/* Every prefix (sampled) and many one-byte mutations of real templates:
   an error or a rendering, never a crash (run under ASan). */
static void fuzz_one(const char *src) {
    size_t n = strlen(src);
    char *buf = malloc(n + 1);
    assert_non_null(buf);
    size_t step = n / 300 + 1;
    for (size_t len = 0; len <= n; len += step) {
        memcpy(buf, src, len);
        buf[len] = 0;
        run(buf, CTX);
    }
    static const char pool[] = "{}%#-+()[]'\"|.~ \n=,:!<>*/0a";
    uint64_t seed = 0x9e3779b97f4a7c15ull ^ n;
    for (int k = 0; k < 400; k++) {
        memcpy(buf, src, n + 1);
        for (int m = 0; m < 3; m++) buf[rng_next(&seed) % n] = pool[rng_next(&seed) % (sizeof pool - 1)];
        run(buf, CTX);
    }
    free(buf);
}

static void test_fuzz_real_templates(void **state) {
    (void)state;
    const char *data[] = {"templates/tinyllama-1.1b-chat-v1.0.jinja", "templates/llama-2-7b-chat.jinja",
                          "templates/smollm2-135m-instruct.jinja"};
    const char *shared[] = {"models/chat-templates/Qwen-Qwen3-0.6B.jinja", "models/chat-templates/Qwen3.5-4B.jinja",
                            "models/chat-templates/meta-llama-Llama-3.1-8B-Instruct.jinja",
                            "models/chat-templates/HuggingFaceTB-SmolLM3-3B.jinja"};
    for (size_t i = 0; i < 3 + 4; i++) {
        const char *path = i < 3 ? tu_data(data[i]) : tu_shared(shared[i - 3]);
        if (!path) continue;
        size_t n = 0;
        char *src = tu_read_file(path, &n);
        assert_non_null(src);
        char *s = realloc(src, n + 1);
        assert_non_null(s);
        s[n] = 0;
        fuzz_one(s);
        free(s);
        free((void *)path);
    }
}

/* Every allocation failing in turn: an error status, never a crash or leak. */
static void test_out_of_memory(void **state) {
    (void)state;
    const char *src = "{% set ns = namespace(a=[]) %}{% for m in messages %}{{ m.role|upper ~ ':' ~ m.content|trim }}"
                      "{% set ns.a = ns.a + [m] %}{% endfor %}{{ ns.a|tojson(indent=1) }}{{ tools|tojson }}";
    int failures = 0;
    for (long k = 0; k < 400; k++) {
        mllm_alloc_fail_after(k);
        mllm_status st = run(src, CTX);
        mllm_alloc_fail_after(-1);
        if (st == MLLM_OK) break;
        assert_int_equal(st, MLLM_ERR_NOMEM);
        failures++;
    }
    assert_true(failures > 5);
    assert_int_equal(run(src, CTX), MLLM_OK);
}

static void test_builtins_and_one_shot(void **state) {
    (void)state;
    char *out = NULL, err[256];
    const char *ctx = "{\"messages\": [{\"role\": \"user\", \"content\": \" Hi \"}], \"add_generation_prompt\": true,"
                      " \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}";
    assert_int_equal(mllm_template_render(mllm_template_builtin("chatml"), ctx, &out, err, sizeof err), MLLM_OK);
    assert_string_equal(out, "<|im_start|>user\n Hi <|im_end|>\n<|im_start|>assistant\n");
    mllm_free(out);
    assert_int_equal(mllm_template_render(mllm_template_builtin("llama3"), ctx, &out, err, sizeof err), MLLM_OK);
    assert_string_equal(out, "<s><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                             "<|start_header_id|>assistant<|end_header_id|>\n\n");
    mllm_free(out);
    assert_int_equal(mllm_template_render(mllm_template_builtin("llama2"), ctx, &out, err, sizeof err), MLLM_OK);
    assert_string_equal(out, "<s>[INST] Hi [/INST]");
    mllm_free(out);
    assert_int_equal(mllm_template_render(mllm_template_builtin("tinyllama"), ctx, &out, err, sizeof err), MLLM_OK);
    assert_string_equal(out, "<|user|>\n Hi </s>\n<|assistant|>\n");
    mllm_free(out);
    assert_null(mllm_template_builtin("nope"));
    assert_int_equal(mllm_template_render("{{ x.y }}", "{}", &out, err, sizeof err), MLLM_ERR_INVALID_ARG);
    assert_null(out);
    assert_non_null(strstr(err, "'x' is undefined"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_runtime_errors),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_fuzz_real_templates),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_builtins_and_one_shot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
