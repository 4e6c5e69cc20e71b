/* OpenAI response bodies: chat.completion / text_completion objects, their
   streamed chunks (Server-Sent Events) and usage counts. */
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "server/oai.h"
#include "server/utf8.h"

static cJSON *usage_json(const srv_job *j) {
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)j->n_ids);
    cJSON_AddNumberToObject(u, "completion_tokens", j->n_gen);
    cJSON_AddNumberToObject(u, "total_tokens", (double)j->n_ids + j->n_gen);
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

static const char *finish_reason(const srv_job *j) {
    return j->finish == SRV_FINISH_LENGTH ? "length" : "stop";
}

cJSON *srv_oai_result(mllm_server *S, const srv_oai_req *q, const srv_job *j) {
    cJSON *o = envelope(S, q, false);
    cJSON *choices = cJSON_AddArrayToObject(o, "choices"), *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", 0);
    if (q->chat) {
        cJSON *m = cJSON_AddObjectToObject(c, "message");
        cJSON_AddStringToObject(m, "role", "assistant");
        add_text(m, "content", j->text, j->len);
    } else {
        add_text(c, "text", j->text, j->len);
    }
    cJSON_AddNullToObject(c, "logprobs");
    cJSON_AddStringToObject(c, "finish_reason", finish_reason(j));
    cJSON_AddItemToArray(choices, c);
    cJSON_AddItemToObject(o, "usage", usage_json(j));
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

char *srv_oai_chunk(mllm_server *S, const srv_oai_req *q, const char *text, size_t n, bool role, const char *finish) {
    cJSON *o = envelope(S, q, true);
    cJSON *choices = cJSON_AddArrayToObject(o, "choices"), *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", 0);
    if (q->chat) {
        cJSON *d = cJSON_AddObjectToObject(c, "delta");
        if (role) cJSON_AddStringToObject(d, "role", "assistant");
        if (role || n) add_text(d, "content", text, n);
    } else {
        add_text(c, "text", text, n);
    }
    cJSON_AddNullToObject(c, "logprobs");
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
