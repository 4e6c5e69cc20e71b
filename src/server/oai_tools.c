/* OpenAI tool calling, request side: `tools`, `tool_choice`,
   `parallel_tool_calls`, the tool_calls / tool messages of a conversation,
   the rendering through the model's own chat template (which must use
   `tools`), and the grammar that makes `required` and named choices always
   produce a call that parses. The answer side is toolcall.c. */
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "server/oai.h"
#include "server/utf8.h"

static const cJSON *field(const cJSON *o, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static bool is_str(const cJSON *v) { return cJSON_IsString(v) && srv_utf8_valid(v->valuestring, strlen(v->valuestring)); }

/* OpenAI's rule for function names: 1 to 64 of a-z A-Z 0-9 _ - (also
   keeps them safe inside the grammar's string literals). */
static bool name_ok(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > 64) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    }
    return true;
}

static int oom(srv_err *e) { return srv_fail(e, 500, NULL, NULL, "out of memory"); }

/* One tools[i]: {"type": "function", "function": {"name", "description",
   "parameters", "strict"}}, checked, into out. */
static int parse_tool(const cJSON *t, int i, cJSON *out, srv_err *e) {
    char p[48];
    snprintf(p, sizeof p, "tools[%d]", i);
    const cJSON *type = cJSON_IsObject(t) ? field(t, "type") : NULL, *fn = cJSON_IsObject(t) ? field(t, "function") : NULL;
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") || !cJSON_IsObject(fn))
        return srv_fail(e, 400, NULL, p, "'%s' must be {\"type\": \"function\", \"function\": {\"name\", ...}}", p);
    const cJSON *name = field(fn, "name"), *desc = field(fn, "description"), *params = field(fn, "parameters");
    const cJSON *strict = field(fn, "strict");
    if (!cJSON_IsString(name) || !name_ok(name->valuestring))
        return srv_fail(e, 400, NULL, p, "'%s.function.name' must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -", p);
    if (desc && !is_str(desc)) return srv_fail(e, 400, NULL, p, "'%s.function.description' must be a string", p);
    if (params && !cJSON_IsObject(params))
        return srv_fail(e, 400, NULL, p, "'%s.function.parameters' must be a JSON Schema object", p);
    if (strict && !cJSON_IsBool(strict)) return srv_fail(e, 400, NULL, p, "'%s.function.strict' must be a boolean", p);
    for (const cJSON *o = out->child; o; o = o->next)
        if (!strcmp(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "function"), "name")->valuestring,
                    name->valuestring))
            return srv_fail(e, 400, NULL, p, "two tools are named '%s'", name->valuestring);
    /* The template gets the tool as the client wrote it (transformers
       passes it so), fields and their order included. */
    cJSON *c = cJSON_Duplicate(t, true);
    if (!c) return oom(e);
    cJSON_AddItemToArray(out, c);
    return 0;
}

int srv_oai_parse_tools(const cJSON *root, srv_tools *t, srv_err *e) {
    memset(t, 0, sizeof *t);
    t->parallel = true;
    const cJSON *tools = field(root, "tools"), *choice = field(root, "tool_choice"), *par = field(root, "parallel_tool_calls");
    if (par) {
        if (!cJSON_IsBool(par)) return srv_fail(e, 400, NULL, "parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
        t->parallel = cJSON_IsTrue(par);
    }
    if (tools) {
        if (!cJSON_IsArray(tools)) return srv_fail(e, 400, NULL, "tools", "'tools' must be an array");
        int n = cJSON_GetArraySize(tools);
        if (n > SRV_MAX_TOOLS) return srv_fail(e, 400, NULL, "tools", "at most %d tools, got %d", SRV_MAX_TOOLS, n);
        if (n > 0) {
            if (!(t->tools = cJSON_CreateArray())) return oom(e);
            int i = 0;
            const cJSON *x;
            cJSON_ArrayForEach(x, tools) if (parse_tool(x, i++, t->tools, e)) return -1;
        }
    }
    t->choice = t->tools ? SRV_TOOLS_AUTO : SRV_TOOLS_NONE;
    if (!choice) return 0;
    if (cJSON_IsString(choice) && !strcmp(choice->valuestring, "none")) {
        t->choice = SRV_TOOLS_NONE;
        return 0;
    }
    if (!t->tools)
        return srv_fail(e, 400, NULL, "tool_choice", "'tool_choice' other than \"none\" needs 'tools'");
    if (cJSON_IsString(choice) && !strcmp(choice->valuestring, "auto")) return 0;
    if (cJSON_IsString(choice) && !strcmp(choice->valuestring, "required")) {
        t->choice = SRV_TOOLS_REQUIRED;
        return 0;
    }
    const cJSON *type = cJSON_IsObject(choice) ? field(choice, "type") : NULL;
    const cJSON *fn = cJSON_IsObject(choice) ? field(choice, "function") : NULL;
    const cJSON *name = cJSON_IsObject(fn) ? field(fn, "name") : NULL;
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") || !cJSON_IsString(name))
        return srv_fail(e, 400, NULL, "tool_choice",
                        "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                        "\"function\": {\"name\": ...}}");
    int i = 0;
    for (const cJSON *o = t->tools->child; o; o = o->next, i++)
        if (!strcmp(field(field(o, "function"), "name")->valuestring, name->valuestring)) {
            t->choice = SRV_TOOLS_NAMED;
            t->named = i;
            return 0;
        }
    return srv_fail(e, 400, NULL, "tool_choice", "'tool_choice' names '%.64s', which is not among 'tools'",
                    name->valuestring);
}

void srv_tools_free(srv_tools *t) {
    cJSON_Delete(t->tools);
    t->tools = NULL;
}

/* An assistant message's tool_calls -> the template's form: arguments
   parsed into a value where they are JSON (templates write
   `tool_call.arguments | tojson`, Qwen2.5 and Llama 3.x alike). */
static int copy_tool_calls(const cJSON *calls, int idx, cJSON *o, srv_err *e) {
    char p[48];
    snprintf(p, sizeof p, "messages[%d].tool_calls", idx);
    if (!cJSON_IsArray(calls)) return srv_fail(e, 400, NULL, p, "'%s' must be an array", p);
    if (cJSON_GetArraySize(calls) > SRV_MAX_TOOLS) return srv_fail(e, 400, NULL, p, "'%s' holds too many calls", p);
    cJSON *out = cJSON_AddArrayToObject(o, "tool_calls");
    if (!out) return oom(e);
    const cJSON *c;
    cJSON_ArrayForEach(c, calls) {
        const cJSON *id = cJSON_IsObject(c) ? field(c, "id") : NULL, *type = cJSON_IsObject(c) ? field(c, "type") : NULL;
        const cJSON *fn = cJSON_IsObject(c) ? field(c, "function") : NULL;
        const cJSON *name = cJSON_IsObject(fn) ? field(fn, "name") : NULL, *args = cJSON_IsObject(fn) ? field(fn, "arguments") : NULL;
        if (!cJSON_IsObject(c) || (id && !is_str(id)) || (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "function"))) ||
            !is_str(name) || (args && !is_str(args) && !cJSON_IsObject(args)))
            return srv_fail(e, 400, NULL, p,
                            "each of '%s' must be {\"id\", \"type\": \"function\", \"function\": {\"name\": string, "
                            "\"arguments\": JSON text}}", p);
        cJSON *t = cJSON_CreateObject(), *f = cJSON_AddObjectToObject(t, "function");
        if (!f) { cJSON_Delete(t); return oom(e); }
        if (id) cJSON_AddStringToObject(t, "id", id->valuestring);
        cJSON_AddStringToObject(t, "type", "function");
        cJSON_AddStringToObject(f, "name", name->valuestring);
        cJSON *a = !args ? cJSON_CreateObject() : cJSON_IsObject(args) ? cJSON_Duplicate(args, true) : cJSON_Parse(args->valuestring);
        if (!a && args && cJSON_IsString(args)) a = cJSON_CreateString(args->valuestring); /* not JSON: passed as written */
        if (!a) { cJSON_Delete(t); return oom(e); }
        cJSON_AddItemToObject(f, "arguments", a);
        cJSON_AddItemToArray(out, t);
    }
    return 0;
}

int srv_oai_message_tools(const cJSON *m, const char *role, cJSON *o, int idx, srv_err *e) {
    char p[48];
    const cJSON *calls = field(m, "tool_calls");
    if (calls) {
        if (strcmp(role, "assistant")) {
            snprintf(p, sizeof p, "messages[%d].tool_calls", idx);
            return srv_fail(e, 400, NULL, p, "only assistant messages carry 'tool_calls'");
        }
        if (cJSON_GetArraySize(calls) > 0 || !cJSON_IsArray(calls)) return copy_tool_calls(calls, idx, o, e);
    }
    if (strcmp(role, "tool")) return 0;
    static const char *const keys[] = {"tool_call_id", "name"};
    for (int k = 0; k < 2; k++) {
        const cJSON *v = field(m, keys[k]);
        if (!v) continue;
        snprintf(p, sizeof p, "messages[%d].%s", idx, keys[k]);
        if (!is_str(v)) return srv_fail(e, 400, NULL, p, "'%s' must be a string", p);
        cJSON_AddStringToObject(o, keys[k], v->valuestring);
    }
    return 0;
}

/* The rendered text of a template context (mllm_free), or NULL with e. */
static char *render_text(mllm_server *S, const cJSON *ctx, srv_err *e) {
    char *json = cJSON_PrintUnformatted(ctx);
    size_t need = 0;
    char *out = NULL;
    mllm_status st = json ? mllm_chat_render(S->model, json, NULL, 0, &need) : MLLM_ERR_NOMEM;
    if (st == MLLM_ERR_BUFFER_TOO_SMALL && (out = mllm_malloc(need)))
        st = mllm_chat_render(S->model, json, out, need, &need);
    cJSON_free(json);
    if (st == MLLM_OK && out) return out;
    mllm_free(out);
    if (st == MLLM_ERR_UNSUPPORTED)
        srv_fail(e, 400, "no_chat_template", "messages", "the model has no chat template; use /v1/completions");
    else if (st == MLLM_ERR_NOMEM || st == MLLM_ERR_BUFFER_TOO_SMALL) oom(e);
    else srv_fail(e, 400, NULL, "messages", "the chat template failed on these messages: %s", mllm_last_error());
    return NULL;
}

/* GBNF for required / named choices: one call (or, with parallel calls
   allowed in the Hermes syntax, several) in the model's own syntax, each
   object a JSON Schema of {"name": const, "arguments": the tool's
   parameters} (compiled by the JSON Schema compiler, root rule "root"). */
static int tool_grammar(const srv_tools *t, srv_tc_style style, srv_job *j, srv_err *e) {
    const char *key = style == SRV_TC_LLAMA ? "parameters" : "arguments";
    cJSON *schema = cJSON_CreateObject(), *any = cJSON_AddArrayToObject(schema, "anyOf");
    if (!any) { cJSON_Delete(schema); return oom(e); }
    int i = 0;
    for (const cJSON *o = t->tools->child; o; o = o->next, i++) {
        if (t->choice == SRV_TOOLS_NAMED && i != t->named) continue;
        const cJSON *fn = field(o, "function");
        cJSON *s = cJSON_CreateObject(), *props = cJSON_AddObjectToObject(s, "properties");
        cJSON_AddStringToObject(s, "type", "object");
        cJSON *nm = cJSON_AddObjectToObject(props, "name");
        if (nm) cJSON_AddStringToObject(nm, "const", field(fn, "name")->valuestring);
        /* No parameters: a function without arguments, as OpenAI reads it. */
        const cJSON *params = field(fn, "parameters");
        cJSON_AddItemToObject(props, key, params ? cJSON_Duplicate(params, true)
                                                 : cJSON_Parse("{\"type\":\"object\",\"properties\":{}}"));
        cJSON *req = cJSON_AddArrayToObject(s, "required");
        cJSON_AddItemToArray(req, cJSON_CreateString("name"));
        cJSON_AddItemToArray(req, cJSON_CreateString(key));
        cJSON_AddItemToArray(any, s);
    }
    char *text = cJSON_PrintUnformatted(schema);
    cJSON_Delete(schema);
    size_t need = 0;
    char *gbnf = NULL;
    mllm_status st = text ? mllm_json_schema_to_gbnf(text, NULL, 0, &need) : MLLM_ERR_NOMEM;
    static const char hermes[] = "\ntoolcalls-one ::= \"<tool_call>\\n\" root \"\\n</tool_call>\"\n";
    static const char many[] = "toolcalls-top ::= toolcalls-one (\"\\n\" toolcalls-one)*\n";
    static const char one[] = "toolcalls-top ::= toolcalls-one\n";
    static const char llama[] = "\ntoolcalls-top ::= root\n";
    size_t extra = sizeof hermes + sizeof many + sizeof llama;
    if (st == MLLM_ERR_BUFFER_TOO_SMALL && (gbnf = mllm_malloc(need + extra)))
        st = mllm_json_schema_to_gbnf(text, gbnf, need, &need);
    cJSON_free(text);
    if (st != MLLM_OK) {
        mllm_free(gbnf);
        /* gbnf is NULL as well when the first call refused the schema:
           only a failed allocation is out of memory. */
        if (st == MLLM_ERR_NOMEM || (st == MLLM_ERR_BUFFER_TOO_SMALL && !gbnf)) return oom(e);
        return srv_fail(e, 400, NULL, "tools", "a tool's 'parameters' cannot constrain the call (tool_choice): %s",
                        mllm_last_error());
    }
    if (style == SRV_TC_LLAMA) strcat(gbnf, llama); /* Llama 3.x calls one function at a time */
    else {
        strcat(gbnf, hermes);
        strcat(gbnf, t->parallel ? many : one);
    }
    mllm_grammar *g = NULL;
    st = mllm_grammar_new(gbnf, "toolcalls-top", &g);
    mllm_free(gbnf);
    if (st == MLLM_ERR_NOMEM) return oom(e);
    if (st != MLLM_OK) return srv_fail(e, 400, NULL, "tools", "the tools' call grammar: %s", mllm_last_error());
    j->grammar = g;
    j->sampling.grammar = g;
    return 0;
}

/* The call syntax of a template, from what it printed for the tools: the
   Hermes tags (Qwen2.5, Qwen3, SmolLM3, Hermes), or Llama 3.x's JSON with
   "parameters". */
static srv_tc_style style_of(const char *rendered) {
    if (strstr(rendered, "<tool_call>")) return SRV_TC_HERMES;
    if (strstr(rendered, "<|python_tag|>") || strstr(rendered, "\"parameters\"")) return SRV_TC_LLAMA;
    return SRV_TC_HERMES;
}

char *srv_oai_tools_context(mllm_server *S, const cJSON *conv, const srv_tools *t, srv_oai_req *q, srv_job *j,
                            srv_err *e) {
    cJSON *ctx = cJSON_CreateObject();
    if (!ctx || !cJSON_AddItemReferenceToObject(ctx, "messages", (cJSON *)conv)) { cJSON_Delete(ctx); oom(e); return NULL; }
    /* tool_choice "none": the model is not told about the tools, so it
       cannot call one (OpenAI: "the model will not call any tool"). */
    if (!t->tools || t->choice == SRV_TOOLS_NONE) goto print;
    if (j->grammar) {
        cJSON_Delete(ctx);
        srv_fail(e, 400, NULL, "tools", "'tools' cannot be combined with 'grammar' or a JSON 'response_format'");
        return NULL;
    }
    char *plain = render_text(S, ctx, e);
    if (!plain) { cJSON_Delete(ctx); return NULL; }
    cJSON_AddItemReferenceToObject(ctx, "tools", t->tools);
    char *with = render_text(S, ctx, e);
    bool same = with && !strcmp(plain, with);
    mllm_free(plain);
    if (!with) { cJSON_Delete(ctx); return NULL; }
    q->tc_style = style_of(with);
    mllm_free(with);
    if (same) {
        cJSON_Delete(ctx);
        srv_fail(e, 400, "tools_unsupported", "tools",
                 "the model's chat template does not use 'tools', so the model cannot be told about them "
                 "(use --chat-template with a template that does)");
        return NULL;
    }
    q->max_calls = t->parallel ? SRV_TC_MAX_CALLS : 1;
    q->tool_choice = t->choice;
    if ((t->choice == SRV_TOOLS_REQUIRED || t->choice == SRV_TOOLS_NAMED) && tool_grammar(t, q->tc_style, j, e)) {
        cJSON_Delete(ctx);
        return NULL;
    }
print:;
    char *json = cJSON_PrintUnformatted(ctx);
    cJSON_Delete(ctx);
    if (!json) oom(e);
    return json;
}
