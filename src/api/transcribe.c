/* mllm_transcribe: speech to text through mllm.h. A speech model is an
   mllm_model whose `asr` is set (no decoder graph, no file of the generic
   readers), driven through its registry row's speech hooks
   (models/speech.h); its tokenizer is lent to the generic mllm_tokenize
   calls. The model holds its decoding state, so one transcription runs at
   a time (asr_mu). */
#include <stdio.h>
#include <string.h>
#include "api/internal.h"
#include "audio/audio.h"
#include "core/alloc.h"
#include "core/error.h"
#include "models/speech.h"

struct mllm_transcript {
    mllm_speech_result res;   /* the segments (empty-text ones dropped) */
    char *text;               /* the segments' texts joined, trimmed */
};

MLLM_API void mllm_transcribe_default_params(mllm_transcribe_params *p) {
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->beam_size = 1;
    p->best_of = 5;
    p->patience = 1.0f;
    p->condition_on_previous = 1;
    p->fallback = 1;
}

MLLM_API int mllm_model_can_transcribe(const mllm_model *m) { return m && m->asr; }

MLLM_API int mllm_model_multilingual(const mllm_model *m) { return m && m->asr && m->row->speech->multilingual(m->asr); }

MLLM_API int mllm_path_can_transcribe(const char *path) { return path && mllm_arch_probe_speech(path) != NULL; }

MLLM_API mllm_status mllm_audio_probe(const void *audio, size_t len, const char *label, mllm_audio_desc *out) {
    if ((!audio && len) || !out || out->struct_size < offsetof(mllm_audio_desc, format) + sizeof out->format)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_audio_probe: bad arguments");
    float *pcm = NULL;
    size_t n = 0;
    mllm_audio_info info;
    mllm_status st = mllm_audio_load_memory(audio ? audio : "", len, label ? label : "audio", MLLM_AUDIO_SAMPLE_RATE,
                                            &pcm, &n, &info);
    mllm_free(pcm);
    if (st != MLLM_OK) return st;
    mllm_audio_desc d = {.struct_size = out->struct_size, .sample_rate = info.source_rate,
                         .channels = info.channels, .duration = (double)n / MLLM_AUDIO_SAMPLE_RATE};
    snprintf(d.format, sizeof d.format, "%s", info.format);
    memcpy(out, &d, out->struct_size < sizeof d ? out->struct_size : sizeof d);
    return MLLM_OK;
}

mllm_status mllm_model_load_speech(mllm_model *m, const mllm_arch *row, const char *path, const mllm_load_params *p) {
    mllm_status st = row->speech->open(path, m->pool, p ? p->backend : NULL, p ? p->weights : NULL, &m->asr);
    if (st != MLLM_OK) return st;
    m->row = row;
    if (pthread_mutex_init(&m->asr_mu, NULL) != 0) return mllm_err(MLLM_ERR_NOMEM, "cannot create a mutex");
    m->asr_mu_ok = true;
    row->speech->describe(m->asr, &m->dec.cfg); /* what the generic getters report */
    m->dec.cfg.row = row;
    m->tok = row->speech->tokenizer(m->asr); /* lent: mllm_model_free does not free it */
    return MLLM_OK;
}

void mllm_model_free_speech(mllm_model *m) {
    if (!m->asr) return;
    m->tok = NULL;
    m->row->speech->free(m->asr);
    m->asr = NULL;
    if (m->asr_mu_ok) pthread_mutex_destroy(&m->asr_mu);
}

/* Drops the empty-text segments and joins the texts. */
static mllm_status finish(mllm_transcript *t) {
    mllm_speech_result *r = &t->res;
    int k = 0;
    size_t len = 0;
    for (int i = 0; i < r->n_segs; i++) {
        const char *s = r->segs[i].text;
        while (*s == ' ') s++;
        if (!*s) {
            mllm_free(r->segs[i].text);
            mllm_free(r->segs[i].tokens);
            continue;
        }
        len += strlen(r->segs[i].text);
        r->segs[k++] = r->segs[i];
    }
    r->n_segs = k;
    t->text = mllm_malloc(len + 1);
    if (!t->text) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    size_t n = 0;
    for (int i = 0; i < k; i++) {
        const size_t l = strlen(r->segs[i].text);
        memcpy(t->text + n, r->segs[i].text, l);
        n += l;
    }
    t->text[n] = 0;
    size_t a = 0;
    while (t->text[a] == ' ') a++;
    while (n > a && t->text[n - 1] == ' ') n--;
    memmove(t->text, t->text + a, n - a);
    t->text[n - a] = 0;
    return MLLM_OK;
}

/* A segment in its public form (its strings and tokens lent). */
static mllm_transcript_segment public_segment(const mllm_speech_segment *s) {
    return (mllm_transcript_segment){.struct_size = sizeof(mllm_transcript_segment), .start = s->start,
                                     .end = s->end, .text = s->text, .tokens = s->tokens, .n_tokens = s->n_tokens,
                                     .seek = (int)s->seek, .temperature = s->temperature,
                                     .avg_logprob = s->avg_logprob, .compression_ratio = s->compression_ratio,
                                     .no_speech_prob = s->no_speech_prob};
}

static void hook_segment(const mllm_speech_segment *s, void *user) {
    const mllm_transcribe_params *p = user;
    const mllm_transcript_segment v = public_segment(s);
    p->on_segment(p->on_segment_user, &v);
}

static int hook_abort(void *user) {
    const mllm_transcribe_params *p = user;
    return p->abort(p->abort_user);
}

MLLM_API mllm_status mllm_transcribe(mllm_model *m, const void *audio, size_t len, const char *label,
                                     const mllm_transcribe_params *p, mllm_transcript **out) {
    if (out) *out = NULL;
    if (!m || !out || (!audio && len)) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcribe: NULL argument");
    /* An ABI 7 caller's struct ends before best_of: the defaults then. */
    mllm_transcribe_params dp;
    mllm_transcribe_default_params(&dp);
    if (p && p->struct_size != sizeof *p && p->struct_size != offsetof(mllm_transcribe_params, best_of))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcribe: params struct_size %u, expected %zu", p->struct_size,
                        sizeof *p);
    if (p) {
        memcpy(&dp, p, p->struct_size);
        dp.struct_size = sizeof dp;
    }
    p = &dp;
    const mllm_speech_hooks hooks = {.segment = p->on_segment ? hook_segment : NULL,
                                     .abort = p->abort ? hook_abort : NULL, .user = (void *)p};
    if (!m->asr) return mllm_err(MLLM_ERR_UNSUPPORTED, "mllm_transcribe: the model is not a speech-to-text model");
    float *pcm = NULL;
    size_t n = 0;
    mllm_status st = mllm_audio_load_memory(audio ? audio : "", len, label ? label : "audio", MLLM_AUDIO_SAMPLE_RATE,
                                            &pcm, &n, NULL);
    mllm_transcript *t = st == MLLM_OK ? mllm_calloc(1, sizeof *t) : NULL;
    if (st == MLLM_OK && !t) st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
    if (st == MLLM_OK) {
        pthread_mutex_lock(&m->asr_mu);
        st = m->row->speech->transcribe(m->asr, pcm, n, p, &hooks, &t->res);
        pthread_mutex_unlock(&m->asr_mu);
    }
    if (st == MLLM_OK) st = finish(t);
    mllm_free(pcm);
    if (st != MLLM_OK) {
        mllm_transcript_free(t);
        return st;
    }
    *out = t;
    return MLLM_OK;
}

MLLM_API const char *mllm_transcript_text(const mllm_transcript *t) { return t && t->text ? t->text : ""; }

MLLM_API const char *mllm_transcript_language(const mllm_transcript *t, float *prob) {
    if (prob) *prob = t ? t->res.lang_prob : 0.0f;
    return t ? t->res.lang : "";
}

MLLM_API double mllm_transcript_duration(const mllm_transcript *t) { return t ? t->res.duration : 0.0; }
MLLM_API int mllm_transcript_n_segments(const mllm_transcript *t) { return t ? t->res.n_segs : 0; }

MLLM_API mllm_status mllm_transcript_get_segment(const mllm_transcript *t, int i, mllm_transcript_segment *out) {
    if (!t || !out || i < 0 || i >= t->res.n_segs || out->struct_size < offsetof(mllm_transcript_segment, temperature))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcript_get_segment: bad arguments");
    mllm_transcript_segment v = public_segment(&t->res.segs[i]);
    v.struct_size = out->struct_size;
    memcpy(out, &v, out->struct_size < sizeof v ? out->struct_size : sizeof v);
    return MLLM_OK;
}

MLLM_API mllm_status mllm_transcript_get_stats(const mllm_transcript *t, mllm_transcript_stats *out) {
    if (!t || !out || out->struct_size < offsetof(mllm_transcript_stats, mel_ms) + sizeof out->mel_ms)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcript_get_stats: bad arguments");
    const mllm_speech_result *r = &t->res;
    mllm_transcript_stats v = {.struct_size = out->struct_size, .mel_ms = r->mel_s * 1e3,
                               .encoder_ms = r->encode_s * 1e3, .decoder_ms = r->decode_s * 1e3,
                               .n_windows = r->n_windows, .n_fallbacks = r->n_fallbacks};
    memcpy(out, &v, out->struct_size < sizeof v ? out->struct_size : sizeof v);
    return MLLM_OK;
}

MLLM_API void mllm_transcript_free(mllm_transcript *t) {
    if (!t) return;
    mllm_speech_result_free(&t->res);
    mllm_free(t->text);
    mllm_free(t);
}

MLLM_API const char *mllm_language_name(const char *code) {
    for (size_t i = 0; i < mllm_arch_count(); i++) { /* the first speech row that knows the code */
        const mllm_arch *a = mllm_arch_at(i);
        const char *name = a->kind == MLLM_KIND_SPEECH ? a->speech->language_name(code) : NULL;
        if (name) return name;
    }
    return NULL;
}
