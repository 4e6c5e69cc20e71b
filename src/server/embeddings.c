/* POST /v1/embeddings (OpenAI): `input` a string, an array of strings, an
   array of token ids or an array of such arrays; `encoding_format` float
   (default) or base64 (the little-endian float32 bytes); `dimensions` only
   as the model's own size (no Matryoshka truncation); `model` and `user`
   accepted and not used. Texts longer than the model's limit are truncated
   (as sentence-transformers does); token arrays that long are refused.
   The vectors come from mllm_embed (the model's pooling and
   normalisation), computed by the thread that owns the model's compute
   (tasks.h: the engine loop, or the task worker), one request at a time,
   never by the HTTP thread. */
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "server/internal.h"
#include "server/utf8.h"

#define SRV_MAX_EMBED_INPUTS 2048 /* inputs per request, as OpenAI */

/* One input, as text or as token ids. */
typedef struct {
    const char *text;   /* points into the request JSON, or NULL */
    int32_t *ids;       /* owned, when the input is token ids */
    size_t n_ids;
} embed_input;

static bool is_id_array(const cJSON *a) {
    return cJSON_IsArray(a) && cJSON_GetArraySize(a) > 0 && cJSON_IsNumber(cJSON_GetArrayItem(a, 0));
}

static int parse_ids(const cJSON *a, int32_t n_vocab, embed_input *in, srv_err *e) {
    int n = cJSON_GetArraySize(a);
    if (n > SRV_MAX_TOKENIZE_IDS) return srv_fail(e, 400, NULL, "input", "a token array has more than %d ids", SRV_MAX_TOKENIZE_IDS);
    in->ids = mllm_malloc((size_t)(n ? n : 1) * sizeof *in->ids);
    if (!in->ids) return srv_fail(e, 500, NULL, NULL, "out of memory");
    const cJSON *t;
    cJSON_ArrayForEach(t, a) {
        double d = cJSON_IsNumber(t) ? t->valuedouble : -1;
        if (!cJSON_IsNumber(t) || d < 0 || d >= n_vocab || d != (double)(int32_t)d) /* range before the cast */
            return srv_fail(e, 400, NULL, "input", "every token must be an integer id in [0, %d)", n_vocab);
        in->ids[in->n_ids++] = (int32_t)d;
    }
    return 0;
}

static int parse_text(const cJSON *s, embed_input *in, srv_err *e) {
    if (!srv_utf8_valid(s->valuestring, strlen(s->valuestring)))
        return srv_fail(e, 400, NULL, "input", "'input' is not valid UTF-8");
    in->text = s->valuestring;
    return 0;
}

/* The inputs of `input` into *out (*n of them). */
static int parse_input(const cJSON *input, int32_t n_vocab, embed_input **out, int *n, srv_err *e) {
    *out = NULL;
    *n = 0;
    if (!input) return srv_fail(e, 400, NULL, "input", "'input' is required");
    bool single = cJSON_IsString(input) || is_id_array(input);
    int count = single ? 1 : cJSON_IsArray(input) ? cJSON_GetArraySize(input) : -1;
    if (count < 0)
        return srv_fail(e, 400, NULL, "input", "'input' must be a string, an array of strings, or token ids");
    if (count == 0) return srv_fail(e, 400, NULL, "input", "'input' is an empty array");
    if (count > SRV_MAX_EMBED_INPUTS) return srv_fail(e, 400, NULL, "input", "at most %d inputs", SRV_MAX_EMBED_INPUTS);
    embed_input *in = mllm_calloc((size_t)count, sizeof *in);
    if (!in) return srv_fail(e, 500, NULL, NULL, "out of memory");
    *out = in;
    *n = count;
    if (single) return cJSON_IsString(input) ? parse_text(input, in, e) : parse_ids(input, n_vocab, in, e);
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, input) {
        int rc = cJSON_IsString(it) ? parse_text(it, &in[i], e)
                 : is_id_array(it)  ? parse_ids(it, n_vocab, &in[i], e)
                                    : srv_fail(e, 400, NULL, "input", "input %d is neither a string nor token ids", i);
        if (rc) return rc;
        i++;
    }
    return 0;
}

static void free_inputs(embed_input *in, int n) {
    for (int i = 0; in && i < n; i++) mllm_free(in[i].ids);
    mllm_free(in);
}

static char *base64(const float *v, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const size_t nb = n * sizeof *v;
    unsigned char *b = mllm_malloc(nb ? nb : 1);
    char *o = mllm_malloc((nb + 2) / 3 * 4 + 1);
    if (!b || !o) { mllm_free(b); mllm_free(o); return NULL; }
    for (size_t i = 0; i < n; i++) { /* little-endian float32, whatever the host */
        uint32_t u;
        memcpy(&u, &v[i], 4);
        for (int k = 0; k < 4; k++) b[i * 4 + (size_t)k] = (unsigned char)(u >> (8 * k));
    }
    size_t j = 0;
    for (size_t i = 0; i < nb; i += 3) {
        uint32_t x = (uint32_t)b[i] << 16 | (i + 1 < nb ? (uint32_t)b[i + 1] << 8 : 0) | (i + 2 < nb ? b[i + 2] : 0);
        o[j++] = tab[x >> 18 & 63];
        o[j++] = tab[x >> 12 & 63];
        o[j++] = i + 1 < nb ? tab[x >> 6 & 63] : '=';
        o[j++] = i + 2 < nb ? tab[x & 63] : '=';
    }
    o[j] = 0;
    mllm_free(b);
    return o;
}

static int check_options(const cJSON *root, int32_t E, bool *b64, srv_err *e) {
    static const char *const known[] = {"input", "model", "encoding_format", "dimensions", "user"};
    for (const cJSON *f = root->child; f; f = f->next) {
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof *known && !ok; i++) ok = !strcmp(f->string, known[i]);
        if (!ok) return srv_fail(e, 400, "unsupported_parameter", f->string, "'%.48s' is not supported here", f->string);
    }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "encoding_format");
    *b64 = false;
    if (fmt && !cJSON_IsNull(fmt)) {
        if (!cJSON_IsString(fmt) || (strcmp(fmt->valuestring, "float") && strcmp(fmt->valuestring, "base64")))
            return srv_fail(e, 400, NULL, "encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
        *b64 = !strcmp(fmt->valuestring, "base64");
    }
    const cJSON *dim = cJSON_GetObjectItemCaseSensitive(root, "dimensions");
    if (dim && !cJSON_IsNull(dim) && !(cJSON_IsNumber(dim) && dim->valuedouble == (double)E))
        return srv_fail(e, 400, "unsupported_parameter", "dimensions",
                        "this model's embeddings have %d dimensions; other sizes are not supported", E);
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (model && !cJSON_IsNull(model) && !cJSON_IsString(model))
        return srv_fail(e, 400, NULL, "model", "'model' must be a string");
    return 0;
}

/* A request as a task (tasks.h): it owns the parsed body (its texts point
   into it) and the inputs, so a client that leaves does not pull them from
   under the owner thread. */
typedef struct {
    srv_task t;          /* first: the task is the struct */
    mllm_model *model;
    cJSON *root;
    embed_input *in;
    int n, next;         /* inputs, and the next one to embed */
    float *data;         /* (n x E) */
    size_t E, n_tokens;  /* n_tokens: of the inputs embedded, for usage */
    srv_err e;           /* with t.failed */
} embed_task;

static void embed_task_free(srv_task *t) {
    embed_task *k = (embed_task *)t;
    cJSON_Delete(k->root);
    free_inputs(k->in, k->n);
    mllm_free(k->data);
    mllm_free(k);
}

/* One input per slice, so the engine's streams go on between them. */
static bool embed_step(srv_task *t) {
    embed_task *k = (embed_task *)t;
    embed_input *in = &k->in[k->next];
    mllm_status st = MLLM_OK;
    if (in->text) { /* the tokens mllm_embed would use: truncated, for usage */
        size_t n = 0, len = strlen(in->text);
        st = mllm_embed_tokenize(k->model, in->text, len, NULL, NULL, 0, &n);
        if (st == MLLM_OK || st == MLLM_ERR_BUFFER_TOO_SMALL) {
            in->ids = mllm_malloc((n ? n : 1) * sizeof *in->ids);
            st = in->ids ? mllm_embed_tokenize(k->model, in->text, len, NULL, in->ids, n, &n) : MLLM_ERR_NOMEM;
            in->n_ids = n;
        }
    }
    size_t n_out = 0;
    if (st == MLLM_OK)
        st = mllm_embed_ids(k->model, in->ids, in->n_ids, NULL, k->data + (size_t)k->next * k->E, k->E, &n_out);
    if (st == MLLM_ERR_INVALID_ARG)
        t->failed = srv_fail(&k->e, 400, NULL, "input", "input %d: %s", k->next, mllm_last_error());
    else if (st != MLLM_OK)
        t->failed = srv_fail(&k->e, 500, NULL, NULL, "embedding failed: %s", mllm_last_error());
    k->n_tokens += in->n_ids;
    return t->failed || ++k->next == k->n;
}

static cJSON *result(const embed_task *k, const char *model_id, bool b64) {
    const int32_t E = (int32_t)k->E;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *arr = cJSON_AddArrayToObject(o, "data");
    for (int i = 0; i < k->n && o; i++) {
        const float *v = k->data + (size_t)i * k->E;
        cJSON *item = cJSON_CreateObject();
        cJSON_AddStringToObject(item, "object", "embedding");
        cJSON_AddNumberToObject(item, "index", i);
        if (b64) {
            char *s = base64(v, k->E);
            cJSON_AddItemToObject(item, "embedding", s ? cJSON_CreateString(s) : cJSON_CreateNull());
            mllm_free(s);
        } else {
            cJSON *vec = cJSON_AddArrayToObject(item, "embedding");
            char num[32];
            for (int32_t j = 0; j < E; j++) { /* %.9g: each float exactly, shorter than cJSON's doubles */
                snprintf(num, sizeof num, "%.9g", (double)v[j]);
                cJSON_AddItemToArray(vec, cJSON_CreateRaw(num));
            }
        }
        cJSON_AddItemToArray(arr, item);
    }
    cJSON_AddStringToObject(o, "model", model_id);
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)k->n_tokens);
    cJSON_AddNumberToObject(u, "total_tokens", (double)k->n_tokens);
    return o;
}

enum MHD_Result srv_ep_embeddings(mllm_server *S, srv_req *r) {
    if (mllm_model_can_transcribe(S->model))
        return srv_reply_error(S, r, 400, "model_not_supported",
                               "the model '%s' is a speech-to-text model: it answers /v1/audio/transcriptions, not "
                               "/v1/embeddings", S->model_id);
    srv_err e = {0};
    embed_task *k = mllm_calloc(1, sizeof *k);
    if (!k || !srv_task_init(&k->t, SRV_TASK_EMBED, embed_step, embed_task_free)) {
        mllm_free(k);
        return srv_reply_error(S, r, 500, NULL, "out of memory");
    }
    k->model = S->model;
    k->E = (size_t)mllm_model_n_embd(S->model);
    bool b64 = false, hung_up = false;
    int rc = (k->root = srv_parse_body(r, &e)) ? 0 : -1;
    if (!rc) rc = check_options(k->root, (int32_t)k->E, &b64, &e);
    if (!rc)
        rc = parse_input(cJSON_GetObjectItemCaseSensitive(k->root, "input"), mllm_model_n_vocab(S->model), &k->in,
                         &k->n, &e);
    if (!rc && !(k->data = mllm_malloc((size_t)k->n * k->E * sizeof *k->data)))
        rc = srv_fail(&e, 500, NULL, NULL, "out of memory");
    if (!rc) rc = srv_run_task(S, r, &k->t, &hung_up, &e);
    if (!rc && k->t.failed) rc = -1, e = k->e;
    enum MHD_Result ret = hung_up ? MHD_NO : rc ? srv_reply_err(S, r, &e) : srv_reply_json(S, r, 200, result(k, S->model_id, b64));
    srv_task_unref(&k->t);
    return ret;
}
