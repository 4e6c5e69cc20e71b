/* Streamed responses: Server-Sent Events fed from a running job. */
#ifndef MLLM_SERVER_STREAM_H
#define MLLM_SERVER_STREAM_H
#include "server/oai.h"

/* Queues a 200 text/event-stream response that sends the job's text as it
   grows and ends with `data: [DONE]`. Takes ownership of q's buffers and
   of the caller's job reference (also on failure). A client that hangs up
   cancels the job. */
enum MHD_Result srv_stream_start(mllm_server *S, srv_req *r, srv_oai_req *q, srv_job *j);

#endif
