/* Tokenizer from GGUF metadata (tokenizer.ggml.*), as llama.cpp reads it:
   model "llama" = SentencePiece-style (tokens + scores + types, U+2581 for
   spaces, dummy prefix, byte fallback), model "gpt2" = byte-level BPE with
   the pre-tokenizer named by tokenizer.ggml.pre. */
#include "core/alloc.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer_internal.h"
#include <string.h>

static bool str_is(mllm_gguf_str s, const char *lit) {
    return s.len == strlen(lit) && memcmp(s.ptr, lit, s.len) == 0;
}

static void get_id(const mllm_gguf *g, const char *key, int32_t *id) {
    uint32_t v;
    if (mllm_gguf_get_u32(g, key, &v) && v < (uint32_t)TOK_MAX_VOCAB) *id = (int32_t)v;
}

static void get_flag(const mllm_gguf *g, const char *key, bool *flag) {
    bool v;
    if (mllm_gguf_get_bool(g, key, &v)) *flag = v;
}

static mllm_status load_tokens(mllm_tokenizer *t, const mllm_gguf *g, uint64_t n) {
    const char *src = t->source;
    mllm_gguf_type se = MLLM_GGUF_UINT8, te = MLLM_GGUF_UINT8;
    uint64_t ns = 0, nt = 0;
    const void *sd = NULL, *td = NULL;
    bool has_scores = mllm_gguf_get_arr(g, "tokenizer.ggml.scores", &se, &ns, &sd);
    bool has_types = mllm_gguf_get_arr(g, "tokenizer.ggml.token_type", &te, &nt, &td);
    if (has_scores && (se != MLLM_GGUF_FLOAT32 || ns != n))
        return mllm_err(MLLM_ERR_FORMAT, "%s: tokenizer.ggml.scores: %llu values of type %d for %llu tokens",
                        src, (unsigned long long)ns, (int)se, (unsigned long long)n);
    if (has_types && ((te != MLLM_GGUF_INT32 && te != MLLM_GGUF_UINT32) || nt != n))
        return mllm_err(MLLM_ERR_FORMAT, "%s: tokenizer.ggml.token_type: %llu values of type %d for %llu tokens",
                        src, (unsigned long long)nt, (int)te, (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) {
        mllm_gguf_str s;
        if (!mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", i, &s))
            return mllm_err(MLLM_ERR_FORMAT, "%s: tokenizer.ggml.tokens[%llu] unreadable", src,
                            (unsigned long long)i);
        float score = 0.0f;
        int32_t type = MLLM_TOKEN_NORMAL;
        if (has_scores) memcpy(&score, (const uint8_t *)sd + 4 * i, 4);
        if (has_types) memcpy(&type, (const uint8_t *)td + 4 * i, 4);
        /* Unknown types (0 = undefined) are kept as normal text. */
        if (type < MLLM_TOKEN_NORMAL || type > MLLM_TOKEN_BYTE) type = MLLM_TOKEN_NORMAL;
        mllm_status st = tok_set_token(t, (int32_t)i, s.ptr, (size_t)s.len, score, type);
        if (st) return st;
    }
    return tok_build_index(t);
}

/* Whether every normal token is one character (UTF-8 sequence): a
   byte-level vocabulary that no merge could form a longer token of. */
static bool single_chars(const mllm_gguf *g) {
    mllm_gguf_type te = MLLM_GGUF_UINT8;
    uint64_t nt = 0, n_vocab = 0;
    const void *td = NULL;
    if (!mllm_gguf_get_arr(g, "tokenizer.ggml.tokens", &te, &n_vocab, &td) || te != MLLM_GGUF_STRING || !n_vocab)
        return false;
    const bool has_types = mllm_gguf_get_arr(g, "tokenizer.ggml.token_type", &te, &nt, &td) && nt == n_vocab &&
                           (te == MLLM_GGUF_INT32 || te == MLLM_GGUF_UINT32);
    for (uint64_t i = 0; i < n_vocab; i++) {
        int32_t type = MLLM_TOKEN_NORMAL;
        if (has_types) memcpy(&type, (const uint8_t *)td + 4 * i, 4);
        mllm_gguf_str s;
        if (!mllm_gguf_get_arr_str(g, "tokenizer.ggml.tokens", i, &s)) return false;
        if (type != MLLM_TOKEN_NORMAL && type >= MLLM_TOKEN_NORMAL && type <= MLLM_TOKEN_BYTE) continue;
        const unsigned char c = s.len ? (unsigned char)s.ptr[0] : 0;
        const uint64_t want = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
        if (!want || s.len != want) return false;
    }
    return true;
}

static mllm_status load_merges(mllm_tokenizer *t, const mllm_gguf *g) {
    mllm_gguf_type e;
    uint64_t n = 0;
    const void *d;
    /* llama.cpp's converter writes no merges for a vocabulary without any
       (every token a single byte-level character): nothing to merge then. */
    if (mllm_gguf_find_key(g, "tokenizer.ggml.merges") < 0 && single_chars(g)) return MLLM_OK;
    if (!mllm_gguf_get_arr(g, "tokenizer.ggml.merges", &e, &n, &d) || e != MLLM_GGUF_STRING)
        return mllm_err(MLLM_ERR_FORMAT, "%s: gpt2 tokenizer without tokenizer.ggml.merges", t->source);
    mllm_status st = tok_reserve_merges(t, (size_t)n);
    for (uint64_t i = 0; i < n && !st; i++) {
        mllm_gguf_str s;
        if (!mllm_gguf_get_arr_str(g, "tokenizer.ggml.merges", i, &s))
            return mllm_err(MLLM_ERR_FORMAT, "%s: merges[%llu] unreadable", t->source, (unsigned long long)i);
        /* "a b": split at the first space after the first byte. */
        const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', (size_t)s.len - 1) : NULL;
        if (!sp)
            return mllm_err(MLLM_ERR_FORMAT, "%s: merges[%llu] '%.*s' has no space", t->source,
                            (unsigned long long)i, (int)(s.len > 64 ? 64 : s.len), s.ptr);
        size_t na = (size_t)(sp - s.ptr);
        st = tok_add_merge(t, s.ptr, na, sp + 1, (size_t)s.len - na - 1, (uint32_t)i);
    }
    return st;
}

static mllm_status configure(mllm_tokenizer *t, const mllm_gguf *g, bool spm) {
    if (spm) { /* llama.cpp's defaults for SentencePiece vocabularies */
        t->bos = 1;
        t->eos = 2;
        t->unk = 0;
        t->add_bos = true;
        t->add_space_prefix = true;
        t->escape_ws = true;
    } else {
        t->byte_level = true;
        mllm_gguf_str pre = {"default", 7};
        mllm_gguf_get_str(g, "tokenizer.ggml.pre", &pre);
        mllm_status st = tok_pretok_by_name(&t->pre, pre.ptr, (size_t)pre.len, &t->ignore_merges,
                                            &t->add_bos, t->source);
        if (st) return st;
        st = load_merges(t, g);
        if (st) return st;
    }
    get_id(g, "tokenizer.ggml.bos_token_id", &t->bos);
    get_id(g, "tokenizer.ggml.eos_token_id", &t->eos);
    get_id(g, "tokenizer.ggml.eot_token_id", &t->eot);
    get_id(g, "tokenizer.ggml.eom_token_id", &t->eom);
    get_id(g, "tokenizer.ggml.unknown_token_id", &t->unk);
    get_id(g, "tokenizer.ggml.padding_token_id", &t->pad);
    get_flag(g, "tokenizer.ggml.add_bos_token", &t->add_bos);
    get_flag(g, "tokenizer.ggml.add_eos_token", &t->add_eos);
    get_flag(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix);
    mllm_gguf_str tmpl;
    if (mllm_gguf_get_str(g, "tokenizer.chat_template", &tmpl)) {
        t->chat_template = mllm_strndup(tmpl.ptr, (size_t)tmpl.len);
        if (!t->chat_template) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", t->source);
    }
    return MLLM_OK;
}

mllm_status mllm_tokenizer_from_gguf(const struct mllm_gguf *g, mllm_tokenizer **out) {
    if (!g || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_tokenizer_from_gguf: NULL argument");
    *out = NULL;
    const char *src = mllm_gguf_path(g) ? mllm_gguf_path(g) : "gguf";
    mllm_gguf_str model;
    if (!mllm_gguf_get_str(g, "tokenizer.ggml.model", &model))
        return mllm_err(MLLM_ERR_FORMAT, "%s: no tokenizer.ggml.model", src);
    bool spm = str_is(model, "llama");
    if (!spm && !str_is(model, "gpt2"))
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: tokenizer model '%.*s' is not supported (llama, gpt2)",
                        src, (int)(model.len > 64 ? 64 : model.len), model.ptr);
    mllm_gguf_type e;
    uint64_t n = 0;
    const void *d;
    if (!mllm_gguf_get_arr(g, "tokenizer.ggml.tokens", &e, &n, &d) || e != MLLM_GGUF_STRING)
        return mllm_err(MLLM_ERR_FORMAT, "%s: no tokenizer.ggml.tokens string array", src);
    if (n == 0 || n > TOK_MAX_VOCAB)
        return mllm_err(MLLM_ERR_FORMAT, "%s: %llu tokens", src, (unsigned long long)n);
    mllm_tokenizer *t;
    mllm_status st = tok_new(spm ? TOK_KIND_SPM : TOK_KIND_BPE, (int32_t)n, src, &t);
    if (st) return st;
    st = load_tokens(t, g, n);
    if (!st) st = configure(t, g, spm);
    if (!st) st = tok_finish(t);
    if (st) {
        mllm_tokenizer_free(t);
        return st;
    }
    *out = t;
    return MLLM_OK;
}
