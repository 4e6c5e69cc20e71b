/* mllm chat: an interactive terminal chat with the model's own template.
   Every turn re-renders the whole conversation, and mllm_chat syncs the
   session to it, so only the tokens after the cached prefix are computed. */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "runtime/think_filter.h"

static void chat_usage(FILE *f) {
    fprintf(f,
            "usage: mllm chat -m MODEL [--system TEXT] [options]\n"
            "\n"
            "  -m, --model PATH        GGUF file, Hugging Face folder (llama2.c needs --tokenizer)\n"
            "      --system TEXT       system prompt\n"
            "      --chat-template X   a built-in template name or a .jinja file instead of the model's\n"
            "      --think on|off      Qwen3 thinking (enable_thinking); default: the template's default\n"
            "      --show-think        print the reply's <think>...</think> part (hidden by default)\n"
            "  -n, --n-predict N       most tokens per reply (default 512)\n"
            "  -c, --ctx-size N        context length (default: min(model, 4096))\n"
            "  -t, --threads N         compute threads\n"
            "      --temp/--top-k/--top-p/--min-p/--repeat-penalty/--seed  as in mllm run\n"
            "      --verbose           after each reply, print prompt tokens reused vs computed\n"
            "\n"
            "In the chat: a line ending in \\ continues on the next line; /reset clears the\n"
            "history (keeps the system prompt), /save FILE and /load FILE store and restore it\n"
            "as JSON, /stats shows token counts, /help lists these. Ctrl-C stops the current\n"
            "reply; Ctrl-D quits. With stdin not a terminal, each line (or \\-joined lines) is\n"
            "one user turn.\n"
            "\n"
            "When the conversation no longer fits the context, the oldest turns are dropped\n"
            "(the system prompt is kept) and a note goes to stderr.\n");
}

static mllm_session *volatile g_session;
static volatile sig_atomic_t g_generating;

static void on_sigint(int sig) {
    (void)sig;
    if (g_generating && g_session) mllm_session_cancel(g_session);
}

typedef struct {
    char *buf;
    size_t len, cap;
    mllm_think_filter think;
} reply;

static void append(reply *r, const char *p, size_t n) {
    if (r->len + n + 1 > r->cap) {
        size_t cap = (r->len + n + 1) * 2;
        char *nb = realloc(r->buf, cap);
        if (!nb) return;
        r->buf = nb;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, p, n);
    r->len += n;
    r->buf[r->len] = 0;
}

static void to_stdout(void *user, const char *text, size_t len) {
    (void)user;
    fwrite(text, 1, len, stdout);
}

/* Prints what is new in the reply, hiding <think>...</think> unless asked. */
static void flush_visible(reply *r, int final) {
    mllm_think_filter_feed(&r->think, r->buf, r->len, final, to_stdout, NULL);
    fflush(stdout);
}

static int on_piece(void *user, int32_t id, const char *piece, size_t len) {
    (void)id;
    reply *r = user;
    append(r, piece, len);
    flush_visible(r, 0);
    return 0;
}


typedef struct {
    mllm_model *m;
    mllm_session *s;
    cJSON *messages;
    const char *system;
    int think; /* -1 unset, 0 off, 1 on */
    mllm_sampling smp;
    long turns, reused_total, computed_total, generated_total;
    int verbose, show_think;
} chat_state;

static void reset_history(chat_state *c) {
    cJSON_Delete(c->messages);
    c->messages = cJSON_CreateArray();
    if (c->system) {
        cJSON *sys = cJSON_CreateObject();
        cJSON_AddStringToObject(sys, "role", "system");
        cJSON_AddStringToObject(sys, "content", c->system);
        cJSON_AddItemToArray(c->messages, sys);
    }
}

static char *conversation_json(chat_state *c) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemReferenceToObject(o, "messages", c->messages);
    cJSON_AddTrueToObject(o, "add_generation_prompt");
    if (c->think >= 0) cJSON_AddBoolToObject(o, "enable_thinking", c->think);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* Tokens the rendered conversation needs, or -1 on a render error. */
static long rendered_tokens(chat_state *c) {
    char *conv = conversation_json(c);
    size_t need = 0;
    mllm_status st = mllm_chat_render(c->m, conv, NULL, 0, &need);
    long n = -1;
    if (st == MLLM_ERR_BUFFER_TOO_SMALL) {
        char *text = malloc(need);
        size_t nt = 0;
        if (text && mllm_chat_render(c->m, conv, text, need, NULL) == MLLM_OK) {
            st = mllm_tokenize(c->m, text, strlen(text), 0, NULL, 0, &nt);
            if (st == MLLM_OK || st == MLLM_ERR_BUFFER_TOO_SMALL) n = (long)nt;
        }
        free(text);
    }
    free(conv);
    return n;
}

/* Drops the oldest non-system messages until the prompt plus a reply fit. */
static void fit_context(chat_state *c) {
    long limit = mllm_session_n_ctx(c->s) - c->smp.max_tokens;
    for (;;) {
        long n = rendered_tokens(c);
        if (n < 0 || n <= limit) return;
        int first = c->system ? 1 : 0;
        if (cJSON_GetArraySize(c->messages) <= first + 1) return; /* only the new turn left: let it fail clearly */
        cJSON_DeleteItemFromArray(c->messages, first);
        /* keep turns whole: drop the assistant reply that followed */
        cJSON *next = cJSON_GetArrayItem(c->messages, first);
        cJSON *role = next ? cJSON_GetObjectItem(next, "role") : NULL;
        if (role && cJSON_IsString(role) && !strcmp(role->valuestring, "assistant") &&
            cJSON_GetArraySize(c->messages) > first + 1)
            cJSON_DeleteItemFromArray(c->messages, first);
        fprintf(stderr, "[context full: dropped the oldest turn]\n");
    }
}

static int user_turn(chat_state *c, const char *text) {
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "role", "user");
    cJSON_AddStringToObject(msg, "content", text);
    cJSON_AddItemToArray(c->messages, msg);
    fit_context(c);
    char *conv = conversation_json(c);
    reply r = {.think = {.show = c->show_think}};
    size_t reused = 0;
    int before = mllm_session_n_past(c->s);
    (void)before;
    mllm_timings t0 = {.struct_size = sizeof t0}, t1 = {.struct_size = sizeof t1};
    mllm_session_timings(c->s, &t0);
    g_generating = 1;
    mllm_status st = mllm_chat(c->s, conv, &c->smp, on_piece, &r, &reused);
    g_generating = 0;
    free(conv);
    flush_visible(&r, 1);
    printf("\n");
    mllm_session_timings(c->s, &t1);
    if (st != MLLM_OK && st != MLLM_ERR_CANCELLED) {
        cli_fail("chat failed", st);
        cJSON_DeleteItemFromArray(c->messages, cJSON_GetArraySize(c->messages) - 1);
        free(r.buf);
        return 1;
    }
    if (st == MLLM_ERR_CANCELLED) fprintf(stderr, "[stopped]\n");
    /* The reply as generated, thinking included: templates that show past
       reasoning differently (Qwen3 drops it) decide that themselves. */
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "role", "assistant");
    cJSON_AddStringToObject(a, "content", r.buf ? r.buf : "");
    cJSON_AddItemToArray(c->messages, a);
    free(r.buf);
    long computed = t1.n_prompt - t0.n_prompt, gen = t1.n_gen - t0.n_gen;
    c->turns++;
    c->reused_total += (long)reused;
    c->computed_total += computed;
    c->generated_total += gen;
    if (c->verbose)
        fprintf(stderr, "[turn %ld: prompt tokens reused %zu, computed %ld; generated %ld; %.1f tokens/s]\n", c->turns,
                reused, computed, gen, t1.gen_ms - t0.gen_ms > 0 ? gen * 1e3 / (t1.gen_ms - t0.gen_ms) : 0.0);
    return 0;
}

static void stats(chat_state *c) {
    printf("turns %ld | prompt tokens reused %ld, computed %ld | generated %ld | in cache %d of %d\n", c->turns,
           c->reused_total, c->computed_total, c->generated_total, mllm_session_n_past(c->s), mllm_session_n_ctx(c->s));
}

static int save(chat_state *c, const char *path) {
    char *s = cJSON_Print(c->messages);
    FILE *f = fopen(path, "w");
    int ok = f && s && fputs(s, f) >= 0;
    if (f && fclose(f) != 0) ok = 0;
    free(s);
    if (!ok) fprintf(stderr, "cannot write '%s'\n", path);
    else printf("saved %d messages to %s\n", cJSON_GetArraySize(c->messages), path);
    return ok;
}

static int load(chat_state *c, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot read '%s'\n", path); return 0; }
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *a = cJSON_Parse(buf);
    int ok = cJSON_IsArray(a);
    cJSON *m;
    cJSON_ArrayForEach(m, a) {
        cJSON *r = cJSON_GetObjectItem(m, "role"), *t = cJSON_GetObjectItem(m, "content");
        if (!cJSON_IsString(r) || !cJSON_IsString(t)) ok = 0;
    }
    if (!ok) { fprintf(stderr, "'%s' is not a JSON array of {role, content} messages\n", path); cJSON_Delete(a); return 0; }
    cJSON_Delete(c->messages);
    c->messages = a;
    printf("loaded %d messages from %s\n", cJSON_GetArraySize(a), path);
    return 1;
}

static void help(void) {
    printf("/reset  clear the history (keeps the system prompt)\n/save FILE  write the history as JSON\n"
           "/load FILE  read a history\n/stats  token counts\n/help  this list\n"
           "A line ending in \\ continues. Ctrl-C stops a reply, Ctrl-D quits.\n");
}

/* One input (lines joined while they end in a backslash); NULL at EOF. */
static char *read_input(int tty) {
    size_t cap = 1024, len = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    buf[0] = 0;
    if (tty) { fputs("> ", stdout); fflush(stdout); }
    for (;;) {
        char line[4096];
        if (!fgets(line, sizeof line, stdin)) {
            if (len == 0) { free(buf); return NULL; }
            break;
        }
        size_t n = strlen(line);
        int cont = 0;
        if (n && line[n - 1] == '\n') line[--n] = 0;
        if (n && line[n - 1] == '\\') { line[--n] = 0; cont = 1; }
        if (len + n + 2 > cap) {
            cap = (len + n + 2) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) { free(buf); return NULL; }
            buf = nb;
        }
        memcpy(buf + len, line, n);
        len += n;
        if (cont) { buf[len++] = '\n'; if (tty) { fputs(". ", stdout); fflush(stdout); } }
        buf[len] = 0;
        if (!cont) break;
    }
    return buf;
}

int cmd_chat(int argc, char **argv) {
    const char *model = NULL, *tok = NULL, *tmpl = NULL;
    chat_state c = {.think = -1};
    long n_predict = 512, threads = 0, ctx = 0, top_k = 40, seed = 0;
    double temp = 0.8, top_p = 0.95, min_p = 0.05, rpen = 1.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
#define VAL() do { if (!(v = cli_value(argc, argv, &i))) return 2; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { chat_usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { VAL(); model = v; }
        else if (!strcmp(a, "--system")) { VAL(); c.system = v; }
        else if (!strcmp(a, "--chat-template")) { VAL(); tmpl = v; }
        else if (!strcmp(a, "--tokenizer")) { VAL(); tok = v; }
        else if (!strcmp(a, "--think")) {
            VAL();
            if (!strcmp(v, "on")) c.think = 1;
            else if (!strcmp(v, "off")) c.think = 0;
            else { fprintf(stderr, "mllm chat: --think expects on or off\n"); return 2; }
        }
        else if (!strcmp(a, "--show-think")) c.show_think = 1;
        else if (!strcmp(a, "--verbose")) c.verbose = 1;
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) { VAL(); if (!cli_int(a, v, 1, 1 << 20, &n_predict)) return 2; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { VAL(); if (!cli_int(a, v, 1, 1024, &threads)) return 2; }
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) { VAL(); if (!cli_int(a, v, 16, 1 << 20, &ctx)) return 2; }
        else if (!strcmp(a, "--temp")) { VAL(); if (!cli_float(a, v, 0, 100, &temp)) return 2; }
        else if (!strcmp(a, "--top-k")) { VAL(); if (!cli_int(a, v, 0, 1 << 30, &top_k)) return 2; }
        else if (!strcmp(a, "--top-p")) { VAL(); if (!cli_float(a, v, 1e-6, 1, &top_p)) return 2; }
        else if (!strcmp(a, "--min-p")) { VAL(); if (!cli_float(a, v, 0, 1, &min_p)) return 2; }
        else if (!strcmp(a, "--repeat-penalty")) { VAL(); if (!cli_float(a, v, 1e-3, 100, &rpen)) return 2; }
        else if (!strcmp(a, "--seed")) { VAL(); if (!cli_int(a, v, 0, 0x7fffffffL, &seed)) return 2; }
        else { fprintf(stderr, "mllm chat: unknown option '%s' (try mllm chat --help)\n", a); return 2; }
#undef VAL
    }
    if (!model) { fprintf(stderr, "mllm chat: -m MODEL is required\n"); return 2; }
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = (int)threads;
    lp.tokenizer_path = tok;
    lp.chat_template = tmpl;
    mllm_status st = mllm_model_load(model, &lp, &c.m);
    if (st != MLLM_OK) return cli_fail("cannot load model", st);
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = (int)ctx;
    if ((st = mllm_session_new(c.m, &sp, &c.s)) != MLLM_OK) { mllm_model_free(c.m); return cli_fail("cannot create session", st); }
    mllm_sampling_default(&c.smp);
    c.smp.temperature = (float)temp;
    c.smp.top_k = (int)top_k;
    c.smp.top_p = (float)top_p;
    c.smp.min_p = (float)min_p;
    c.smp.repeat_penalty = (float)rpen;
    c.smp.max_tokens = (int)n_predict;
    c.smp.seed = (uint64_t)seed;
    reset_history(&c);
    g_session = c.s;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    int tty = isatty(0);
    if (tty) printf("mllm chat: /help for commands, Ctrl-D to quit\n");
    char *in;
    while ((in = read_input(tty)) != NULL) {
        if (!strcmp(in, "/reset")) { reset_history(&c); printf("history cleared\n"); }
        else if (!strcmp(in, "/stats")) stats(&c);
        else if (!strcmp(in, "/help")) help();
        else if (!strncmp(in, "/save ", 6)) save(&c, in + 6);
        else if (!strncmp(in, "/load ", 6)) load(&c, in + 6);
        else if (in[0] == '/') printf("unknown command '%s' (/help lists them)\n", in);
        else if (in[0]) user_turn(&c, in);
        free(in);
    }
    if (tty) printf("\n");
    g_session = NULL;
    cJSON_Delete(c.messages);
    mllm_session_free(c.s);
    mllm_model_free(c.m);
    return 0;
}
