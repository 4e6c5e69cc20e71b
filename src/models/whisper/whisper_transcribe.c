/* Whisper over audio of any length, as openai-whisper's transcribe() goes:
   a 30-s window at `seek` (in mel frames), its log-mel, the encoder, the
   decode with the temperature fallback; segments cut at timestamp pairs;
   the window then moves to the last complete timestamp (or by the whole
   window); the text so far is the prompt of the next window
   (<|startofprev|> ...) unless the last one was decoded hot. */
#include <math.h>
#include <string.h>
#include <zlib.h>
#include "audio/mel.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "models/whisper/whisper_transcribe.h"
#include "tokenizer/tokenizer.h"

#define TIME_PRECISION 0.02 /* seconds per timestamp token */
#define INPUT_STRIDE 2      /* mel frames per encoder position (and timestamp step) */

void mllm_whisper_options_default(mllm_whisper_options *o) {
    memset(o, 0, sizeof *o);
    o->beam_size = 5;
    o->patience = 1.0f;
    o->best_of = 5;
    o->language = -1;
    o->condition_on_previous_text = true;
    for (int i = 0; i < 6; i++) o->temperatures[i] = 0.2f * (float)i;
    o->n_temperatures = 6;
    o->compression_ratio_threshold = 2.4f;
    o->logprob_threshold = -1.0f;
    o->no_speech_threshold = 0.6f;
    o->max_initial_timestamp = 1.0f;
}

/* gzip-style ratio of the text's bytes to their zlib size (openai's
   get_compression_ratio: repetitive text compresses well). */
static float compression_ratio(const char *text, size_t len) {
    if (len == 0) return 0.0f;
    uLongf cap = compressBound((uLong)len);
    Bytef *buf = mllm_malloc(cap);
    if (!buf) return 0.0f;
    float r = 0.0f;
    if (compress2(buf, &cap, (const Bytef *)text, (uLong)len, 9) == Z_OK && cap > 0) r = (float)len / (float)cap;
    mllm_free(buf);
    return r;
}

/* The text of the text tokens among ids (timestamps and specials dropped). */
static char *text_of(mllm_whisper *w, const int32_t *ids, int n) {
    const int32_t eot = mllm_whisper_tokens(w)->eot;
    int32_t *t = mllm_malloc((size_t)(n + 1) * sizeof(int32_t));
    if (!t) return NULL;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (ids[i] < eot) t[k++] = ids[i];
    size_t len = 0;
    mllm_tokenizer *tok = mllm_whisper_tokenizer(w);
    (void)mllm_tokenizer_decode(tok, t, (size_t)k, true, NULL, 0, &len);
    char *s = mllm_malloc(len + 1);
    if (s && mllm_tokenizer_decode(tok, t, (size_t)k, true, s, len, &len) != MLLM_OK) {
        mllm_free(s);
        s = NULL;
    }
    if (s) s[len] = 0;
    mllm_free(t);
    return s;
}

static mllm_status add_segment(mllm_whisper *w, mllm_whisper_result *res, const mllm_whisper_options *o, double start,
                               double end, long seek, const int32_t *tok, int n, const mllm_whisper_hyp *h, float temp,
                               float cr) {
    mllm_whisper_segment *ns = mllm_realloc(res->segs, (size_t)(res->n_segs + 1) * sizeof *ns);
    if (!ns) return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory for segments");
    res->segs = ns;
    mllm_whisper_segment *s = &ns[res->n_segs];
    memset(s, 0, sizeof *s);
    s->text = text_of(w, tok, n);
    s->tokens = mllm_malloc((size_t)(n + 1) * sizeof(int32_t));
    if (!s->text || !s->tokens) {
        mllm_free(s->text);
        mllm_free(s->tokens);
        return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory for segments");
    }
    memcpy(s->tokens, tok, (size_t)n * sizeof(int32_t));
    s->n_tokens = n;
    s->start = start;
    s->end = end;
    s->seek = seek; /* before the callback sees it */
    s->avg_logprob = h->avg_logprob;
    s->no_speech_prob = h->no_speech_prob;
    s->temperature = temp;
    s->compression_ratio = cr;
    res->n_segs++;
    if (o->on_segment.fn && s->text[0]) o->on_segment.fn(s, o->on_segment.user);
    return MLLM_OK;
}

/* openai-whisper's and faster-whisper's transcribe() slice the window's
   content frames out of the log-mel and pad_or_trim them to 3000 frames
   with 0.0, a log-mel value, where transformers (and mllm_mel_compute) pad
   the samples with silence and get the clamp floor, (max - 8 + 4) / 4,
   about -0.7. The decoder hears the difference: on short espeak-ng clips
   the floor made tiny.en mis-hear words both faster-whisper precisions got
   right ("old world and fans" for "old wooden fence"). */
static void pad_mel(float *mel, int n_mels, long content) {
    if (content >= MLLM_WHISPER_N_FRAMES) return;
    for (int m = 0; m < n_mels; m++)
        memset(mel + (size_t)m * MLLM_WHISPER_N_FRAMES + (size_t)content, 0,
               (size_t)(MLLM_WHISPER_N_FRAMES - content) * sizeof *mel);
}

/* The prompt: [<|startofprev|> previous text] <|startoftranscript|>
   [language, task] [<|notimestamps|>]; *sot_index where SOT is. */
static int build_prompt(mllm_whisper *w, const mllm_whisper_options *o, const int32_t *prev, int n_prev,
                        int32_t *prompt, int *sot_index) {
    const mllm_whisper_special *sp = mllm_whisper_tokens(w);
    const int max_prev = mllm_whisper_hp(w)->n_text_ctx / 2 - 1;
    int n = 0;
    if (n_prev > 0 && sp->sot_prev >= 0) {
        const int k = n_prev < max_prev ? n_prev : max_prev;
        prompt[n++] = sp->sot_prev;
        memcpy(prompt + n, prev + n_prev - k, (size_t)k * sizeof(int32_t));
        n += k;
    }
    *sot_index = n;
    prompt[n++] = sp->sot;
    if (sp->multilingual) {
        prompt[n++] = o->language >= 0 ? o->language : sp->lang_first;
        prompt[n++] = o->translate && sp->translate >= 0 ? sp->translate : sp->transcribe;
    }
    if (!o->timestamps) prompt[n++] = sp->no_timestamps;
    return n;
}

static mllm_status check_options(const mllm_whisper *w, const mllm_whisper_options *o) {
    const mllm_whisper_special *sp = mllm_whisper_tokens(w);
    if (o->beam_size < 1 || 2 * o->beam_size > MLLM_WHISPER_MAX_SEQ || o->best_of < 1 ||
        2 * o->best_of > MLLM_WHISPER_MAX_SEQ)
        return mllm_err(MLLM_ERR_INVALID_ARG, "whisper: beam size and best_of must be 1..%d", MLLM_WHISPER_MAX_SEQ / 2);
    if (o->n_temperatures < 1 || o->n_temperatures > MLLM_WHISPER_MAX_TEMPS)
        return mllm_err(MLLM_ERR_INVALID_ARG, "whisper: 1..%d temperatures", MLLM_WHISPER_MAX_TEMPS);
    for (int i = 0; i < o->n_temperatures; i++)
        if (!(o->temperatures[i] >= 0.0f && o->temperatures[i] <= 2.0f))
            return mllm_err(MLLM_ERR_INVALID_ARG, "whisper: temperature %g out of 0..2", (double)o->temperatures[i]);
    if (o->translate && !sp->multilingual)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "whisper: an English-only model cannot translate");
    if (o->n_initial_prompt < 0 || (o->n_initial_prompt > 0 && !o->initial_prompt))
        return mllm_err(MLLM_ERR_INVALID_ARG, "whisper: bad initial prompt");
    for (int i = 0; i < o->n_initial_prompt; i++)
        if (o->initial_prompt[i] < 0 || o->initial_prompt[i] >= sp->eot)
            return mllm_err(MLLM_ERR_INVALID_ARG, "whisper: initial prompt token %d is not a text token",
                            o->initial_prompt[i]);
    if (o->language >= 0 && (!sp->multilingual || o->language < sp->lang_first || o->language >= sp->lang_first + sp->n_lang))
        return mllm_err(MLLM_ERR_INVALID_ARG, "whisper: language token %d is not a language of this model", o->language);
    return MLLM_OK;
}

/* Decodes the window at the temperatures in turn until one passes the
   compression-ratio and log-prob checks (or is silence). */
static mllm_status decode_with_fallback(mllm_whisper *w, const mllm_whisper_options *o, const int32_t *prompt,
                                        int n_prompt, int sot_index, int window, mllm_whisper_hyp *best, float *temp,
                                        float *cr, int *n_fallbacks) {
    memset(best, 0, sizeof *best);
    for (int i = 0; i < o->n_temperatures; i++) {
        /* also before each fallback: a repetitive window decodes up to six
           times (seconds each on a small CPU) */
        if (i > 0 && o->abort && o->abort(o->abort_user)) {
            mllm_free(best->tokens);
            memset(best, 0, sizeof *best);
            return mllm_err(MLLM_ERR_CANCELLED, "whisper: transcription aborted by the caller");
        }
        mllm_whisper_hyp h;
        const float t = o->temperatures[i];
        mllm_status st = mllm_whisper_decode_window(w, o, prompt, n_prompt, sot_index, t,
                                                    o->seed + (uint64_t)window * 131u + (uint64_t)i, &h);
        if (st != MLLM_OK) return st;
        char *text = text_of(w, h.tokens, h.n_tokens);
        const float r = text ? compression_ratio(text, strlen(text)) : 0.0f;
        mllm_free(text);
        mllm_free(best->tokens);
        *best = h;
        *temp = t;
        *cr = r;
        bool fallback = false;
        if (o->compression_ratio_threshold > 0 && r > o->compression_ratio_threshold) fallback = true;
        if (o->logprob_threshold < 0 && h.avg_logprob < o->logprob_threshold) fallback = true;
        if (o->no_speech_threshold > 0 && h.no_speech_prob > o->no_speech_threshold) fallback = false;
        if (!fallback) break;
        if (i + 1 < o->n_temperatures) (*n_fallbacks)++;
    }
    return MLLM_OK;
}

mllm_status mllm_whisper_transcribe(mllm_whisper *w, const float *samples, size_t n, const mllm_whisper_options *opt,
                                    mllm_whisper_result *res) {
    memset(res, 0, sizeof *res);
    mllm_status st = check_options(w, opt);
    if (st != MLLM_OK) return st;
    mllm_whisper_options oo = *opt; /* the language, once detected */
    const mllm_whisper_options *o = &oo;
    res->language = mllm_whisper_tokens(w)->multilingual ? opt->language : -1;
    res->language_prob = 1.0f;
    const mllm_whisper_hparams *hp = mllm_whisper_hp(w);
    const mllm_whisper_special *sp = mllm_whisper_tokens(w);
    const int tb = sp->timestamp_begin;
    const long content = (long)(n / MLLM_MEL_HOP);
    res->duration = (double)n / MLLM_MEL_SAMPLE_RATE;
    float *mel = mllm_malloc((size_t)hp->n_mels * MLLM_WHISPER_N_FRAMES * sizeof(float));
    int32_t *prompt = mllm_malloc((size_t)hp->n_text_ctx * sizeof(int32_t));
    /* every token decoded so far (the next prompts), after the initial prompt */
    int32_t *all = mllm_malloc((size_t)(o->n_initial_prompt + 1) * sizeof(int32_t));
    int n_all = o->n_initial_prompt, prompt_reset = 0;
    if (all && n_all) memcpy(all, o->initial_prompt, (size_t)n_all * sizeof(int32_t));
    if (!mel || !prompt || !all) {
        st = mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory");
        goto done;
    }
    long seek = 0;
    for (int window = 0; seek < content; window++) {
        if (o->abort && o->abort(o->abort_user)) { /* between windows (and fallbacks, below) */
            st = mllm_err(MLLM_ERR_CANCELLED, "whisper: transcription aborted by the caller");
            goto done;
        }
        const long seg = content - seek < MLLM_WHISPER_N_FRAMES ? content - seek : MLLM_WHISPER_N_FRAMES;
        const long seek_before = seek;
        const double offset = (double)seek * MLLM_MEL_HOP / MLLM_MEL_SAMPLE_RATE;
        const double seg_dur = (double)seg * MLLM_MEL_HOP / MLLM_MEL_SAMPLE_RATE;
        double t0 = mllm_clock_mono_seconds();
        if ((st = mllm_whisper_mel(w, samples + (size_t)seek * MLLM_MEL_HOP, (size_t)seg * MLLM_MEL_HOP, mel)) != MLLM_OK)
            goto done;
        pad_mel(mel, hp->n_mels, seg);
        double t1 = mllm_clock_mono_seconds();
        if ((st = mllm_whisper_encode(w, mel)) != MLLM_OK) goto done;
        if (sp->multilingual && oo.language < 0) { /* the first window decides */
            if ((st = mllm_whisper_detect_language(w, &oo.language, &res->language_prob)) != MLLM_OK) goto done;
            res->language = oo.language;
        }
        double t2 = mllm_clock_mono_seconds();
        int sot_index = 0;
        /* Without conditioning prompt_reset is n_all after every window, so
           only an initial prompt reaches the first one (as faster-whisper). */
        const int n_prompt = build_prompt(w, o, all + prompt_reset, n_all - prompt_reset, prompt, &sot_index);
        mllm_whisper_hyp h;
        float temp = 0, cr = 0;
        st = decode_with_fallback(w, o, prompt, n_prompt, sot_index, window, &h, &temp, &cr, &res->n_fallbacks);
        res->mel_s += t1 - t0;
        res->encode_s += t2 - t1;
        res->decode_s += mllm_clock_mono_seconds() - t2;
        res->n_windows++;
        if (st != MLLM_OK) goto done;
        if (o->no_speech_threshold > 0 && h.no_speech_prob > o->no_speech_threshold &&
            !(o->logprob_threshold < 0 && h.avg_logprob >= o->logprob_threshold)) {
            mllm_free(h.tokens); /* silence: skip the window */
            seek += seg;
            continue;
        }
        const int32_t *tk = h.tokens;
        const int nt = h.n_tokens;
        const bool single_end = nt >= 2 && tk[nt - 1] >= tb && tk[nt - 2] < tb;
        int last_slice = 0, n_pairs = 0;
        for (int i = 1; i < nt && st == MLLM_OK; i++) {
            if (!(tk[i] >= tb && tk[i - 1] >= tb)) continue;
            n_pairs++;
            st = add_segment(w, res, o, offset + (tk[last_slice] - tb) * TIME_PRECISION,
                             offset + (tk[i - 1] - tb) * TIME_PRECISION, seek_before, tk + last_slice, i - last_slice, &h, temp, cr);
            last_slice = i;
        }
        if (st == MLLM_OK && n_pairs > 0) {
            if (single_end) {
                st = add_segment(w, res, o, offset + (tk[last_slice] - tb) * TIME_PRECISION,
                                 offset + (tk[nt - 1] - tb) * TIME_PRECISION, seek_before, tk + last_slice, nt - last_slice, &h, temp,
                                 cr);
                seek += seg;
            } else {
                seek += (long)(tk[last_slice - 1] - tb) * INPUT_STRIDE;
            }
        } else if (st == MLLM_OK) {
            double dur = seg_dur;
            for (int i = nt - 1; i >= 0; i--)
                if (tk[i] >= tb) {
                    if (tk[i] != tb) dur = (tk[i] - tb) * TIME_PRECISION;
                    break;
                }
            st = add_segment(w, res, o, offset, offset + dur, seek_before, tk, nt, &h, temp, cr);
            seek += seg;
        }
        if (st == MLLM_OK && nt > 0) {
            int32_t *na = mllm_realloc(all, (size_t)(n_all + nt) * sizeof(int32_t));
            if (!na) st = mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory");
            else {
                all = na;
                memcpy(all + n_all, tk, (size_t)nt * sizeof(int32_t));
                n_all += nt;
            }
        }
        if (!o->condition_on_previous_text || temp > 0.5f) prompt_reset = n_all;
        mllm_free(h.tokens);
        if (st != MLLM_OK) goto done;
    }
done:
    mllm_free(mel);
    mllm_free(prompt);
    mllm_free(all);
    if (st != MLLM_OK) mllm_whisper_result_free(res);
    return st;
}

void mllm_whisper_result_free(mllm_whisper_result *res) {
    for (int i = 0; i < res->n_segs; i++) {
        mllm_free(res->segs[i].text);
        mllm_free(res->segs[i].tokens);
    }
    mllm_free(res->segs);
    res->segs = NULL;
    res->n_segs = 0;
}
