/* The tool-call parser (src/server/toolcall.c): Hermes (<tool_call>) and
   Llama 3.x JSON answers, one or several calls, text around them,
   malformed calls, parallel_tool_calls: false, and every stream cut: each
   prefix of an answer, parsed as a stream would, reports content and calls
   that only grow, and never shows markup as content. */
#include <cjson/cJSON.h>
#include <string.h>
#include "server/toolcall.h"
#include "testutil.h"

static void check_stream(srv_tc_style st, const char *s, int max_calls);

static srv_tc_result parse(srv_tc_style st, const char *s, bool final, int max_calls) {
    srv_tc_result r;
    assert_int_equal(srv_tc_parse(st, s, strlen(s), final, max_calls, &r), 0);
    return r;
}

/* args is valid JSON equal to want (compared as parsed values). */
static void assert_json_eq(const char *args, const char *want) {
    cJSON *a = cJSON_Parse(args), *b = cJSON_Parse(want);
    assert_non_null(a);
    assert_non_null(b);
    assert_true(cJSON_Compare(a, b, true));
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void test_hermes_one(void **state) {
    (void)state;
    srv_tc_result r = parse(SRV_TC_HERMES,
                            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": [1, 2]}}\n</tool_call>",
                            true, 16);
    assert_int_equal(r.n_calls, 1);
    assert_string_equal(r.calls[0].name, "get_weather");
    assert_string_equal(r.calls[0].args, "{\"city\": \"Paris\", \"days\": [1, 2]}");
    assert_true(r.calls[0].complete);
    assert_int_equal(r.content_len, 0);
    assert_string_equal(r.content, "");
    srv_tc_result_free(&r);
}

static void test_hermes_several_and_text(void **state) {
    (void)state;
    const char *s = "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
                    "<tool_call>\n{\"arguments\": {\"x\": \"}</tool_call>\"}, \"name\": \"b\"}\n</tool_call>\nDone.";
    srv_tc_result r = parse(SRV_TC_HERMES, s, true, 16);
    assert_int_equal(r.n_calls, 2);
    assert_string_equal(r.calls[0].name, "a");
    assert_string_equal(r.calls[0].args, "{}");
    assert_string_equal(r.calls[1].name, "b"); /* key order does not matter; markup inside strings is data */
    assert_json_eq(r.calls[1].args, "{\"x\": \"}</tool_call>\"}");
    assert_string_equal(r.content, "Let me check.\n\n\nDone.");
    srv_tc_result_free(&r);
    /* parallel_tool_calls: false keeps the first call; the others go with their markup */
    r = parse(SRV_TC_HERMES, s, true, 1);
    assert_int_equal(r.n_calls, 1);
    assert_string_equal(r.calls[0].name, "a");
    assert_string_equal(r.content, "Let me check.\n\n\nDone.");
    srv_tc_result_free(&r);
}

static void test_hermes_variants(void **state) {
    (void)state;
    /* "parameters", no arguments at all, no close tag, arguments as a JSON string */
    srv_tc_result r = parse(SRV_TC_HERMES, "<tool_call>{\"name\":\"f\",\"parameters\":{\"a\":1}}</tool_call>", true, 16);
    assert_int_equal(r.n_calls, 1);
    assert_string_equal(r.calls[0].args, "{\"a\":1}");
    srv_tc_result_free(&r);
    r = parse(SRV_TC_HERMES, "<tool_call>\n{\"name\": \"now\"}\n</tool_call>", true, 16);
    assert_int_equal(r.n_calls, 1);
    assert_string_equal(r.calls[0].args, "{}");
    srv_tc_result_free(&r);
    r = parse(SRV_TC_HERMES, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"x\"}}", true, 16);
    assert_int_equal(r.n_calls, 1);
    assert_string_equal(r.content, "");
    srv_tc_result_free(&r);
    r = parse(SRV_TC_HERMES, "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"q\\\": 1}\"}\n</tool_call>", true, 16);
    assert_int_equal(r.n_calls, 1);
    assert_string_equal(r.calls[0].args, "{\"q\": 1}");
    srv_tc_result_free(&r);
    /* unicode escapes in the name are decoded */
    r = parse(SRV_TC_HERMES, "<tool_call>{\"name\": \"g\\u00e9o\", \"arguments\": {}}</tool_call>", true, 16);
    assert_string_equal(r.calls[0].name, "g\xc3\xa9o");
    srv_tc_result_free(&r);
}

/* Small Qwen2.5 models often answer the bare object, without the tags. */
static void test_hermes_bare(void **state) {
    (void)state;
    srv_tc_result r = parse(SRV_TC_HERMES, "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}", true, 16);
    assert_int_equal(r.n_calls, 1);
    assert_string_equal(r.calls[0].name, "get_weather");
    assert_string_equal(r.calls[0].args, "{\"city\": \"Paris\"}");
    assert_string_equal(r.content, "");
    srv_tc_result_free(&r);
    r = parse(SRV_TC_HERMES, "{\"city\": \"Paris\"} is JSON, <tool_call>{\"name\": \"f\"}</tool_call>", true, 16);
    assert_int_equal(r.n_calls, 1);
    assert_string_equal(r.calls[0].name, "f");
    assert_string_equal(r.content, "{\"city\": \"Paris\"} is JSON,");
    srv_tc_result_free(&r);
    check_stream(SRV_TC_HERMES, "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\nThen text.", 16);
}

/* ... or in a ```json fence (Qwen2.5-Coder-0.5B's answer to "What is the
   weather in Paris?"), which goes with the call; other fences are text. */
static void test_fenced(void **state) {
    (void)state;
    static const char QWEN[] = "```json\n{\n  \"name\": \"get_weather\",\n  \"arguments\": {\n    \"city\": \"Paris\",\n"
                               "    \"unit\": \"celsius\"\n  }\n}\n```";
    for (int st = SRV_TC_HERMES; st <= SRV_TC_LLAMA; st++) {
        srv_tc_result r = parse(st, QWEN, true, 16);
        assert_int_equal(r.n_calls, 1);
        assert_string_equal(r.calls[0].name, "get_weather");
        assert_json_eq(r.calls[0].args, "{\"city\": \"Paris\", \"unit\": \"celsius\"}");
        assert_string_equal(r.content, "");
        srv_tc_result_free(&r);
        check_stream(st, QWEN, 16);
    }
    srv_tc_result r = parse(SRV_TC_HERMES, "```\n{\"name\": \"f\", \"arguments\": {}}\n```\nDone.", true, 16);
    assert_int_equal(r.n_calls, 1);
    assert_string_equal(r.content, "Done.");
    srv_tc_result_free(&r);
    /* not closed: the call stands, the rest is text */
    r = parse(SRV_TC_HERMES, "```json {\"name\": \"f\", \"arguments\": {}} and more", true, 16);
    assert_int_equal(r.n_calls, 1);
    assert_string_equal(r.content, "and more");
    srv_tc_result_free(&r);
    static const char *const text[] = {
        "```python\nprint(1)\n```", "```json\n{\"city\": \"Paris\"}\n```", "```", "``", "```json", "```js",
        "```{\"name\": \"f\", \"arguments\": {}}```", "```jsonx\n{\"name\": \"f\"}", "Text ```json\n{\"name\": \"f\"}\n```",
    };
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++) {
        r = parse(SRV_TC_HERMES, text[i], true, 16);
        assert_int_equal(r.n_calls, 0);
        assert_string_equal(r.content, text[i]);
        srv_tc_result_free(&r);
        check_stream(SRV_TC_HERMES, text[i], 16);
        check_stream(SRV_TC_LLAMA, text[i], 16);
    }
}

static void test_hermes_malformed(void **state) {
    (void)state;
    static const char *const bad[] = {
        "<tool_call>\nnot json\n</tool_call>",
        "<tool_call>\n{\"name\": 5, \"arguments\": {}}\n</tool_call>",
        "<tool_call>\n{\"arguments\": {}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": tru}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 01x}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"f\" \"arguments\": {}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"\\q\"}}\n</tool_call>",
        /* arguments quoted as a string whose text is no JSON (found by the fuzzer) */
        "<tool_call>{\"arguments\": \"{\\\"x\\\": [5, ]}\", \"name\": \"b\"}</tool_call>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        srv_tc_result r = parse(SRV_TC_HERMES, bad[i], true, 16);
        assert_int_equal(r.n_calls, 0);
        assert_string_equal(r.content, bad[i]); /* nothing lost: the text is the answer */
        srv_tc_result_free(&r);
    }
    /* a call cut short (max_tokens) is text in the final answer */
    srv_tc_result r = parse(SRV_TC_HERMES, "Hi <tool_call>\n{\"name\": \"f\", \"argu", true, 16);
    assert_int_equal(r.n_calls, 0);
    assert_string_equal(r.content, "Hi <tool_call>\n{\"name\": \"f\", \"argu");
    srv_tc_result_free(&r);
    /* deep nesting is malformed, not a stack overflow */
    char deep[400] = "<tool_call>{\"name\": \"f\", \"arguments\": ";
    size_t n = strlen(deep);
    for (int i = 0; i < 150; i++) deep[n++] = '[';
    deep[n] = 0;
    r = parse(SRV_TC_HERMES, deep, false, 16);
    assert_int_equal(r.n_calls, 0);
    srv_tc_result_free(&r);
}

static void test_llama(void **state) {
    (void)state;
    srv_tc_result r = parse(SRV_TC_LLAMA, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}", true, 16);
    assert_int_equal(r.n_calls, 1);
    assert_string_equal(r.calls[0].name, "get_weather");
    assert_string_equal(r.calls[0].args, "{\"city\": \"Oslo\"}");
    assert_string_equal(r.content, "");
    srv_tc_result_free(&r);
    r = parse(SRV_TC_LLAMA, "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"arguments\": {\"k\": null}}",
              true, 16);
    assert_int_equal(r.n_calls, 2);
    assert_string_equal(r.calls[1].name, "b");
    assert_string_equal(r.calls[1].args, "{\"k\": null}");
    srv_tc_result_free(&r);
    /* JSON that is not a call, and text, stay content */
    static const char *const text[] = {"{\"city\": \"Oslo\"}", "{\"name\": \"Bob\"}", "The weather is fine.",
                                       "{\"name\": \"f\", \"parameters\": {}"};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++) {
        r = parse(SRV_TC_LLAMA, text[i], true, 16);
        assert_int_equal(r.n_calls, 0);
        assert_string_equal(r.content, text[i]);
        srv_tc_result_free(&r);
    }
    /* a call then text */
    r = parse(SRV_TC_LLAMA, "{\"name\": \"a\", \"parameters\": {}}\nThat is all.", true, 16);
    assert_int_equal(r.n_calls, 1);
    assert_string_equal(r.content, "That is all.");
    srv_tc_result_free(&r);
}

/* What a stream shows after each prefix: the content and each call's
   name/arguments extend what was shown before, and the end equals the
   plain parse. */
static void check_stream(srv_tc_style st, const char *s, int max_calls) {
    size_t n = strlen(s);
    srv_tc_result prev = {0};
    prev.content = NULL;
    for (size_t k = 0; k <= n; k++) {
        srv_tc_result r;
        bool final = k == n;
        assert_int_equal(srv_tc_parse(st, s, k, final, max_calls, &r), 0);
        if (prev.content) {
            assert_true(r.content_len >= prev.content_len);
            assert_memory_equal(r.content, prev.content, prev.content_len);
            assert_true(r.n_calls >= prev.n_calls);
            for (int i = 0; i < prev.n_calls; i++) {
                if (prev.calls[i].name) assert_string_equal(r.calls[i].name, prev.calls[i].name);
                assert_true(r.calls[i].args_len >= prev.calls[i].args_len);
                assert_memory_equal(r.calls[i].args, prev.calls[i].args, prev.calls[i].args_len);
            }
        }
        assert_null(strstr(r.content, "<tool_call"));
        assert_null(strstr(r.content, "python_tag"));
        srv_tc_result_free(&prev);
        prev = r;
    }
    srv_tc_result plain = parse(st, s, true, max_calls);
    assert_string_equal(prev.content, plain.content);
    assert_int_equal(prev.n_calls, plain.n_calls);
    for (int i = 0; i < plain.n_calls; i++) {
        assert_string_equal(prev.calls[i].name, plain.calls[i].name);
        assert_string_equal(prev.calls[i].args, plain.calls[i].args);
        assert_true(plain.calls[i].complete);
    }
    srv_tc_result_free(&plain);
    srv_tc_result_free(&prev);
}

static void test_stream_every_cut(void **state) {
    (void)state;
    check_stream(SRV_TC_HERMES,
                 "Sure <b>.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par\\\"is\", \"n\": -1.5e3, "
                 "\"ok\": true, \"z\": null, \"l\": [{}, []]}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": "
                 "{}}\n</tool_call> then <tool text.",
                 16);
    check_stream(SRV_TC_HERMES, "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call><tool_call>{\"name\": \"b\"}</tool_call>", 1);
    check_stream(SRV_TC_HERMES, "No tools needed: 2 < 3 and <tool is not a call.", 16);
    check_stream(SRV_TC_LLAMA, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\", \"d\": 10}}", 16);
    check_stream(SRV_TC_LLAMA, "{\"name\": \"a\", \"parameters\": {\"q\": \"{\"}}; {\"name\": \"b\", \"parameters\": {}}", 16);
    check_stream(SRV_TC_LLAMA, "Plain words, no call.", 16);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hermes_one),       cmocka_unit_test(test_hermes_several_and_text),
        cmocka_unit_test(test_hermes_variants),  cmocka_unit_test(test_hermes_malformed),
        cmocka_unit_test(test_llama),            cmocka_unit_test(test_stream_every_cut),
        cmocka_unit_test(test_hermes_bare),      cmocka_unit_test(test_fenced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
