/* chat: a multi-turn conversation with the model's chat template.
 *
 *     chat MODEL MESSAGE [MESSAGE ...]     one user turn per MESSAGE
 *     chat --render MODEL MESSAGE          print the templated prompt only
 *
 * Each turn appends the user message to the conversation (OpenAI-style
 * JSON messages), calls mllm_chat() on the same session and appends the
 * reply as an assistant message. Because the session keeps its KV cache,
 * turn 2 and later only compute the tokens after the shared prefix; stderr
 * shows how many prompt tokens each turn reused. Greedy sampling.
 *
 * Needs mllm_chat / mllm_chat_render (mllm ABI 1 with chat support). */
#include <mllm/mllm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPLY_MAX_TOKENS 48

/* A growable byte string. */
typedef struct {
    char *p;
    size_t n, cap;
} str;

static int str_add(str *s, const char *b, size_t n) {
    if (s->n + n + 1 > s->cap) {
        size_t cap = (s->n + n + 1) * 2;
        char *p = realloc(s->p, cap);
        if (!p) return -1;
        s->p = p;
        s->cap = cap;
    }
    memcpy(s->p + s->n, b, n);
    s->n += n;
    s->p[s->n] = 0;
    return 0;
}

/* Appends b as a JSON string literal (quotes, backslashes and control
   characters escaped; other bytes, UTF-8 included, as they are). */
static int str_add_json(str *s, const char *b, size_t n) {
    int err = str_add(s, "\"", 1);
    for (size_t i = 0; i < n && !err; i++) {
        unsigned char c = (unsigned char)b[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            err = str_add(s, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            err = str_add(s, esc, 6);
        } else {
            err = str_add(s, (const char *)&b[i], 1);
        }
    }
    return err ? err : str_add(s, "\"", 1);
}

/* Appends {"role": ROLE, "content": TEXT} to the JSON array in conv
   (which holds "[" and zero or more messages, without the closing "]"). */
static int add_message(str *conv, const char *role, const char *text, size_t len) {
    const char *open = conv->n > 1 ? ",{\"role\":" : "{\"role\":";
    int err = str_add(conv, open, strlen(open));
    if (!err) err = str_add_json(conv, role, strlen(role));
    if (!err) err = str_add(conv, ",\"content\":", strlen(",\"content\":"));
    if (!err) err = str_add_json(conv, text, len);
    return err ? err : str_add(conv, "}", 1);
}

/* The conversation as a complete JSON array (conv plus "]"). */
static char *closed(const str *conv) {
    char *j = malloc(conv->n + 2);
    if (j) {
        memcpy(j, conv->p, conv->n);
        memcpy(j + conv->n, "]", 2);
    }
    return j;
}

/* Streams the reply to stdout and keeps it for the next turn. */
static int on_token(void *user, int32_t id, const char *piece, size_t len) {
    (void)id;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return str_add(user, piece, len); /* out of memory: stop */
}

static int fail(const char *what, mllm_status st) {
    fprintf(stderr, "chat: %s: %s: %s\n", what, mllm_status_str(st), mllm_last_error());
    return 1;
}

/* --render: the prompt text the template makes of one user message. */
static int render(mllm_model *model, const str *conv) {
    char *json = closed(conv);
    size_t need = 0;
    mllm_status st = json ? mllm_chat_render(model, json, NULL, 0, &need) : MLLM_ERR_NOMEM;
    char *text = st == MLLM_ERR_BUFFER_TOO_SMALL ? malloc(need) : NULL;
    if (text) st = mllm_chat_render(model, json, text, need, &need);
    if (st == MLLM_OK) fputs(text, stdout);
    free(text);
    free(json);
    return st == MLLM_OK ? 0 : fail("cannot render the conversation", st);
}

int main(int argc, char **argv) {
    int only_render = argc > 1 && strcmp(argv[1], "--render") == 0;
    int first = only_render ? 2 : 1;
    if (argc < first + 2) {
        fprintf(stderr, "usage: %s [--render] MODEL MESSAGE [MESSAGE ...]\n", argv[0]);
        return 2;
    }
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    mllm_model *model = NULL;
    mllm_status st = mllm_model_load(argv[first], &lp, &model);
    if (st != MLLM_OK) return fail("cannot load the model", st);

    str conv = {0}, reply = {0};
    if (str_add(&conv, "[", 1) || add_message(&conv, "user", argv[first + 1], strlen(argv[first + 1]))) {
        mllm_model_free(model);
        fprintf(stderr, "chat: out of memory\n");
        return 1;
    }
    if (only_render) {
        int rc = render(model, &conv);
        free(conv.p);
        mllm_model_free(model);
        return rc;
    }

    mllm_session_params sp;
    mllm_session_default_params(&sp);
    mllm_session *session = NULL;
    st = mllm_session_new(model, &sp, &session);
    mllm_sampling smp;
    mllm_sampling_default(&smp);
    smp.temperature = 0.0f;
    smp.max_tokens = REPLY_MAX_TOKENS;

    for (int turn = first + 1; st == MLLM_OK && turn < argc; turn++) {
        if (turn > first + 1 && add_message(&conv, "user", argv[turn], strlen(argv[turn]))) {
            st = MLLM_ERR_NOMEM;
            break;
        }
        char *json = closed(&conv);
        if (!json) {
            st = MLLM_ERR_NOMEM;
            break;
        }
        reply.n = 0;
        size_t reused = 0;
        printf("assistant: ");
        st = mllm_chat(session, json, &smp, on_token, &reply, &reused);
        printf("\n");
        free(json);
        if (st != MLLM_OK) break;
        fprintf(stderr, "turn %d: %zu prompt tokens reused, %d in the session\n", turn - first,
                reused, mllm_session_n_past(session));
        if (add_message(&conv, "assistant", reply.p ? reply.p : "", reply.n)) st = MLLM_ERR_NOMEM;
    }
    int rc = st == MLLM_OK ? 0 : fail("chat failed", st);
    free(conv.p);
    free(reply.p);
    mllm_session_free(session);
    mllm_model_free(model);
    return rc;
}
