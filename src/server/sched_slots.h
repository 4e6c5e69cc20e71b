/* The per-slot scheduler: one mllm_session and one worker thread per slot
   (a session is used by one thread at a time; the model is shared); a job
   goes to the idle slot whose KV cache shares the longest prefix with its
   prompt, else waits in a bounded FIFO queue, else is refused. The server
   uses it only where the engine cannot run a request yet: a speculative
   draft model (--draft), which speculates per session. */
#ifndef MLLM_SERVER_SCHED_SLOTS_H
#define MLLM_SERVER_SCHED_SLOTS_H
#include "server/scheduler.h"

typedef struct srv_slots srv_slots;

mllm_status srv_slots_new(mllm_model *m, int n_slots, int n_ctx, int n_threads, int max_queue, bool context_shift,
                          const mllm_speculative_params *spec, srv_metrics *metrics, srv_slots **out);
int srv_slots_n_ctx(const srv_slots *s);
srv_submit srv_slots_submit(srv_slots *s, srv_job *j);
void srv_slots_cancel(srv_slots *s, srv_job *j);
void srv_slots_close(srv_slots *s);
void srv_slots_gauges(srv_slots *s, srv_metrics_gauges *g);
void srv_slots_shutdown(srv_slots *s);
void srv_slots_free(srv_slots *s);

#endif
