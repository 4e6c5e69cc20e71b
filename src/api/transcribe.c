/* mllm_transcribe: speech to text through mllm.h. A Whisper model is an
   mllm_model whose `asr` is set (no decoder graph, no file of the generic
   readers); its tokenizer is the Whisper one, lent to the generic
   mllm_tokenize calls. The Whisper state (KV caches, scratch) is the
   model's, so one transcription runs at a time (asr_mu). */
#include <stdio.h>
#include <string.h>
#include "api/internal.h"
#include "audio/audio.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "models/whisper/whisper_open.h"
#include "models/whisper/whisper_transcribe.h"

struct mllm_transcript {
    mllm_whisper_result res;  /* the segments (empty-text ones dropped) */
    char *text;               /* the segments' texts joined, trimmed */
    char lang[8];
    float lang_prob;
};

MLLM_API void mllm_transcribe_default_params(mllm_transcribe_params *p) {
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->beam_size = 1;
}

MLLM_API int mllm_model_can_transcribe(const mllm_model *m) { return m && m->asr; }

mllm_status mllm_model_load_whisper(mllm_model *m, const char *path, const mllm_load_params *p) {
    mllm_whisper_params wp = {.n_threads = p && p->n_threads > 0 ? p->n_threads : mllm_cpu_count(),
                              .weight_type = MLLM_DTYPE_F16};
    mllm_status st = mllm_whisper_open(path, &wp, &m->asr);
    if (st != MLLM_OK) return st;
    if (pthread_mutex_init(&m->asr_mu, NULL) != 0) return mllm_err(MLLM_ERR_NOMEM, "cannot create a mutex");
    m->asr_mu_ok = true;
    const mllm_whisper_hparams *hp = mllm_whisper_hp(m->asr);
    mllm_hparams *c = &m->dec.cfg; /* what the generic getters report */
    snprintf(c->arch, sizeof c->arch, "whisper");
    c->n_vocab = hp->n_vocab;
    c->n_ctx_train = hp->n_text_ctx;
    c->n_embd = hp->d_model;
    c->n_layer = hp->n_dec_layers;
    c->n_head = c->n_head_kv = hp->n_head;
    c->head_dim = hp->head_dim;
    c->n_ff = hp->d_ff;
    m->tok = mllm_whisper_tokenizer(m->asr); /* lent: mllm_model_free does not free it */
    return MLLM_OK;
}

void mllm_model_free_whisper(mllm_model *m) {
    if (!m->asr) return;
    m->tok = NULL;
    mllm_whisper_free(m->asr);
    m->asr = NULL;
    if (m->asr_mu_ok) pthread_mutex_destroy(&m->asr_mu);
}

/* The options of p (checked) for this model; *prompt_ids owned. */
static mllm_status options(mllm_model *m, const mllm_transcribe_params *p, mllm_whisper_options *o,
                           int32_t **prompt_ids) {
    const mllm_whisper_special *sp = mllm_whisper_tokens(m->asr);
    mllm_whisper_options_default(o);
    o->beam_size = p->beam_size;
    o->timestamps = p->timestamps != 0;
    o->translate = p->translate != 0;
    if (p->beam_size < 1 || 2 * p->beam_size > MLLM_WHISPER_MAX_SEQ)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcribe: beam_size %d out of 1..%d", p->beam_size,
                        MLLM_WHISPER_MAX_SEQ / 2);
    if (!(p->temperature >= 0.0f && p->temperature <= 1.0f))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcribe: temperature %g out of 0..1", (double)p->temperature);
    /* From the temperature asked up to 1.0 by 0.2, as OpenAI describes its
       temperature (0: raised automatically while the text is unlikely). */
    o->n_temperatures = 0;
    for (float t = p->temperature; t <= 1.0f + 1e-4f && o->n_temperatures < MLLM_WHISPER_MAX_TEMPS; t += 0.2f)
        o->temperatures[o->n_temperatures++] = t > 1.0f ? 1.0f : t;
    const char *lang = p->language;
    if (lang && lang[0] && strcmp(lang, "auto")) {
        const int32_t tok = mllm_whisper_lang_token(m->asr, lang);
        if (tok < 0)
            return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcribe: '%.32s' is not a language of this model%s", lang,
                            sp->multilingual ? "" : " (it is English-only: 'en')");
        o->language = sp->multilingual ? tok : -1;
    }
    if (o->translate && !sp->multilingual)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "mllm_transcribe: this model is English-only and cannot translate");
    *prompt_ids = NULL;
    if (p->prompt && p->prompt[0]) { /* " " + the text, stripped, as faster-whisper's initial_prompt */
        const char *s = p->prompt;
        size_t n = strlen(s);
        while (n && (*s == ' ' || *s == '\n' || *s == '\t')) s++, n--;
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\t')) n--;
        char *text = mllm_malloc(n + 2);
        if (!text) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
        text[0] = ' ';
        memcpy(text + 1, s, n);
        size_t k = 0;
        mllm_status st = mllm_tokenizer_encode(m->tok, text, n + 1, false, false, NULL, 0, &k);
        if (st == MLLM_OK || st == MLLM_ERR_BUFFER_TOO_SMALL) {
            *prompt_ids = mllm_malloc((k + 1) * sizeof(int32_t));
            st = *prompt_ids ? mllm_tokenizer_encode(m->tok, text, n + 1, false, false, *prompt_ids, k, &k)
                             : mllm_err(MLLM_ERR_NOMEM, "out of memory");
        }
        mllm_free(text);
        if (st != MLLM_OK) return st;
        int kept = 0; /* text tokens only (the tokenizer parsed no specials; belt and braces) */
        for (size_t i = 0; i < k; i++)
            if ((*prompt_ids)[i] >= 0 && (*prompt_ids)[i] < sp->eot) (*prompt_ids)[kept++] = (*prompt_ids)[i];
        o->initial_prompt = *prompt_ids;
        o->n_initial_prompt = kept;
    }
    return MLLM_OK;
}

/* Drops the empty-text segments and joins the texts. */
static mllm_status finish(mllm_transcript *t) {
    mllm_whisper_result *r = &t->res;
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
    mllm_whisper_options o;
    int32_t *prompt_ids = NULL;
    mllm_status st = options(m, p, &o, &prompt_ids);
    float *pcm = NULL;
    size_t n = 0;
    if (st == MLLM_OK)
        st = mllm_audio_load_memory(audio ? audio : "", len, label ? label : "audio", MLLM_AUDIO_SAMPLE_RATE, &pcm, &n,
                                    NULL);
    mllm_transcript *t = st == MLLM_OK ? mllm_calloc(1, sizeof *t) : NULL;
    if (st == MLLM_OK && !t) st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
    if (st == MLLM_OK) {
        pthread_mutex_lock(&m->asr_mu);
        st = mllm_whisper_transcribe(m->asr, pcm, n, &o, &t->res);
        const char *code = st == MLLM_OK ? mllm_whisper_lang_code(m->asr, t->res.language) : NULL;
        pthread_mutex_unlock(&m->asr_mu);
        snprintf(t->lang, sizeof t->lang, "%s", code ? code : "en");
        t->lang_prob = t->res.language_prob;
    }
    if (st == MLLM_OK) st = finish(t);
    mllm_free(pcm);
    mllm_free(prompt_ids);
    if (st != MLLM_OK) {
        mllm_transcript_free(t);
        return st;
    }
    *out = t;
    return MLLM_OK;
}

MLLM_API const char *mllm_transcript_text(const mllm_transcript *t) { return t && t->text ? t->text : ""; }

MLLM_API const char *mllm_transcript_language(const mllm_transcript *t, float *prob) {
    if (prob) *prob = t ? t->lang_prob : 0.0f;
    return t ? t->lang : "";
}

MLLM_API double mllm_transcript_duration(const mllm_transcript *t) { return t ? t->res.duration : 0.0; }
MLLM_API int mllm_transcript_n_segments(const mllm_transcript *t) { return t ? t->res.n_segs : 0; }

MLLM_API mllm_status mllm_transcript_get_segment(const mllm_transcript *t, int i, mllm_transcript_segment *out) {
    if (!t || !out || i < 0 || i >= t->res.n_segs || out->struct_size < offsetof(mllm_transcript_segment, temperature))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcript_get_segment: bad arguments");
    const mllm_whisper_segment *s = &t->res.segs[i];
    mllm_transcript_segment v = {.struct_size = out->struct_size, .start = s->start, .end = s->end, .text = s->text,
                                 .tokens = s->tokens, .n_tokens = s->n_tokens, .seek = (int)s->seek,
                                 .temperature = s->temperature, .avg_logprob = s->avg_logprob,
                                 .compression_ratio = s->compression_ratio, .no_speech_prob = s->no_speech_prob};
    memcpy(out, &v, out->struct_size < sizeof v ? out->struct_size : sizeof v);
    return MLLM_OK;
}

MLLM_API void mllm_transcript_free(mllm_transcript *t) {
    if (!t) return;
    mllm_whisper_result_free(&t->res);
    mllm_free(t->text);
    mllm_free(t);
}

MLLM_API const char *mllm_language_name(const char *code) { return mllm_whisper_lang_name(code); }
