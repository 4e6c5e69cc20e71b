/* The parts of an HF tokenizer.json around the model: normalizer,
   pre_tokenizer, post_processor (BOS/EOS it adds), and tokenizer_config.json
   (bos/eos tokens, add_bos_token, chat template). */
#include "core/alloc.h"
#include "core/error.h"
#include "tokenizer/hf_internal.h"
#include <string.h>

/* GPT-2's regex, used by a ByteLevel pre-tokenizer with use_regex. */
static const char k_bytelevel_re[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static const char *str_of(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool bool_of(const cJSON *o, const char *key, bool dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

static bool is_type(const cJSON *o, const char *type) {
    const char *s = str_of(o, "type");
    return s && strcmp(s, type) == 0;
}

mllm_status hf_normalizer(mllm_tokenizer *t, const cJSON *n, hf_flags *f) {
    if (!n || cJSON_IsNull(n)) return MLLM_OK;
    if (is_type(n, "Sequence")) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(n, "normalizers")) {
            mllm_status st = hf_normalizer(t, c, f);
            if (st) return st;
        }
        return MLLM_OK;
    }
    if (is_type(n, "NFC")) {
        t->nfc = true;
        return MLLM_OK;
    }
    /* SentencePiece-as-BPE (Llama 2 / Mistral tokenizer.json): prepend U+2581
       and replace spaces by it = dummy prefix + escaped whitespace. */
    if (is_type(n, "Prepend")) {
        const char *p = str_of(n, "prepend");
        if (p && strcmp(p, "\xe2\x96\x81") == 0) {
            t->add_space_prefix = true;
            return MLLM_OK;
        }
    }
    if (is_type(n, "Replace")) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(n, "pattern");
        const char *from = str_of(pat, "String"), *to = str_of(n, "content");
        if (from && to && strcmp(from, " ") == 0 && strcmp(to, "\xe2\x96\x81") == 0) {
            t->escape_ws = true;
            return MLLM_OK;
        }
    }
    if (is_type(n, "BertNormalizer")) {
        t->bert_norm.on = true;
        t->bert_norm.clean_text = bool_of(n, "clean_text", true);
        t->bert_norm.chinese_chars = bool_of(n, "handle_chinese_chars", true);
        t->bert_norm.lowercase = bool_of(n, "lowercase", true);
        /* strip_accents null: as lowercase says */
        t->bert_norm.strip_accents = bool_of(n, "strip_accents", t->bert_norm.lowercase);
        return MLLM_OK;
    }
    const char *ty = str_of(n, "type");
    return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: unsupported normalizer '%s'", t->source,
                    ty ? ty : "?");
}

mllm_status hf_pre_tokenizer(mllm_tokenizer *t, const cJSON *p, hf_flags *f) {
    if (!p || cJSON_IsNull(p)) return MLLM_OK;
    if (is_type(p, "Sequence")) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(p, "pretokenizers")) {
            mllm_status st = hf_pre_tokenizer(t, c, f);
            if (st) return st;
        }
        return MLLM_OK;
    }
    if (is_type(p, "ByteLevel")) {
        f->byte_level = true;
        if (bool_of(p, "add_prefix_space", false)) t->regex_prefix_space = true;
        if (!bool_of(p, "use_regex", true)) return MLLM_OK;
        return tok_pretok_add(&t->pre, k_bytelevel_re, sizeof k_bytelevel_re - 1, false, t->source);
    }
    if (is_type(p, "Split")) {
        const char *beh = str_of(p, "behavior");
        if (!beh || strcmp(beh, "Isolated") != 0 || bool_of(p, "invert", false))
            return mllm_err(MLLM_ERR_UNSUPPORTED,
                            "%s: Split pre-tokenizer with behavior '%s'%s is not supported",
                            t->source, beh ? beh : "?", bool_of(p, "invert", false) ? " inverted" : "");
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(p, "pattern");
        const char *re = str_of(pat, "Regex"), *lit = str_of(pat, "String");
        if (!re && !lit) return mllm_err(MLLM_ERR_FORMAT, "%s: Split without a pattern", t->source);
        return tok_pretok_add(&t->pre, re ? re : lit, strlen(re ? re : lit), re == NULL, t->source);
    }
    if (is_type(p, "Digits")) {
        const char *re = bool_of(p, "individual_digits", false) ? "\\p{N}" : "\\p{N}+";
        return tok_pretok_add(&t->pre, re, strlen(re), false, t->source);
    }
    if (is_type(p, "BertPreTokenizer")) {
        t->bert_pre = true;
        return MLLM_OK;
    }
    const char *ty = str_of(p, "type");
    return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: unsupported pre_tokenizer '%s'", t->source,
                    ty ? ty : "?");
}

/* Id of the special token named `name` in a TemplateProcessing's table. */
static int32_t template_special_id(mllm_tokenizer *t, const cJSON *pp, const char *name) {
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(pp, "special_tokens");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(sp, name);
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(e, "ids");
    const cJSON *first = cJSON_GetArrayItem(ids, 0);
    if (cJSON_IsNumber(first) && first->valuedouble >= 0 && first->valuedouble < t->n_vocab)
        return (int32_t)first->valuedouble;
    return tok_find(t, name, strlen(name));
}

void hf_post_processor(mllm_tokenizer *t, const cJSON *pp, hf_flags *f) {
    if (!pp || cJSON_IsNull(pp)) return;
    if (is_type(pp, "Sequence")) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(pp, "processors"))
            hf_post_processor(t, c, f);
        return;
    }
    if (!is_type(pp, "TemplateProcessing")) return;
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(pp, "single");
    int n = cJSON_GetArraySize(single);
    if (n < 1) return;
    const cJSON *first = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(single, 0), "SpecialToken");
    const cJSON *last = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(single, n - 1), "SpecialToken");
    const char *first_name = str_of(first, "id"), *last_name = str_of(last, "id");
    f->template_seen = true;
    if (first_name) {
        int32_t id = template_special_id(t, pp, first_name);
        if (id >= 0) {
            t->bos = id;
            t->add_bos = true;
        }
    }
    if (last_name && n > 1) {
        int32_t id = template_special_id(t, pp, last_name);
        if (id >= 0) {
            t->eos = id;
            t->add_eos = true;
        }
    }
}

/* bos_token / eos_token: a string or {"content": ...}. */
static int32_t config_token(const mllm_tokenizer *t, const cJSON *cfg, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    const char *s = cJSON_IsString(v) ? v->valuestring : str_of(v, "content");
    return s ? tok_find(t, s, strlen(s)) : -1;
}

mllm_status hf_config(mllm_tokenizer *t, const cJSON *cfg, hf_flags *f) {
    int32_t bos = config_token(t, cfg, "bos_token");
    int32_t eos = config_token(t, cfg, "eos_token");
    int32_t pad = config_token(t, cfg, "pad_token");
    int32_t unk = config_token(t, cfg, "unk_token");
    if (bos >= 0) t->bos = bos;
    if (eos >= 0) t->eos = eos;
    if (pad >= 0) t->pad = pad;
    if (unk >= 0) t->unk = unk;
    const cJSON *ab = cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token");
    if (cJSON_IsBool(ab)) {
        t->add_bos = cJSON_IsTrue(ab);
        f->add_bos_set = true;
    }
    const cJSON *ae = cJSON_GetObjectItemCaseSensitive(cfg, "add_eos_token");
    if (cJSON_IsBool(ae)) t->add_eos = cJSON_IsTrue(ae);
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
    const char *tmpl = cJSON_IsString(ct) ? ct->valuestring : NULL;
    if (cJSON_IsArray(ct)) { /* [{"name": "default", "template": ...}, ...] */
        const cJSON *e;
        cJSON_ArrayForEach(e, ct) {
            const char *name = str_of(e, "name");
            if (!tmpl || (name && strcmp(name, "default") == 0)) tmpl = str_of(e, "template");
        }
    }
    if (tmpl) {
        mllm_free(t->chat_template);
        t->chat_template = mllm_strndup(tmpl, strlen(tmpl));
        if (!t->chat_template) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", t->source);
    }
    return MLLM_OK;
}

/* Without tokenizer_config.json: BOS/EOS by the usual names, among the
   special added tokens only (Qwen's vocab has a plain BPE token "</s>"). */
static int32_t find_control(const mllm_tokenizer *t, const char *const *names, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int32_t id = tok_find(t, names[i], strlen(names[i]));
        if (id >= 0 && t->types[id] == MLLM_TOKEN_CONTROL) return id;
    }
    return -1;
}

void hf_guess_special(mllm_tokenizer *t) {
    static const char *const bos_names[] = {"<|begin_of_text|>", "<s>", "<|startoftext|>"};
    static const char *const eos_names[] = {"<|end_of_text|>", "</s>", "<|im_end|>", "<|endoftext|>"};
    if (t->bos < 0) t->bos = find_control(t, bos_names, 3);
    if (t->eos < 0) t->eos = find_control(t, eos_names, 4);
}

#define WP_MAX_CHARS_LIMIT (1 << 20)

mllm_status hf_wordpiece_model(mllm_tokenizer *t, const cJSON *model) {
    const char *pre = str_of(model, "continuing_subword_prefix");
    if (!pre) pre = "##";
    if (strlen(pre) > TOK_WP_MAX_PREFIX)
        return mllm_err(MLLM_ERR_FORMAT, "%s: continuing_subword_prefix is longer than %d bytes", t->source,
                        TOK_WP_MAX_PREFIX);
    memcpy(t->wp_prefix, pre, strlen(pre) + 1);
    const cJSON *mc = cJSON_GetObjectItemCaseSensitive(model, "max_input_chars_per_word");
    t->wp_max_chars = 100;
    if (mc && !(cJSON_IsNumber(mc) && mc->valuedouble >= 1 && mc->valuedouble <= WP_MAX_CHARS_LIMIT))
        return mllm_err(MLLM_ERR_FORMAT, "%s: max_input_chars_per_word must be in 1..%d", t->source,
                        WP_MAX_CHARS_LIMIT);
    if (mc) t->wp_max_chars = (int32_t)mc->valuedouble;
    if (t->unk < 0) return mllm_err(MLLM_ERR_FORMAT, "%s: WordPiece model without an unk_token in its vocab", t->source);
    return MLLM_OK;
}
