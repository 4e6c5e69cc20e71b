/* Text -> ids: split out special/added tokens (leftmost, longest first),
   encode the text between them with the tokenizer's algorithm, add BOS/EOS.
   And ids -> text. */
#include "core/alloc.h"
#include "core/error.h"
#include "tokenizer/tokenizer_internal.h"
#include <string.h>

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Encodes one fragment of plain text. first_after_special: the fragment
   starts the text or follows a special token (SPM dummy prefix goes there). */
static mllm_status encode_text(const mllm_tokenizer *t, const char *s, size_t n,
                               bool first_after_special, tok_ids *out) {
    if (n == 0) return MLLM_OK;
    if (t->kind == TOK_KIND_WORDPIECE) return tok_wordpiece_encode(t, s, n, out);
    bool prefix = (t->add_space_prefix && first_after_special) ||
                  (t->regex_prefix_space && s[0] != ' '); /* HF ByteLevel add_prefix_space */
    if (!prefix && !t->escape_ws) {
        return t->kind == TOK_KIND_SPM ? tok_spm_encode(t, s, n, out) : tok_bpe_encode(t, s, n, out);
    }
    /* Worst case: every byte a space becoming U+2581 (3 bytes), plus prefix. */
    char *buf = mllm_malloc(n * 3 + 4);
    if (!buf) return mllm_err(MLLM_ERR_NOMEM, "tokenizer: out of memory");
    size_t o = 0;
    if (prefix) buf[o++] = ' ';
    memcpy(buf + o, s, n);
    o += n;
    if (t->escape_ws) {
        size_t spaces = 0;
        for (size_t i = 0; i < o; i++) spaces += buf[i] == ' ';
        size_t m = o + spaces * 2;
        for (size_t i = o, j = m; i-- > 0;) {
            if (buf[i] == ' ') {
                buf[--j] = (char)0x81;
                buf[--j] = (char)0x96;
                buf[--j] = (char)0xe2;
            } else {
                buf[--j] = buf[i];
            }
        }
        o = m;
    }
    mllm_status st = t->kind == TOK_KIND_SPM ? tok_spm_encode(t, buf, o, out)
                                             : tok_bpe_encode(t, buf, o, out);
    mllm_free(buf);
    return st;
}

/* The special token starting at text[i] (longest wins), or -1. */
static int32_t special_at(const mllm_tokenizer *t, const char *text, size_t len, size_t i,
                          bool parse_special) {
    for (int32_t k = 0; k < t->n_special; k++) {
        int32_t id = t->special[k];
        uint32_t n = t->text_len[id];
        if (n > len - i) continue;
        if (!parse_special && t->types[id] != MLLM_TOKEN_USER_DEFINED) continue;
        const char *s = t->text_pool + t->text_off[id];
        if (s[0] == text[i] && memcmp(s, text + i, n) == 0) return id;
    }
    return -1;
}

/* plain (n_plain, sorted, disjoint): byte ranges where no control token may
   start, as if parse_special were false there (NULL: none). */
static mllm_status encode_all(const mllm_tokenizer *t, const char *text, size_t len,
                              bool add_special, bool parse_special, const mllm_text_span *plain,
                              size_t n_plain, tok_ids *out) {
    mllm_status st = MLLM_OK;
    if (add_special && t->add_bos) st = tok_ids_push(out, t->bos);
    /* Which bytes can start a special token: skips most positions at once. */
    bool first_byte[256] = {false};
    for (int32_t k = 0; k < t->n_special; k++)
        first_byte[(uint8_t)t->text_pool[t->text_off[t->special[k]]]] = true;
    size_t frag = 0; /* start of the pending text fragment */
    bool after_special = true;
    size_t sp = 0;   /* the first plain span that does not end before i */
    for (size_t i = 0; i < len && !st;) {
        while (sp < n_plain && plain[sp].end <= i) sp++;
        bool in_plain = sp < n_plain && plain[sp].start <= i;
        int32_t id = first_byte[(uint8_t)text[i]] ? special_at(t, text, len, i, parse_special && !in_plain) : -1;
        if (id < 0) {
            i++;
            continue;
        }
        size_t end = i;
        if (t->flags[id] & TOK_FLAG_LSTRIP)
            while (end > frag && is_space(text[end - 1])) end--;
        st = encode_text(t, text + frag, end - frag, after_special, out);
        if (!st) st = tok_ids_push(out, id);
        after_special = true;
        i += t->text_len[id];
        if (t->flags[id] & TOK_FLAG_RSTRIP)
            while (i < len && is_space(text[i])) i++;
        frag = i;
    }
    if (!st && frag < len) st = encode_text(t, text + frag, len - frag, after_special, out);
    if (!st && add_special && t->add_eos) st = tok_ids_push(out, t->eos);
    return st;
}

static mllm_status finish(mllm_status st, tok_ids *outp, int32_t *ids, size_t cap, size_t *n_ids);

mllm_status mllm_tokenizer_encode(const mllm_tokenizer *t, const char *text, size_t len,
                                  bool add_special, bool parse_special, int32_t *ids, size_t cap,
                                  size_t *n_ids) {
    if (n_ids) *n_ids = 0;
    if (!t || (!text && len) || !n_ids || (!ids && cap))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_tokenizer_encode: bad arguments");
    tok_ids out = {0};
    mllm_status st = encode_all(t, text, len, add_special, parse_special, NULL, 0, &out);
    return finish(st, &out, ids, cap, n_ids);
}

mllm_status mllm_tokenizer_encode_spans(const mllm_tokenizer *t, const char *text, size_t len, bool add_special,
                                        const mllm_text_span *plain, size_t n_plain, int32_t *ids, size_t cap,
                                        size_t *n_ids) {
    if (n_ids) *n_ids = 0;
    if (!t || (!text && len) || !n_ids || (!ids && cap) || (!plain && n_plain))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_tokenizer_encode_spans: bad arguments");
    for (size_t k = 0; k < n_plain; k++)
        if (plain[k].start > plain[k].end || plain[k].end > len || (k && plain[k].start < plain[k - 1].end))
            return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_tokenizer_encode_spans: span %zu is not sorted and inside the text", k);
    tok_ids out = {0};
    mllm_status st = encode_all(t, text, len, add_special, true, plain, n_plain, &out);
    return finish(st, &out, ids, cap, n_ids);
}

static mllm_status finish(mllm_status st, tok_ids *outp, int32_t *ids, size_t cap, size_t *n_ids) {
    tok_ids out = *outp;
    if (!st) {
        *n_ids = out.n;
        if (cap < out.n) {
            st = mllm_err(MLLM_ERR_BUFFER_TOO_SMALL, "tokenizer: %zu ids need room, %zu given",
                          out.n, cap);
        } else if (out.n) {
            memcpy(ids, out.ids, out.n * sizeof(int32_t));
        }
    }
    mllm_free(out.ids);
    return st;
}

static bool is_special_type(int ty) {
    return ty == MLLM_TOKEN_CONTROL || ty == MLLM_TOKEN_UNKNOWN || ty == MLLM_TOKEN_USER_DEFINED;
}

mllm_status mllm_tokenizer_decode(const mllm_tokenizer *t, const int32_t *ids, size_t n_ids,
                                  bool skip_special, char *buf, size_t cap, size_t *len) {
    if (len) *len = 0;
    if (!t || (!ids && n_ids) || !len || (!buf && cap))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_tokenizer_decode: bad arguments");
    size_t o = 0;
    bool after_special = true; /* where encode put a dummy-prefix space */
    for (size_t i = 0; i < n_ids; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_vocab)
            return mllm_err(MLLM_ERR_INVALID_ARG, "tokenizer: id %d out of range [0, %d)", id,
                            t->n_vocab);
        int ty = t->types[id];
        const char *p = t->piece_pool + t->piece_off[id];
        size_t n = t->piece_len[id];
        if (is_special_type(ty)) {
            after_special = true;
            if (skip_special && ty != MLLM_TOKEN_USER_DEFINED) continue;
        } else {
            if (after_special && t->add_space_prefix && n > 0 && p[0] == ' ') {
                p++;
                n--;
            }
            after_special = false;
        }
        if (n && o + n <= cap) memcpy(buf + o, p, n); /* buf may be NULL when cap is 0 */
        o += n;
    }
    *len = o;
    if (o > cap)
        return mllm_err(MLLM_ERR_BUFFER_TOO_SMALL, "tokenizer: %zu bytes need room, %zu given", o,
                        cap);
    return MLLM_OK;
}
