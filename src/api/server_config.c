/* mllm_server_default_config: in src/api, not src/server, so that a
   library built without the server fills the same defaults (its
   mllm_server_start then says the server is missing: server_off.c). */
#include <string.h>
#include <mllm/mllm.h>

void mllm_server_default_config(mllm_server_config *c) {
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    c->host = "127.0.0.1";
    c->port = MLLM_SERVER_DEFAULT_PORT;
    c->model_id = "mllm";
    c->n_parallel = MLLM_SERVER_DEFAULT_PARALLEL;
    c->max_queue = MLLM_SERVER_DEFAULT_QUEUE;
    c->max_body = MLLM_SERVER_DEFAULT_MAX_BODY;
    c->max_upload = MLLM_SERVER_DEFAULT_MAX_UPLOAD;
    c->max_messages = MLLM_SERVER_DEFAULT_MAX_MESSAGES;
    c->max_tokens_limit = MLLM_SERVER_DEFAULT_MAX_TOKENS_LIMIT;
    c->default_max_tokens = MLLM_SERVER_DEFAULT_MAX_TOKENS;
    c->timeout_s = MLLM_SERVER_DEFAULT_TIMEOUT_S;
    c->max_connections = MLLM_SERVER_DEFAULT_MAX_CONNECTIONS;
    c->max_connections_per_ip = MLLM_SERVER_DEFAULT_MAX_CONNECTIONS_PER_IP;
    c->header_timeout_s = MLLM_SERVER_DEFAULT_HEADER_TIMEOUT_S;
    c->log_requests = 1;
}
