/* The OpenAI-compatible HTTP server behind `mllm serve`.
 *
 * Layout: HTTP threads (libmicrohttpd, one per connection) only parse,
 * validate and enqueue (http.c, endpoints.c, oai_request.c); the scheduler
 * (scheduler.h) owns generation: by default one engine loop thread that
 * batches every running sequence into one forward per step over one shared
 * KV pool (sched_engine.c). A bounded FIFO queue is in front. A job (job.h) is
 * the only thing both sides touch, under its own mutex. Embedding and
 * audio requests are tasks (tasks.h) in a bounded queue of their own, run
 * by the engine loop between its steps, else by a task worker.
 */
#ifndef MLLM_SERVER_SERVER_H
#define MLLM_SERVER_SERVER_H
#include <stdbool.h>
#include <stddef.h>
#include <mllm/mllm.h>

/* mllm_server_config, its MLLM_SERVER_DEFAULT_* values and the mllm_server_*
   functions are public (mllm/mllm_server.h); these limits are the server's own. */
#define SRV_MAX_STOP 4          /* stop sequences per request, as OpenAI */
#define SRV_MAX_STOP_LEN 256    /* bytes per stop sequence */
#define SRV_MAX_TOKENIZE_IDS 65536 /* ids accepted by /detokenize */
#define SRV_MAX_LOGIT_BIAS 1024 /* logit_bias entries per request */

#endif
