/* Chat templates rendered by our Jinja interpreter must equal, byte for byte,
   what Python's Jinja2 (configured as transformers does) rendered for the
   same conversations: tests/data/templates/expected/<template>.json, written by
   tools/reference/jinja_reference.py. Cases where Jinja2 raised must raise
   here too (with the same message for raise_exception). Both sides render
   at the instant of tests/data/templates/SOURCE_DATE_EPOCH, so templates
   that print today's date (Llama 3.x) compare equal on any day. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"
#include "template/template.h"
#include "testutil.h"

static char *read_text(const char *path) {
    size_t n = 0;
    char *p = tu_read_file(path, &n);
    if (!p) return NULL;
    char *s = realloc(p, n + 1);
    if (!s) { free(p); return NULL; }
    s[n] = 0;
    return s;
}

static cJSON *read_json(const char *rel) {
    const char *path = tu_data(rel);
    char *text = read_text(path);
    free((void *)path);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

static void show_diff(const char *what, const char *ours, const char *want) {
    size_t k = 0;
    while (ours[k] && ours[k] == want[k]) k++;
    size_t from = k > 40 ? k - 40 : 0;
    printf("MISMATCH %s at byte %zu:\n  ours  \"%.80s\"\n  jinja \"%.80s\"\n", what, k, ours + from, want + from);
}

/* One (template, context) case against its expected entry; returns 1 if it fails. */
static int check_case(const mllm_template *t, const char *what, const char *ctx, size_t ctx_len,
                      const char *defaults, const cJSON *want) {
    char *out = NULL;
    size_t n = 0;
    mllm_status st = mllm_template_render_json(t, ctx, ctx_len, defaults, &out, &n);
    const cJSON *wo = cJSON_GetObjectItemCaseSensitive(want, "output");
    const cJSON *we = cJSON_GetObjectItemCaseSensitive(want, "error");
    int bad = 0;
    if (cJSON_IsString(wo)) {
        if (st != MLLM_OK) { printf("MISMATCH %s: failed (%s), Jinja2 rendered\n", what, mllm_last_error()); bad = 1; }
        else if (n != strlen(wo->valuestring) || memcmp(out, wo->valuestring, n)) { show_diff(what, out, wo->valuestring); bad = 1; }
    } else if (cJSON_IsString(we)) {
        const char *te = "TemplateError: ";
        if (st == MLLM_OK) { printf("MISMATCH %s: rendered, Jinja2 raised %s\n", what, we->valuestring); bad = 1; }
        else if (!strncmp(we->valuestring, te, strlen(te)) && !strstr(mllm_last_error(), we->valuestring + strlen(te))) {
            printf("MISMATCH %s: error '%s' lacks Jinja2's message '%s'\n", what, mllm_last_error(), we->valuestring);
            bad = 1;
        }
    } else {
        printf("bad expected entry for %s\n", what);
        bad = 1;
    }
    mllm_free(out);
    return bad;
}

static char *token_text(const cJSON *v) {
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
}

/* Source text and defaults JSON of a templates.json entry; false (after
   printing SKIPPED) when its ../shared file is absent. */
static bool load_source(const char *name, const cJSON *spec, char **src, char **defaults) {
    const char *s = cJSON_GetObjectItemCaseSensitive(spec, "source")->valuestring;
    const char *colon = strchr(s, ':');
    assert_non_null(colon);
    const char *path;
    if (!strncmp(s, "data:", 5)) {
        char rel[512];
        snprintf(rel, sizeof rel, "templates/%s", colon + 1);
        path = tu_data(rel);
    } else if (!(path = tu_shared(colon + 1))) {
        printf("SKIPPED: template %s\n", name);
        return false;
    }
    char *text = read_text(path);
    assert_non_null(text);
    char *bos = NULL, *eos = NULL;
    if (!strncmp(s, "shared-config:", 14)) {
        cJSON *cfg = cJSON_Parse(text);
        assert_non_null(cfg);
        *src = strdup(cJSON_GetObjectItemCaseSensitive(cfg, "chat_template")->valuestring);
        bos = token_text(cJSON_GetObjectItemCaseSensitive(cfg, "bos_token"));
        eos = token_text(cJSON_GetObjectItemCaseSensitive(cfg, "eos_token"));
        cJSON_Delete(cfg);
        free(text);
    } else {
        *src = text;
        bos = token_text(cJSON_GetObjectItemCaseSensitive(spec, "bos_token"));
        eos = token_text(cJSON_GetObjectItemCaseSensitive(spec, "eos_token"));
    }
    cJSON *d = cJSON_CreateObject();
    if (bos) cJSON_AddStringToObject(d, "bos_token", bos);
    if (eos) cJSON_AddStringToObject(d, "eos_token", eos);
    *defaults = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    free(bos);
    free(eos);
    free((void *)path);
    return true;
}

static void test_model_templates(void **state) {
    (void)state;
    cJSON *templates = read_json("templates/templates.json");
    assert_non_null(templates);
    int n_cases = 0, n_bad = 0, n_templates = 0;
    const cJSON *spec;
    cJSON_ArrayForEach(spec, templates) {
        char *src = NULL, *defaults = NULL;
        if (!load_source(spec->string, spec, &src, &defaults)) continue;
        char rel[256];
        snprintf(rel, sizeof rel, "templates/expected/%s.json", spec->string);
        cJSON *expected = read_json(rel);
        assert_non_null(expected);
        mllm_template *t = NULL;
        if (mllm_template_compile(src, strlen(src), spec->string, &t) != MLLM_OK)
            fail_msg("%s does not compile: %s", spec->string, mllm_last_error());
        n_templates++;
        const cJSON *want;
        cJSON_ArrayForEach(want, expected) {
            snprintf(rel, sizeof rel, "templates/contexts/%s.json", want->string);
            const char *path = tu_data(rel);
            char *ctx = read_text(path);
            free((void *)path);
            assert_non_null(ctx);
            char what[256];
            snprintf(what, sizeof what, "%s/%s", spec->string, want->string);
            n_bad += check_case(t, what, ctx, strlen(ctx), defaults, want);
            n_cases++;
            free(ctx);
        }
        mllm_template_free(t);
        cJSON_Delete(expected);
        free(src);
        free(defaults);
    }
    cJSON_Delete(templates);
    printf("%d templates, %d cases, %d differ from Jinja2\n", n_templates, n_cases, n_bad);
    assert_true(n_templates >= 3); /* the tests/data ones always run */
    assert_int_equal(n_bad, 0);
}

/* One feature per snippet (numbers, reprs, whitespace control, loops,
   macros, filters, tests, methods ...), each with its own context. */
static void test_snippets(void **state) {
    (void)state;
    cJSON *snips = read_json("templates/expected/snippets.json");
    assert_non_null(snips);
    int n = 0, bad = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, snips) {
        const char *src = cJSON_GetObjectItemCaseSensitive(s, "template")->valuestring;
        const char *ctx = cJSON_GetObjectItemCaseSensitive(s, "context")->valuestring;
        mllm_template *t = NULL;
        if (mllm_template_compile(src, strlen(src), s->string, &t) != MLLM_OK) {
            printf("MISMATCH %s: does not compile: %s\n", s->string, mllm_last_error());
            bad++;
            continue;
        }
        bad += check_case(t, s->string, ctx, strlen(ctx), NULL, s);
        mllm_template_free(t);
        n++;
    }
    cJSON_Delete(snips);
    printf("%d snippets, %d differ from Jinja2\n", n, bad);
    assert_true(n >= 30);
    assert_int_equal(bad, 0);
}

/* The SmolLM2 GGUF carries the template of tests/data (when it is here). */
static void test_gguf_template(void **state) {
    (void)state;
    const char *path = tu_smollm2_gguf();
    if (!path) return;
    mllm_template_model m;
    assert_int_equal(mllm_template_model_load(path, &m), MLLM_OK);
    const char *dp = tu_data("templates/smollm2-135m-instruct.jinja");
    char *want = read_text(dp);
    assert_non_null(want);
    assert_string_equal(m.source, want);
    assert_string_equal(m.bos_token, "<|im_start|>");
    assert_string_equal(m.eos_token, "<|im_end|>");
    char *d = mllm_template_model_defaults(&m);
    assert_string_equal(d, "{\"bos_token\":\"<|im_start|>\",\"eos_token\":\"<|im_end|>\"}");
    mllm_free(d);
    free(want);
    free((void *)dp);
    mllm_template_model_free(&m);
}

/* An HF folder: tokenizer_config.json's template and tokens. */
static void test_hf_folder(void **state) {
    (void)state;
    const char *dir = tu_shared("models/hf-tokenizers/llama3");
    if (!dir) return;
    mllm_template_model m;
    assert_int_equal(mllm_template_model_load(dir, &m), MLLM_OK);
    assert_non_null(strstr(m.source, "<|start_header_id|>"));
    assert_string_equal(m.bos_token, "<|begin_of_text|>");
    assert_string_equal(m.eos_token, "<|end_of_text|>");
    mllm_template_model_free(&m);
    free((void *)dir);
    /* a folder without a template says so */
    const char *nodir = tu_shared("models/configs/Qwen3-0.6B");
    if (!nodir) return;
    assert_int_equal(mllm_template_model_load(nodir, &m), MLLM_ERR_FORMAT);
    assert_non_null(strstr(mllm_last_error(), "no chat template"));
    free((void *)nodir);
}

int main(void) {
    /* The instant jinja_reference.py rendered at (ctest sets it too; this
       keeps a direct run of the binary right on any day). */
    setenv("SOURCE_DATE_EPOCH", MLLM_TEST_SOURCE_DATE_EPOCH, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_templates),
        cmocka_unit_test(test_snippets),
        cmocka_unit_test(test_gguf_template),
        cmocka_unit_test(test_hf_folder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
