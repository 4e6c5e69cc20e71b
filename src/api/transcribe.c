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
}

MLLM_API int mllm_model_can_transcribe(const mllm_model *m) { return m && m->asr; }

mllm_status mllm_model_load_speech(mllm_model *m, const mllm_arch *row, const char *path, const mllm_load_params *p) {
    mllm_status st = row->speech->open(path, m->pool, p ? p->backend : NULL, &m->asr);
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

MLLM_API mllm_status mllm_transcribe(mllm_model *m, const void *audio, size_t len, const char *label,
                                     const mllm_transcribe_params *p, mllm_transcript **out) {
    if (out) *out = NULL;
    if (!m || !out || (!audio && len)) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcribe: NULL argument");
    mllm_transcribe_params dp;
    mllm_transcribe_default_params(&dp);
    if (p && p->struct_size != sizeof *p)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcribe: params struct_size %u, expected %zu", p->struct_size,
                        sizeof *p);
    if (!p) p = &dp;
    if (!m->asr) return mllm_err(MLLM_ERR_UNSUPPORTED, "mllm_transcribe: the model is not a speech-to-text model");
    float *pcm = NULL;
    size_t n = 0;
    mllm_status st = mllm_audio_load_memory(audio ? audio : "", len, label ? label : "audio", MLLM_AUDIO_SAMPLE_RATE,
                                            &pcm, &n, NULL);
    mllm_transcript *t = st == MLLM_OK ? mllm_calloc(1, sizeof *t) : NULL;
    if (st == MLLM_OK && !t) st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
    if (st == MLLM_OK) {
        pthread_mutex_lock(&m->asr_mu);
        st = m->row->speech->transcribe(m->asr, pcm, n, p, &t->res);
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
    const mllm_speech_segment *s = &t->res.segs[i];
    mllm_transcript_segment v = {.struct_size = out->struct_size, .start = s->start, .end = s->end, .text = s->text,
                                 .tokens = s->tokens, .n_tokens = s->n_tokens, .seek = (int)s->seek,
                                 .temperature = s->temperature, .avg_logprob = s->avg_logprob,
                                 .compression_ratio = s->compression_ratio, .no_speech_prob = s->no_speech_prob};
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
