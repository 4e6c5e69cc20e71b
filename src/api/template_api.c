/* mllm_chat_template_render: a chat template rendered from files alone
   (`mllm template`): a model's template and tokens are read without its
   weights, so a tokenizer folder is enough. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "core/alloc.h"
#include "core/error.h"
#include "template/template.h"

void mllm_chat_template_default_params(mllm_chat_template_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
}

const char *mllm_chat_template_builtin(const char *name) { return name ? mllm_template_builtin(name) : NULL; }

const char *mllm_chat_template_builtin_names(void) { return mllm_template_builtin_names(); }

/* The last error again, prefixed by what failed. */
static mllm_status fail(mllm_status st, const char *what) {
    char why[1024]; /* copied: mllm_err rewrites the buffer it lives in */
    snprintf(why, sizeof why, "%s", mllm_last_error());
    return mllm_err(st, "%s: %s", what, why);
}

/* The template's source: chat_template (a file, read into *over, else a
   built-in name), else the model's. */
static mllm_status pick_source(const mllm_chat_template_params *p, const mllm_template_model *mt,
                               mllm_template_model *over, const char **src) {
    *src = mt->source;
    if (!p->chat_template) return MLLM_OK;
    struct stat sb;
    if (stat(p->chat_template, &sb) == 0) {
        mllm_status st = mllm_template_model_load(p->chat_template, over);
        if (st != MLLM_OK) return fail(st, "cannot read the template");
        *src = over->source;
    } else if (!(*src = mllm_template_builtin(p->chat_template))) {
        return mllm_err(MLLM_ERR_INVALID_ARG, "'%s' is neither a file nor a built-in template (%s)", p->chat_template,
                        mllm_template_builtin_names());
    }
    return MLLM_OK;
}

mllm_status mllm_chat_template_render(const mllm_chat_template_params *p, const char *context, size_t len,
                                      mllm_text_sink sink, void *user) {
    if (!p || !context || !sink) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_chat_template_render: NULL argument");
    if (p->struct_size != sizeof *p)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_chat_template_render: struct_size %u is not %zu (fill the params "
                        "with mllm_chat_template_default_params)", p->struct_size, sizeof *p);
    if (!p->model && !p->chat_template)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_chat_template_render: give a model or a chat template");
    mllm_template_model mt = {0}, over = {0};
    mllm_status st = MLLM_OK;
    /* With a chat template given, a model that has none of its own still
       lends its tokens. */
    if (p->model && (st = mllm_template_model_load(p->model, &mt)) != MLLM_OK) {
        if (p->chat_template) st = MLLM_OK;
        else st = fail(st, "cannot read the model's template");
    }
    const char *src = NULL;
    if (st == MLLM_OK) st = pick_source(p, &mt, &over, &src);
    const char *label = p->chat_template ? p->chat_template : p->model;
    mllm_template *t = NULL;
    char *out = NULL, *defaults = NULL;
    size_t out_len = 0;
    if (st == MLLM_OK && (st = mllm_template_compile(src, strlen(src), label, &t)) != MLLM_OK)
        st = fail(st, "cannot compile the template");
    /* The tokens come with the template's source: the model's, or a
       tokenizer_config.json given as the template. */
    if (st == MLLM_OK && (p->model || over.source) && !(defaults = mllm_template_model_defaults(p->model ? &mt : &over)))
        st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
    if (st == MLLM_OK && (st = mllm_template_render_json(t, context, len, defaults, &out, &out_len)) != MLLM_OK)
        st = fail(st, "cannot render");
    if (st == MLLM_OK) sink(user, out, out_len);
    mllm_free(out);
    mllm_free(defaults);
    mllm_template_free(t);
    mllm_template_model_free(&mt);
    mllm_template_model_free(&over);
    return st;
}
