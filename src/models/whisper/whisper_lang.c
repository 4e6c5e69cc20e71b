/* Whisper's language detection, as openai-whisper's detect_language() and
   CTranslate2's (what faster-whisper calls) do it: the decoder is fed
   <|startoftranscript|> alone over the window's encoder states, and the
   logits at that position, restricted to the language tokens, are
   softmaxed; the likeliest language wins. Also the codes' English names
   (what OpenAI's verbose_json reports). */
#include <math.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "models/whisper/whisper_internal.h"

mllm_status mllm_whisper_detect_language(mllm_whisper *w, int32_t *lang, float *prob) {
    const mllm_whisper_special *sp = mllm_whisper_tokens(w);
    const int V = mllm_whisper_hp(w)->n_vocab;
    *lang = sp->lang_first;
    *prob = 1.0f;
    if (!sp->multilingual) return MLLM_OK;
    if (sp->lang_first < 0 || sp->n_lang < 1 || sp->lang_first + sp->n_lang > V)
        return mllm_err(MLLM_ERR_FORMAT, "whisper: the vocabulary has no language tokens");
    float *lg = mllm_malloc((size_t)V * sizeof(float));
    if (!lg) return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory");
    mllm_status st = mllm_whisper_decode(w, 1, &sp->sot, 1, 0, lg, false);
    if (st == MLLM_OK) {
        const float *l = lg + sp->lang_first;
        int best = 0;
        for (int i = 1; i < sp->n_lang; i++)
            if (l[i] > l[best]) best = i;
        double sum = 0;
        for (int i = 0; i < sp->n_lang; i++) sum += exp((double)(l[i] - l[best]));
        *lang = sp->lang_first + best;
        *prob = (float)(1.0 / sum);
    }
    mllm_free(lg);
    return st;
}

const char *mllm_whisper_lang_code(const mllm_whisper *w, int32_t tok) {
    const int i = tok - w->sp.lang_first;
    return w->sp.lang_first >= 0 && i >= 0 && i < w->sp.n_lang && w->lang_codes[i][0] ? w->lang_codes[i] : NULL;
}

static const struct {
    const char *code, *name;
} NAMES[] = {
    {"en", "english"}, {"zh", "chinese"}, {"de", "german"}, {"es", "spanish"}, {"ru", "russian"},
    {"ko", "korean"}, {"fr", "french"}, {"ja", "japanese"}, {"pt", "portuguese"}, {"tr", "turkish"},
    {"pl", "polish"}, {"ca", "catalan"}, {"nl", "dutch"}, {"ar", "arabic"}, {"sv", "swedish"}, {"it", "italian"},
    {"id", "indonesian"}, {"hi", "hindi"}, {"fi", "finnish"}, {"vi", "vietnamese"}, {"he", "hebrew"},
    {"uk", "ukrainian"}, {"el", "greek"}, {"ms", "malay"}, {"cs", "czech"}, {"ro", "romanian"}, {"da", "danish"},
    {"hu", "hungarian"}, {"ta", "tamil"}, {"no", "norwegian"}, {"th", "thai"}, {"ur", "urdu"},
    {"hr", "croatian"}, {"bg", "bulgarian"}, {"lt", "lithuanian"}, {"la", "latin"}, {"mi", "maori"},
    {"ml", "malayalam"}, {"cy", "welsh"}, {"sk", "slovak"}, {"te", "telugu"}, {"fa", "persian"},
    {"lv", "latvian"}, {"bn", "bengali"}, {"sr", "serbian"}, {"az", "azerbaijani"}, {"sl", "slovenian"},
    {"kn", "kannada"}, {"et", "estonian"}, {"mk", "macedonian"}, {"br", "breton"}, {"eu", "basque"},
    {"is", "icelandic"}, {"hy", "armenian"}, {"ne", "nepali"}, {"mn", "mongolian"}, {"bs", "bosnian"},
    {"kk", "kazakh"}, {"sq", "albanian"}, {"sw", "swahili"}, {"gl", "galician"}, {"mr", "marathi"},
    {"pa", "punjabi"}, {"si", "sinhala"}, {"km", "khmer"}, {"sn", "shona"}, {"yo", "yoruba"}, {"so", "somali"},
    {"af", "afrikaans"}, {"oc", "occitan"}, {"ka", "georgian"}, {"be", "belarusian"}, {"tg", "tajik"},
    {"sd", "sindhi"}, {"gu", "gujarati"}, {"am", "amharic"}, {"yi", "yiddish"}, {"lo", "lao"}, {"uz", "uzbek"},
    {"fo", "faroese"}, {"ht", "haitian creole"}, {"ps", "pashto"}, {"tk", "turkmen"}, {"nn", "nynorsk"},
    {"mt", "maltese"}, {"sa", "sanskrit"}, {"lb", "luxembourgish"}, {"my", "myanmar"}, {"bo", "tibetan"},
    {"tl", "tagalog"}, {"mg", "malagasy"}, {"as", "assamese"}, {"tt", "tatar"}, {"haw", "hawaiian"},
    {"ln", "lingala"}, {"ha", "hausa"}, {"ba", "bashkir"}, {"jw", "javanese"}, {"su", "sundanese"},
    {"yue", "cantonese"},
};

const char *mllm_whisper_lang_name(const char *code) {
    for (size_t i = 0; code && i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (!strcmp(NAMES[i].code, code)) return NAMES[i].name;
    return NULL;
}
