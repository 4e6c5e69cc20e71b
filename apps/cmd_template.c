/* mllm template: renders a chat template with a JSON context and prints
   exactly the rendered string (nothing added) to stdout. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"
#include "core/alloc.h"
#include "template/template.h"

static void tpl_usage(FILE *f) {
    fprintf(f,
            "usage: mllm template (-m MODEL | --chat-template NAME|FILE) --context CTX.json\n"
            "\n"
            "Renders the chat template and prints exactly the result to stdout.\n"
            "  -m MODEL               a GGUF file or Hugging Face folder: its own template,\n"
            "                         bos_token and eos_token\n"
            "  --chat-template X      a template file (.jinja, or a tokenizer_config.json),\n"
            "                         or a built-in name: %s;\n"
            "                         with -m it replaces the model's template\n"
            "  --context CTX.json     a JSON object whose keys are the template's variables\n"
            "                         (messages, add_generation_prompt, tools, enable_thinking,\n"
            "                         bos_token, eos_token, ...); '-' reads stdin\n"
            "\n"
            "Environment:\n"
            "  SOURCE_DATE_EPOCH      strftime_now() (the date Llama 3.x templates print)\n"
            "                         renders this instant, seconds since 1970-01-01 UTC,\n"
            "                         in UTC, instead of the clock in local time; e.g.\n"
            "                         SOURCE_DATE_EPOCH=1893456000 prints '01 Jan 2030'\n",
            mllm_template_builtin_names());
}

static char *read_all(FILE *f, size_t *len) {
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
        if (cap - n < 4096) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); return NULL; }
            buf = nb;
            cap *= 2;
        }
    }
    if (buf) buf[n] = 0;
    *len = n;
    return buf;
}

static int fail(const char *what) {
    fprintf(stderr, "mllm template: %s: %s\n", what, mllm_last_error());
    return 1;
}

int cmd_template(int argc, char **argv) {
    const char *model = NULL, *tmpl = NULL, *ctx_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { tpl_usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { if (!(model = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--chat-template")) { if (!(tmpl = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--context")) { if (!(ctx_path = cli_value(argc, argv, &i))) return 2; }
        else { fprintf(stderr, "mllm template: unknown option '%s'\n", a); return 2; }
    }
    if ((!model && !tmpl) || !ctx_path) { tpl_usage(stderr); return 2; }

    mllm_template_model mt = {0}, over = {0};
    if (model && mllm_template_model_load(model, &mt) != MLLM_OK && !tmpl) return fail("cannot read the model's template");
    const char *src = mt.source, *label = model;
    if (tmpl) {
        struct stat sb;
        if (stat(tmpl, &sb) == 0) {
            if (mllm_template_model_load(tmpl, &over) != MLLM_OK) {
                mllm_template_model_free(&mt);
                return fail("cannot read the template");
            }
            src = over.source;
        } else if (!(src = mllm_template_builtin(tmpl))) {
            fprintf(stderr, "mllm template: '%s' is neither a file nor a built-in template (%s)\n", tmpl,
                    mllm_template_builtin_names());
            mllm_template_model_free(&mt);
            return 2;
        }
        label = tmpl;
    }

    size_t ctx_len = 0;
    FILE *cf = strcmp(ctx_path, "-") ? fopen(ctx_path, "rb") : stdin;
    char *ctx = cf ? read_all(cf, &ctx_len) : NULL;
    if (cf && cf != stdin) fclose(cf);
    int rc = 1;
    mllm_template *t = NULL;
    char *out = NULL, *defaults = NULL;
    size_t out_len = 0;
    if (!ctx) fprintf(stderr, "mllm template: cannot read %s\n", ctx_path);
    else if (mllm_template_compile(src, strlen(src), label, &t) != MLLM_OK) rc = fail("cannot compile the template");
    else if ((model || over.source) && !(defaults = mllm_template_model_defaults(model ? &mt : &over)))
        fprintf(stderr, "mllm template: out of memory\n");
    else if (mllm_template_render_json(t, ctx, ctx_len, defaults, &out, &out_len) != MLLM_OK) rc = fail("cannot render");
    else {
        rc = fwrite(out, 1, out_len, stdout) == out_len && fflush(stdout) == 0 ? 0 : 1;
        if (rc) fprintf(stderr, "mllm template: write error\n");
    }
    mllm_free(out);
    mllm_free(defaults);
    mllm_template_free(t);
    free(ctx);
    mllm_template_model_free(&mt);
    mllm_template_model_free(&over);
    return rc;
}
