/* Hugging Face tokenizer.json (+ tokenizer_config.json): BPE models, byte-
   level (GPT-2 / Llama 3 / Qwen) or SentencePiece-style with byte fallback;
   WordPiece models (BERT). */
#include "core/alloc.h"
#include "core/error.h"
#include "tokenizer/hf_internal.h"
#include "core/file_open.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HF_MAX_JSON (256u << 20)

static mllm_status read_all(const char *path, char **out, size_t *len) {
    *out = NULL;
    FILE *f = mllm_file_fopen(path);
    if (!f) return MLLM_ERR_IO; /* the message names the file and why */
    mllm_status st = MLLM_OK;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n < 0 || (unsigned long)n > HF_MAX_JSON)
        st = mllm_err(MLLM_ERR_IO, "%s: cannot size the file (or over %u bytes)", path, HF_MAX_JSON);
    char *buf = st ? NULL : mllm_malloc((size_t)n + 1);
    if (!st && !buf) st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    if (!st && (fseek(f, 0, SEEK_SET) != 0 || fread(buf, 1, (size_t)n, f) != (size_t)n))
        st = mllm_err(MLLM_ERR_IO, "%s: read failed", path);
    fclose(f);
    if (st) {
        mllm_free(buf);
        return st;
    }
    buf[n] = 0;
    *out = buf;
    *len = (size_t)n;
    return MLLM_OK;
}

static bool valid_id(const cJSON *v) {
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < TOK_MAX_VOCAB &&
           v->valuedouble == (double)(int32_t)v->valuedouble;
}

/* Largest id of the vocab and the added tokens, checking every entry. */
static mllm_status max_id(const cJSON *vocab, const cJSON *added, const char *src, int32_t *out) {
    int32_t m = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        if (!valid_id(e)) return mllm_err(MLLM_ERR_FORMAT, "%s: vocab entry '%.64s' has a bad id", src, e->string);
        if (e->valueint > m) m = e->valueint;
    }
    cJSON_ArrayForEach(e, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (!valid_id(id) || !cJSON_IsString(content))
            return mllm_err(MLLM_ERR_FORMAT, "%s: added_tokens entry without a valid id/content", src);
        if (id->valueint > m) m = id->valueint;
    }
    if (m < 0) return mllm_err(MLLM_ERR_FORMAT, "%s: empty vocabulary", src);
    *out = m;
    return MLLM_OK;
}

static mllm_status load_tokens(mllm_tokenizer *t, const cJSON *vocab, const cJSON *added) {
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        mllm_status st = tok_set_token(t, e->valueint, e->string, strlen(e->string), 0.0f,
                                       MLLM_TOKEN_NORMAL);
        if (st) return st;
    }
    cJSON_ArrayForEach(e, added) {
        int32_t id = cJSON_GetObjectItemCaseSensitive(e, "id")->valueint;
        const char *s = cJSON_GetObjectItemCaseSensitive(e, "content")->valuestring;
        bool special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "special"));
        mllm_status st = tok_set_token(t, id, s, strlen(s), 0.0f,
                                       special ? MLLM_TOKEN_CONTROL : MLLM_TOKEN_USER_DEFINED);
        if (st) return st;
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "lstrip"))) t->flags[id] |= TOK_FLAG_LSTRIP;
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "rstrip"))) t->flags[id] |= TOK_FLAG_RSTRIP;
    }
    return MLLM_OK;
}

/* merges: ["a b", ...] (split at the first space after the first byte, as
   llama.cpp) or [["a", "b"], ...]. */
static mllm_status load_merges(mllm_tokenizer *t, const cJSON *merges) {
    int n = cJSON_GetArraySize(merges);
    mllm_status st = tok_reserve_merges(t, (size_t)(n > 0 ? n : 1));
    uint32_t rank = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, merges) {
        if (st) break;
        if (cJSON_IsString(m)) {
            const char *s = m->valuestring;
            const char *sp = s[0] ? strchr(s + 1, ' ') : NULL;
            if (!sp) return mllm_err(MLLM_ERR_FORMAT, "%s: merge %u '%.64s' has no space", t->source, rank, s);
            st = tok_add_merge(t, s, (size_t)(sp - s), sp + 1, strlen(sp + 1), rank);
        } else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 &&
                   cJSON_IsString(cJSON_GetArrayItem(m, 0)) && cJSON_IsString(cJSON_GetArrayItem(m, 1))) {
            const char *a = cJSON_GetArrayItem(m, 0)->valuestring;
            const char *b = cJSON_GetArrayItem(m, 1)->valuestring;
            st = tok_add_merge(t, a, strlen(a), b, strlen(b), rank);
        } else {
            return mllm_err(MLLM_ERR_FORMAT, "%s: merge %u is neither \"a b\" nor [a, b]", t->source, rank);
        }
        rank++;
    }
    return st;
}

/* SentencePiece-style BPE with byte_fallback: <0xXX> vocab entries are
   byte tokens (they decode to the byte, not to their text). */
static void mark_byte_tokens(mllm_tokenizer *t) {
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const char *s = t->text_pool + t->text_off[id];
        if (t->types[id] == MLLM_TOKEN_NORMAL && t->text_len[id] == 6 && memcmp(s, "<0x", 3) == 0 &&
            s[5] == '>' && isxdigit((unsigned char)s[3]) && isxdigit((unsigned char)s[4]))
            t->types[id] = MLLM_TOKEN_BYTE;
    }
}

static mllm_status build(mllm_tokenizer *t, const cJSON *root, const cJSON *cfg) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    hf_flags f = {0};
    mllm_status st = load_tokens(t, cJSON_GetObjectItemCaseSensitive(model, "vocab"),
                                 cJSON_GetObjectItemCaseSensitive(root, "added_tokens"));
    if (!st) st = tok_build_index(t);
    if (!st) st = hf_normalizer(t, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), &f);
    if (!st) st = hf_pre_tokenizer(t, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), &f);
    if (st) return st;
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(dec, "type");
    if (cJSON_IsString(dt) && strcmp(dt->valuestring, "ByteLevel") == 0) f.byte_level = true;
    t->byte_level = f.byte_level;
    if (!t->byte_level) mark_byte_tokens(t);
    t->ignore_merges = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "ignore_merges"));
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    if (cJSON_IsString(unk)) t->unk = tok_find(t, unk->valuestring, strlen(unk->valuestring));
    if (t->kind == TOK_KIND_WORDPIECE) st = hf_wordpiece_model(t, model);
    else st = load_merges(t, cJSON_GetObjectItemCaseSensitive(model, "merges"));
    if (st) return st;
    hf_post_processor(t, cJSON_GetObjectItemCaseSensitive(root, "post_processor"), &f);
    if (cfg) {
        st = hf_config(t, cfg, &f);
        if (st) return st;
    } else {
        hf_guess_special(t);
    }
    /* Llama 3 ships tokenizer.json files with and without the BOS template;
       llama.cpp adds <|begin_of_text|> for that vocabulary either way. */
    if (!f.add_bos_set && !f.template_seen && t->bos >= 0) {
        uint32_t n = t->text_len[t->bos];
        t->add_bos = n == 17 && memcmp(t->text_pool + t->text_off[t->bos], "<|begin_of_text|>", 17) == 0;
    }
    return tok_finish(t);
}

mllm_status mllm_tokenizer_from_hf_memory(const char *json, size_t len, const char *config_json,
                                          size_t config_len, const char *label,
                                          mllm_tokenizer **out) {
    if (!json || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_tokenizer_from_hf: NULL argument");
    *out = NULL;
    if (!label) label = "tokenizer.json";
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) return mllm_err(MLLM_ERR_FORMAT, "%s: not valid JSON", label);
    cJSON *cfg = NULL;
    mllm_status st = MLLM_OK;
    if (config_json) {
        cfg = cJSON_ParseWithLength(config_json, config_len);
        if (!cfg) st = mllm_err(MLLM_ERR_FORMAT, "%s: tokenizer_config.json is not valid JSON", label);
    }
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!st && !cJSON_IsObject(model))
        st = mllm_err(MLLM_ERR_FORMAT, "%s: no \"model\" object", label);
    const bool wp = cJSON_IsString(type) && strcmp(type->valuestring, "WordPiece") == 0;
    if (!st && cJSON_IsString(type) && strcmp(type->valuestring, "BPE") != 0 && !wp)
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: model type '%s' is not supported (BPE, WordPiece)",
                      label, type->valuestring);
    if (!st && wp && !cJSON_IsObject(vocab))
        st = mllm_err(MLLM_ERR_FORMAT, "%s: WordPiece model without a vocab object", label);
    if (!st && !wp && (!cJSON_IsObject(vocab) || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(model, "merges"))))
        st = mllm_err(MLLM_ERR_FORMAT, "%s: BPE model without a vocab object and merges array", label);
    int32_t m = -1;
    if (!st) st = max_id(vocab, cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), label, &m);
    mllm_tokenizer *t = NULL;
    if (!st) st = tok_new(wp ? TOK_KIND_WORDPIECE : TOK_KIND_BPE, m + 1, label, &t);
    if (!st) st = build(t, root, cfg);
    cJSON_Delete(root);
    cJSON_Delete(cfg);
    if (st) {
        mllm_tokenizer_free(t);
        return st;
    }
    *out = t;
    return MLLM_OK;
}

mllm_status mllm_tokenizer_from_hf(const char *tokenizer_json, const char *tokenizer_config_json,
                                   mllm_tokenizer **out) {
    if (!tokenizer_json || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_tokenizer_from_hf: NULL argument");
    *out = NULL;
    char *js = NULL, *cfg = NULL;
    size_t n = 0, n_cfg = 0;
    mllm_status st = read_all(tokenizer_json, &js, &n);
    if (!st && tokenizer_config_json) st = read_all(tokenizer_config_json, &cfg, &n_cfg);
    if (!st) st = mllm_tokenizer_from_hf_memory(js, n, cfg, n_cfg, tokenizer_json, out);
    mllm_free(js);
    mllm_free(cfg);
    return st;
}
