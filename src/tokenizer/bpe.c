/* BPE encoding of one text fragment: optional NFC, regex pre-tokenization,
   then per word the lowest-rank merge first (ties: leftmost), with the merge
   table keyed by (left id, right id). Byte-level vocabularies start from one
   symbol per byte (GPT-2 mapping); plain ones from one symbol per UTF-8
   character, with <0xXX> byte fallback. */
#include "core/alloc.h"
#include "core/error.h"
#include "tokenizer/tok_heap.h"
#include "tokenizer/tokenizer_internal.h"
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

typedef struct {
    int32_t *id;     /* (n) current token of each symbol; -1 unknown */
    int32_t *prev, *next;
    uint32_t *start, *len; /* bytes of the word */
    size_t n, cap;
    tok_heap heap;
} bpe_scratch;

static mllm_status scratch_reserve(bpe_scratch *s, size_t n) {
    if (n <= s->cap) return MLLM_OK;
    size_t cap = s->cap ? s->cap : 64;
    while (cap < n) cap *= 2;
    int32_t *id = mllm_realloc(s->id, cap * sizeof(int32_t));
    if (id) s->id = id;
    int32_t *pv = mllm_realloc(s->prev, cap * sizeof(int32_t));
    if (pv) s->prev = pv;
    int32_t *nx = mllm_realloc(s->next, cap * sizeof(int32_t));
    if (nx) s->next = nx;
    uint32_t *st = mllm_realloc(s->start, cap * sizeof(uint32_t));
    if (st) s->start = st;
    uint32_t *ln = mllm_realloc(s->len, cap * sizeof(uint32_t));
    if (ln) s->len = ln;
    if (!id || !pv || !nx || !st || !ln)
        return mllm_err(MLLM_ERR_NOMEM, "tokenizer: out of memory (BPE word)");
    s->cap = cap;
    return MLLM_OK;
}

static void scratch_free(bpe_scratch *s) {
    mllm_free(s->id);
    mllm_free(s->prev);
    mllm_free(s->next);
    mllm_free(s->start);
    mllm_free(s->len);
    mllm_free(s->heap.v);
}

static mllm_status try_pair(const mllm_tokenizer *t, bpe_scratch *s, int32_t l, int32_t r) {
    if (l < 0 || r < 0 || s->id[l] < 0 || s->id[r] < 0) return MLLM_OK;
    uint32_t rank;
    int32_t merged;
    if (!tok_pairmap_get(&t->merges, s->id[l], s->id[r], &rank, &merged)) return MLLM_OK;
    tok_cand c = {rank, l, r, s->id[l], s->id[r], merged};
    return tok_heap_push(&s->heap, &c);
}

/* Pushes the byte tokens of bytes [p, p+n) (plain BPE with byte fallback). */
static mllm_status push_bytes(const mllm_tokenizer *t, const char *p, size_t n, tok_ids *out) {
    mllm_status st = MLLM_OK;
    for (size_t i = 0; i < n && !st; i++) {
        int32_t id = t->byte_tok[(uint8_t)p[i]];
        if (id < 0) id = t->unk;
        if (id >= 0) st = tok_ids_push(out, id);
    }
    return st;
}

static mllm_status bpe_word(const mllm_tokenizer *t, const char *w, size_t n, bpe_scratch *s,
                            tok_ids *out) {
    mllm_status st = scratch_reserve(s, n);
    if (st) return st;
    size_t k = 0;
    for (size_t i = 0; i < n; k++) {
        size_t l = 1;
        if (!t->byte_level) (void)tok_utf8_next(w + i, n - i, &l); /* invalid byte: alone */
        s->id[k] = t->byte_level ? t->byte_tok[(uint8_t)w[i]] : tok_find(t, w + i, l);
        s->start[k] = (uint32_t)i;
        s->len[k] = (uint32_t)l;
        s->prev[k] = (int32_t)k - 1;
        s->next[k] = (int32_t)k + 1;
        i += l;
    }
    s->n = k;
    if (k == 0) return MLLM_OK;
    s->next[k - 1] = -1;
    s->heap.n = 0;
    for (size_t i = 0; i + 1 < k && !st; i++) st = try_pair(t, s, (int32_t)i, (int32_t)i + 1);
    while (!st && s->heap.n > 0) {
        tok_cand c = tok_heap_pop(&s->heap);
        int32_t l = c.left, r = c.right;
        /* Stale candidates: a side was merged away or changed since the push. */
        if (s->len[l] == 0 || s->len[r] == 0 || s->next[l] != r || s->id[l] != c.a ||
            s->id[r] != c.b)
            continue;
        s->id[l] = c.merged;
        s->len[l] += s->len[r];
        s->len[r] = 0;
        s->next[l] = s->next[r];
        if (s->next[r] >= 0) s->prev[s->next[r]] = l;
        st = try_pair(t, s, s->prev[l], l);
        if (!st) st = try_pair(t, s, l, s->next[l]);
    }
    for (int32_t i = 0; i >= 0 && !st; i = s->next[i]) {
        if (s->id[i] >= 0)
            st = tok_ids_push(out, s->id[i]);
        else if (!t->byte_level)
            st = push_bytes(t, w + s->start[i], s->len[i], out);
        /* byte-level: a byte missing from the vocab is dropped (llama.cpp) */
    }
    return st;
}

/* llama3-style ignore_merges: a word that is itself a token is not merged. */
static int32_t whole_word(const mllm_tokenizer *t, const char *w, size_t n, char *buf) {
    if (!t->byte_level) return tok_find(t, w, n);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) o += (size_t)tok_byte_to_utf8((uint8_t)w[i], buf + o);
    return tok_find(t, buf, o);
}

mllm_status tok_bpe_encode(const mllm_tokenizer *t, const char *text, size_t len, tok_ids *out) {
    if (len == 0) return MLLM_OK;
    uint8_t *norm = NULL;
    if (t->nfc) {
        utf8proc_ssize_t r = utf8proc_map((const uint8_t *)text, (utf8proc_ssize_t)len, &norm,
                                          UTF8PROC_STABLE | UTF8PROC_COMPOSE);
        if (r >= 0) { /* invalid UTF-8 is left as it is */
            text = (const char *)norm;
            len = (size_t)r;
        } else {
            norm = NULL;
        }
    }
    tok_spans spans = {0};
    bpe_scratch s = {0};
    char *buf = NULL;
    mllm_status st = tok_pretok_split(&t->pre, text, len, &spans);
    if (!st && t->ignore_merges) {
        size_t longest = 0;
        for (size_t i = 0; i < spans.n; i++)
            if (spans.v[i].len > longest) longest = spans.v[i].len;
        buf = mllm_malloc(longest * 2 + 1);
        if (!buf) st = mllm_err(MLLM_ERR_NOMEM, "tokenizer: out of memory");
    }
    for (size_t i = 0; i < spans.n && !st; i++) {
        const char *w = text + spans.v[i].start;
        size_t n = spans.v[i].len;
        int32_t id = t->ignore_merges ? whole_word(t, w, n, buf) : -1;
        st = id >= 0 ? tok_ids_push(out, id) : bpe_word(t, w, n, &s, out);
    }
    mllm_free(buf);
    scratch_free(&s);
    mllm_free(spans.v);
    free(norm); /* utf8proc allocates with malloc */
    return st;
}
