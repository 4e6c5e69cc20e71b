/* Parses and validates OpenAI completion / chat completion requests. Every
   field is type- and range-checked; unsupported options with non-default
   values are refused rather than silently ignored. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/alloc.h"
#include "core/clock.h"
#include "server/image_parts.h"
#include "server/oai.h"
#include "server/utf8.h"

static const cJSON *field(const cJSON *root, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    return v && !cJSON_IsNull(v) ? v : NULL; /* null means "not given", as in OpenAI's API */
}

static int get_num(const cJSON *root, const char *name, double lo, double hi, double *out, srv_err *e) {
    const cJSON *v = field(root, name);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return srv_fail(e, 400, NULL, name, "'%s' must be a number", name);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return srv_fail(e, 400, NULL, name, "'%s' must be in [%g, %g], got %g", name, lo, hi, v->valuedouble);
    *out = v->valuedouble;
    return 0;
}

static int get_int(const cJSON *root, const char *name, double lo, double hi, double *out, bool *given, srv_err *e) {
    const cJSON *v = field(root, name);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
        return srv_fail(e, 400, NULL, name, "'%s' must be an integer", name);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return srv_fail(e, 400, NULL, name, "'%s' must be in [%.0f, %.0f], got %.0f", name, lo, hi, v->valuedouble);
    *out = v->valuedouble;
    if (given) *given = true;
    return 0;
}

static int get_bool(const cJSON *root, const char *name, bool *out, srv_err *e) {
    const cJSON *v = field(root, name);
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return srv_fail(e, 400, NULL, name, "'%s' must be a boolean", name);
    *out = cJSON_IsTrue(v);
    return 0;
}

static int check_text(const char *s, const char *param, srv_err *e) {
    if (!srv_utf8_valid(s, strlen(s))) return srv_fail(e, 400, NULL, param, "'%s' is not valid UTF-8", param);
    return 0;
}

static int unsupported(srv_err *e, const char *name, const char *why) {
    return srv_fail(e, 400, "unsupported_parameter", name, "'%s' is not supported%s", name, why);
}

/* Every OpenAI option we do not implement is refused by name, never
   silently ignored, unless it is given its neutral value (null,
   best_of = 1, a text response format): a client that relies on one must learn
   that it did not happen. Fields that change nothing about the answer
   (user, store, metadata, service_tier) are accepted. */
static int refuse_unsupported(const cJSON *root, bool chat, srv_err *e) {
    static const char *const never[] = {"functions", "function_call", "reasoning_effort", "verbosity", "audio",
                                        "prediction", "web_search_options", "suffix"};
    const cJSON *v;
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        if (field(root, never[i])) return unsupported(e, never[i], "");
    if ((v = field(root, "best_of")) && !(cJSON_IsNumber(v) && v->valuedouble == 1))
        return unsupported(e, "best_of", ": only best_of = 1");
    if ((v = field(root, "echo")) && !cJSON_IsFalse(v)) return unsupported(e, "echo", "");
    if (!chat) /* tools belong to chat; the legacy endpoint takes a prompt */
        for (size_t i = 0; i < 3; i++) {
            static const char *const chat_only[] = {"tools", "tool_choice", "parallel_tool_calls"};
            if ((v = field(root, chat_only[i])) && !(i == 0 && cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0))
                return unsupported(e, chat_only[i], " on /v1/completions (use /v1/chat/completions)");
        }
    if ((v = field(root, "modalities")) &&
        !(cJSON_IsArray(v) && cJSON_GetArraySize(v) == 1 && cJSON_IsString(v->child) &&
          !strcmp(v->child->valuestring, "text")))
        return unsupported(e, "modalities", ": only [\"text\"]");
    if (!chat && field(root, "top_logprobs")) return unsupported(e, "top_logprobs", " on /v1/completions (use logprobs: N)");
    return 0;
}

/* chat: logprobs (bool) + top_logprobs 0..20; completions: logprobs 0..5. */
static int parse_logprobs(const cJSON *root, bool chat, srv_oai_req *q, srv_job *j, srv_err *e) {
    q->logprobs = -1;
    const cJSON *v = field(root, "logprobs");
    if (chat) {
        bool on = false;
        double top = 0;
        bool top_given = false;
        if (get_bool(root, "logprobs", &on, e) ||
            get_int(root, "top_logprobs", 0, MLLM_MAX_TOP_LOGPROBS, &top, &top_given, e))
            return -1;
        if (top_given && !on) return srv_fail(e, 400, NULL, "top_logprobs", "'top_logprobs' needs logprobs: true");
        if (on) q->logprobs = (int)top;
    } else if (v && !cJSON_IsFalse(v)) {
        double n = 0;
        if (get_int(root, "logprobs", 0, 5, &n, NULL, e)) return -1;
        q->logprobs = (int)n;
    }
    j->logprobs = q->logprobs;
    return 0;
}

/* logit_bias: {"token id": bias in [-100, 100]}, ids in the vocabulary. */
static int parse_logit_bias(mllm_server *S, const cJSON *root, srv_job *j, srv_err *e) {
    const cJSON *v = field(root, "logit_bias"), *b;
    if (!v) return 0;
    if (!cJSON_IsObject(v)) return srv_fail(e, 400, NULL, "logit_bias", "'logit_bias' must be an object");
    int n = cJSON_GetArraySize(v), n_vocab = mllm_model_n_vocab(S->model);
    if (n == 0) return 0;
    if (n > SRV_MAX_LOGIT_BIAS)
        return srv_fail(e, 400, NULL, "logit_bias", "at most %d logit_bias entries, got %d", SRV_MAX_LOGIT_BIAS, n);
    j->bias_ids = mllm_malloc((size_t)n * sizeof *j->bias_ids);
    j->bias = mllm_malloc((size_t)n * sizeof *j->bias);
    if (!j->bias_ids || !j->bias) return srv_fail(e, 500, NULL, NULL, "out of memory");
    int k = 0;
    cJSON_ArrayForEach(b, v) {
        char *end = NULL;
        long id = strtol(b->string, &end, 10);
        if (!b->string[0] || *end || b->string[0] == '+' || b->string[0] == ' ' || id < 0 || id >= n_vocab)
            return srv_fail(e, 400, NULL, "logit_bias", "logit_bias key '%.40s' is not a token id in [0, %d)",
                            b->string, n_vocab);
        if (!cJSON_IsNumber(b) || !isfinite(b->valuedouble) || b->valuedouble < -100 || b->valuedouble > 100)
            return srv_fail(e, 400, NULL, "logit_bias", "logit_bias of token %ld must be a number in [-100, 100]", id);
        j->bias_ids[k] = (int32_t)id;
        j->bias[k++] = (float)b->valuedouble;
    }
    j->sampling.logit_bias_ids = j->bias_ids;
    j->sampling.logit_bias = j->bias;
    j->sampling.n_logit_bias = k;
    return 0;
}

/* A compiled grammar for the job, or a 400 that says why it does not compile. */
static int set_grammar(srv_job *j, mllm_status st, mllm_grammar *g, const char *param, srv_err *e) {
    if (st == MLLM_ERR_NOMEM) return srv_fail(e, 500, NULL, NULL, "out of memory");
    if (st != MLLM_OK) return srv_fail(e, 400, NULL, param, "'%s': %s", param, mllm_last_error());
    j->grammar = g;
    j->sampling.grammar = g;
    return 0;
}

/* Constrained decoding: llama-server's "grammar" (GBNF), or OpenAI's
   response_format json_object / json_schema (compiled to GBNF). */
static int parse_grammar(const cJSON *root, srv_job *j, srv_err *e) {
    const cJSON *gr = field(root, "grammar"), *rf = field(root, "response_format"), *t;
    mllm_grammar *g = NULL;
    if (rf) {
        t = cJSON_IsObject(rf) ? field(rf, "type") : NULL;
        if (!cJSON_IsString(t))
            return srv_fail(e, 400, NULL, "response_format", "'response_format' must be an object with a string 'type'");
        if (!strcmp(t->valuestring, "text")) rf = NULL;
        else if (strcmp(t->valuestring, "json_object") && strcmp(t->valuestring, "json_schema"))
            return unsupported(e, "response_format", ": only the types text, json_object and json_schema");
    }
    if (gr && rf) return srv_fail(e, 400, NULL, "grammar", "give 'grammar' or 'response_format', not both");
    if (gr) {
        if (!cJSON_IsString(gr)) return srv_fail(e, 400, NULL, "grammar", "'grammar' must be a string (GBNF)");
        if (!gr->valuestring[0]) return 0; /* llama-server: "" means none */
        if (check_text(gr->valuestring, "grammar", e)) return -1;
        mllm_status st = mllm_grammar_new(gr->valuestring, NULL, &g);
        return set_grammar(j, st, g, "grammar", e);
    }
    if (!rf) return 0;
    if (!strcmp(field(rf, "type")->valuestring, "json_object")) {
        mllm_status st = mllm_grammar_from_json_schema("{\"type\":\"object\"}", &g);
        return set_grammar(j, st, g, "response_format", e);
    }
    const cJSON *js = field(rf, "json_schema");
    if (!cJSON_IsObject(js))
        return srv_fail(e, 400, NULL, "response_format.json_schema",
                        "'response_format.json_schema' must be an object {name, schema, strict}");
    const cJSON *name = field(js, "name"), *schema = field(js, "schema"), *strict = field(js, "strict");
    if (name && !cJSON_IsString(name))
        return srv_fail(e, 400, NULL, "response_format.json_schema.name", "'response_format.json_schema.name' must be a string");
    if (strict && !cJSON_IsBool(strict)) /* strict or not, the output always follows the schema */
        return srv_fail(e, 400, NULL, "response_format.json_schema.strict", "'response_format.json_schema.strict' must be a boolean");
    if (!schema || !(cJSON_IsObject(schema) || cJSON_IsBool(schema)))
        return srv_fail(e, 400, NULL, "response_format.json_schema.schema",
                        "'response_format.json_schema.schema' must be a JSON Schema (an object)");
    char *text = cJSON_PrintUnformatted(schema);
    if (!text) return srv_fail(e, 500, NULL, NULL, "out of memory");
    if (check_text(text, "response_format.json_schema.schema", e)) { cJSON_free(text); return -1; }
    mllm_status st = mllm_grammar_from_json_schema(text, &g);
    cJSON_free(text);
    return set_grammar(j, st, g, "response_format.json_schema.schema", e);
}

static int add_stop(srv_job *j, const char *s, srv_err *e) {
    size_t n = strlen(s);
    if (n == 0 || n > SRV_MAX_STOP_LEN)
        return srv_fail(e, 400, NULL, "stop", "each stop sequence must have 1 to %d bytes", SRV_MAX_STOP_LEN);
    if (check_text(s, "stop", e)) return -1;
    return srv_job_add_stop(j, s, n) ? 0 : srv_fail(e, 500, NULL, NULL, "out of memory");
}

static int parse_stop(const cJSON *root, srv_job *j, srv_err *e) {
    const cJSON *v = field(root, "stop"), *s;
    if (!v) return 0;
    if (cJSON_IsString(v)) return add_stop(j, v->valuestring, e);
    if (!cJSON_IsArray(v)) return srv_fail(e, 400, NULL, "stop", "'stop' must be a string or an array of strings");
    if (cJSON_GetArraySize(v) > SRV_MAX_STOP)
        return srv_fail(e, 400, NULL, "stop", "at most %d stop sequences", SRV_MAX_STOP);
    cJSON_ArrayForEach(s, v) {
        if (!cJSON_IsString(s)) return srv_fail(e, 400, NULL, "stop", "'stop' must hold strings");
        if (add_stop(j, s->valuestring, e)) return -1;
    }
    return 0;
}

static int parse_sampling(mllm_server *S, const cJSON *root, srv_oai_req *q, srv_job *j, srv_err *e) {
    mllm_sampling *sp = &j->sampling;
    mllm_sampling_default(sp);
    /* OpenAI's defaults: temperature 1, top_p 1, nothing else. */
    double temp = 1, top_p = 1, min_p = 0, rpen = 1, top_k = 0, rlast = 64, max_tokens = 0, seed = -1;
    double presence = 0, frequency = 0;
    bool given = false, seed_given = false, ignore_eos = false;
    if (get_num(root, "temperature", 0, 2, &temp, e) || get_num(root, "top_p", 0, 1, &top_p, e) ||
        get_num(root, "min_p", 0, 1, &min_p, e) || get_num(root, "repeat_penalty", 0.01, 10, &rpen, e) ||
        get_int(root, "top_k", 0, mllm_model_n_vocab(S->model), &top_k, NULL, e) ||
        get_int(root, "repeat_last_n", 0, 1 << 20, &rlast, NULL, e) ||
        get_int(root, "max_tokens", 1, S->cfg.max_tokens_limit, &max_tokens, &given, e) ||
        get_int(root, "max_completion_tokens", 1, S->cfg.max_tokens_limit, &max_tokens, &given, e) ||
        get_int(root, "seed", -9007199254740991.0, 9007199254740991.0, &seed, &seed_given, e) ||
        get_bool(root, "ignore_eos", &ignore_eos, e) || get_num(root, "presence_penalty", -2, 2, &presence, e) ||
        get_num(root, "frequency_penalty", -2, 2, &frequency, e))
        return -1;
    if (top_p <= 0) return srv_fail(e, 400, NULL, "top_p", "'top_p' must be in (0, 1]");
    sp->temperature = (float)temp;
    sp->top_p = (float)top_p;
    sp->min_p = (float)min_p;
    sp->repeat_penalty = (float)rpen;
    sp->top_k = (int)top_k;
    sp->repeat_last_n = (int)rlast;
    sp->presence_penalty = (float)presence;
    sp->frequency_penalty = (float)frequency;
    sp->ignore_eos = ignore_eos;
    sp->max_tokens = given ? (int)max_tokens : 0; /* 0: filled in once the prompt length is known */
    q->max_tokens_given = given;
    /* Without a seed each request samples differently, as with OpenAI. */
    sp->seed = seed_given ? (uint64_t)(int64_t)seed : (uint64_t)atomic_fetch_add(&S->next_id, 1) * 0x9E3779B97F4A7C15ull;
    return 0;
}

/* The text of one message's content: a string, null, or an array of
   {"type": "text", "text": ...} parts (joined). NULL with e filled. */
static char *message_text(const cJSON *content, int idx, srv_err *e) {
    char param[48];
    snprintf(param, sizeof param, "messages[%d].content", idx);
    if (!content || cJSON_IsNull(content)) return mllm_strndup("", 0);
    if (cJSON_IsString(content)) {
        if (check_text(content->valuestring, param, e)) return NULL;
        return mllm_strndup(content->valuestring, strlen(content->valuestring));
    }
    if (!cJSON_IsArray(content)) {
        srv_fail(e, 400, NULL, param, "'%s' must be a string or an array of content parts", param);
        return NULL;
    }
    size_t len = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
        const cJSON *type = cJSON_IsObject(part) ? field(part, "type") : NULL;
        const cJSON *text = cJSON_IsObject(part) ? field(part, "text") : NULL;
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") || !cJSON_IsString(text)) {
            srv_fail(e, 400, "unsupported_content", param, "only {\"type\": \"text\", \"text\": ...} parts are supported");
            return NULL;
        }
        if (check_text(text->valuestring, param, e)) return NULL;
        len += strlen(text->valuestring);
    }
    char *out = mllm_malloc(len + 1);
    if (!out) { srv_fail(e, 500, NULL, NULL, "out of memory"); return NULL; }
    size_t at = 0;
    cJSON_ArrayForEach(part, content) {
        const char *t = field(part, "text")->valuestring;
        size_t n = strlen(t);
        memcpy(out + at, t, n);
        at += n;
    }
    out[at] = 0;
    return out;
}

static const char *const ROLES[] = {"system", "developer", "user", "assistant", "tool"};

/* messages -> a clean [{"role", "content"}] array for the template. */
static cJSON *conversation(mllm_server *S, const cJSON *root, srv_images **images, srv_err *e) {
    const cJSON *msgs = field(root, "messages"), *m;
    if (!msgs) { srv_fail(e, 400, NULL, "messages", "'messages' is required"); return NULL; }
    if (!cJSON_IsArray(msgs)) { srv_fail(e, 400, NULL, "messages", "'messages' must be an array"); return NULL; }
    int n = cJSON_GetArraySize(msgs);
    if (n < 1 || n > S->cfg.max_messages) {
        srv_fail(e, 400, NULL, "messages", "'messages' must hold 1 to %d messages, got %d", S->cfg.max_messages, n);
        return NULL;
    }
    cJSON *out = cJSON_CreateArray();
    int i = 0;
    cJSON_ArrayForEach(m, msgs) {
        char param[32];
        snprintf(param, sizeof param, "messages[%d]", i);
        const cJSON *role = cJSON_IsObject(m) ? field(m, "role") : NULL;
        bool known = false;
        for (size_t r = 0; cJSON_IsString(role) && r < sizeof ROLES / sizeof ROLES[0]; r++)
            known |= !strcmp(role->valuestring, ROLES[r]);
        if (!cJSON_IsObject(m)) srv_fail(e, 400, NULL, param, "'%s' must be an object", param);
        else if (!known)
            srv_fail(e, 400, NULL, param, "'%s.role' must be one of system, developer, user, assistant, tool", param);
        if (!cJSON_IsObject(m) || !known) { cJSON_Delete(out); return NULL; }
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        cJSON *parts = NULL;
        char *text = NULL;
        if (srv_content_has_image(content)) { /* image_parts.c: the images go with the job */
            char cp[48];
            snprintf(cp, sizeof cp, "messages[%d].content", i);
            if (srv_image_content(content, cp, images, &parts, check_text, e)) {
                cJSON_Delete(parts);
                cJSON_Delete(out);
                return NULL;
            }
        } else if (!(text = message_text(content, i, e))) {
            cJSON_Delete(out);
            return NULL;
        }
        cJSON *o = cJSON_CreateObject();
        /* "developer" is OpenAI's new name for the system role. */
        cJSON_AddStringToObject(o, "role", strcmp(role->valuestring, "developer") ? role->valuestring : "system");
        if (parts) cJSON_AddItemToObject(o, "content", parts);
        else cJSON_AddStringToObject(o, "content", text);
        mllm_free(text);
        cJSON_AddItemToArray(out, o);
        if (srv_oai_message_tools(m, role->valuestring, o, i, e)) { cJSON_Delete(out); return NULL; }
        i++;
    }
    return out;
}

/* The number of leading ids that are the rendered system turn (what a
   context shift must keep), or 0: the first message alone, without a
   generation prompt, must tokenize to a prefix of the whole. */
static size_t system_keep(mllm_server *S, const cJSON *conv, const int32_t *ids, size_t n) {
    const cJSON *first = cJSON_GetArrayItem(conv, 0);
    const cJSON *role = first ? cJSON_GetObjectItemCaseSensitive(first, "role") : NULL;
    if (!cJSON_IsString(role) || strcmp(role->valuestring, "system")) return 0;
    cJSON *obj = cJSON_CreateObject(), *msgs = cJSON_AddArrayToObject(obj, "messages");
    if (msgs) cJSON_AddItemReferenceToArray(msgs, (cJSON *)first);
    cJSON_AddFalseToObject(obj, "add_generation_prompt");
    char *json = msgs ? cJSON_PrintUnformatted(obj) : NULL;
    cJSON_Delete(obj);
    size_t sn = 0, keep = 0;
    int32_t *sids = NULL;
    if (json && mllm_chat_tokenize(S->model, json, NULL, 0, &sn) == MLLM_ERR_BUFFER_TOO_SMALL && sn <= n &&
        (sids = mllm_malloc(sn * sizeof *sids)) && mllm_chat_tokenize(S->model, json, sids, sn, &sn) == MLLM_OK &&
        sn <= n && !memcmp(sids, ids, sn * sizeof *ids))
        keep = sn;
    mllm_free(sids);
    cJSON_free(json);
    return keep;
}

static int render_chat(mllm_server *S, const cJSON *root, srv_oai_req *q, srv_job *j, srv_err *e) {
    srv_tools tools;
    if (srv_oai_parse_tools(root, &tools, e)) { srv_tools_free(&tools); return -1; }
    cJSON *conv = conversation(S, root, &q->images, e);
    char *json = conv ? srv_oai_tools_context(S, conv, &tools, q, j, e) : NULL;
    srv_tools_free(&tools);
    if (!json) { cJSON_Delete(conv); return -1; }
    if (q->images && !mllm_model_takes_images(S->model)) {
        srv_fail(e, 400, "unsupported_content", "messages", "this model takes no images: %s", mllm_last_error());
        cJSON_free(json);
        cJSON_Delete(conv);
        return -1;
    }
    /* With images the scheduler reads the conversation itself (image_parts.h);
       the ids below (one <|image_pad|> an image) size the prompt. */
    if (q->images && !(q->conv = mllm_strndup(json, strlen(json)))) {
        cJSON_free(json);
        cJSON_Delete(conv);
        return srv_fail(e, 500, NULL, NULL, "out of memory");
    }
    /* The ids come from mllm_chat_tokenize, not from tokenizing rendered
       text: a message that says "<|im_end|>" must stay text (special-token
       injection, issue #20). One render when the prompt fits the context;
       a second only to count one that does not (for the 400). */
    size_t cap = (size_t)srv_sched_n_ctx(S->sched) + 1, n = 0;
    q->ids = mllm_malloc(cap * sizeof *q->ids);
    mllm_status st = q->ids ? mllm_chat_tokenize(S->model, json, q->ids, cap, &n) : MLLM_ERR_NOMEM;
    if (st == MLLM_ERR_BUFFER_TOO_SMALL) {
        mllm_free(q->ids);
        q->ids = mllm_malloc(n * sizeof *q->ids);
        st = q->ids ? mllm_chat_tokenize(S->model, json, q->ids, n, &n) : MLLM_ERR_NOMEM;
    }
    q->n_ids = st == MLLM_OK ? n : 0;
    cJSON_free(json);
    if (st == MLLM_OK && S->cfg.context_shift) q->n_keep = system_keep(S, conv, q->ids, q->n_ids);
    cJSON_Delete(conv);
    if (st == MLLM_OK) return 0;
    if (st == MLLM_ERR_UNSUPPORTED)
        return srv_fail(e, 400, "no_chat_template", "messages", "the model has no chat template; use /v1/completions");
    if (st == MLLM_ERR_NOMEM) return srv_fail(e, 500, NULL, NULL, "out of memory");
    return srv_fail(e, 400, NULL, "messages", "the chat template failed on these messages: %s", mllm_last_error());
}

/* prompt: a string, [string], [ids] or [[ids]] (one prompt per request). */
static int parse_prompt(mllm_server *S, const cJSON *root, srv_oai_req *q, srv_err *e) {
    const cJSON *p = field(root, "prompt");
    if (!p) return srv_fail(e, 400, NULL, "prompt", "'prompt' is required");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && !cJSON_IsNumber(p->child)) p = p->child;
    if (cJSON_IsString(p)) {
        if (check_text(p->valuestring, "prompt", e)) return -1;
        q->prompt = mllm_strndup(p->valuestring, strlen(p->valuestring));
        return q->prompt ? 0 : srv_fail(e, 500, NULL, NULL, "out of memory");
    }
    if (!cJSON_IsArray(p))
        return srv_fail(e, 400, NULL, "prompt", "'prompt' must be a string or an array of token ids");
    int n = cJSON_GetArraySize(p);
    if (n < 1) return srv_fail(e, 400, NULL, "prompt", "'prompt' is empty");
    q->ids = mllm_malloc((size_t)n * sizeof *q->ids);
    if (!q->ids) return srv_fail(e, 500, NULL, NULL, "out of memory");
    int32_t n_vocab = mllm_model_n_vocab(S->model);
    const cJSON *t;
    cJSON_ArrayForEach(t, p) {
        double d = cJSON_IsNumber(t) ? t->valuedouble : -1;
        if (!cJSON_IsNumber(t) || d != floor(d) || d < 0 || d >= n_vocab)
            return srv_fail(e, 400, NULL, "prompt",
                            "'prompt' must be one string or one array of token ids in [0, %d)", n_vocab);
        q->ids[q->n_ids++] = (int32_t)d;
    }
    return 0;
}

int srv_oai_parse(mllm_server *S, const cJSON *root, bool chat, srv_oai_req *q, srv_job *j, srv_err *e) {
    memset(q, 0, sizeof *q);
    q->logprobs = -1;
    q->n = 1;
    q->chat = chat;
    int64_t now;
    /* Checked when the server started; if the embedding program has set a
       malformed one since, the wall clock. */
    q->created = mllm_clock_now(&now, NULL) == MLLM_OK ? (long long)now : (long long)time(NULL);
    unsigned long seq = (unsigned long)atomic_fetch_add(&S->next_id, 1);
    snprintf(q->id, sizeof q->id, "%s-%016lx", chat ? "chatcmpl" : "cmpl", seq);
    /* The counter starts at the start time (server.c), so ids differ
       between runs; tool-call ids count from 0 and are the same when the
       same requests come in the same order. */
    q->seq = seq - ((unsigned long)S->created << 20);
    /* One model is served, so any name (or none, as llama-server) means
       it: clients and examples that say "gpt-4o" or "model" just work, and
       the response names the real id. A name of the wrong type is still a
       client bug worth a 400. */
    const cJSON *model = field(root, "model");
    if (model && !cJSON_IsString(model)) return srv_fail(e, 400, NULL, "model", "'model' must be a string");
    double n = 1;
    if (get_bool(root, "stream", &q->stream, e) || refuse_unsupported(root, chat, e) ||
        get_int(root, "n", 1, SRV_MAX_N, &n, NULL, e))
        return -1;
    q->n = (int)n;
    const cJSON *so = field(root, "stream_options");
    if (so) {
        if (!cJSON_IsObject(so)) return srv_fail(e, 400, NULL, "stream_options", "'stream_options' must be an object");
        if (!q->stream) return srv_fail(e, 400, NULL, "stream_options", "'stream_options' needs stream: true");
        if (get_bool(so, "include_usage", &q->include_usage, e)) return -1;
    }
    if (parse_sampling(S, root, q, j, e) || parse_logit_bias(S, root, j, e) || parse_logprobs(root, chat, q, j, e) ||
        parse_stop(root, j, e) || parse_grammar(root, j, e))
        return -1;
    return chat ? render_chat(S, root, q, j, e) : parse_prompt(S, root, q, e);
}

void srv_oai_req_free(srv_oai_req *q) {
    mllm_free(q->prompt);
    mllm_free(q->ids);
    mllm_free(q->conv);
    srv_images_free(q->images);
    q->prompt = NULL;
    q->ids = NULL;
    q->conv = NULL;
    q->images = NULL;
}
