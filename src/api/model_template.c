/* The model's chat template, compiled once at load: an override (a
   built-in name or a file), the file's own, or its registry row's
   built-in. */
#include <stdio.h>
#include <string.h>
#include "api/internal.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/file_open.h"
#include "template/template.h"

static char *read_small_file(const char *path) {
    FILE *f = mllm_file_fopen(path);
    if (!f) return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && n < (1L << 24) && fseek(f, 0, SEEK_SET) == 0 && (buf = mllm_malloc((size_t)n + 1))) {
            if (fread(buf, 1, (size_t)n, f) != (size_t)n) { mllm_free(buf); buf = NULL; }
            else buf[n] = 0;
        }
    }
    fclose(f);
    return buf;
}

void mllm_model_init_template(mllm_model *m, const char *override) {
    const char *src = NULL, *name = "chat template";
    char *owned = NULL;
    if (override) {
        src = mllm_template_builtin(override);
        name = override;
        if (!src) src = owned = read_small_file(override);
        if (!src) {
            char msg[512];
            snprintf(msg, sizeof msg, "chat template '%s' is neither a built-in (%s) nor a readable file", override,
                     mllm_template_builtin_names());
            m->tmpl_error = mllm_strndup(msg, strlen(msg));
            return;
        }
    } else {
        src = mllm_tokenizer_chat_template(m->tok);
        /* A file without one gets its family's prompt format, if it has one. */
        const mllm_arch *row = m->dec.cfg.row;
        if (!src && row && row->chat_template) {
            src = mllm_template_builtin(row->chat_template);
            name = row->chat_template;
        }
        if (!src) {
            const char *msg = "the model has no chat template (use --chat-template NAME|FILE)";
            m->tmpl_error = mllm_strndup(msg, strlen(msg));
            return;
        }
    }
    if (mllm_template_compile(src, strlen(src), name, &m->tmpl) != MLLM_OK) {
        const char *e = mllm_last_error();
        m->tmpl_error = mllm_strndup(e, strlen(e));
        m->tmpl = NULL;
    }
    mllm_free(owned);
}
