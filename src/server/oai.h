/* OpenAI request parsing (oai_request.c) and response bodies
   (oai_response.c) for /v1/completions and /v1/chat/completions. */
#ifndef MLLM_SERVER_OAI_H
#define MLLM_SERVER_OAI_H
#include "server/internal.h"

typedef struct {
    bool chat;
    bool stream, include_usage;
    bool max_tokens_given;
    int logprobs;          /* -1: not asked; else the alternatives per token (top_logprobs / logprobs: N) */
    char *prompt;          /* text to tokenize: the prompt, or the rendered chat */
    int32_t *ids;          /* (n_ids) a completions prompt given as token ids */
    size_t n_ids;
    size_t n_keep;         /* tokens of the system turn (with --context-shift), else 0 */
    char id[48];           /* "chatcmpl-..." / "cmpl-..." */
    long long created;     /* unix time */
} srv_oai_req;

/* Validates the request and fills q and the job's sampling and stop
   strings. Returns 0, or -1 with e filled (400 for bad input, 404 for an
   unknown model). */
int srv_oai_parse(mllm_server *S, const cJSON *root, bool chat, srv_oai_req *q, srv_job *j, srv_err *e);
void srv_oai_req_free(srv_oai_req *q);

/* The whole non-streamed response of a finished job (job mu held). */
cJSON *srv_oai_result(mllm_server *S, const srv_oai_req *q, const srv_job *j);
/* One SSE event "data: {...}\n\n" for a stream chunk carrying text[0..n)
   (or the role, for the first chat chunk; or finish, for the last), into a
   new NUL-terminated buffer (mllm_free); NULL when out of memory. With
   logprobs asked, it carries j's lp entries [lp_from, lp_to) (job mu held). */
char *srv_oai_chunk(mllm_server *S, const srv_oai_req *q, const char *text, size_t n, bool role,
                    const char *finish, const srv_job *j, int lp_from, int lp_to);
/* The usage-only chunk of stream_options.include_usage. */
char *srv_oai_usage_chunk(mllm_server *S, const srv_oai_req *q, const srv_job *j);
/* "data: {"error": ...}\n\n". */
char *srv_oai_error_event(unsigned status, const char *msg);

#endif
