/* Whisper behind the speech contract (models/speech.h) and its registry
   row: the public mllm_transcribe_params become Whisper's decoding options
   (beam, temperature fallback, language token, initial prompt), and its
   result the generic segments. */
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "models/registry.h"
#include "models/speech.h"
#include "models/whisper/whisper_open.h"
#include "models/whisper/whisper_transcribe.h"

static bool row_probe(const char *path) { return mllm_whisper_probe(path) != MLLM_WHISPER_NONE; }

static mllm_status row_open(const char *path, mllm_pool *pool, const char *backends, const char *weights,
                            void **out) {
    mllm_whisper_params wp = {.n_threads = mllm_pool_size(pool), .weight_type = MLLM_DTYPE_F16,
                              .weight_type_given = weights != NULL, .backends = backends, .pool = pool};
    *out = NULL;
    if (!weights || !strcmp(weights, "f16")) wp.weight_type = MLLM_DTYPE_F16;
    else if (!strcmp(weights, "f32")) wp.weight_type = MLLM_DTYPE_F32;
    else if (!strcmp(weights, "q8_0")) wp.weight_type = MLLM_DTYPE_Q8_0;
    else if (!strcmp(weights, "q4_0")) wp.weight_type = MLLM_DTYPE_Q4_0;
    else return mllm_err(MLLM_ERR_INVALID_ARG, "weights '%.32s': expected f16, f32, q8_0 or q4_0", weights);
    mllm_whisper *w = NULL;
    mllm_status st = mllm_whisper_open(path, &wp, &w);
    *out = w;
    return st;
}

static void row_free(void *w) { mllm_whisper_free(w); }

static mllm_tokenizer *row_tokenizer(void *w) { return mllm_whisper_tokenizer(w); }

static bool row_multilingual(const void *w) { return mllm_whisper_tokens(w)->multilingual; }

static void row_describe(const void *w, mllm_hparams *c) {
    const mllm_whisper_hparams *hp = mllm_whisper_hp(w);
    snprintf(c->arch, sizeof c->arch, "whisper");
    c->n_vocab = hp->n_vocab;
    c->n_ctx_train = hp->n_text_ctx;
    c->n_embd = hp->d_model;
    c->n_layer = hp->n_dec_layers;
    c->n_head = c->n_head_kv = hp->n_head;
    c->head_dim = hp->head_dim;
    c->n_ff = hp->d_ff;
}

/* " " + the prompt, stripped, as faster-whisper's initial_prompt, as text
   tokens (*ids owned, *n_ids kept). */
static mllm_status prompt_tokens(mllm_whisper *w, const char *prompt, int32_t **ids, int *n_ids) {
    const mllm_whisper_special *sp = mllm_whisper_tokens(w);
    const mllm_tokenizer *tok = mllm_whisper_tokenizer(w);
    const char *s = prompt;
    size_t n = strlen(s);
    while (n && (*s == ' ' || *s == '\n' || *s == '\t')) s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\t')) n--;
    char *text = mllm_malloc(n + 2);
    if (!text) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    text[0] = ' ';
    memcpy(text + 1, s, n);
    size_t k = 0;
    mllm_status st = mllm_tokenizer_encode(tok, text, n + 1, false, false, NULL, 0, &k);
    if (st == MLLM_OK || st == MLLM_ERR_BUFFER_TOO_SMALL) {
        *ids = mllm_malloc((k + 1) * sizeof(int32_t));
        st = *ids ? mllm_tokenizer_encode(tok, text, n + 1, false, false, *ids, k, &k)
                  : mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    mllm_free(text);
    if (st != MLLM_OK) return st;
    int kept = 0; /* text tokens only (the tokenizer parsed no specials; belt and braces) */
    for (size_t i = 0; i < k; i++)
        if ((*ids)[i] >= 0 && (*ids)[i] < sp->eot) (*ids)[kept++] = (*ids)[i];
    *n_ids = kept;
    return MLLM_OK;
}

_Static_assert(MLLM_WHISPER_MAX_SEQ / 2 == MLLM_TRANSCRIBE_MAX_BEAM, "mllm.h's beam limit is Whisper's");

/* The options of p (checked) for this model; *prompt_ids owned. */
static mllm_status options(mllm_whisper *w, const mllm_transcribe_params *p, mllm_whisper_options *o,
                           int32_t **prompt_ids) {
    const mllm_whisper_special *sp = mllm_whisper_tokens(w);
    mllm_whisper_options_default(o);
    o->beam_size = p->beam_size;
    o->best_of = p->best_of;
    o->patience = p->patience;
    o->seed = p->seed;
    o->condition_on_previous_text = p->condition_on_previous != 0;
    o->timestamps = p->timestamps != 0;
    o->translate = p->translate != 0;
    if (p->beam_size < 1 || 2 * p->beam_size > MLLM_WHISPER_MAX_SEQ)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcribe: beam_size %d out of 1..%d", p->beam_size,
                        MLLM_WHISPER_MAX_SEQ / 2);
    if (p->best_of < 1 || 2 * p->best_of > MLLM_WHISPER_MAX_SEQ)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcribe: best_of %d out of 1..%d", p->best_of,
                        MLLM_WHISPER_MAX_SEQ / 2);
    if (!(p->patience >= 0.1f && p->patience <= 10.0f))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcribe: patience %g out of 0.1..10", (double)p->patience);
    const float t_max = p->fallback ? 1.0f : 2.0f; /* the fallback climbs to 1.0 */
    if (!(p->temperature >= 0.0f && p->temperature <= t_max))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcribe: temperature %g out of 0..%g", (double)p->temperature,
                        (double)t_max);
    /* From the temperature asked up to 1.0 by 0.2, as OpenAI describes its
       temperature (0: raised automatically while the text is unlikely);
       multiplied, not summed, so that 0 gives whisper_options_default's
       temperatures to the bit. */
    o->n_temperatures = 0;
    for (float t = p->temperature; t <= 1.0f + 1e-4f && o->n_temperatures < MLLM_WHISPER_MAX_TEMPS;
         t = p->temperature + 0.2f * (float)o->n_temperatures)
        o->temperatures[o->n_temperatures++] = t > 1.0f ? 1.0f : t;
    if (!p->fallback) {
        o->temperatures[0] = p->temperature;
        o->n_temperatures = 1;
    }
    const char *lang = p->language;
    if (lang && lang[0] && strcmp(lang, "auto")) {
        const int32_t tok = mllm_whisper_lang_token(w, lang);
        if (tok < 0)
            return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_transcribe: '%.32s' is not a language of this model%s", lang,
                            sp->multilingual ? "" : " (it is English-only: 'en')");
        o->language = sp->multilingual ? tok : -1;
    }
    if (o->translate && !sp->multilingual)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "mllm_transcribe: this model is English-only and cannot translate");
    *prompt_ids = NULL;
    if (p->prompt && p->prompt[0]) {
        mllm_status st = prompt_tokens(w, p->prompt, prompt_ids, &o->n_initial_prompt);
        if (st) return st;
        o->initial_prompt = *prompt_ids;
    }
    return MLLM_OK;
}

static mllm_status row_transcribe(void *model, const float *samples, size_t n, const mllm_transcribe_params *p,
                                  const mllm_speech_hooks *hooks, mllm_speech_result *res) {
    mllm_whisper *w = model;
    memset(res, 0, sizeof *res);
    mllm_whisper_options o;
    int32_t *prompt_ids = NULL;
    mllm_whisper_result r = {0};
    mllm_status st = options(w, p, &o, &prompt_ids);
    if (hooks) { /* a Whisper segment is the generic one (whisper_transcribe.h) */
        o.on_segment = (mllm_whisper_segment_cb){hooks->segment, hooks->user};
        o.abort = hooks->abort;
        o.abort_user = hooks->user;
    }
    if (!st) st = mllm_whisper_transcribe(w, samples, n, &o, &r);
    if (!st) { /* the segments change hands */
        res->segs = r.segs;
        res->n_segs = r.n_segs;
        r.segs = NULL;
        r.n_segs = 0;
        res->duration = r.duration;
        const char *code = mllm_whisper_lang_code(w, r.language);
        snprintf(res->lang, sizeof res->lang, "%s", code ? code : "en");
        res->lang_prob = r.language_prob;
        res->mel_s = r.mel_s;
        res->encode_s = r.encode_s;
        res->decode_s = r.decode_s;
        res->n_windows = r.n_windows;
        res->n_fallbacks = r.n_fallbacks;
    }
    mllm_whisper_result_free(&r);
    mllm_free(prompt_ids);
    return st;
}

static const mllm_speech_family k_whisper_speech = {
    .probe = row_probe,
    .open = row_open,
    .free = row_free,
    .tokenizer = row_tokenizer,
    .describe = row_describe,
    .transcribe = row_transcribe,
    .multilingual = row_multilingual,
    .language_name = mllm_whisper_lang_name,
};

const mllm_arch mllm_arch_whisper = {
    .name = "whisper",
    .kind = MLLM_KIND_SPEECH,
    .about = "Whisper speech to text (mllm transcribe): a CTranslate2 or Hugging Face folder, or a .mllm file "
             "from mllm convert",
    .family = "whisper",
    .speech = &k_whisper_speech,
};
