/* Counters behind GET /metrics (Prometheus text format 0.0.4). Updated with
   relaxed atomics from any thread; read without a lock. */
#ifndef MLLM_SERVER_METRICS_H
#define MLLM_SERVER_METRICS_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define SRV_METRICS_CODES 600 /* HTTP status codes 0..599 */

typedef struct {
    atomic_ulong http_responses[SRV_METRICS_CODES]; /* by status code */
    atomic_ulong completions_stop, completions_length, completions_cancelled, completions_error;
    atomic_ulong rejected_full;      /* 503: queue full */
    atomic_ulong prompt_tokens;      /* prompt tokens of finished requests */
    atomic_ulong prompt_tokens_reused; /* of which came from a slot's KV cache */
    atomic_ulong generated_tokens;
    atomic_ulong prompt_us, gen_us;  /* time spent in prefill / generation */
    atomic_ulong last_gen_tps_milli; /* tokens/s x 1000 of the last request */
    atomic_ulong shed_full, shed_per_ip, shed_deadline; /* connections closed by the guard (guard.c) */
    /* tasks (tasks.h), by kind: [0] embeddings, [1] audio */
    atomic_ulong tasks_ok[2], tasks_error[2], tasks_cancelled[2];
    atomic_ulong tasks_started[2];         /* by owner: [0] the engine loop, [1] the task worker */
    atomic_ulong tasks_on_request_thread;  /* run by the HTTP thread that submitted them: 0 by design */
} srv_metrics;

void srv_metrics_init(srv_metrics *m);
void srv_metrics_response(srv_metrics *m, unsigned status);

typedef struct {
    int queue_len, slots_busy, slots_total;
    /* the engine path only (engine true): its sequences, KV pool and counters */
    bool engine;
    int seq_running, seq_waiting;
    int kv_blocks_total, kv_blocks_used, kv_blocks_cached, kv_blocks_free, kv_block_tokens;
    unsigned long long prefix_lookups, prefix_hit_tokens, engine_steps, engine_tokens_evaluated, engine_preemptions;
    unsigned long long spec_passes, spec_drafted, spec_accepted; /* prompt lookup in the engine */
    unsigned long long spec_checked, spec_checked_kept; /* its proposals not verified, compared with what came */
    unsigned long long prefix_waits; /* steps a request waited for a running prompt's shared blocks */
    bool prefix_store; /* --prefix-store: its counters below */
    unsigned long long store_hit_blocks, store_writes, store_entries, store_bytes;
    int tasks_queued, tasks_running; /* embedding and audio requests (tasks.h) */
} srv_metrics_gauges;

/* The Prometheus text into a new NUL-terminated buffer (mllm_free it), or
   NULL when out of memory. */
char *srv_metrics_render(const srv_metrics *m, const srv_metrics_gauges *g, size_t *len);

#endif
