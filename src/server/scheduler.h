/* The scheduler owns every mllm_session of the server: one session and one
   worker thread per slot (a session is used by one thread at a time; the
   model is shared). HTTP threads hand it jobs with srv_sched_submit; a job
   goes to the idle slot whose KV cache shares the longest prefix with its
   prompt, else waits in a bounded FIFO queue, else is refused. */
#ifndef MLLM_SERVER_SCHEDULER_H
#define MLLM_SERVER_SCHEDULER_H
#include <mllm/mllm.h>
#include "server/job.h"
#include "server/metrics.h"

typedef struct srv_sched srv_sched;

typedef enum { SRV_SUBMIT_OK = 0, SRV_SUBMIT_FULL = 1, SRV_SUBMIT_CLOSED = 2 } srv_submit;

/* spec (NULL: the default): how every slot's session speculates.
   context_shift: a job whose context fills goes on after dropping old
   tokens (srv_job.n_keep are kept) instead of ending with "length". */
mllm_status srv_sched_new(mllm_model *m, int n_slots, int n_ctx, int n_threads, int max_queue, bool context_shift,
                          const mllm_speculative_params *spec, srv_metrics *metrics, srv_sched **out);
/* The context length of every slot. */
int srv_sched_n_ctx(const srv_sched *s);
/* Takes a reference on the job when it is accepted. */
srv_submit srv_sched_submit(srv_sched *s, srv_job *j);
/* The job stops soon (queued: at once) and ends SRV_FINISH_CANCELLED. */
void srv_sched_cancel(srv_sched *s, srv_job *j);
/* From now on submit says CLOSED; queued jobs end with a 503 error. */
void srv_sched_close(srv_sched *s);
void srv_sched_gauges(srv_sched *s, srv_metrics_gauges *g);
/* Cancels running jobs and joins the workers; the struct stays valid for
   submit/cancel calls (they are refused / no-ops) until srv_sched_free. */
void srv_sched_shutdown(srv_sched *s);
void srv_sched_free(srv_sched *s); /* shuts down first if needed; NULL ok */

#endif
