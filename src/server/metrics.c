/* GET /metrics: Prometheus text exposition of the server's counters. */
#include "server/metrics.h"
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "server/textbuf.h"

void srv_metrics_init(srv_metrics *m) {
    for (int i = 0; i < SRV_METRICS_CODES; i++) atomic_init(&m->http_responses[i], 0);
    atomic_ulong *scalars[] = {&m->completions_stop, &m->completions_length, &m->completions_cancelled,
                               &m->completions_error, &m->rejected_full, &m->prompt_tokens,
                               &m->prompt_tokens_reused, &m->generated_tokens, &m->prompt_us,
                               &m->gen_us, &m->last_gen_tps_milli, &m->shed_full,
                               &m->shed_per_ip, &m->shed_deadline};
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) atomic_init(scalars[i], 0);
    for (int k = 0; k < 2; k++) {
        atomic_init(&m->tasks_ok[k], 0);
        atomic_init(&m->tasks_error[k], 0);
        atomic_init(&m->tasks_cancelled[k], 0);
        atomic_init(&m->tasks_started[k], 0);
    }
    atomic_init(&m->tasks_on_request_thread, 0);
}

static void render_tasks(srv_textbuf *o, const srv_metrics *m, const srv_metrics_gauges *g);

void srv_metrics_response(srv_metrics *m, unsigned status) {
    if (status < SRV_METRICS_CODES) atomic_fetch_add_explicit(&m->http_responses[status], 1, memory_order_relaxed);
}

static unsigned long ld(const atomic_ulong *v) {
    return atomic_load_explicit((atomic_ulong *)v, memory_order_relaxed);
}

static void counter(srv_textbuf *o, const char *name, const char *help, unsigned long v) {
    srv_tb_printf(o, "# HELP %s %s\n# TYPE %s counter\n%s %lu\n", name, help, name, name, v);
}

static void gauge(srv_textbuf *o, const char *name, const char *help, double v) {
    srv_tb_printf(o, "# HELP %s %s\n# TYPE %s gauge\n%s %.6g\n", name, help, name, name, v);
}

char *srv_metrics_render(const srv_metrics *m, const srv_metrics_gauges *g, size_t *len) {
    srv_textbuf o = {0};
    srv_tb_printf(&o, "# HELP mllm_http_responses_total HTTP responses sent, by status code\n"
            "# TYPE mllm_http_responses_total counter\n");
    for (int c = 0; c < SRV_METRICS_CODES; c++) {
        unsigned long v = ld(&m->http_responses[c]);
        if (v) srv_tb_printf(&o, "mllm_http_responses_total{code=\"%d\"} %lu\n", c, v);
    }
    srv_tb_printf(&o, "# HELP mllm_requests_total Generation requests finished, by finish reason\n"
            "# TYPE mllm_requests_total counter\n"
            "mllm_requests_total{finish_reason=\"stop\"} %lu\n"
            "mllm_requests_total{finish_reason=\"length\"} %lu\n"
            "mllm_requests_total{finish_reason=\"cancelled\"} %lu\n"
            "mllm_requests_total{finish_reason=\"error\"} %lu\n",
        ld(&m->completions_stop), ld(&m->completions_length), ld(&m->completions_cancelled),
        ld(&m->completions_error));
    counter(&o, "mllm_requests_rejected_total", "Requests refused with 503 because the queue was full",
            ld(&m->rejected_full));
    srv_tb_printf(&o, "# HELP mllm_connections_shed_total Connections closed before their request was complete, by reason\n"
            "# TYPE mllm_connections_shed_total counter\n"
            "mllm_connections_shed_total{reason=\"full\"} %lu\n"
            "mllm_connections_shed_total{reason=\"per_ip\"} %lu\n"
            "mllm_connections_shed_total{reason=\"deadline\"} %lu\n",
        ld(&m->shed_full), ld(&m->shed_per_ip), ld(&m->shed_deadline));
    counter(&o, "mllm_prompt_tokens_total", "Prompt tokens of generation requests", ld(&m->prompt_tokens));
    counter(&o, "mllm_prompt_tokens_reused_total", "Prompt tokens taken from a slot's KV cache, not recomputed",
            ld(&m->prompt_tokens_reused));
    counter(&o, "mllm_generated_tokens_total", "Tokens generated", ld(&m->generated_tokens));
    double p_s = (double)ld(&m->prompt_us) / 1e6, g_s = (double)ld(&m->gen_us) / 1e6;
    srv_tb_printf(&o, "# HELP mllm_prompt_seconds_total Time spent evaluating prompts\n"
            "# TYPE mllm_prompt_seconds_total counter\nmllm_prompt_seconds_total %.6f\n", p_s);
    srv_tb_printf(&o, "# HELP mllm_generation_seconds_total Time spent generating\n"
            "# TYPE mllm_generation_seconds_total counter\nmllm_generation_seconds_total %.6f\n", g_s);
    unsigned long evaluated = ld(&m->prompt_tokens) - ld(&m->prompt_tokens_reused);
    gauge(&o, "mllm_prompt_tokens_per_second", "Evaluated prompt tokens per second, over the server's life",
          p_s > 0 ? (double)evaluated / p_s : 0);
    gauge(&o, "mllm_generation_tokens_per_second", "Generated tokens per second of one slot, over the server's life",
          g_s > 0 ? (double)ld(&m->generated_tokens) / g_s : 0);
    gauge(&o, "mllm_last_generation_tokens_per_second", "Generated tokens per second of the last finished request",
          (double)ld(&m->last_gen_tps_milli) / 1000.0);
    gauge(&o, "mllm_queue_length", "Requests waiting for a slot", g->queue_len);
    gauge(&o, "mllm_slots_busy", "Slots generating now", g->slots_busy);
    gauge(&o, "mllm_slots_total", "Slots (--parallel)", g->slots_total);
    if (g->engine) {
        gauge(&o, "mllm_sequences_running", "Sequences the engine steps now (at most --parallel)", g->seq_running);
        gauge(&o, "mllm_sequences_waiting", "Sequences waiting for a slot or for KV blocks", g->seq_waiting);
        gauge(&o, "mllm_kv_blocks_total", "Blocks of the KV pool (--kv-size)", g->kv_blocks_total);
        gauge(&o, "mllm_kv_blocks_used", "KV blocks referenced by sequences", g->kv_blocks_used);
        gauge(&o, "mllm_kv_blocks_cached", "KV blocks unreferenced but kept for prefix hits (evicted LRU)",
              g->kv_blocks_cached);
        gauge(&o, "mllm_kv_blocks_free", "KV blocks free", g->kv_blocks_free);
        gauge(&o, "mllm_kv_block_tokens", "Token positions per KV block", g->kv_block_tokens);
        counter(&o, "mllm_prefix_cache_lookups_total", "Sequences admitted, each looking up the prefix cache",
                (unsigned long)g->prefix_lookups);
        counter(&o, "mllm_prefix_cache_hit_tokens_total", "Prompt tokens taken from the prefix cache (cached_tokens)",
                (unsigned long)g->prefix_hit_tokens);
        counter(&o, "mllm_engine_steps_total", "Engine steps (one batched forward each)", (unsigned long)g->engine_steps);
        counter(&o, "mllm_engine_tokens_evaluated_total", "Tokens evaluated by the engine's forwards (prompts and decodes)",
                (unsigned long)g->engine_tokens_evaluated);
        counter(&o, "mllm_engine_preemptions_total", "Sequences preempted because the KV pool was full (recomputed later)",
                (unsigned long)g->engine_preemptions);
        counter(&o, "mllm_prefix_waits_total",
                "Steps a request waited for blocks of its prompt that a running request was still computing",
                (unsigned long)g->prefix_waits);
        counter(&o, "mllm_lookup_passes_total", "Decode steps of a sequence that carried prompt-lookup proposals",
                (unsigned long)g->spec_passes);
        counter(&o, "mllm_lookup_drafted_tokens_total", "Tokens proposed by prompt lookup", (unsigned long)g->spec_drafted);
        counter(&o, "mllm_lookup_accepted_tokens_total", "Proposed tokens the sampler drew as well (no step of their own)",
                (unsigned long)g->spec_accepted);
        counter(&o, "mllm_lookup_checked_total",
                "Prompt-lookup proposals not worth verifying at the step's cost, compared with the next token instead",
                (unsigned long)g->spec_checked);
        counter(&o, "mllm_lookup_checked_kept_total", "Of those, the ones that were the next token",
                (unsigned long)g->spec_checked_kept);
    }
    if (g->engine && g->prefix_store) {
        counter(&o, "mllm_prefix_store_hit_blocks_total", "KV blocks read from the prefix store into the pool",
                (unsigned long)g->store_hit_blocks);
        counter(&o, "mllm_prefix_store_writes_total", "KV blocks written to the prefix store",
                (unsigned long)g->store_writes);
        gauge(&o, "mllm_prefix_store_entries", "KV blocks in the prefix store file", (double)g->store_entries);
        gauge(&o, "mllm_prefix_store_bytes", "Bytes of the prefix store's entries", (double)g->store_bytes);
    }
    render_tasks(&o, m, g);
    if (o.fail) { mllm_free(o.b); return NULL; }
    *len = o.len;
    return o.b;
}

static void render_tasks(srv_textbuf *o, const srv_metrics *m, const srv_metrics_gauges *g) {
    static const char *const kind[2] = {"embeddings", "audio"};
    srv_tb_printf(o, "# HELP mllm_tasks_total Embedding and audio requests finished, by kind and result\n"
                  "# TYPE mllm_tasks_total counter\n");
    for (int k = 0; k < 2; k++)
        srv_tb_printf(o, "mllm_tasks_total{kind=\"%s\",result=\"ok\"} %lu\n"
                      "mllm_tasks_total{kind=\"%s\",result=\"error\"} %lu\n"
                      "mllm_tasks_total{kind=\"%s\",result=\"cancelled\"} %lu\n",
                      kind[k], ld(&m->tasks_ok[k]), kind[k], ld(&m->tasks_error[k]), kind[k],
                      ld(&m->tasks_cancelled[k]));
    srv_tb_printf(o, "# HELP mllm_tasks_started_total Tasks started, by the thread that owns the compute\n"
                  "# TYPE mllm_tasks_started_total counter\n"
                  "mllm_tasks_started_total{owner=\"engine\"} %lu\n"
                  "mllm_tasks_started_total{owner=\"worker\"} %lu\n",
                  ld(&m->tasks_started[0]), ld(&m->tasks_started[1]));
    counter(o, "mllm_tasks_on_request_thread_total", "Tasks run by the HTTP thread that received them (none should be)",
            ld(&m->tasks_on_request_thread));
    gauge(o, "mllm_tasks_queued", "Embedding and audio requests waiting for the compute's owner", g->tasks_queued);
    gauge(o, "mllm_tasks_running", "Embedding and audio requests being computed", g->tasks_running);
}
