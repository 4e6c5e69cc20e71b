/* OpenAI response bodies: chat.completion / text_completion objects, their
   streamed chunks (Server-Sent Events) and usage counts. */
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "server/oai.h"
#include "server/utf8.h"

/* The prompt is counted once for all choices (it was evaluated once);
   the later choices' counts are read under their own lock. */
static cJSON *usage_json(const srv_job *j) {
    cJSON *u = cJSON_CreateObject();
    double gen = j->n_gen;
    for (srv_job *c = j->next; c; c = c->next) {
        pthread_mutex_lock(&c->mu);
        gen += c->n_gen;
        pthread_mutex_unlock(&c->mu);
    }
    const double prompt = (double)(j->n_prompt ? j->n_prompt : j->n_ids); /* images: their expanded tokens */
    cJSON_AddNumberToObject(u, "prompt_tokens", prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", gen);
    cJSON_AddNumberToObject(u, "total_tokens", prompt + gen);
    cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
    if (d) cJSON_AddNumberToObject(d, "cached_tokens", (double)j->n_reused);
    return u;
}

static cJSON *envelope(mllm_server *S, const srv_oai_req *q, bool chunk) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", q->id);
    cJSON_AddStringToObject(o, "object", q->chat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                                 : "text_completion");
    cJSON_AddNumberToObject(o, "created", (double)q->created);
    cJSON_AddStringToObject(o, "model", S->model_id);
    char fp[32];
    snprintf(fp, sizeof fp, "mllm-%s", mllm_version());
    cJSON_AddStringToObject(o, "system_fingerprint", fp);
    return o;
}

/* Adds text[0..n) as a string member; invalid UTF-8 becomes U+FFFD. */
static void add_text(cJSON *o, const char *name, const char *text, size_t n) {
    char *clean = srv_utf8_sanitize(text ? text : "", text ? n : 0);
    if (clean) cJSON_AddStringToObject(o, name, clean);
    mllm_free(clean);
}

/* A token's bytes, as text ("token") and as numbers ("bytes", what a
   client joins to rebuild characters split over tokens). */
static void add_token(mllm_server *S, cJSON *o, int32_t id, bool with_bytes) {
    char piece[512];
    size_t n = 0;
    if (mllm_token_to_piece(S->model, id, piece, sizeof piece, &n) != MLLM_OK) n = 0;
    add_text(o, "token", piece, n);
    if (!with_bytes) return;
    cJSON *b = cJSON_AddArrayToObject(o, "bytes");
    for (size_t i = 0; b && i < n; i++) cJSON_AddItemToArray(b, cJSON_CreateNumber((unsigned char)piece[i]));
}

/* chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]} */
static cJSON *chat_logprobs(mllm_server *S, const srv_job *j, int from, int to) {
    cJSON *o = cJSON_CreateObject(), *content = cJSON_AddArrayToObject(o, "content");
    for (int k = from; k < to; k++) {
        const srv_logprob *e = &j->lp[k];
        cJSON *t = cJSON_CreateObject();
        add_token(S, t, e->id, true);
        cJSON_AddNumberToObject(t, "logprob", e->logprob);
        cJSON *top = cJSON_AddArrayToObject(t, "top_logprobs");
        for (int i = 0; i < e->n_top; i++) {
            cJSON *a = cJSON_CreateObject();
            add_token(S, a, e->top_id[i], true);
            cJSON_AddNumberToObject(a, "logprob", e->top_lp[i]);
            cJSON_AddItemToArray(top, a);
        }
        cJSON_AddItemToArray(content, t);
    }
    cJSON_AddNullToObject(o, "refusal");
    return o;
}

/* The token's text (invalid UTF-8 as U+FFFD) as a new cJSON string. */
static cJSON *token_string(mllm_server *S, int32_t id) {
    cJSON *t = cJSON_CreateObject();
    add_token(S, t, id, false);
    cJSON *str = cJSON_DetachItemFromObjectCaseSensitive(t, "token");
    cJSON_Delete(t);
    return str ? str : cJSON_CreateString("");
}

/* completions (legacy): {"tokens", "token_logprobs", "top_logprobs":
   [{token: logprob}] (the sampled token always among them, as OpenAI),
   "text_offset"} with offsets into the generated text. */
static cJSON *legacy_logprobs(mllm_server *S, const srv_job *j, int from, int to) {
    cJSON *o = cJSON_CreateObject(), *toks = cJSON_AddArrayToObject(o, "tokens");
    cJSON *lps = cJSON_AddArrayToObject(o, "token_logprobs"), *tops = cJSON_AddArrayToObject(o, "top_logprobs");
    cJSON *offs = cJSON_AddArrayToObject(o, "text_offset");
    for (int k = from; k < to; k++) {
        const srv_logprob *e = &j->lp[k];
        cJSON *top = cJSON_CreateObject();
        cJSON_AddItemToArray(toks, token_string(S, e->id));
        cJSON_AddItemToArray(lps, cJSON_CreateNumber(e->logprob));
        for (int i = 0; i <= e->n_top; i++) {
            cJSON *name = token_string(S, i < e->n_top ? e->top_id[i] : e->id);
            if (!cJSON_GetObjectItemCaseSensitive(top, name->valuestring)) /* distinct ids may share a text */
                cJSON_AddNumberToObject(top, name->valuestring, i < e->n_top ? e->top_lp[i] : e->logprob);
            cJSON_Delete(name);
        }
        cJSON_AddItemToArray(tops, top);
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)e->start));
    }
    return o;
}

static void add_logprobs(mllm_server *S, const srv_oai_req *q, cJSON *c, const srv_job *j, int from, int to) {
    if (q->logprobs < 0 || !j || from >= to) cJSON_AddNullToObject(c, "logprobs");
    else cJSON_AddItemToObject(c, "logprobs", q->chat ? chat_logprobs(S, j, from, to) : legacy_logprobs(S, j, from, to));
}

static const char *finish_reason(const srv_job *j) {
    return j->finish == SRV_FINISH_LENGTH ? "length" : "stop";
}

void srv_oai_call_id(const srv_oai_req *q, int c, int i, char *out, size_t cap) {
    snprintf(out, cap, "call_%lx_%d_%d", q->seq, c, i);
}

/* {"id", "type": "function", "function": {"name", "arguments"}}; name
   NULL: a streamed delta of the arguments only ({"index", "function":
   {"arguments"}}). */
static cJSON *tool_call_json(const srv_oai_req *q, int c, int i, const char *name, const char *args, size_t n) {
    cJSON *t = cJSON_CreateObject(), *f;
    cJSON_AddNumberToObject(t, "index", i);
    if (name) {
        char id[64];
        srv_oai_call_id(q, c, i, id, sizeof id);
        cJSON_AddStringToObject(t, "id", id);
        cJSON_AddStringToObject(t, "type", "function");
    }
    f = cJSON_AddObjectToObject(t, "function");
    if (name) cJSON_AddStringToObject(f, "name", name);
    add_text(f, "arguments", args, n);
    return t;
}

/* A chat message with tools offered: the text outside calls as content
   (null when there is none) and the complete calls as tool_calls. */
static bool tool_message(const srv_oai_req *q, cJSON *m, const srv_job *j) {
    srv_tc_result r;
    if (srv_tc_parse(q->tc_style, j->text, j->len, true, q->max_calls, &r) != 0) {
        add_text(m, "content", j->text, j->len);
        return false;
    }
    if (r.content_len || r.n_calls == 0) add_text(m, "content", r.content, r.content_len);
    else cJSON_AddNullToObject(m, "content");
    cJSON *calls = r.n_calls ? cJSON_AddArrayToObject(m, "tool_calls") : NULL;
    for (int i = 0; calls && i < r.n_calls; i++) {
        cJSON *t = tool_call_json(q, j->index, i, r.calls[i].name, r.calls[i].args, r.calls[i].args_len);
        cJSON_DeleteItemFromObjectCaseSensitive(t, "index"); /* only deltas carry one */
        cJSON_AddItemToArray(calls, t);
    }
    bool any = r.n_calls > 0;
    srv_tc_result_free(&r);
    return any;
}

cJSON *srv_oai_result(mllm_server *S, const srv_oai_req *q, const srv_job *j0) {
    cJSON *o = envelope(S, q, false);
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    /* The caller holds j0's lock; the others are done and read under theirs. */
    for (srv_job *j = (srv_job *)j0; j; j = j->next) {
        if (j != j0) pthread_mutex_lock(&j->mu);
        cJSON *c = cJSON_CreateObject();
        cJSON_AddNumberToObject(c, "index", j->index);
        bool calls = false;
        if (q->chat) {
            cJSON *m = cJSON_AddObjectToObject(c, "message");
            cJSON_AddStringToObject(m, "role", "assistant");
            if (q->tc_style) calls = tool_message(q, m, j);
            else add_text(m, "content", j->text, j->len);
        } else {
            add_text(c, "text", j->text, j->len);
        }
        add_logprobs(S, q, c, j, 0, srv_job_logprobs_ready_locked(j));
        cJSON_AddStringToObject(c, "finish_reason", calls && j->finish == SRV_FINISH_STOP ? "tool_calls" : finish_reason(j));
        cJSON_AddItemToArray(choices, c);
        if (j != j0) pthread_mutex_unlock(&j->mu);
    }
    cJSON_AddItemToObject(o, "usage", usage_json(j0));
    return o;
}

/* "data: <json>\n\n" into a new buffer; deletes o. */
static char *sse_event(cJSON *o) {
    char *txt = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!txt) return NULL;
    size_t n = strlen(txt);
    char *ev = mllm_malloc(n + 9);
    if (ev) {
        memcpy(ev, "data: ", 6);
        memcpy(ev + 6, txt, n);
        memcpy(ev + 6 + n, "\n\n", 3);
    }
    cJSON_free(txt);
    return ev;
}

char *srv_oai_chunk(mllm_server *S, const srv_oai_req *q, const char *text, size_t n, bool role, const char *finish,
                    const srv_job *j, int lp_from, int lp_to, int index, const srv_oai_tool_delta *tool) {
    cJSON *o = envelope(S, q, true);
    cJSON *choices = cJSON_AddArrayToObject(o, "choices"), *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", index);
    if (q->chat) {
        cJSON *d = cJSON_AddObjectToObject(c, "delta");
        if (role) cJSON_AddStringToObject(d, "role", "assistant");
        if (role || n) add_text(d, "content", text, n);
        if (tool) {
            cJSON *calls = cJSON_AddArrayToObject(d, "tool_calls");
            if (calls)
                cJSON_AddItemToArray(calls, tool_call_json(q, index, tool->call, tool->name, tool->args, tool->args_len));
        }
    } else {
        add_text(c, "text", text, n);
    }
    add_logprobs(S, q, c, j, lp_from, lp_to);
    if (finish) cJSON_AddStringToObject(c, "finish_reason", finish);
    else cJSON_AddNullToObject(c, "finish_reason");
    cJSON_AddItemToArray(choices, c);
    if (q->include_usage) cJSON_AddNullToObject(o, "usage");
    return sse_event(o);
}

char *srv_oai_usage_chunk(mllm_server *S, const srv_oai_req *q, const srv_job *j) {
    cJSON *o = envelope(S, q, true);
    cJSON_AddArrayToObject(o, "choices");
    cJSON_AddItemToObject(o, "usage", usage_json(j));
    return sse_event(o);
}

char *srv_oai_error_event(unsigned status, const char *msg) {
    cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
    add_text(e, "message", msg, strlen(msg));
    cJSON_AddStringToObject(e, "type", status >= 500 ? "server_error" : "invalid_request_error");
    cJSON_AddNullToObject(e, "param");
    cJSON_AddNumberToObject(e, "code", status);
    return sse_event(o);
}
