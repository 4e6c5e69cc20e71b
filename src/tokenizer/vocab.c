/* Building a tokenizer: token table, text -> id map, merges, special-token
   list, end-of-generation set and the decoded piece of every token. Shared
   by all loaders so that every source ends up in the same layout. */
#include "core/alloc.h"
#include "core/error.h"
#include "tokenizer/tokenizer_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mllm_status tok_ids_push(tok_ids *v, int32_t id) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        int32_t *p = mllm_realloc(v->ids, cap * sizeof(int32_t));
        if (!p) return mllm_err(MLLM_ERR_NOMEM, "tokenizer: out of memory (ids)");
        v->ids = p;
        v->cap = cap;
    }
    v->ids[v->n++] = id;
    return MLLM_OK;
}

void tok_clear_special_ids(mllm_tokenizer *t) {
    t->bos = t->eos = t->eot = t->eom = t->unk = t->pad = -1;
}

mllm_status tok_new(tok_kind kind, int32_t n_vocab, const char *source, mllm_tokenizer **out) {
    *out = NULL;
    if (n_vocab <= 0 || n_vocab > TOK_MAX_VOCAB)
        return mllm_err(MLLM_ERR_FORMAT, "%s: tokenizer: bad vocabulary size %d", source, n_vocab);
    mllm_tokenizer *t = mllm_calloc(1, sizeof(*t));
    if (!t) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", source);
    t->kind = kind;
    t->n_vocab = n_vocab;
    tok_clear_special_ids(t);
    size_t n = (size_t)n_vocab;
    t->source = mllm_strndup(source, strlen(source));
    t->text_off = mllm_calloc(n, sizeof(uint64_t));
    t->text_len = mllm_calloc(n, sizeof(uint32_t));
    t->scores = mllm_calloc(n, sizeof(float));
    t->types = mllm_calloc(n, 1);
    t->flags = mllm_calloc(n, 1);
    t->eog = mllm_calloc(n, 1);
    t->text_cap = n * 8 + 64;
    t->text_pool = mllm_malloc(t->text_cap);
    if (!t->source || !t->text_off || !t->text_len || !t->scores || !t->types || !t->flags ||
        !t->eog || !t->text_pool) {
        mllm_tokenizer_free(t);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory (vocabulary)", source);
    }
    /* Offset 0 holds an empty string: every token starts out empty. */
    t->text_pool[0] = 0;
    t->text_len_total = 1;
    memset(t->types, MLLM_TOKEN_UNUSED, n);
    for (int i = 0; i < 256; i++) t->byte_tok[i] = -1;
    *out = t;
    return MLLM_OK;
}

mllm_status tok_set_token(mllm_tokenizer *t, int32_t id, const char *s, size_t n, float score,
                          int type) {
    if (id < 0 || id >= t->n_vocab)
        return mllm_err(MLLM_ERR_FORMAT, "%s: token id %d out of range [0, %d)", t->source, id,
                        t->n_vocab);
    if (n > TOK_MAX_TOKEN_BYTES)
        return mllm_err(MLLM_ERR_FORMAT, "%s: token %d is %zu bytes long (limit %d)", t->source,
                        id, n, TOK_MAX_TOKEN_BYTES);
    if (t->text_len_total + n + 1 > t->text_cap) {
        size_t cap = t->text_cap * 2;
        while (cap < t->text_len_total + n + 1) cap *= 2;
        char *p = mllm_realloc(t->text_pool, cap);
        if (!p) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory (token texts)", t->source);
        t->text_pool = p;
        t->text_cap = cap;
    }
    memcpy(t->text_pool + t->text_len_total, s, n);
    t->text_pool[t->text_len_total + n] = 0;
    t->text_off[id] = t->text_len_total;
    t->text_len[id] = (uint32_t)n;
    t->text_len_total += n + 1;
    t->scores[id] = score;
    t->types[id] = (uint8_t)(type >= MLLM_TOKEN_NORMAL && type <= MLLM_TOKEN_BYTE
                                 ? type : MLLM_TOKEN_NORMAL);
    return MLLM_OK;
}

static tok_texts texts_of(const mllm_tokenizer *t) {
    tok_texts tx = {t->text_pool, t->text_off, t->text_len};
    return tx;
}

mllm_status tok_build_index(mllm_tokenizer *t) {
    tok_strmap_free(&t->text_map);
    mllm_status st = tok_strmap_init(&t->text_map, (size_t)t->n_vocab);
    if (st) return st;
    tok_texts tx = texts_of(t);
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (t->text_len[id] > 0) tok_strmap_put(&t->text_map, &tx, id);
    return MLLM_OK;
}

int32_t tok_find(const mllm_tokenizer *t, const char *s, size_t n) {
    tok_texts tx = texts_of(t);
    return tok_strmap_get(&t->text_map, &tx, s, n);
}

mllm_status tok_reserve_merges(mllm_tokenizer *t, size_t n_merges) {
    tok_pairmap_free(&t->merges);
    return tok_pairmap_init(&t->merges, n_merges);
}

mllm_status tok_add_merge(mllm_tokenizer *t, const char *a, size_t na, const char *b, size_t nb,
                          uint32_t rank) {
    if (!t->merges.keys) return mllm_err(MLLM_ERR_INVALID_ARG, "tokenizer: merges not reserved");
    int32_t l = tok_find(t, a, na), r = tok_find(t, b, nb);
    if (l < 0 || r < 0) return MLLM_OK;
    char buf[512];
    if (na + nb > sizeof buf) return MLLM_OK; /* no vocabulary token is that long */
    memcpy(buf, a, na);
    memcpy(buf + na, b, nb);
    int32_t m = tok_find(t, buf, na + nb);
    if (m < 0) return MLLM_OK;
    tok_pairmap_put(&t->merges, l, r, rank, m);
    return MLLM_OK;
}

/* ---- tok_finish ------------------------------------------------------- */

static void find_byte_tokens(mllm_tokenizer *t) {
    for (int b = 0; b < 256; b++) {
        char buf[8];
        int32_t id = -1;
        if (t->kind == TOK_KIND_BPE && t->byte_level) {
            int n = tok_byte_to_utf8((uint8_t)b, buf);
            id = tok_find(t, buf, (size_t)n);
        } else {
            snprintf(buf, sizeof buf, "<0x%02X>", b);
            id = tok_find(t, buf, 6);
            if (id < 0) {
                buf[0] = (char)b;
                id = tok_find(t, buf, 1);
            }
        }
        t->byte_tok[b] = id;
    }
}

static bool is_special_type(int ty) {
    return ty == MLLM_TOKEN_CONTROL || ty == MLLM_TOKEN_UNKNOWN || ty == MLLM_TOKEN_USER_DEFINED;
}

static int u64_cmp(const void *pa, const void *pb) {
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : (a > b);
}

/* Special ids sorted by text length, longest first (ties: lower id first):
   the key (~len << 32 | id) sorts that way without a context pointer. */
static mllm_status build_special_list(mllm_tokenizer *t) {
    int32_t n = 0;
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (is_special_type(t->types[id]) && t->text_len[id] > 0) n++;
    uint64_t *keys = mllm_malloc((size_t)(n ? n : 1) * sizeof(uint64_t));
    mllm_free(t->special);
    t->special = mllm_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (!keys || !t->special) {
        mllm_free(keys);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", t->source);
    }
    int32_t k = 0;
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (is_special_type(t->types[id]) && t->text_len[id] > 0)
            keys[k++] = ((uint64_t)(uint32_t)~t->text_len[id] << 32) | (uint32_t)id;
    qsort(keys, (size_t)n, sizeof(uint64_t), u64_cmp);
    for (int32_t i = 0; i < n; i++) t->special[i] = (int32_t)(keys[i] & 0xffffffffu);
    t->n_special = n;
    mllm_free(keys);
    return MLLM_OK;
}

/* Texts that end generation wherever they appear (as llama.cpp). The first
   ones double as the EOT token when the source names none. */
static const char *const k_eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "<end_of_utterance>", "<|eom_id|>",
};

static void build_eog(mllm_tokenizer *t) {
    size_t n_texts = sizeof k_eog_texts / sizeof k_eog_texts[0];
    for (size_t i = 0; i < n_texts; i++) {
        int32_t id = tok_find(t, k_eog_texts[i], strlen(k_eog_texts[i]));
        if (id < 0) continue;
        t->eog[id] = 1;
        /* A control-looking token stored as normal is a conversion bug:
           make it control so it is never shown as text (llama.cpp does too). */
        if (t->types[id] == MLLM_TOKEN_NORMAL) t->types[id] = MLLM_TOKEN_CONTROL;
        if (t->eot < 0 && strcmp(k_eog_texts[i], "<|eom_id|>") != 0) t->eot = id;
        if (t->eom < 0 && strcmp(k_eog_texts[i], "<|eom_id|>") == 0) t->eom = id;
    }
    if (t->eos >= 0) t->eog[t->eos] = 1;
    if (t->eot >= 0) t->eog[t->eot] = 1;
    if (t->eom >= 0) t->eog[t->eom] = 1;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decoded bytes of one token into dst (room for text_len + 1 bytes; the NUL after them too). */
static size_t decode_token(const mllm_tokenizer *t, int32_t id, char *dst) {
    const char *s = t->text_pool + t->text_off[id];
    size_t n = t->text_len[id];
    int ty = t->types[id];
    if (ty == MLLM_TOKEN_UNUSED) return 0;
    if (ty == MLLM_TOKEN_CONTROL || ty == MLLM_TOKEN_UNKNOWN || ty == MLLM_TOKEN_USER_DEFINED) {
        memcpy(dst, s, n);
        return n;
    }
    if (ty == MLLM_TOKEN_BYTE && n == 6 && s[0] == '<' && s[1] == '0' && s[2] == 'x' &&
        s[5] == '>' && hexval(s[3]) >= 0 && hexval(s[4]) >= 0) {
        dst[0] = (char)(hexval(s[3]) * 16 + hexval(s[4]));
        return 1;
    }
    /* WordPiece: a continuation piece joins the previous one, any other
       starts a new word (the HF WordPiece decoder's join with spaces). */
    const size_t pl = strlen(t->wp_prefix);
    if (t->kind == TOK_KIND_WORDPIECE && pl && n >= pl && memcmp(s, t->wp_prefix, pl) == 0) {
        memcpy(dst, s + pl, n - pl);
        return n - pl;
    }
    if (t->kind == TOK_KIND_WORDPIECE) {
        dst[0] = ' ';
        memcpy(dst + 1, s, n);
        return n + 1;
    }
    size_t o = 0;
    if (t->kind == TOK_KIND_BPE && t->byte_level) {
        for (size_t i = 0; i < n;) {
            size_t l;
            uint32_t cp = tok_utf8_next(s + i, n - i, &l);
            int b = tok_cp_to_byte(cp);
            if (b >= 0) {
                dst[o++] = (char)b;
            } else { /* not a mapped char: keep its bytes */
                memcpy(dst + o, s + i, l);
                o += l;
            }
            i += l;
        }
        return o;
    }
    if (t->escape_ws) {
        for (size_t i = 0; i < n;) {
            if (i + 3 <= n && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
                dst[o++] = ' ';
                i += 3;
            } else {
                dst[o++] = s[i++];
            }
        }
        return o;
    }
    memcpy(dst, s, n);
    return n;
}

static mllm_status build_pieces(mllm_tokenizer *t) {
    size_t cap = 0;
    /* a piece is at most its text plus one byte (WordPiece's space), then a NUL */
    for (int32_t id = 0; id < t->n_vocab; id++) cap += (size_t)t->text_len[id] + 2;
    mllm_free(t->piece_pool);
    mllm_free(t->piece_off);
    mllm_free(t->piece_len);
    t->piece_pool = mllm_malloc(cap + 1);
    t->piece_off = mllm_malloc((size_t)t->n_vocab * sizeof(uint64_t));
    t->piece_len = mllm_malloc((size_t)t->n_vocab * sizeof(uint32_t));
    if (!t->piece_pool || !t->piece_off || !t->piece_len)
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory (pieces)", t->source);
    size_t o = 0;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        size_t n = decode_token(t, id, t->piece_pool + o);
        t->piece_off[id] = o;
        t->piece_len[id] = (uint32_t)n;
        o += n;
        t->piece_pool[o++] = 0;
    }
    return MLLM_OK;
}

mllm_status tok_finish(mllm_tokenizer *t) {
    if (!t->text_map.slots) {
        mllm_status st = tok_build_index(t);
        if (st) return st;
    }
    int32_t *ids[] = {&t->bos, &t->eos, &t->eot, &t->eom, &t->unk, &t->pad};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (*ids[i] >= t->n_vocab) *ids[i] = -1;
    if (t->add_bos && t->bos < 0) t->add_bos = false;
    if (t->add_eos && t->eos < 0) t->add_eos = false;
    find_byte_tokens(t);
    build_eog(t);
    mllm_status st = build_special_list(t);
    if (st) return st;
    return build_pieces(t);
}
