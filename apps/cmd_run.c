/* mllm run: prompt in, streamed text out, timings on stderr. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "cli.h"

#define RUN_MAX_LOGIT_BIAS 64

static void run_usage(FILE *f) {
    fprintf(f,
            "usage: mllm run -m MODEL -p PROMPT [options]\n"
            "\n"
            "When the model has a chat template and the prompt has no special tokens,\n"
            "the prompt is sent as a user message through the template and only the\n"
            "answer is printed (as llama-cli and ollama do). Otherwise, or with --raw,\n"
            "the prompt is continued as text: it is printed, then the continuation.\n"
            "\n"
            "  -m, --model PATH      GGUF file, Hugging Face folder, or llama2.c .bin\n"
            "  -p, --prompt TEXT     the prompt (special tokens such as <|im_start|> are parsed)\n"
            "  -f, --file PATH       read the prompt from a file instead\n"
            "      --raw             no chat template: continue the prompt text as it is\n"
            "      --system TEXT     a system message before the prompt (needs a chat template)\n"
            "  -n, --n-predict N     tokens to generate (default 128; -1: until the end of the\n"
            "                        answer or the context)\n"
            "  -t, --threads N       compute threads (default: all cores)\n"
            "      --plugin FILE     load an op plugin (a shared object exporting mllm_plugin_init;\n"
            "                        repeatable; MLLM_PLUGINS=a.so:b.so too). Its ops are then\n"
            "                        available to graphs; no model calls plugin ops by itself yet\n"
            "      --exact           f32 activations in quantized matmuls: the float32 answer on the\n"
            "                        file's weights (slower; docs/EXACTNESS.md)\n"
            "  -c, --ctx-size N      context length in tokens (default: min(model, 4096))\n"
            CLI_KV_TYPE_USAGE
            "      --context-shift   when the context fills, drop the oldest half of it (after\n"
            "                        the system prompt) and keep generating; without it, the\n"
            "                        generation stops there (exit 0, with a note on stderr)\n"
            "      --temp T          temperature; 0 = greedy (default 0.8)\n"
            "      --top-k K         keep the K most likely tokens; 0 = off (default 40)\n"
            "      --top-p P         nucleus sampling; 1 = off (default 0.95)\n"
            "      --min-p P         drop tokens below P x the best one; 0 = off (default 0.05)\n"
            "      --repeat-penalty R  penalise recent tokens; 1 = off (default 1)\n"
            "      --repeat-last-n N   how many recent tokens the penalties see (default 64)\n"
            "      --presence-penalty P   subtract P from the logit of each token among the\n"
            "                        recent ones; 0 = off (default 0)\n"
            "      --frequency-penalty F  subtract F x its count there; 0 = off (default 0)\n"
            "      --logit-bias ID=BIAS  add BIAS to token ID's logit (-100 bans it, +100\n"
            "                        forces it); repeatable, up to 64\n"
            "      --seed S          random seed; same seed, same output (default -1: a random\n"
            "                        one, printed at the end)\n"
            "      --ignore-eos      keep generating past the end-of-sequence token\n"
            "      --grammar FILE    constrain the output to a GBNF grammar (llama.cpp's format,\n"
            "                        root rule: root); it ends when the grammar is complete\n"
            "      --json-schema FILE  constrain the output to JSON that validates against\n"
            "                        this JSON Schema (see docs/grammar.md for what is supported)\n"
            "%s%s"
            "      --no-bos          do not add BOS even if the model asks for it\n"
            "      --tokenizer PATH  tokenizer for llama2.c checkpoints (tok512.bin)\n"
            "      --logits-out FILE write the last prompt position's logits (raw LE f32)\n"
            "      --ids-out FILE    write prompt and generated token ids, one per line\n"
            "      --image FILE      an image (PNG, JPEG, BMP, GIF, WebP) for a Qwen2.5-VL or\n"
            "                        SmolVLM / Idefics3 model:\n"
            "                        placed before the prompt in the chat template's user turn\n"
            "                        (docs/vision.md)\n"
            "      --mmproj FILE     the vision tower of a GGUF text model (llama.cpp's mmproj GGUF)\n"
            "  -h, --help            this help\n"
            "\n"
            "At the end, load time, prompt and generation tokens/s and peak RSS go to stderr.\n",
            cli_spec_usage, cli_backend_usage);
}

/* --logit-bias ID=BIAS; the id is checked against the vocabulary when
   generation starts. */
static bool parse_bias(const char *v, int32_t *ids, float *bias, int *n) {
    const char *eq = strchr(v, '=');
    char id[32];
    long tok;
    double b;
    if (*n >= RUN_MAX_LOGIT_BIAS) {
        fprintf(stderr, "mllm run: at most %d --logit-bias\n", RUN_MAX_LOGIT_BIAS);
        return false;
    }
    if (!eq || (size_t)(eq - v) >= sizeof id) {
        fprintf(stderr, "mllm run: --logit-bias wants ID=BIAS, got '%s'\n", v);
        return false;
    }
    memcpy(id, v, (size_t)(eq - v));
    id[eq - v] = 0;
    if (!cli_int("--logit-bias", id, 0, INT32_MAX, &tok) || !cli_float("--logit-bias", eq + 1, -100, 100, &b))
        return false;
    ids[*n] = (int32_t)tok;
    bias[(*n)++] = (float)b;
    return true;
}

typedef struct { FILE *ids; } run_ctx;

/* Whether the text holds a control token (<|im_start|>, <s> ...): then it
   is a hand-made prompt, to be taken as it is. */
static bool has_control_token(const mllm_model *m, const int32_t *ids, size_t n) {
    /* The BOS that tokenizing added is not the user's. */
    for (size_t i = n && ids[0] == mllm_model_bos(m) ? 1 : 0; i < n; i++) {
        char a[64], b[64];
        size_t la = 0, lb = 0;
        /* A control token decodes to nothing when special tokens are skipped. */
        if (mllm_detokenize(m, &ids[i], 1, 1, a, sizeof a, &la) == MLLM_OK && la == 0 &&
            mllm_detokenize(m, &ids[i], 1, 0, b, sizeof b, &lb) == MLLM_OK && lb > 0)
            return true;
    }
    return false;
}

/* {"messages": [{"role": "system", ...}, {"role": "user", "content": prompt}],
   "add_generation_prompt": prompt != NULL} as JSON. */
static char *conversation(const char *system, const char *prompt, bool image) {
    cJSON *a = cJSON_CreateArray();
    if (system) {
        cJSON *sm = cJSON_CreateObject();
        cJSON_AddStringToObject(sm, "role", "system");
        cJSON_AddStringToObject(sm, "content", system);
        cJSON_AddItemToArray(a, sm);
    }
    if (prompt) {
        cJSON *u = cJSON_CreateObject();
        cJSON_AddStringToObject(u, "role", "user");
        if (image) { /* content parts, as OpenAI's and transformers' processors give them: the image, then the text */
            cJSON *parts = cJSON_CreateArray(), *pi = cJSON_CreateObject(), *pt = cJSON_CreateObject();
            cJSON_AddStringToObject(pi, "type", "image");
            cJSON_AddStringToObject(pt, "type", "text");
            cJSON_AddStringToObject(pt, "text", prompt);
            cJSON_AddItemToArray(parts, pi);
            cJSON_AddItemToArray(parts, pt);
            cJSON_AddItemToObject(u, "content", parts);
        } else {
            cJSON_AddStringToObject(u, "content", prompt);
        }
        cJSON_AddItemToArray(a, u);
    }
    /* The system turn alone (no prompt) is rendered without the assistant's
       opening, so it is a prefix of the whole conversation's tokens. */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "messages", a);
    cJSON_AddBoolToObject(o, "add_generation_prompt", prompt != NULL);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* The conversation's token ids (malloc'd), or NULL with *st set. */
static int32_t *chat_ids(const mllm_model *m, const char *conv, size_t *n, mllm_status *st) {
    *st = mllm_chat_tokenize(m, conv, NULL, 0, n);
    if (*st != MLLM_ERR_BUFFER_TOO_SMALL) return NULL;
    int32_t *ids = malloc(*n * sizeof *ids);
    *st = ids ? mllm_chat_tokenize(m, conv, ids, *n, n) : MLLM_ERR_NOMEM;
    if (*st != MLLM_OK) { free(ids); return NULL; }
    return ids;
}

static int on_token(void *user, int32_t id, const char *piece, size_t len) {
    run_ctx *rc = user;
    if (len) fwrite(piece, 1, len, stdout);
    fflush(stdout);
    if (rc->ids && id >= 0) fprintf(rc->ids, "%d\n", id);
    return 0;
}

int cmd_run(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *pfile = NULL, *tok = NULL, *logits_out = NULL, *ids_out = NULL;
    bool exact = false;
    int kv_type = MLLM_KV_CONTIGUOUS;
    const char *system = NULL, *grammar_file = NULL, *schema_file = NULL, *image = NULL, *mmproj = NULL;
    long n_predict = 128, threads = 0, ctx = 0, top_k = 40, rlast = 64, seed = -1;
    double temp = 0.8, top_p = 0.95, min_p = 0.05, rpen = 1.0, presence = 0, frequency = 0;
    int32_t bias_ids[RUN_MAX_LOGIT_BIAS];
    float bias[RUN_MAX_LOGIT_BIAS];
    int n_bias = 0;
    bool ignore_eos = false, no_bos = false, raw = false, shift = false;
    cli_spec_opts so;
    cli_spec_defaults(&so);
    cli_backend_opts bo;
    cli_backend_defaults(&bo);
    if (mllm_plugins_load_env() != MLLM_OK) {
        fprintf(stderr, "mllm run: %s\n", mllm_last_error());
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int sa = cli_spec_arg(&so, argc, argv, &i);
        if (sa < 0) return 2;
        if (sa > 0) continue;
        int ba = cli_backend_arg(&bo, argc, argv, &i);
        if (ba < 0) return 2;
        if (ba > 0) continue;
#define VAL() do { if (!(v = cli_value(argc, argv, &i))) return 2; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { run_usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { VAL(); model = v; }
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) { VAL(); prompt = v; }
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) { VAL(); pfile = v; }
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) { VAL(); if (!cli_int(a, v, -1, 1 << 24, &n_predict)) return 2; }
        else if (!strcmp(a, "--exact")) exact = true;
        else if (!strcmp(a, "--plugin")) {
            VAL();
            if (mllm_plugin_load(v) != MLLM_OK) { fprintf(stderr, "mllm run: %s\n", mllm_last_error()); return 1; }
        }
        else if (!strcmp(a, "--kv-type")) { VAL(); if (!cli_kv_type(a, v, &kv_type)) return 2; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { VAL(); if (!cli_int(a, v, 1, 1024, &threads)) return 2; }
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) { VAL(); if (!cli_int(a, v, 1, 1 << 20, &ctx)) return 2; }
        else if (!strcmp(a, "--temp")) { VAL(); if (!cli_float(a, v, 0, 100, &temp)) return 2; }
        else if (!strcmp(a, "--top-k")) { VAL(); if (!cli_int(a, v, 0, 1 << 30, &top_k)) return 2; }
        else if (!strcmp(a, "--top-p")) { VAL(); if (!cli_float(a, v, 1e-6, 1, &top_p)) return 2; }
        else if (!strcmp(a, "--min-p")) { VAL(); if (!cli_float(a, v, 0, 1, &min_p)) return 2; }
        else if (!strcmp(a, "--repeat-penalty")) { VAL(); if (!cli_float(a, v, 1e-3, 100, &rpen)) return 2; }
        else if (!strcmp(a, "--repeat-last-n")) { VAL(); if (!cli_int(a, v, 0, 1 << 20, &rlast)) return 2; }
        else if (!strcmp(a, "--seed")) { VAL(); if (!cli_int(a, v, -1, LONG_MAX, &seed)) return 2; }
        else if (!strcmp(a, "--presence-penalty")) { VAL(); if (!cli_float(a, v, -100, 100, &presence)) return 2; }
        else if (!strcmp(a, "--frequency-penalty")) { VAL(); if (!cli_float(a, v, -100, 100, &frequency)) return 2; }
        else if (!strcmp(a, "--logit-bias")) { VAL(); if (!parse_bias(v, bias_ids, bias, &n_bias)) return 2; }
        else if (!strcmp(a, "--system")) { VAL(); system = v; }
        else if (!strcmp(a, "--grammar")) { VAL(); grammar_file = v; }
        else if (!strcmp(a, "--json-schema")) { VAL(); schema_file = v; }
        else if (!strcmp(a, "--raw")) raw = true;
        else if (!strcmp(a, "--context-shift")) shift = true;
        else if (!strcmp(a, "--tokenizer")) { VAL(); tok = v; }
        else if (!strcmp(a, "--logits-out")) { VAL(); logits_out = v; }
        else if (!strcmp(a, "--ids-out")) { VAL(); ids_out = v; }
        else if (!strcmp(a, "--ignore-eos")) ignore_eos = true;
        else if (!strcmp(a, "--no-bos")) no_bos = true;
        else if (!strcmp(a, "--image")) { VAL(); image = v; }
        else if (!strcmp(a, "--mmproj")) { VAL(); mmproj = v; }
        else { fprintf(stderr, "mllm run: unknown option '%s' (try mllm run --help)\n", a); return 2; }
#undef VAL
    }
    if (image && raw) { fprintf(stderr, "mllm run: --image goes in the chat template's user turn, and --raw turns it off\n"); return 2; }
    if (!model) { fprintf(stderr, "mllm run: -m MODEL is required (try mllm run --help)\n"); return 2; }
    if (!prompt && !pfile) { fprintf(stderr, "mllm run: -p PROMPT or -f FILE is required\n"); return 2; }
    if (raw && system) { fprintf(stderr, "mllm run: --system needs the chat template, and --raw turns it off\n"); return 2; }
    if (grammar_file && schema_file) { fprintf(stderr, "mllm run: give --grammar or --json-schema, not both\n"); return 2; }
    /* The grammar first: a bad one fails before the model loads. */
    mllm_grammar *grammar = NULL;
    if (grammar_file || schema_file) {
        const char *gf = grammar_file ? grammar_file : schema_file;
        char *gtext = cli_read_file(gf, NULL);
        if (!gtext) return 1;
        mllm_status gst = grammar_file ? mllm_grammar_new(gtext, NULL, &grammar) : mllm_grammar_from_json_schema(gtext, &grammar);
        free(gtext);
        if (gst != MLLM_OK) { fprintf(stderr, "mllm run: %s: %s\n", gf, mllm_last_error()); return 1; }
    }
    char *ptext = pfile ? cli_read_file(pfile, NULL) : NULL;
    if (pfile && !ptext) { mllm_grammar_free(grammar); return 1; }
    if (!ptext) ptext = strdup(prompt);

    int rc = 1;
    mllm_model *m = NULL, *dm = NULL;
    mllm_session *s = NULL;
    int32_t *ids = NULL;
    char *image_conv = NULL;
    run_ctx rctx = {NULL};
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = (int)threads;
    lp.tokenizer_path = tok;
    lp.exact = exact;
    cli_backend_apply(&bo, &lp, "mllm run");
    lp.mmproj = mmproj;
    mllm_status st = mllm_model_load(model, &lp, &m);
    if (st != MLLM_OK) { cli_fail("cannot load model", st); goto done; }
    cli_backend_report("mllm run");
    int32_t n_train = mllm_model_n_ctx_train(m);
    if (ctx > 0 && n_train > 0 && ctx > n_train)
        fprintf(stderr, "mllm run: warning: -c %ld is more than the %d tokens this model was trained on; past that "
                        "its output degrades\n", ctx, (int)n_train);
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = (int)ctx;
    sp.kv_type = kv_type;
    if ((st = mllm_session_new(m, &sp, &s)) != MLLM_OK) { cli_fail("cannot create session", st); goto done; }
    if (cli_spec_load(&so, (int)threads, &dm) != MLLM_OK || cli_spec_apply(&so, dm, s) != MLLM_OK) goto done;

    size_t n = 0, len = strlen(ptext), n_keep = 0;
    st = mllm_tokenize(m, ptext, len, !no_bos, NULL, 0, &n);
    if (st != MLLM_OK && st != MLLM_ERR_BUFFER_TOO_SMALL) { cli_fail("cannot tokenize", st); goto done; }
    ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids || (st = mllm_tokenize(m, ptext, len, !no_bos, ids, n, &n)) != MLLM_OK) { cli_fail("cannot tokenize", st); goto done; }
    /* Chat mode: the model has a template and the prompt is plain text. */
    bool chat = false;
    if (!raw && (image || !has_control_token(m, ids, n))) {
        /* with --image the chat template places the image (Qwen2-VL's:
           <|vision_start|><|image_pad|><|vision_end|> before the text) */
        char *conv = conversation(system, ptext, image != NULL);
        size_t cn = 0;
        int32_t *cids = conv ? chat_ids(m, conv, &cn, &st) : NULL;
        if (image && cids) image_conv = conv; /* mllm_chat_prefill renders it again, with the image */
        else free(conv);
        if (cids) {
            free(ids);
            ids = cids;
            n = cn;
            chat = true;
            /* What a context shift keeps: the system turn. */
            char *sys = system ? conversation(system, NULL, false) : NULL;
            size_t sn = 0;
            mllm_status sst;
            int32_t *sids = sys ? chat_ids(m, sys, &sn, &sst) : NULL;
            if (sids && sn <= n && !memcmp(sids, ids, sn * sizeof *ids)) n_keep = sn;
            free(sids);
            free(sys);
        } else if (st != MLLM_ERR_UNSUPPORTED) {
            cli_fail("cannot apply the chat template (--raw continues the text as it is)", st);
            goto done;
        }
    }
    if (!chat && image) { fprintf(stderr, "mllm run: --image needs the model's chat template, and it has none\n"); goto done; }
    if (!chat && system) {
        fprintf(stderr, "mllm run: --system needs a chat template, and %s\n",
                raw ? "--raw turns it off" : "this prompt holds special tokens or the model has none");
        goto done;
    }
    if (!chat && n && !no_bos && ids[0] == mllm_model_bos(m)) n_keep = 1;
    if (n == 0) { fprintf(stderr, "mllm run: the prompt has no tokens (empty prompt and no BOS)\n"); goto done; }
    if (ids_out && !(rctx.ids = fopen(ids_out, "w"))) { fprintf(stderr, "mllm run: cannot write '%s'\n", ids_out); goto done; }
    for (size_t i = 0; rctx.ids && i < n; i++) fprintf(rctx.ids, "%d\n", ids[i]);

    const double t0 = mllm_time_ms();
    if (image) {
        if (cli_image_eval(s, image_conv, &image, 1, "mllm run", NULL)) goto done;
        n = (size_t)mllm_session_n_past(s);
    } else if ((st = mllm_session_eval(s, ids, n)) != MLLM_OK) {
        if (st == MLLM_ERR_CONTEXT_FULL)
            fprintf(stderr, "mllm run: the prompt is %zu tokens, more than the context of %d (raise -c)\n", n,
                    mllm_session_n_ctx(s));
        else
            cli_fail("prompt evaluation failed", st);
        goto done;
    }
    double prompt_ms = mllm_time_ms() - t0;
    if (logits_out) {
        FILE *lf = fopen(logits_out, "wb");
        size_t nv = (size_t)mllm_model_n_vocab(m);
        if (!lf || fwrite(mllm_session_logits(s), sizeof(float), nv, lf) != nv) {
            fprintf(stderr, "mllm run: cannot write logits to '%s'\n", logits_out);
            if (lf) fclose(lf);
            goto done;
        }
        fclose(lf);
    }
    if (!chat) fwrite(ptext, 1, len, stdout); /* a continuation follows its text; an answer stands alone */
    fflush(stdout);
    mllm_sampling smp;
    mllm_sampling_default(&smp);
    smp.temperature = (float)temp;
    smp.top_k = (int)top_k;
    smp.top_p = (float)top_p;
    smp.min_p = (float)min_p;
    smp.repeat_penalty = (float)rpen;
    smp.repeat_last_n = (int)rlast;
    smp.presence_penalty = (float)presence;
    smp.frequency_penalty = (float)frequency;
    smp.logit_bias_ids = bias_ids;
    smp.logit_bias = bias;
    smp.n_logit_bias = n_bias;
    uint64_t used_seed = seed < 0 ? cli_random_seed() : (uint64_t)seed;
    smp.seed = used_seed;
    smp.ignore_eos = ignore_eos;
    smp.grammar = grammar;
    cli_gen_opts go = {.max_tokens = n_predict, .context_shift = shift, .n_keep = (int)n_keep};
    cli_gen_result gr;
    st = cli_generate(s, &smp, &go, on_token, &rctx, &gr);
    printf("\n");
    if (st != MLLM_OK) { cli_fail("generation failed", st); goto done; }
    if (gr.context_full)
        fprintf(stderr, "mllm run: the context (%d tokens) is full: stopped after %d tokens (finish_reason "
                        "\"length\"); raise -c, or --context-shift to keep going\n", mllm_session_n_ctx(s), gr.n_gen);
    if (gr.n_shifts) fprintf(stderr, "mllm run: the context was shifted %d times\n", gr.n_shifts);
    mllm_timings tm = {.struct_size = sizeof tm};
    mllm_session_timings(s, &tm);
    fprintf(stderr, "\nload: %.1f ms | prompt: %zu tokens, %.1f ms, %.2f tokens/s | generation: %d tokens, %.1f ms, %.2f tokens/s | peak RSS: %.1f MiB",
            tm.load_ms, n, prompt_ms, prompt_ms > 0 ? n * 1e3 / prompt_ms : 0.0, tm.n_gen, tm.gen_ms,
            tm.gen_ms > 0 ? tm.n_gen * 1e3 / tm.gen_ms : 0.0, cli_peak_rss_mib());
    if (grammar)
        fprintf(stderr, " | grammar: %.3f ms per token (%d full masks)", tm.n_gen ? tm.grammar_ms / tm.n_gen : 0.0,
                tm.n_grammar);
    cli_spec_report(s);
    if (seed < 0 && temp > 0) fprintf(stderr, " | seed %llu", (unsigned long long)used_seed);
    fprintf(stderr, "\n");
    rc = 0;
done:
    if (rctx.ids) fclose(rctx.ids);
    free(ids);
    free(ptext);
    free(image_conv);
    mllm_grammar_free(grammar);
    mllm_session_free(s);
    mllm_model_free(dm);
    mllm_model_free(m);
    return rc;
}
