/* The engine path of the scheduler (scheduler.h): one loop thread drives
   one mllm_engine; HTTP threads only queue jobs and set cancel flags. */
#ifndef MLLM_SERVER_SCHED_ENGINE_H
#define MLLM_SERVER_SCHED_ENGINE_H
#include "server/scheduler.h"

typedef struct srv_esched srv_esched;

mllm_status srv_esched_new(mllm_model *m, const srv_sched_params *p, srv_metrics *metrics, srv_esched **out);
int srv_esched_n_ctx(const srv_esched *s);
srv_submit srv_esched_submit(srv_esched *s, srv_job *j);
void srv_esched_cancel(srv_esched *s, srv_job *j);
void srv_esched_close(srv_esched *s);
void srv_esched_gauges(srv_esched *s, srv_metrics_gauges *g);
void srv_esched_shutdown(srv_esched *s);
void srv_esched_free(srv_esched *s);
/* The loop runs q's tasks (tasks.h), a slice between two steps. */
void srv_esched_own_tasks(srv_esched *s, srv_tasks *q);

#endif
