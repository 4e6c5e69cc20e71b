/* mllm chat: an interactive terminal chat with the model's own template.
   Every turn re-renders the whole conversation, and mllm_chat syncs the
   session to it, so only the tokens after the cached prefix are computed. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#ifdef MLLM_HAVE_LIBEDIT
#include <editline/readline.h>
#endif

static void chat_usage(FILE *f) {
    fprintf(f,
            "usage: mllm chat -m MODEL [--system TEXT] [options]\n"
            "\n"
            "  -m, --model PATH        GGUF file, Hugging Face folder (llama2.c needs --tokenizer)\n"
            "      --system TEXT       system prompt\n"
            "      --chat-template X   a built-in template name or a .jinja file instead of the model's\n"
            "      --think on|off      Qwen3 thinking (enable_thinking); default: the template's default\n"
            "      --show-think        print the reply's <think>...</think> part (hidden by default)\n"
            "  -n, --n-predict N       most tokens per reply (default 512; -1: until the reply ends)\n"
            "  -c, --ctx-size N        context length (default: min(model, 4096))\n"
            "      --kv-type T         KV cache as a pool of 16-token blocks with K/V in f32, f16 or q8\n"
            "                          (int8 per token and head, f32 scale); default: one contiguous f32 cache\n"
            "      --context-shift     a reply that fills the context goes on: the oldest half of\n"
            "                          the context after the system prompt is dropped\n"
            "      --mmproj FILE       the vision tower of a GGUF text model (llama.cpp's mmproj GGUF)\n"
            "  -t, --threads N         compute threads\n"
            "      --exact             f32 activations in quantized matmuls (docs/EXACTNESS.md)\n"
            "      --temp/--top-k/--top-p/--min-p/--repeat-penalty/--seed  as in mllm run\n"
            "                          (--seed -1, the default, draws one and prints it)\n"
            "      --ids-out FILE      write each reply's token ids, one per line, an empty line after each\n"
            "      --verbose           after each reply, print prompt tokens reused vs computed\n"
            "                          and how speculation did\n"
            "%s%s"
            "\n"
            "In the chat: arrow keys edit the line and walk the history (libedit, on a\n"
            "terminal); a line ending in \\ continues on the next line; /reset clears the\n"
            "history (keeps the system prompt), /save FILE and /load FILE store and restore it\n"
            "as JSON, /image PATH attaches an image (PNG, JPEG, BMP, GIF, WebP) to the next message\n"
            "(Qwen2.5-VL and SmolVLM / Idefics3 models; the image stays in the history), /stats shows token counts,\n"
            "/help lists these, /bye or /exit quits.\n"
            "Ctrl-C stops the current reply; Ctrl-D quits. With stdin not a terminal, each line\n"
            "(or \\-joined lines) is one user turn. After each reply its token count and speed\n"
            "go to stderr.\n"
            "\n"
            "When the conversation no longer fits the context, the oldest turns are dropped\n"
            "(the system prompt is kept) and a note goes to stderr.\n",
            cli_spec_usage, cli_backend_usage);
}

#define CLI_CHAT_MAX_IMAGES 64

static mllm_session *volatile g_session;
static volatile sig_atomic_t g_generating;

#ifndef __wasi__
static void on_sigint(int sig) {
    (void)sig;
    if (g_generating && g_session) mllm_session_cancel(g_session);
}
#endif

typedef struct {
    char *buf;
    size_t len, cap;
    mllm_think_filter *think;
    FILE *ids; /* --ids-out, or NULL */
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
    mllm_think_filter_feed(r->think, r->buf, r->len, final, to_stdout, NULL);
    fflush(stdout);
}

static int on_piece(void *user, int32_t id, const char *piece, size_t len) {
    reply *r = user;
    if (r->ids && id >= 0) fprintf(r->ids, "%d\n", id);
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
    long max_tokens; /* -1: until the reply ends */
    bool context_shift;
    long turns, reused_total, computed_total, generated_total;
    int verbose, show_think;
    char *image; /* /image PATH: attached to the next user message */
    bool had_images; /* the last prompt held images: the session's cache may too */
    FILE *ids_out;   /* --ids-out */
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
    size_t n = 0;
    mllm_status st = conv ? mllm_chat_tokenize(c->m, conv, NULL, 0, &n) : MLLM_ERR_NOMEM;
    free(conv);
    return st == MLLM_ERR_BUFFER_TOO_SMALL ? (long)n : -1;
}

/* The conversation's ids (malloc'd) or NULL with *st. */
static int32_t *conversation_ids(chat_state *c, cJSON *messages, bool gen_prompt, size_t *n, mllm_status *st) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemReferenceToObject(o, "messages", messages);
    cJSON_AddBoolToObject(o, "add_generation_prompt", gen_prompt);
    if (c->think >= 0) cJSON_AddBoolToObject(o, "enable_thinking", c->think);
    char *conv = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    int32_t *ids = NULL;
    *st = conv ? mllm_chat_tokenize(c->m, conv, NULL, 0, n) : MLLM_ERR_NOMEM;
    if (*st == MLLM_ERR_BUFFER_TOO_SMALL) {
        ids = malloc(*n * sizeof *ids);
        *st = ids ? mllm_chat_tokenize(c->m, conv, ids, *n, n) : MLLM_ERR_NOMEM;
        if (*st != MLLM_OK) { free(ids); ids = NULL; }
    }
    free(conv);
    return ids;
}

/* Tokens a context shift must keep: the rendered system turn, when it is a
   prefix of the conversation's tokens. */
static int system_tokens(chat_state *c, const int32_t *ids, size_t n) {
    if (!c->system || cJSON_GetArraySize(c->messages) < 1) return 0;
    cJSON *only = cJSON_CreateArray();
    cJSON_AddItemReferenceToArray(only, cJSON_GetArrayItem(c->messages, 0));
    size_t sn = 0;
    mllm_status st;
    int32_t *s = conversation_ids(c, only, false, &sn, &st);
    cJSON_Delete(only);
    int keep = s && sn <= n && !memcmp(s, ids, sn * sizeof *ids) ? (int)sn : 0;
    free(s);
    return keep;
}

/* The image paths of the history's {"type": "image", "image": PATH}
   parts, in order; -1 if more than CLI_CHAT_MAX_IMAGES. */
static int image_paths(chat_state *c, const char **paths) {
    int n = 0;
    cJSON *m, *part;
    cJSON_ArrayForEach(m, c->messages) {
        cJSON *content = cJSON_GetObjectItem(m, "content");
        if (!cJSON_IsArray(content)) continue;
        cJSON_ArrayForEach(part, content) {
            cJSON *t = cJSON_GetObjectItem(part, "type"), *p = cJSON_GetObjectItem(part, "image");
            if (!cJSON_IsString(t) || strcmp(t->valuestring, "image") || !cJSON_IsString(p)) continue;
            if (n == CLI_CHAT_MAX_IMAGES) return -1;
            paths[n++] = p->valuestring;
        }
    }
    return n;
}

/* Drops the oldest non-system messages until the prompt plus a reply fit. */
static void fit_context(chat_state *c) {
    long room = c->max_tokens < 0 || c->max_tokens > mllm_session_n_ctx(c->s) / 2 ? mllm_session_n_ctx(c->s) / 4
                                                                                  : c->max_tokens;
    long limit = mllm_session_n_ctx(c->s) - room;
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
    if (c->image) { /* as transformers' processors take it: the image part, then the text */
        cJSON *parts = cJSON_AddArrayToObject(msg, "content");
        cJSON *pi = cJSON_CreateObject(), *pt = cJSON_CreateObject();
        cJSON_AddStringToObject(pi, "type", "image");
        cJSON_AddStringToObject(pi, "image", c->image);
        cJSON_AddStringToObject(pt, "type", "text");
        cJSON_AddStringToObject(pt, "text", text);
        cJSON_AddItemToArray(parts, pi);
        cJSON_AddItemToArray(parts, pt);
        free(c->image);
        c->image = NULL;
    } else {
        cJSON_AddStringToObject(msg, "content", text);
    }
    cJSON_AddItemToArray(c->messages, msg);
    fit_context(c);
    reply r = {.ids = c->ids_out};
    size_t reused = 0, n = 0;
    mllm_timings t0 = {.struct_size = sizeof t0}, t1 = {.struct_size = sizeof t1};
    mllm_session_timings(c->s, &t0);
    mllm_status st = MLLM_OK;
    cli_gen_result gr = {0};
    const char *paths[CLI_CHAT_MAX_IMAGES];
    const int n_img = image_paths(c, paths);
    const bool images = n_img != 0 || c->had_images;
    if (images) { /* the history's images, in order, through mllm_chat_prefill */
        char *conv = n_img >= 0 ? conversation_json(c) : NULL;
        if (n_img < 0) fprintf(stderr, "mllm chat: more than %d images in the conversation (/reset)\n", CLI_CHAT_MAX_IMAGES);
        g_generating = 1;
        const int bad = !conv || cli_image_eval(c->s, conv, paths, n_img, "mllm chat", &reused);
        g_generating = 0;
        free(conv);
        if (bad) {
            cJSON_DeleteItemFromArray(c->messages, cJSON_GetArraySize(c->messages) - 1);
            return 1;
        }
        c->had_images = n_img > 0;
    }
    if ((st = mllm_think_filter_new(c->show_think, &r.think)) != MLLM_OK) {
        cJSON_DeleteItemFromArray(c->messages, cJSON_GetArraySize(c->messages) - 1);
        return cli_fail("chat failed", st);
    }
    /* the ids: what a context shift keeps (and the prompt, without images) */
    int32_t *ids = conversation_ids(c, c->messages, true, &n, &st);
    if (ids) {
        g_generating = 1;
        if (!images) st = mllm_session_sync(c->s, ids, n, &reused);
        cli_gen_opts go = {.max_tokens = c->max_tokens, .context_shift = c->context_shift,
                           .n_keep = system_tokens(c, ids, n)};
        if (st == MLLM_OK) st = cli_generate(c->s, &c->smp, &go, on_piece, &r, &gr);
        g_generating = 0;
        free(ids);
    }
    flush_visible(&r, 1);
    mllm_think_filter_free(r.think);
    printf("\n");
    if (c->ids_out) { fprintf(c->ids_out, "\n"); fflush(c->ids_out); }
    mllm_session_timings(c->s, &t1);
    if (st != MLLM_OK && st != MLLM_ERR_CANCELLED) {
        cli_fail("chat failed", st);
        cJSON_DeleteItemFromArray(c->messages, cJSON_GetArraySize(c->messages) - 1);
        free(r.buf);
        return 1;
    }
    if (gr.context_full) fprintf(stderr, "[context full: reply cut; -c for a larger context, --context-shift to go on]\n");
    if (gr.n_shifts) fprintf(stderr, "[context shifted %d times during this reply]\n", gr.n_shifts);
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
    double tps = t1.gen_ms - t0.gen_ms > 0 ? gen * 1e3 / (t1.gen_ms - t0.gen_ms) : 0.0;
    if (c->verbose) {
        fprintf(stderr, "[turn %ld: prompt tokens reused %zu, computed %ld; generated %ld; %.1f tokens/s", c->turns,
                reused, computed, gen, tps);
        cli_spec_report(c->s); /* since the start of the chat */
        fprintf(stderr, "]\n");
    }
    else
        fprintf(stderr, "[%ld tokens, %.1f tokens/s]\n", gen, tps);
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
        if (!cJSON_IsString(r) || !(cJSON_IsString(t) || cJSON_IsArray(t))) ok = 0;
    }
    if (!ok) { fprintf(stderr, "'%s' is not a JSON array of {role, content} messages\n", path); cJSON_Delete(a); return 0; }
    cJSON_Delete(c->messages);
    c->messages = a;
    printf("loaded %d messages from %s\n", cJSON_GetArraySize(a), path);
    return 1;
}

static void attach_image(chat_state *c, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot read image '%s'\n", path);
        return;
    }
    fclose(f);
    free(c->image);
    c->image = strdup(path);
    printf("image %s attached to the next message\n", path);
}

static void help(void) {
    printf("/reset  clear the history (keeps the system prompt)\n/save FILE  write the history as JSON\n"
           "/load FILE  read a history\n/image PATH  attach an image to the next message\n/stats  token counts\n/bye, /exit  quit\n/help  this list\n"
           "A line ending in \\ continues. Ctrl-C stops a reply, Ctrl-D quits.\n");
}

/* One physical line without its newline (malloc'd), NULL at EOF. On a
   terminal with libedit: line editing and history. */
static char *read_line(int tty, const char *prompt) {
#ifdef MLLM_HAVE_LIBEDIT
    if (tty) {
        char *l = readline(prompt);
        if (l && *l) add_history(l);
        return l;
    }
#endif
    if (tty) { fputs(prompt, stdout); fflush(stdout); }
    size_t cap = 256, len = 0;
    char *buf = malloc(cap);
    int ch;
    while (buf && (ch = getchar()) != EOF && ch != '\n') {
        if (len + 2 > cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) { free(buf); return NULL; }
            buf = nb;
        }
        buf[len++] = (char)ch;
    }
    if (!buf || (ch == EOF && len == 0)) { free(buf); return NULL; }
    buf[len] = 0;
    return buf;
}

/* One input (lines joined while they end in a backslash); NULL at EOF. */
static char *read_input(int tty) {
    size_t cap = 1024, len = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    buf[0] = 0;
    for (int first = 1;; first = 0) {
        char *line = read_line(tty, first ? "> " : ". ");
        if (!line) {
            if (len == 0) { free(buf); return NULL; }
            break;
        }
        size_t n = strlen(line);
        int cont = 0;
        if (n && line[n - 1] == '\r') line[--n] = 0;
        if (n && line[n - 1] == '\\') { line[--n] = 0; cont = 1; }
        if (len + n + 2 > cap) {
            cap = (len + n + 2) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) { free(buf); free(line); return NULL; }
            buf = nb;
        }
        memcpy(buf + len, line, n);
        free(line);
        len += n;
        if (cont) buf[len++] = '\n';
        buf[len] = 0;
        if (!cont) break;
    }
    return buf;
}

int cmd_chat(int argc, char **argv) {
    const char *model = NULL, *tok = NULL, *tmpl = NULL, *mmproj = NULL, *ids_path = NULL;
    bool exact = false;
    int kv_type = MLLM_KV_CONTIGUOUS;
    chat_state c = {.think = -1};
    long n_predict = 512, threads = 0, ctx = 0, top_k = 40, seed = -1;
    double temp = 0.8, top_p = 0.95, min_p = 0.05, rpen = 1.0;
    cli_spec_opts so;
    cli_spec_defaults(&so);
    cli_backend_opts bo;
    cli_backend_defaults(&bo);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int sa = cli_spec_arg(&so, argc, argv, &i);
        if (sa < 0) return 2;
        if (sa > 0) continue;
        int ba = cli_backend_arg(&bo, argc, argv, &i);
        if (ba < 0) return 2;
        if (ba > 0) continue;
#define VAL() do { if (!(v = cli_value(argc, argv, &i))) return 2; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { chat_usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { VAL(); model = v; }
        else if (!strcmp(a, "--system")) { VAL(); c.system = v; }
        else if (!strcmp(a, "--chat-template")) { VAL(); tmpl = v; }
        else if (!strcmp(a, "--tokenizer")) { VAL(); tok = v; }
        else if (!strcmp(a, "--mmproj")) { VAL(); mmproj = v; }
        else if (!strcmp(a, "--ids-out")) { VAL(); ids_path = v; }
        else if (!strcmp(a, "--think")) {
            VAL();
            if (!strcmp(v, "on")) c.think = 1;
            else if (!strcmp(v, "off")) c.think = 0;
            else { fprintf(stderr, "mllm chat: --think expects on or off\n"); return 2; }
        }
        else if (!strcmp(a, "--show-think")) c.show_think = 1;
        else if (!strcmp(a, "--verbose")) c.verbose = 1;
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) {
            VAL();
            if (!cli_int(a, v, -1, 1 << 20, &n_predict)) return 2;
            if (!n_predict) { fprintf(stderr, "mllm chat: -n 0 would give empty replies\n"); return 2; }
        }
        else if (!strcmp(a, "--context-shift")) c.context_shift = true;
        else if (!strcmp(a, "--exact")) exact = true;
        else if (!strcmp(a, "--kv-type")) { VAL(); if (!cli_kv_type(a, v, &kv_type)) return 2; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { VAL(); if (!cli_int(a, v, 1, 1024, &threads)) return 2; }
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) { VAL(); if (!cli_int(a, v, 16, 1 << 20, &ctx)) return 2; }
        else if (!strcmp(a, "--temp")) { VAL(); if (!cli_float(a, v, 0, 100, &temp)) return 2; }
        else if (!strcmp(a, "--top-k")) { VAL(); if (!cli_int(a, v, 0, 1 << 30, &top_k)) return 2; }
        else if (!strcmp(a, "--top-p")) { VAL(); if (!cli_float(a, v, 1e-6, 1, &top_p)) return 2; }
        else if (!strcmp(a, "--min-p")) { VAL(); if (!cli_float(a, v, 0, 1, &min_p)) return 2; }
        else if (!strcmp(a, "--repeat-penalty")) { VAL(); if (!cli_float(a, v, 1e-3, 100, &rpen)) return 2; }
        else if (!strcmp(a, "--seed")) { VAL(); if (!cli_int(a, v, -1, LONG_MAX, &seed)) return 2; }
        else { fprintf(stderr, "mllm chat: unknown option '%s' (try mllm chat --help)\n", a); return 2; }
#undef VAL
    }
    if (!model) { fprintf(stderr, "mllm chat: -m MODEL is required\n"); return 2; }
    if (ids_path && !(c.ids_out = fopen(ids_path, "w"))) { fprintf(stderr, "mllm chat: cannot write '%s'\n", ids_path); return 1; }
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = (int)threads;
    lp.tokenizer_path = tok;
    lp.exact = exact;
    cli_backend_apply(&bo, &lp, "mllm chat");
    lp.chat_template = tmpl;
    lp.mmproj = mmproj;
    mllm_status st = mllm_model_load(model, &lp, &c.m);
    if (st != MLLM_OK) return cli_fail("cannot load model", st);
    cli_backend_report("mllm chat");
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = (int)ctx;
    sp.kv_type = kv_type;
    if ((st = mllm_session_new(c.m, &sp, &c.s)) != MLLM_OK) { mllm_model_free(c.m); return cli_fail("cannot create session", st); }
    mllm_model *dm = NULL;
    if (cli_spec_load(&so, (int)threads, &dm) != MLLM_OK || cli_spec_apply(&so, dm, c.s) != MLLM_OK) {
        mllm_session_free(c.s);
        mllm_model_free(dm);
        mllm_model_free(c.m);
        return 1;
    }
    mllm_sampling_default(&c.smp);
    c.smp.temperature = (float)temp;
    c.smp.top_k = (int)top_k;
    c.smp.top_p = (float)top_p;
    c.smp.min_p = (float)min_p;
    c.smp.repeat_penalty = (float)rpen;
    c.max_tokens = n_predict;
    c.smp.seed = seed < 0 ? cli_random_seed() : (uint64_t)seed;
    reset_history(&c);
    g_session = c.s;
#ifndef __wasi__ /* WASI delivers no signals: Ctrl-C ends the runtime */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
#endif
    int tty = isatty(0);
    /* One line: what is loaded and how. */
    char info[4096];
    const char *arch = "?";
    cJSON *ij = mllm_model_info_json(c.m, info, sizeof info, NULL) == MLLM_OK ? cJSON_Parse(info) : NULL;
    cJSON *ja = ij ? cJSON_GetObjectItem(ij, "arch") : NULL;
    if (cJSON_IsString(ja)) arch = ja->valuestring;
    const char *slash = strrchr(model, '/');
    fprintf(tty ? stdout : stderr, "mllm chat: %s (%s) | context %d tokens | template: %s | seed %llu | /help, /bye\n",
            slash && slash[1] ? slash + 1 : model, arch, mllm_session_n_ctx(c.s), tmpl ? tmpl : "the model's own",
            (unsigned long long)c.smp.seed);
    cJSON_Delete(ij);
    char *in;
    while ((in = read_input(tty)) != NULL) {
        if (!strcmp(in, "/bye") || !strcmp(in, "/exit")) { free(in); break; }
        else if (!strcmp(in, "/reset")) { reset_history(&c); printf("history cleared\n"); }
        else if (!strcmp(in, "/stats")) stats(&c);
        else if (!strcmp(in, "/help")) help();
        else if (!strncmp(in, "/save ", 6)) save(&c, in + 6);
        else if (!strncmp(in, "/load ", 6)) load(&c, in + 6);
        else if (!strncmp(in, "/image ", 7)) attach_image(&c, in + 7);
        else if (in[0] == '/') printf("unknown command '%s' (/help lists them)\n", in);
        else if (in[0]) user_turn(&c, in);
        free(in);
    }
    if (tty) printf("\n");
    g_session = NULL;
    free(c.image);
    if (c.ids_out) fclose(c.ids_out);
    cJSON_Delete(c.messages);
    mllm_session_free(c.s);
    mllm_model_free(dm);
    mllm_model_free(c.m);
    return 0;
}
