/* OpenAI request parsing (oai_request.c) and response bodies
   (oai_response.c) for /v1/completions and /v1/chat/completions. */
#ifndef MLLM_SERVER_OAI_H
#define MLLM_SERVER_OAI_H
#include "server/internal.h"
#include "server/toolcall.h"

#define SRV_MAX_TOOLS 128   /* tools per request, tool_calls per message */
#define SRV_MAX_N 8         /* choices per request (n) */

typedef enum { SRV_TOOLS_NONE, SRV_TOOLS_AUTO, SRV_TOOLS_REQUIRED, SRV_TOOLS_NAMED } srv_tool_choice;

/* A request's tools (oai_tools.c), while it is parsed. */
typedef struct {
    cJSON *tools;          /* [{"type": "function", "function": {...}}] as given, checked; NULL: none */
    srv_tool_choice choice;
    int named;             /* SRV_TOOLS_NAMED: the index of the tool */
    bool parallel;         /* parallel_tool_calls */
} srv_tools;

typedef struct {
    bool chat;
    bool stream, include_usage;
    bool max_tokens_given;
    int logprobs;          /* -1: not asked; else the alternatives per token (top_logprobs / logprobs: N) */
    char *prompt;          /* text to tokenize: the prompt, or the rendered chat */
    int32_t *ids;          /* (n_ids) a completions prompt given as token ids */
    size_t n_ids;
    size_t n_keep;         /* tokens of the system turn (with --context-shift), else 0 */
    int n;                 /* choices (n): the job and n - 1 more chained to it (srv_job.next) */
    srv_tc_style tc_style; /* tools offered to the model: the call syntax to parse; NONE: no tools */
    srv_tool_choice tool_choice;
    int max_calls;         /* calls kept per answer (parallel_tool_calls: false: 1) */
    unsigned long seq;     /* the request's number since the start: its tool-call ids */
    struct srv_images_s *images; /* image_url parts (image_parts.h), or NULL; moved to the job */
    char *conv;            /* with images: the template context JSON the slot prefills */
    char id[48];           /* "chatcmpl-..." / "cmpl-..." */
    long long created;     /* unix time */
} srv_oai_req;

/* Validates the request and fills q and the job's sampling and stop
   strings. Returns 0, or -1 with e filled (400 for bad input, 404 for an
   unknown model). */
int srv_oai_parse(mllm_server *S, const cJSON *root, bool chat, srv_oai_req *q, srv_job *j, srv_err *e);
void srv_oai_req_free(srv_oai_req *q);

/* oai_tools.c: tools, tool_choice and parallel_tool_calls into t (400s
   for bad shapes); srv_tools_free after. */
int srv_oai_parse_tools(const cJSON *root, srv_tools *t, srv_err *e);
void srv_tools_free(srv_tools *t);
/* Copies a message's tool_calls (assistant) or tool_call_id and name
   (tool) into the template's message o. */
int srv_oai_message_tools(const cJSON *m, const char *role, cJSON *o, int idx, srv_err *e);
/* The template context {"messages": conv, "tools": ...} as JSON text
   (cJSON_free), with q's tool fields and, for required / named choices,
   the job's grammar set; NULL with e (the template does not use tools: a
   400). */
char *srv_oai_tools_context(mllm_server *S, const cJSON *conv, const srv_tools *t, srv_oai_req *q, srv_job *j,
                            srv_err *e);
/* The id of call i of choice c: "call_<request>_<c>_<i>" (deterministic). */
void srv_oai_call_id(const srv_oai_req *q, int c, int i, char *out, size_t cap);

/* The whole non-streamed response of a finished job and the choices
   chained to it (job mu held; the others must be done). */
cJSON *srv_oai_result(mllm_server *S, const srv_oai_req *q, const srv_job *j);
/* One SSE event "data: {...}\n\n" for a stream chunk carrying text[0..n)
   (or the role, for the first chat chunk; or finish, for the last), into a
   new NUL-terminated buffer (mllm_free); NULL when out of memory. With
   logprobs asked, it carries j's lp entries [lp_from, lp_to) (job mu held).
   index: the choice; tool (or NULL): one tool-call delta. */
typedef struct {
    int call;              /* index of the call in the choice's tool_calls */
    const char *name;      /* the first delta of a call: its name (with id and type); else NULL */
    const char *args;      /* (args_len) more of the arguments' text */
    size_t args_len;
} srv_oai_tool_delta;
char *srv_oai_chunk(mllm_server *S, const srv_oai_req *q, const char *text, size_t n, bool role,
                    const char *finish, const srv_job *j, int lp_from, int lp_to, int index,
                    const srv_oai_tool_delta *tool);
/* The usage-only chunk of stream_options.include_usage. */
char *srv_oai_usage_chunk(mllm_server *S, const srv_oai_req *q, const srv_job *j);
/* "data: {"error": ...}\n\n". */
char *srv_oai_error_event(unsigned status, const char *msg);

#endif
