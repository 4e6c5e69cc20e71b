/* mllm serve: the OpenAI-compatible HTTP server (src/server). */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"

static void serve_usage(FILE *f) {
    fprintf(f,
            "usage: mllm serve -m MODEL [options]\n"
            "\n"
            "An OpenAI-compatible HTTP server: POST /v1/chat/completions, /v1/completions,\n"
            "/v1/embeddings, /tokenize, /detokenize; GET /v1/models, /health, /metrics; GET / is\n"
            "a chat page for a browser. A Whisper model serves POST /v1/audio/transcriptions\n"
            "and /v1/audio/translations instead of generation (docs/server.md).\n"
            "\n"
            "  -m, --model PATH        GGUF file, Hugging Face folder, llama2.c .bin, or a\n"
            "                          Whisper model (CTranslate2 or Hugging Face folder)\n"
            "      --host ADDR         address to listen on (default 127.0.0.1)\n"
            "      --port N            port (default %d; 0 = any free port, printed)\n"
            "      --api-key KEY       require 'Authorization: Bearer KEY' (all but /health);\n"
            "                          default: $MLLM_API_KEY if set\n"
            "      --alias NAME        the model id clients use (default: file name)\n"
            "  -np, --parallel N       sequences generated at the same time, batched into one\n"
            "                          forward per step (default %d)\n"
            "  -c, --ctx-size N        context per sequence in tokens (default: min(model, 4096))\n"
            "      --kv-size N         KV pool of every sequence together (and the prefix cache),\n"
            "                          in token positions, at least ctx-size + 16 (default:\n"
            "                          parallel x ctx-size + 16); when it is full, new requests\n"
            "                          wait\n"
            "      --kv-type T         K/V in the pool as f32 (default), f16 or q8\n"
            "      --prefix-store DIR  keep the K/V blocks of prompts in a file in DIR, so a\n"
            "                          restarted server skips their prefill (one file per model\n"
            "                          and KV geometry; survives a crash; an image and what\n"
            "                          follows it are not kept; docs/server.md)\n"
            "      --prefix-store-size BYTES  the store's file size, suffix K, M or G allowed\n"
            "                          (default 1G); least recently used blocks go first\n"
            "  -t, --threads N         compute threads (default: every core)\n"
            "      --exact             f32 activations in quantized matmuls (docs/EXACTNESS.md)\n"
            "      --mmproj FILE       the vision tower of a GGUF text model (llama.cpp's mmproj GGUF);\n"
            "                          chat messages then take image_url parts with base64 data URLs\n"
            "      --queue N           requests waiting for a slot before 503 (default %d); as many\n"
            "                          embedding / audio requests may wait besides\n"
            "      --max-body BYTES    largest request body (default %u)\n"
            "      --max-upload BYTES  largest audio upload, the whole multipart body (default %u)\n"
            "      --max-messages N    chat messages per request (default %d)\n"
            "      --max-tokens N      largest max_tokens a request may ask (default %d)\n"
            "      --default-max-tokens N  when a request gives none (default %d)\n"
            "      --timeout S         idle connection / slow request deadline (default %d)\n"
            "      --max-connections N open connections (default %d); when full, a new client\n"
            "                          replaces the slowest one still sending its request\n"
            "      --max-connections-per-ip N  the same, per client address (default %d)\n"
            "      --header-timeout S  a request's headers must arrive within S seconds of\n"
            "                          connecting or of the previous response (default %d)\n"
            "      --allowed-origins LIST  browser origins allowed cross-origin (CORS): '*' or\n"
            "                          'https://a.example,http://localhost:3000'; default none:\n"
            "                          a request with any other Origin header gets 403\n"
            "      --context-shift     when a slot's context fills during an answer, keep the\n"
            "                          system turn, drop half of the rest and go on (default:\n"
            "                          the answer ends, finish_reason \"length\")\n"
            "      --log-requests on|off  a line per request on stderr: method, path, status,\n"
            "                          prompt and generated tokens, milliseconds (default on)\n"
            "      --shutdown-grace S  on SIGINT/SIGTERM, running requests may finish for\n"
            "                          S seconds (default 10; a second signal: at once)\n"
            "      --test-task-hold-ms MS  a test option: the thread that computes embedding and\n"
            "                          audio requests sleeps MS before each (they queue behind it)\n"
            "      --chat-template T   a built-in template name or a .jinja file\n"
            "      --tokenizer PATH    tokenizer for llama2.c checkpoints\n"
            "%s%s"
            "                        (without --draft the batching engine speculates by prompt\n"
            "                        lookup, per sequence, where it pays; with --draft the draft\n"
            "                        proposes there too, a draft session per sequence; with\n"
            "                        --draft and --parallel 1, one session speculates as mllm run)\n"
            "  -h, --help              this help\n",
            MLLM_SERVER_DEFAULT_PORT, MLLM_SERVER_DEFAULT_PARALLEL, MLLM_SERVER_DEFAULT_QUEUE,
            MLLM_SERVER_DEFAULT_MAX_BODY, MLLM_SERVER_DEFAULT_MAX_UPLOAD, MLLM_SERVER_DEFAULT_MAX_MESSAGES,
            MLLM_SERVER_DEFAULT_MAX_TOKENS_LIMIT, MLLM_SERVER_DEFAULT_MAX_TOKENS, MLLM_SERVER_DEFAULT_TIMEOUT_S,
            MLLM_SERVER_DEFAULT_MAX_CONNECTIONS, MLLM_SERVER_DEFAULT_MAX_CONNECTIONS_PER_IP,
            MLLM_SERVER_DEFAULT_HEADER_TIMEOUT_S, cli_backend_usage, cli_spec_usage);
}

/* "1073741824", "512M", "1G" -> bytes in [64 KiB, 1 TiB]. */
static bool parse_bytes(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || s[0] == '-') return false;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10, end++;
    else if (*end == 'M' || *end == 'm') shift = 20, end++;
    else if (*end == 'G' || *end == 'g') shift = 30, end++;
    if (*end || v > (1ull << 40) >> shift) return false;
    v <<= shift;
    if (v < (64u << 10)) return false;
    *out = v;
    return true;
}

/* "dir/SmolLM2.Q4_1.gguf" -> "SmolLM2.Q4_1" (in buf). */
static const char *default_id(const char *path, char *buf, size_t cap) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/') b--;
    size_t len = n - b;
    if (len > 5 && !strncmp(path + n - 5, ".gguf", 5)) len -= 5;
    if (len >= cap) len = cap - 1;
    memcpy(buf, path + b, len);
    buf[len] = 0;
    return buf[0] ? buf : "mllm";
}

/* Waits for the running requests up to grace seconds or a second signal. */
static void drain(mllm_server *srv, const sigset_t *set, long grace) {
    struct timespec tick = {0, 100 * 1000 * 1000};
    const double t0 = mllm_time_ms();
    while (mllm_server_busy(srv) > 0) {
        if (sigtimedwait(set, NULL, &tick) > 0) {
            fprintf(stderr, "mllm serve: second signal, cancelling running requests\n");
            return;
        }
        double waited = (mllm_time_ms() - t0) / 1e3;
        if (waited >= (double)grace) {
            fprintf(stderr, "mllm serve: grace period over, cancelling running requests\n");
            return;
        }
    }
}

int cmd_serve(int argc, char **argv) {
    mllm_server_config c;
    mllm_server_default_config(&c);
    const char *model = NULL, *alias = NULL, *tmpl = NULL, *tok = NULL, *mmproj = NULL;
    bool exact = false;
    long v, grace = 10;
    c.api_key = getenv("MLLM_API_KEY");
    if (c.api_key && !c.api_key[0]) c.api_key = NULL;
    cli_spec_opts so;
    cli_spec_defaults(&so);
    cli_backend_opts bo;
    cli_backend_defaults(&bo);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *s;
        int sa = cli_spec_arg(&so, argc, argv, &i);
        if (sa < 0) return 2;
        if (sa > 0) continue;
        int ba = cli_backend_arg(&bo, argc, argv, &i);
        if (ba < 0) return 2;
        if (ba > 0) continue;
#define VAL() do { if (!(s = cli_value(argc, argv, &i))) return 2; } while (0)
#define INT(lo, hi, dst) do { VAL(); if (!cli_int(a, s, lo, hi, &v)) return 2; dst = v; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { serve_usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { VAL(); model = s; }
        else if (!strcmp(a, "--host")) { VAL(); c.host = s; }
        else if (!strcmp(a, "--port")) INT(0, 65535, c.port);
        else if (!strcmp(a, "--api-key")) { VAL(); c.api_key = s; }
        else if (!strcmp(a, "--alias")) { VAL(); alias = s; }
        else if (!strcmp(a, "-np") || !strcmp(a, "--parallel")) INT(1, 256, c.n_parallel);
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) INT(16, 1 << 20, c.n_ctx);
        else if (!strcmp(a, "--kv-size")) INT(16, MLLM_SERVER_MAX_KV_SIZE, c.kv_size);
        else if (!strcmp(a, "--kv-type")) {
            VAL();
            if (!cli_kv_type(a, s, &c.kv_type)) return 2;
            if (c.kv_type == MLLM_KV_CONTIGUOUS) c.kv_type = MLLM_KV_PAGED_F32; /* the engine's pool is paged */
        }
        else if (!strcmp(a, "--prefix-store")) { VAL(); c.prefix_store = s; }
        else if (!strcmp(a, "--prefix-store-size")) {
            VAL();
            if (!parse_bytes(s, &c.prefix_store_size)) {
                fprintf(stderr, "mllm serve: --prefix-store-size takes bytes (suffix K, M or G), at least 64K, not '%s'\n", s);
                return 2;
            }
        }
        else if (!strcmp(a, "--exact")) exact = true;
        else if (!strcmp(a, "--mmproj")) { VAL(); mmproj = s; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) INT(1, 1024, c.n_threads);
        else if (!strcmp(a, "--queue")) INT(0, 100000, c.max_queue);
        else if (!strcmp(a, "--max-body")) INT(64, 1L << 30, c.max_body);
        else if (!strcmp(a, "--max-upload")) INT(1024, 1L << 31, c.max_upload);
        else if (!strcmp(a, "--max-messages")) INT(1, 1 << 20, c.max_messages);
        else if (!strcmp(a, "--max-tokens")) INT(1, 1 << 20, c.max_tokens_limit);
        else if (!strcmp(a, "--default-max-tokens")) INT(1, 1 << 20, c.default_max_tokens);
        else if (!strcmp(a, "--timeout")) INT(1, 3600, c.timeout_s);
        else if (!strcmp(a, "--max-connections")) INT(1, 100000, c.max_connections);
        else if (!strcmp(a, "--max-connections-per-ip")) INT(1, 100000, c.max_connections_per_ip);
        else if (!strcmp(a, "--header-timeout")) INT(1, 3600, c.header_timeout_s);
        else if (!strcmp(a, "--allowed-origins")) { VAL(); c.allowed_origins = s; }
        else if (!strcmp(a, "--context-shift")) c.context_shift = 1;
        else if (!strcmp(a, "--log-requests")) {
            VAL();
            if (strcmp(s, "on") && strcmp(s, "off")) {
                fprintf(stderr, "mllm serve: --log-requests takes 'on' or 'off', not '%s'\n", s);
                return 2;
            }
            c.log_requests = !strcmp(s, "on");
        }
        else if (!strcmp(a, "--shutdown-grace")) INT(0, 3600, grace);
        else if (!strcmp(a, "--test-task-hold-ms")) INT(0, 600000, c.test_task_hold_ms);
        else if (!strcmp(a, "--chat-template")) { VAL(); tmpl = s; }
        else if (!strcmp(a, "--tokenizer")) { VAL(); tok = s; }
        else { fprintf(stderr, "mllm serve: unknown option '%s' (try --help)\n", a); return 2; }
#undef INT
#undef VAL
    }
    if (!model) { serve_usage(stderr); return 2; }
    if (c.api_key && !c.api_key[0]) { fprintf(stderr, "mllm serve: --api-key is empty\n"); return 2; }
    char idbuf[256];
    c.model_id = alias ? alias : default_id(model, idbuf, sizeof idbuf);

    /* Signals are taken by sigwait below: block them before any thread
       starts, so every thread inherits the mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client that hangs up must not kill the server */
    /* A file-size limit (ulimit -f) under the prefix store: its write fails
       with EFBIG and the store turns off, instead of SIGXFSZ killing us. */
    signal(SIGXFSZ, SIG_IGN);

    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.tokenizer_path = tok;
    lp.exact = exact;
    cli_backend_apply(&bo, &lp, "mllm serve");
    lp.mmproj = mmproj;
    lp.chat_template = tmpl;
    mllm_model *m = NULL;
    mllm_status st = mllm_model_load(model, &lp, &m);
    if (st != MLLM_OK) return cli_fail("load", st);
    cli_backend_report("mllm serve");
    mllm_model *dm = NULL;
    if (cli_spec_load(&so, c.n_threads, &dm) != MLLM_OK) { mllm_model_free(m); return 1; }
    mllm_speculative_params spp;
    cli_spec_params(&so, dm, &spp);
    c.speculative = &spp;
    mllm_server *srv = NULL;
    st = mllm_server_start(m, &c, &srv);
    if (st != MLLM_OK) { mllm_model_free(dm); mllm_model_free(m); return cli_fail("serve", st); }
    if (mllm_model_can_generate(m))
        fprintf(stderr, "mllm serve: listening on http://%s:%d (model '%s', %d %s)\n", c.host,
                mllm_server_port(srv), c.model_id, c.n_parallel,
                spp.draft && spp.mode != MLLM_SPEC_OFF ? "parallel sequences, one engine, a draft model"
                                                       : "parallel sequences, one engine");
    else
        fprintf(stderr, "mllm serve: listening on http://%s:%d (model '%s', %s only)\n", c.host,
                mllm_server_port(srv), c.model_id, mllm_model_can_transcribe(m) ? "speech to text" : "embeddings");
    fflush(stderr);

    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "mllm serve: %s, finishing running requests (up to %ld s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
            grace);
    mllm_server_drain(srv);
    drain(srv, &set, grace);
    mllm_server_stop(srv);
    mllm_model_free(dm);
    mllm_model_free(m);
    fprintf(stderr, "mllm serve: stopped\n");
    return 0;
}
