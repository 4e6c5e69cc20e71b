/* Chat: the model's template renders a conversation; the session is synced
   to its tokens so each turn computes only what is new. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include "tokenizer/defuse.h"
#include "api/internal.h"
#include "core/alloc.h"
#include "core/error.h"
#include "template/template.h"

/* The template defaults: the model's special-token texts, and
   add_generation_prompt true unless the conversation sets it. */
static char *defaults_json(const mllm_model *m) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddTrueToObject(o, "add_generation_prompt");
    int32_t ids[2] = {mllm_tokenizer_bos(m->tok), mllm_tokenizer_eos(m->tok)};
    const char *keys[2] = {"bos_token", "eos_token"};
    for (int i = 0; i < 2; i++) {
        size_t len = 0;
        const char *t = ids[i] >= 0 ? mllm_tokenizer_token_text(m->tok, ids[i], &len) : NULL;
        char *z = mllm_strndup(t ? t : "", t ? len : 0);
        if (z) cJSON_AddStringToObject(o, keys[i], z);
        mllm_free(z);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* conversation (a JSON array of messages or an object of template
   variables) -> the context object as JSON text, without parsing it here:
   the template's own JSON reader does, carrying string lengths (a
   "\u0000" in a message stays a NUL) and refusing what JSON forbids (raw
   control characters in strings). */
static mllm_status context_of(const char *conversation, char **out) {
    const char *p = conversation;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p == '{') {
        *out = mllm_strndup(p, strlen(p));
    } else if (*p == '[') {
        static const char head[] = "{\"messages\":";
        size_t n = strlen(p);
        *out = mllm_malloc(sizeof head - 1 + n + 2);
        if (*out) {
            memcpy(*out, head, sizeof head - 1);
            memcpy(*out + sizeof head - 1, p, n);
            memcpy(*out + sizeof head - 1 + n, "}", 2);
        }
    } else {
        return mllm_err(MLLM_ERR_INVALID_ARG, "conversation must be a JSON array of messages or a JSON object");
    }
    return *out ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "out of memory");
}

/* The rendered conversation (*text, *len; mllm_free) and the spans of it
   that came from the conversation and look like control tokens (spans may
   be NULL; mllm_free). */
static mllm_status render(const mllm_model *m, const char *conversation, char **text, size_t *len,
                          mllm_text_span **spans, size_t *n_spans) {
    if (!m->tmpl) return mllm_err(MLLM_ERR_UNSUPPORTED, "%s", m->tmpl_error ? m->tmpl_error : "no chat template");
    char *ctx = NULL;
    mllm_status st = context_of(conversation, &ctx);
    if (st != MLLM_OK) return st;
    char *defs = defaults_json(m);
    char *marked = NULL;
    size_t marked_len = 0;
    /* Marked through the rewrite hook: the conversation's own text can be
       told from the template's markup after rendering (tokenizer/defuse.c). */
    mllm_defuse d;
    mllm_defuse_init(&d, m->tok);
    st = mllm_template_render_json_rewrite(m->tmpl, ctx, strlen(ctx), defs, mllm_defuse_mark, &d, &marked,
                                           &marked_len);
    mllm_free(ctx);
    cJSON_free(defs);
    if (st != MLLM_OK) return st;
    st = mllm_defuse_restore(m->tok, marked, marked_len, text, len, spans, n_spans);
    mllm_free(marked);
    return st;
}

MLLM_API mllm_status mllm_chat_render(const mllm_model *m, const char *conversation, char *buf, size_t cap,
                                      size_t *needed) {
    if (!m || !conversation) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_chat_render: NULL argument");
    char *text = NULL;
    size_t len = 0;
    mllm_status st = render(m, conversation, &text, &len, NULL, NULL);
    if (st != MLLM_OK) return st;
    if (needed) *needed = len + 1;
    if (!buf || cap < len + 1) st = mllm_err(MLLM_ERR_BUFFER_TOO_SMALL, "need %zu bytes", len + 1);
    else memcpy(buf, text, len + 1);
    mllm_free(text);
    return st;
}

/* Renders and tokenizes: the template's markup becomes special tokens, the
   conversation's text never does. *ids (mllm_free) and *n. */
mllm_status mllm_chat_ids(const mllm_model *m, const char *conversation, int32_t **ids, size_t *n) {
    char *text = NULL;
    size_t len = 0, k = 0;
    mllm_text_span *spans = NULL;
    size_t n_spans = 0;
    *ids = NULL;
    *n = 0;
    mllm_status st = render(m, conversation, &text, &len, &spans, &n_spans);
    if (st != MLLM_OK) return st;
    /* Like apply_chat_template: the template writes BOS itself if it wants one. */
    st = mllm_tokenizer_encode_spans(m->tok, text, len, false, spans, n_spans, NULL, 0, &k);
    if (st == MLLM_OK || st == MLLM_ERR_BUFFER_TOO_SMALL) {
        *ids = mllm_malloc((k ? k : 1) * sizeof **ids);
        st = *ids ? mllm_tokenizer_encode_spans(m->tok, text, len, false, spans, n_spans, *ids, k, &k)
                  : mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    mllm_free(text);
    mllm_free(spans);
    if (st == MLLM_OK && k == 0) st = mllm_err(MLLM_ERR_INVALID_ARG, "the rendered conversation is empty");
    if (st != MLLM_OK) {
        mllm_free(*ids);
        *ids = NULL;
        return st;
    }
    *n = k;
    return MLLM_OK;
}

MLLM_API mllm_status mllm_chat_tokenize(const mllm_model *m, const char *conversation, int32_t *ids, size_t cap,
                                        size_t *n_ids) {
    if (n_ids) *n_ids = 0;
    if (!m || !conversation || !n_ids || (!ids && cap))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_chat_tokenize: NULL argument");
    int32_t *all = NULL;
    size_t n = 0;
    mllm_status st = mllm_chat_ids(m, conversation, &all, &n);
    if (st != MLLM_OK) return st;
    *n_ids = n;
    if (cap < n) st = mllm_err(MLLM_ERR_BUFFER_TOO_SMALL, "%zu token ids need room, %zu given", n, cap);
    else memcpy(ids, all, n * sizeof *all);
    mllm_free(all);
    return st;
}

MLLM_API mllm_status mllm_chat(mllm_session *s, const char *conversation, const mllm_sampling *sp, mllm_on_token cb,
                               void *user, size_t *n_reused) {
    if (!s || !conversation || !sp) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_chat: NULL argument");
    int32_t *ids = NULL;
    size_t n = 0;
    mllm_status st = mllm_chat_ids(s->m, conversation, &ids, &n);
    if (st == MLLM_OK) st = mllm_session_sync(s, ids, n, n_reused);
    mllm_free(ids);
    if (st == MLLM_OK) st = mllm_generate_ids(s, NULL, 0, sp, cb, user);
    return st;
}
