/* POST /v1/audio/transcriptions and /v1/audio/translations (OpenAI; the
   latter translates to English and takes no `language`): a
   multipart/form-data form with
   `file` (the audio: WAV, FLAC, OGG, MP3), `model` (any string: one model
   is served), `language` (a code; absent: detected), `prompt` (text that
   conditions the first window), `response_format` (json, text, srt, vtt,
   verbose_json) and `temperature` (0..1; the fallback raises it on
   unlikely text); `timestamp_granularities[]` only as "segment". Any other
   field, or one given twice, is a 400 naming it. The upload is decoded from
   memory by the audio reader (src/audio through mllm_transcribe); the
   transcription is a task (tasks.h) that the task worker runs, one at a
   time, never the HTTP thread that received it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"
#include "server/internal.h"
#include "server/multipart.h"
#include "server/textbuf.h"
#include "server/utf8.h"

#define SRV_MAX_PROMPT_BYTES 16384 /* Whisper keeps the last 223 tokens of it anyway */
#define SRV_MAX_FIELD_BYTES 64     /* model, language, response_format, temperature */

typedef enum { FMT_JSON, FMT_TEXT, FMT_SRT, FMT_VTT, FMT_VERBOSE } resp_fmt;

typedef struct {
    const srv_mp_part *file;
    char language[SRV_MAX_FIELD_BYTES + 1];
    char *prompt;          /* owned, NUL-terminated, or NULL */
    resp_fmt fmt;
    float temperature;
} tr_req;

/* A text field's value, NUL-terminated in buf (cap bytes): UTF-8, no NUL, short. */
static int text_field(const srv_mp_part *p, const char *name, char *buf, size_t cap, srv_err *e) {
    if (p->filename.p) return srv_fail(e, 400, NULL, name, "'%s' must be a form field, not a file", name);
    if (p->len >= cap) return srv_fail(e, 400, NULL, name, "'%s' is longer than %zu bytes", name, cap - 1);
    if (memchr(p->data, 0, p->len) || !srv_utf8_valid(p->data, p->len))
        return srv_fail(e, 400, NULL, name, "'%s' is not valid UTF-8 text", name);
    memcpy(buf, p->data, p->len);
    buf[p->len] = 0;
    return 0;
}

static const char *const KNOWN[] = {"file", "model", "language", "prompt", "response_format", "temperature",
                                    "timestamp_granularities[]"};

static int parse_form(const srv_mp_part *parts, int n, tr_req *q, srv_err *e) {
    bool seen[sizeof KNOWN / sizeof *KNOWN] = {0};
    char v[SRV_MAX_FIELD_BYTES + 1];
    for (int i = 0; i < n; i++) {
        const srv_mp_part *p = &parts[i];
        size_t k = 0;
        while (k < sizeof KNOWN / sizeof *KNOWN && !srv_str_is(p->name, KNOWN[k])) k++;
        if (k == sizeof KNOWN / sizeof *KNOWN) {
            /* The name is the client's bytes: echoed only when it is short printable ASCII. */
            bool printable = p->name.n <= 48;
            for (size_t j = 0; j < p->name.n && printable; j++) printable = p->name.p[j] >= 0x20 && p->name.p[j] < 0x7f;
            char nm[49] = "";
            if (printable) memcpy(nm, p->name.p, p->name.n), nm[p->name.n] = 0;
            for (char *c = nm; *c; c++)
                if (*c == '"' || *c == '\\') *c = '_';
            return printable ? srv_fail(e, 400, "unsupported_parameter", nm, "'%s' is not a field of this endpoint", nm)
                             : srv_fail(e, 400, "unsupported_parameter", NULL,
                                        "a form field with a long or non-ASCII name is not a field of this endpoint");
        }
        const char *name = KNOWN[k];
        if (seen[k] && k != 6) return srv_fail(e, 400, NULL, name, "'%s' is given twice", name);
        seen[k] = true;
        if (k == 0) { /* file */
            if (!p->filename.p) return srv_fail(e, 400, NULL, "file", "'file' must be a file upload (with a filename)");
            if (!p->len) return srv_fail(e, 400, NULL, "file", "'file' is empty");
            q->file = p;
        } else if (k == 3) { /* prompt */
            if (!(q->prompt = mllm_malloc(SRV_MAX_PROMPT_BYTES + 1))) return srv_fail(e, 500, NULL, NULL, "out of memory");
            if (text_field(p, name, q->prompt, SRV_MAX_PROMPT_BYTES + 1, e)) return -1;
        } else {
            if (text_field(p, name, v, sizeof v, e)) return -1;
            if (k == 2) {
                memcpy(q->language, v, sizeof v);
            } else if (k == 4) {
                static const char *const F[] = {"json", "text", "srt", "vtt", "verbose_json"};
                size_t f = 0;
                while (f < 5 && strcmp(v, F[f])) f++;
                if (f == 5)
                    return srv_fail(e, 400, NULL, name, "'response_format' must be json, text, srt, vtt or verbose_json");
                q->fmt = (resp_fmt)f;
            } else if (k == 5) {
                char *end = NULL;
                const double t = strtod(v, &end);
                if (!v[0] || *end || !(t >= 0.0 && t <= 1.0))
                    return srv_fail(e, 400, NULL, name, "'temperature' must be a number from 0 to 1");
                q->temperature = (float)t;
            } else if (k == 6 && strcmp(v, "segment")) {
                return srv_fail(e, 400, "unsupported_parameter", "timestamp_granularities[]",
                                "only 'segment' timestamps are supported (word timestamps are not)");
            } /* k == 1: model, any string */
        }
    }
    if (!q->file) return srv_fail(e, 400, NULL, "file", "'file' is required");
    return 0;
}

/* HH:MM:SS,mmm (srt) or HH:MM:SS.mmm (vtt). */
static void ts(srv_textbuf *b, double s, char sep) {
    long ms = s > 0 ? (long)(s * 1000.0 + 0.5) : 0;
    srv_tb_printf(b, "%02ld:%02ld:%02ld%c%03ld", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60, sep, ms % 1000);
}

static const char *trimmed(const char *s) {
    while (*s == ' ') s++;
    return s;
}

static enum MHD_Result reply_subtitles(mllm_server *S, srv_req *r, const mllm_transcript *t, bool vtt) {
    srv_textbuf b = {0};
    if (vtt) srv_tb_printf(&b, "WEBVTT\n\n");
    for (int i = 0; i < mllm_transcript_n_segments(t); i++) {
        mllm_transcript_segment s = {.struct_size = sizeof s};
        if (mllm_transcript_get_segment(t, i, &s) != MLLM_OK) continue;
        if (!vtt) srv_tb_printf(&b, "%d\n", i + 1);
        ts(&b, s.start, vtt ? '.' : ',');
        srv_tb_printf(&b, " --> ");
        ts(&b, s.end, vtt ? '.' : ',');
        srv_tb_printf(&b, "\n%s\n\n", trimmed(s.text));
    }
    enum MHD_Result ret = b.fail ? srv_reply_error(S, r, 500, NULL, "out of memory")
                                : srv_reply(S, r, 200, vtt ? "text/vtt; charset=utf-8" : "application/x-subrip; charset=utf-8",
                                            b.b ? b.b : "", b.len);
    mllm_free(b.b);
    return ret;
}

/* Whisper's text is the tokenizer's bytes: sanitized before it goes in JSON. */
static void add_text(cJSON *o, const char *key, const char *text) {
    char *clean = srv_utf8_sanitize(text, strlen(text));
    cJSON_AddStringToObject(o, key, clean ? clean : "");
    mllm_free(clean);
}

static cJSON *verbose_json(const mllm_transcript *t, bool translate) {
    cJSON *o = cJSON_CreateObject();
    float prob = 0;
    const char *code = mllm_transcript_language(t, &prob);
    const char *name = mllm_language_name(code);
    cJSON_AddStringToObject(o, "task", translate ? "translate" : "transcribe");
    cJSON_AddStringToObject(o, "language", name ? name : code);
    cJSON_AddNumberToObject(o, "language_probability", round((double)prob * 1e4) / 1e4);
    cJSON_AddNumberToObject(o, "duration", round(mllm_transcript_duration(t) * 1e3) / 1e3);
    add_text(o, "text", mllm_transcript_text(t));
    cJSON *segs = cJSON_AddArrayToObject(o, "segments");
    for (int i = 0; segs && i < mllm_transcript_n_segments(t); i++) {
        mllm_transcript_segment s = {.struct_size = sizeof s};
        if (mllm_transcript_get_segment(t, i, &s) != MLLM_OK) continue;
        cJSON *g = cJSON_CreateObject();
        cJSON_AddNumberToObject(g, "id", i);
        cJSON_AddNumberToObject(g, "seek", s.seek);
        cJSON_AddNumberToObject(g, "start", round(s.start * 100) / 100);
        cJSON_AddNumberToObject(g, "end", round(s.end * 100) / 100);
        add_text(g, "text", s.text);
        cJSON *tk = cJSON_AddArrayToObject(g, "tokens");
        for (int k = 0; tk && k < s.n_tokens; k++) cJSON_AddItemToArray(tk, cJSON_CreateNumber(s.tokens[k]));
        cJSON_AddNumberToObject(g, "temperature", round((double)s.temperature * 10) / 10);
        cJSON_AddNumberToObject(g, "avg_logprob", round((double)s.avg_logprob * 1e4) / 1e4);
        cJSON_AddNumberToObject(g, "compression_ratio", round((double)s.compression_ratio * 1e4) / 1e4);
        cJSON_AddNumberToObject(g, "no_speech_prob", round((double)s.no_speech_prob * 1e4) / 1e4);
        cJSON_AddItemToArray(segs, g);
    }
    return o;
}

static cJSON *usage(const mllm_transcript *t) {
    cJSON *u = cJSON_CreateObject();
    cJSON_AddStringToObject(u, "type", "duration");
    cJSON_AddNumberToObject(u, "seconds", ceil(mllm_transcript_duration(t)));
    return u;
}

/* A request as a task (tasks.h): it owns the request body, which the audio
   points into, so a client that leaves does not pull it from under the
   owner thread. */
typedef struct {
    srv_task t;          /* first: the task is the struct */
    mllm_model *model;
    char *body;          /* taken from the request */
    const char *audio;   /* (len) the file's bytes, in body */
    size_t len;
    tr_req q;
    mllm_transcribe_params p;
    mllm_transcript *out;
    srv_err e;           /* with t.failed */
} audio_task;

static void audio_task_free(srv_task *t) {
    audio_task *a = (audio_task *)t;
    mllm_transcript_free(a->out);
    mllm_free(a->q.prompt);
    mllm_free(a->body);
    mllm_free(a);
}

/* Polled by Whisper before each 30-s window: the client left, or the
   server is stopping (srv_tasks_cancel_running). */
static int audio_abort(void *user) { return atomic_load(&((srv_task *)user)->cancel); }

/* The whole file in one slice, ended early (before its next window) when
   the task is cancelled. */
static bool audio_step(srv_task *t) {
    audio_task *a = (audio_task *)t;
    a->p.abort = audio_abort;
    a->p.abort_user = t;
    mllm_status st = mllm_transcribe(a->model, a->audio, a->len, "file", &a->p, &a->out);
    if (st == MLLM_ERR_CANCELLED) return true; /* the task ends cancelled: nobody reads its result */
    if (st == MLLM_ERR_INVALID_ARG && a->q.language[0] && strstr(mllm_last_error(), "language"))
        t->failed = srv_fail(&a->e, 400, NULL, "language", "%s", mllm_last_error());
    else if (st == MLLM_ERR_INVALID_ARG || st == MLLM_ERR_FORMAT || st == MLLM_ERR_UNSUPPORTED)
        t->failed = srv_fail(&a->e, 400, "invalid_audio", "file", "%s", mllm_last_error());
    else if (st != MLLM_OK)
        t->failed = srv_fail(&a->e, 500, NULL, NULL, "transcription failed: %s", mllm_last_error());
    return true;
}

/* The form into a (its audio and options); 0 or -1 with e filled. */
static int parse_request(srv_req *r, bool translate, audio_task *a, srv_err *e) {
    srv_str boundary;
    srv_mp_part *parts = mllm_calloc(SRV_MP_MAX_PARTS, sizeof *parts);
    int n = 0, rc = 0;
    if (!parts) rc = srv_fail(e, 500, NULL, NULL, "out of memory");
    else if (!srv_mp_boundary(r->content_type, &boundary)) /* checked with the head; kept for safety */
        rc = srv_fail(e, 415, "unsupported_media_type", NULL, "the body must be multipart/form-data");
    else if (!(rc = srv_mp_parse(r->body, r->len, boundary, parts, SRV_MP_MAX_PARTS, &n, e)))
        rc = parse_form(parts, n, &a->q, e);
    if (!rc && translate && a->q.language[0]) /* OpenAI's translations take no language: it is detected */
        rc = srv_fail(e, 400, "unsupported_parameter", "language", "'language' is not a field of /v1/audio/translations");
    if (!rc) {
        a->audio = a->q.file->data;
        a->len = a->q.file->len;
        a->q.file = NULL; /* in parts, freed below */
        a->body = r->body; /* the audio points into it: the task keeps it */
        r->body = NULL;
    }
    mllm_free(parts);
    mllm_transcribe_default_params(&a->p);
    a->p.language = a->q.language[0] ? a->q.language : NULL;
    a->p.prompt = a->q.prompt;
    a->p.temperature = a->q.temperature;
    a->p.translate = translate;
    a->p.timestamps = 1; /* the same text whatever the format; srt, vtt, verbose_json need the times */
    return rc;
}

static enum MHD_Result reply(mllm_server *S, srv_req *r, const audio_task *a, bool translate) {
    const mllm_transcript *t = a->out;
    const resp_fmt fmt = a->q.fmt;
    if (fmt == FMT_SRT || fmt == FMT_VTT) return reply_subtitles(S, r, t, fmt == FMT_VTT);
    if (fmt == FMT_TEXT) {
        char *clean = srv_utf8_sanitize(mllm_transcript_text(t), strlen(mllm_transcript_text(t)));
        srv_textbuf b = {0};
        if (clean) srv_tb_printf(&b, "%s\n", clean);
        enum MHD_Result ret = !clean || b.fail ? srv_reply_error(S, r, 500, NULL, "out of memory")
                                               : srv_reply(S, r, 200, "text/plain; charset=utf-8", b.b, b.len);
        mllm_free(clean);
        mllm_free(b.b);
        return ret;
    }
    cJSON *o = fmt == FMT_VERBOSE ? verbose_json(t, translate) : cJSON_CreateObject();
    if (o && fmt == FMT_JSON) add_text(o, "text", mllm_transcript_text(t));
    if (o) cJSON_AddItemToObject(o, "usage", usage(t));
    return srv_reply_json(S, r, 200, o);
}

static enum MHD_Result transcribe(mllm_server *S, srv_req *r, bool translate) {
    if (!mllm_model_can_transcribe(S->model))
        return srv_reply_error(S, r, 400, "model_not_supported",
                               "the model '%s' is not a speech-to-text model: it does not answer %s", S->model_id,
                               translate ? "/v1/audio/translations" : "/v1/audio/transcriptions");
    srv_err e = {0};
    audio_task *a = mllm_calloc(1, sizeof *a);
    if (!a || !srv_task_init(&a->t, SRV_TASK_AUDIO, audio_step, audio_task_free)) {
        mllm_free(a);
        return srv_reply_error(S, r, 500, NULL, "out of memory");
    }
    a->model = S->model;
    a->q.fmt = FMT_JSON;
    bool hung_up = false;
    int rc = parse_request(r, translate, a, &e);
    if (!rc) rc = srv_run_task(S, r, &a->t, &hung_up, &e);
    if (!rc && a->t.failed) rc = -1, e = a->e;
    enum MHD_Result ret = hung_up ? MHD_NO : rc ? srv_reply_err(S, r, &e) : reply(S, r, a, translate);
    srv_task_unref(&a->t);
    return ret;
}

enum MHD_Result srv_ep_transcriptions(mllm_server *S, srv_req *r) { return transcribe(S, r, false); }
enum MHD_Result srv_ep_translations(mllm_server *S, srv_req *r) { return transcribe(S, r, true); }
