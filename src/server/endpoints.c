/* The small endpoints: /health, /v1/models, /metrics, /tokenize, /detokenize. */
#include <string.h>
#include "core/alloc.h"
#include "server/internal.h"
#include "server/utf8.h"

enum MHD_Result srv_ep_health(mllm_server *S, srv_req *r) {
    srv_metrics_gauges g;
    srv_sched_gauges(S->sched, &g);
    bool draining = atomic_load(&S->draining);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", draining ? "shutting_down" : "ok");
    cJSON_AddNumberToObject(o, "slots_total", g.slots_total);
    cJSON_AddNumberToObject(o, "slots_idle", g.slots_total - g.slots_busy);
    cJSON_AddNumberToObject(o, "queue_length", g.queue_len);
    return srv_reply_json(S, r, draining ? 503 : 200, o);
}

static cJSON *model_object(mllm_server *S) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", S->model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)S->created);
    cJSON_AddStringToObject(m, "owned_by", "mllm");
    cJSON_AddNumberToObject(m, "context_length", S->sched ? srv_sched_n_ctx(S->sched) : mllm_model_n_ctx_train(S->model));
    return m;
}

enum MHD_Result srv_ep_models(mllm_server *S, srv_req *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data");
    cJSON_AddItemToArray(data, model_object(S));
    return srv_reply_json(S, r, 200, o);
}

enum MHD_Result srv_ep_model(mllm_server *S, srv_req *r) {
    const char *id = r->url + strlen("/v1/models/");
    if (strcmp(id, S->model_id))
        return srv_reply_error(S, r, 404, "model_not_found", "the model '%.100s' does not exist; this server has '%s'",
                               id, S->model_id);
    return srv_reply_json(S, r, 200, model_object(S));
}

enum MHD_Result srv_ep_metrics(mllm_server *S, srv_req *r) {
    srv_metrics_gauges g;
    srv_server_gauges(S, &g);
    size_t len = 0;
    char *txt = srv_metrics_render(&S->metrics, &g, &len);
    if (!txt) return srv_reply_error(S, r, 500, NULL, "out of memory");
    enum MHD_Result ret = srv_reply(S, r, 200, "text/plain; version=0.0.4; charset=utf-8", txt, len);
    mllm_free(txt);
    return ret;
}

/* A bool field that may be absent; -1 with e filled on a wrong type. */
static int opt_bool(const cJSON *root, const char *name, bool dflt, bool *out, srv_err *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    *out = dflt;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return srv_fail(e, 400, NULL, name, "'%s' must be a boolean", name);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* The bytes of a token as a JSON string, or as an array of byte values
   when they are not valid UTF-8 by themselves (part of a character). */
static cJSON *piece_json(const char *p, size_t n) {
    if (srv_utf8_valid(p, n)) {
        char *z = mllm_strndup(p, n);
        cJSON *s = z ? cJSON_CreateString(z) : NULL;
        mllm_free(z);
        return s;
    }
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((unsigned char)p[i]));
    return a;
}

enum MHD_Result srv_ep_tokenize(mllm_server *S, srv_req *r) {
    srv_err e = {0};
    cJSON *root = srv_parse_body(r, &e);
    if (!root) return srv_reply_err(S, r, &e);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "content");
    bool add_special = false, with_pieces = false;
    int32_t *ids = NULL;
    size_t n = 0;
    if (!cJSON_IsString(c)) srv_fail(&e, 400, NULL, "content", "'content' must be a string");
    else if (!srv_utf8_valid(c->valuestring, strlen(c->valuestring)))
        srv_fail(&e, 400, NULL, "content", "'content' is not valid UTF-8");
    else if (opt_bool(root, "add_special", false, &add_special, &e) == 0 &&
             opt_bool(root, "with_pieces", false, &with_pieces, &e) == 0) {
        size_t len = strlen(c->valuestring);
        mllm_status st = mllm_tokenize(S->model, c->valuestring, len, add_special, NULL, 0, &n);
        if (st == MLLM_OK || st == MLLM_ERR_BUFFER_TOO_SMALL) {
            ids = mllm_malloc((n ? n : 1) * sizeof *ids);
            st = ids ? mllm_tokenize(S->model, c->valuestring, len, add_special, ids, n, &n) : MLLM_ERR_NOMEM;
        }
        if (st != MLLM_OK) srv_fail(&e, 500, NULL, NULL, "tokenize failed: %s", mllm_last_error());
        else e.status = 0;
    }
    cJSON_Delete(root);
    if (e.status) { mllm_free(ids); return srv_reply_err(S, r, &e); }
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "tokens");
    for (size_t i = 0; arr && i < n; i++) {
        if (!with_pieces) { cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i])); continue; }
        char buf[512];
        size_t pn = 0;
        if (mllm_token_to_piece(S->model, ids[i], buf, sizeof buf, &pn) != MLLM_OK) pn = 0;
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "id", ids[i]);
        cJSON_AddItemToObject(t, "piece", piece_json(buf, pn));
        cJSON_AddItemToArray(arr, t);
    }
    mllm_free(ids);
    return srv_reply_json(S, r, 200, o);
}

enum MHD_Result srv_ep_detokenize(mllm_server *S, srv_req *r) {
    srv_err e = {0};
    cJSON *root = srv_parse_body(r, &e);
    if (!root) return srv_reply_err(S, r, &e);
    const cJSON *toks = cJSON_GetObjectItemCaseSensitive(root, "tokens"), *t;
    int32_t n_vocab = mllm_model_n_vocab(S->model);
    int32_t *ids = NULL;
    size_t n = 0;
    bool skip = false;
    if (!cJSON_IsArray(toks)) srv_fail(&e, 400, NULL, "tokens", "'tokens' must be an array of token ids");
    else if (cJSON_GetArraySize(toks) > SRV_MAX_TOKENIZE_IDS)
        srv_fail(&e, 400, NULL, "tokens", "at most %d tokens", SRV_MAX_TOKENIZE_IDS);
    else if (opt_bool(root, "skip_special", false, &skip, &e) == 0 &&
             !(ids = mllm_malloc(((size_t)cJSON_GetArraySize(toks) + 1) * sizeof *ids)))
        srv_fail(&e, 500, NULL, NULL, "out of memory");
    const cJSON *list = e.status ? NULL : toks;
    cJSON_ArrayForEach(t, list) {
        double d = cJSON_IsNumber(t) ? t->valuedouble : -1;
        if (!cJSON_IsNumber(t) || d < 0 || d >= n_vocab || d != (double)(int32_t)d) { /* range before the cast */
            srv_fail(&e, 400, NULL, "tokens", "every token must be an integer id in [0, %d)", n_vocab);
            break;
        }
        ids[n++] = (int32_t)d;
    }
    cJSON_Delete(root);
    char *text = NULL, *clean = NULL;
    size_t len = 0;
    if (!e.status) {
        mllm_status st = mllm_detokenize(S->model, ids, n, skip, NULL, 0, &len);
        if (st == MLLM_OK || st == MLLM_ERR_BUFFER_TOO_SMALL) {
            text = mllm_malloc(len + 1);
            st = text ? mllm_detokenize(S->model, ids, n, skip, text, len + 1, &len) : MLLM_ERR_NOMEM;
        }
        if (st != MLLM_OK) srv_fail(&e, 500, NULL, NULL, "detokenize failed: %s", mllm_last_error());
        else if (!(clean = srv_utf8_sanitize(text, len))) srv_fail(&e, 500, NULL, NULL, "out of memory");
    }
    mllm_free(ids);
    mllm_free(text);
    if (e.status) return srv_reply_err(S, r, &e);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "content", clean);
    mllm_free(clean);
    return srv_reply_json(S, r, 200, o);
}
