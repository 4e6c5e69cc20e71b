/* BERT's tokenizer as Hugging Face tokenizers runs it: BertNormalizer
   (clean text, pad CJK ideographs with spaces, strip accents, lowercase),
   BertPreTokenizer (split on whitespace, isolate punctuation), then
   WordPiece: per word, greedy longest-match-first against the vocabulary,
   pieces after the first carrying the continuation prefix ("##"); a word
   that cannot be covered, or is longer than max_input_chars_per_word
   characters, is one [UNK]. Character classes come from utf8proc. */
#include <string.h>
#include <utf8proc.h>
#include "core/alloc.h"
#include "core/error.h"
#include "tokenizer/tokenizer_internal.h"

typedef struct {
    uint32_t *cp;
    size_t n, cap;
} cp_buf;

static mllm_status cp_push(cp_buf *b, uint32_t c) {
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        uint32_t *p = mllm_realloc(b->cp, cap * sizeof *p);
        if (!p) return mllm_err(MLLM_ERR_NOMEM, "tokenizer: out of memory (normalizer)");
        b->cp = p;
        b->cap = cap;
    }
    b->cp[b->n++] = c;
    return MLLM_OK;
}

/* tokenizers' bert.rs is_whitespace (Rust's char::is_whitespace = Unicode
   White_Space, plus \t \n \r which it already has). */
static bool is_ws(uint32_t c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0d) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
           c == 0x3000;
}

/* is_control: any "Other" category (Cc, Cf, Cs, Co, Cn) but \t \n \r. */
static bool is_control(uint32_t c) {
    if (c == '\t' || c == '\n' || c == '\r') return false;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN: return true;
    default: return false;
    }
}

/* The CJK ideograph blocks of tokenizers' is_chinese_char. */
static bool is_chinese(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* ASCII punctuation (which includes symbols like $ + < = > ^ ` | ~) or any
   Unicode P* category. */
static bool is_punct(uint32_t c) {
    if (c < 128) return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO: return true;
    default: return false;
    }
}

/* Appends c after the accent-stripping (NFD, nonspacing marks dropped) and
   lowercasing steps, in that order as BertNormalizer applies them. */
static mllm_status push_folded(const mllm_tokenizer *t, cp_buf *b, uint32_t c) {
    utf8proc_int32_t dec[32];
    utf8proc_ssize_t n = 1;
    dec[0] = (utf8proc_int32_t)c;
    if (t->bert_norm.strip_accents) {
        int last = 0;
        n = utf8proc_decompose_char((utf8proc_int32_t)c, dec, 32, UTF8PROC_DECOMPOSE, &last);
        if (n < 0 || n > 32) { /* cannot happen for a valid code point; keep it as is */
            dec[0] = (utf8proc_int32_t)c;
            n = 1;
        }
    }
    mllm_status st = MLLM_OK;
    for (utf8proc_ssize_t i = 0; i < n && !st; i++) {
        utf8proc_int32_t d = dec[i];
        if (t->bert_norm.strip_accents && utf8proc_category(d) == UTF8PROC_CATEGORY_MN) continue;
        if (t->bert_norm.lowercase) {
            /* Rust's char::to_lowercase; its one multi-character mapping
               (U+0130, I with dot above) is i + U+0307. */
            if (d == 0x130) {
                st = cp_push(b, 'i');
                if (!st) st = cp_push(b, 0x307);
                continue;
            }
            d = utf8proc_tolower(d);
        }
        st = cp_push(b, (uint32_t)d);
    }
    return st;
}

static mllm_status normalize(const mllm_tokenizer *t, const char *s, size_t n, cp_buf *out) {
    mllm_status st = MLLM_OK;
    for (size_t i = 0; i < n && !st;) {
        size_t l;
        uint32_t c = tok_utf8_next(s + i, n - i, &l);
        i += l;
        if (!t->bert_norm.on) {
            st = cp_push(out, c);
            continue;
        }
        if (t->bert_norm.clean_text) {
            if (c == 0 || c == 0xfffd || is_control(c)) continue;
            if (is_ws(c)) c = ' ';
        }
        if (t->bert_norm.chinese_chars && is_chinese(c)) {
            st = cp_push(out, ' ');
            if (!st) st = push_folded(t, out, c);
            if (!st) st = cp_push(out, ' ');
            continue;
        }
        st = push_folded(t, out, c);
    }
    return st;
}

/* WordPiece of one word (code points w[0..n)). */
static mllm_status encode_word(const mllm_tokenizer *t, const uint32_t *w, size_t n, tok_ids *out) {
    if (n > (size_t)t->wp_max_chars) return tok_ids_push(out, t->unk);
    /* UTF-8 of the word, with each code point's byte offset. */
    const size_t plen = strlen(t->wp_prefix);
    char *u = mllm_malloc(n * 4 + plen + 1);
    size_t *off = mllm_malloc((n + 1) * sizeof *off);
    size_t mark = out->n;
    mllm_status st = u && off ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "tokenizer: out of memory (word)");
    size_t o = plen;
    for (size_t i = 0; i < n && !st; i++) {
        off[i] = o - plen;
        o += (size_t)utf8proc_encode_char((utf8proc_int32_t)w[i], (utf8proc_uint8_t *)u + o);
    }
    if (!st) off[n] = o - plen;
    bool bad = false;
    for (size_t start = 0; start < n && !st && !bad;) {
        int32_t id = -1;
        size_t end = n;
        for (; end > start; end--) {
            /* text[start, end); after the first piece, with the prefix
               written over the plen bytes before it (u starts with plen
               bytes of room for that), then put back */
            const char *p = u + plen + off[start];
            size_t len = off[end] - off[start];
            if (start > 0) {
                char *q = (char *)p - plen;
                char save[TOK_WP_MAX_PREFIX];
                memcpy(save, q, plen);
                memcpy(q, t->wp_prefix, plen);
                id = tok_find(t, q, len + plen);
                memcpy(q, save, plen);
            } else {
                id = tok_find(t, p, len);
            }
            if (id >= 0) break;
        }
        if (id < 0) bad = true;
        else st = tok_ids_push(out, id);
        start = end;
    }
    mllm_free(u);
    mllm_free(off);
    if (st) return st;
    if (bad) {
        out->n = mark;
        return tok_ids_push(out, t->unk);
    }
    return MLLM_OK;
}

mllm_status tok_wordpiece_encode(const mllm_tokenizer *t, const char *text, size_t len, tok_ids *out) {
    if (t->unk < 0) return mllm_err(MLLM_ERR_FORMAT, "%s: WordPiece vocabulary without an unk_token", t->source);
    cp_buf b = {0};
    mllm_status st = normalize(t, text, len, &b);
    /* Words: maximal runs of non-space, non-punctuation; each punctuation
       character is a word of its own (BertPreTokenizer). */
    for (size_t i = 0; i < b.n && !st;) {
        uint32_t c = b.cp[i];
        if (t->bert_pre && is_ws(c)) {
            i++;
            continue;
        }
        size_t j = i + 1;
        if (!t->bert_pre || !is_punct(c))
            while (j < b.n && !(t->bert_pre && (is_ws(b.cp[j]) || is_punct(b.cp[j])))) j++;
        st = encode_word(t, b.cp + i, j - i, out);
        i = j;
    }
    mllm_free(b.cp);
    return st;
}
