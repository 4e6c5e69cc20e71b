/* mllm template: renders a chat template with a JSON context and prints
   exactly the rendered string (nothing added) to stdout. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"

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
            mllm_chat_template_builtin_names());
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

/* The rendered text, exactly; *rc becomes 1 on a write error. */
static void write_out(void *user, const char *text, size_t len) {
    int *rc = user;
    *rc = fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : 1;
    if (*rc) fprintf(stderr, "mllm template: write error\n");
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

    struct stat sb;
    if (tmpl && stat(tmpl, &sb) != 0 && !mllm_chat_template_builtin(tmpl)) {
        fprintf(stderr, "mllm template: '%s' is neither a file nor a built-in template (%s)\n", tmpl,
                mllm_chat_template_builtin_names());
        return 2;
    }
    size_t ctx_len = 0;
    FILE *cf = strcmp(ctx_path, "-") ? fopen(ctx_path, "rb") : stdin;
    char *ctx = cf ? read_all(cf, &ctx_len) : NULL;
    if (cf && cf != stdin) fclose(cf);
    if (!ctx) {
        fprintf(stderr, "mllm template: cannot read %s\n", ctx_path);
        return 1;
    }
    mllm_chat_template_params p;
    mllm_chat_template_default_params(&p);
    p.model = model;
    p.chat_template = tmpl;
    int rc = 1;
    if (mllm_chat_template_render(&p, ctx, ctx_len, write_out, &rc) != MLLM_OK)
        fprintf(stderr, "mllm template: %s\n", mllm_last_error());
    free(ctx);
    return rc;
}
