/* SentencePiece-style encoding (llama.cpp's SPM and llama2.c run.c): start
   from one symbol per UTF-8 character, repeatedly merge the adjacent pair
   whose concatenation is the vocabulary token with the highest score (ties:
   leftmost), then emit each symbol's token or its bytes as <0xXX> tokens.
   The caller has already added the dummy prefix and escaped spaces. */
#include "core/alloc.h"
#include "core/error.h"
#include "tokenizer/tok_heap.h"
#include "tokenizer/tokenizer_internal.h"
#include <string.h>

typedef struct {
    int32_t prev, next;
    uint32_t start, len; /* len 0 = merged away */
    bool frozen;         /* llama2.c: a char not in the vocab never merges */
} spm_sym;

/* Scores sorted descending as unsigned keys: the heap pops its smallest. */
static uint64_t score_key(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u); /* ascending order */
    return (uint64_t)(uint32_t)~u;
}

static mllm_status try_bigram(const mllm_tokenizer *t, const char *text, spm_sym *sym,
                              tok_heap *h, int32_t l, int32_t r) {
    if (l < 0 || r < 0 || sym[l].frozen || sym[r].frozen) return MLLM_OK;
    uint32_t size = sym[l].len + sym[r].len;
    int32_t id = tok_find(t, text + sym[l].start, size);
    if (id < 0) return MLLM_OK;
    tok_cand c = {score_key(t->scores[id]), l, r, (int32_t)size, 0, id};
    return tok_heap_push(h, &c);
}

mllm_status tok_spm_encode(const mllm_tokenizer *t, const char *text, size_t len, tok_ids *out) {
    if (len == 0) return MLLM_OK;
    if (len > (size_t)INT32_MAX) return mllm_err(MLLM_ERR_INVALID_ARG, "tokenizer: text too long");
    spm_sym *sym = mllm_malloc(len * sizeof(spm_sym));
    if (!sym) return mllm_err(MLLM_ERR_NOMEM, "tokenizer: out of memory (SPM symbols)");
    int32_t n = 0;
    for (size_t i = 0; i < len; n++) {
        /* A byte that does not start a valid sequence is a symbol of its own
           (llama.cpp would swallow the next bytes: an escaped space among
           them would then come back as U+2581 instead of ' '). */
        size_t l;
        (void)tok_utf8_next(text + i, len - i, &l);
        sym[n].prev = n - 1;
        sym[n].next = n + 1;
        sym[n].start = (uint32_t)i;
        sym[n].len = (uint32_t)l;
        sym[n].frozen = t->strict_chars && tok_find(t, text + i, l) < 0;
        i += l;
    }
    sym[n - 1].next = -1;
    tok_heap h = {0};
    mllm_status st = MLLM_OK;
    for (int32_t i = 0; i + 1 < n && !st; i++) st = try_bigram(t, text, sym, &h, i, i + 1);
    while (!st && h.n > 0) {
        tok_cand c = tok_heap_pop(&h);
        spm_sym *L = &sym[c.left], *R = &sym[c.right];
        if (L->len == 0 || R->len == 0 || L->next != c.right || L->len + R->len != (uint32_t)c.a)
            continue;
        L->len += R->len;
        R->len = 0;
        L->next = R->next;
        if (R->next >= 0) sym[R->next].prev = c.left;
        st = try_bigram(t, text, sym, &h, L->prev, c.left);
        if (!st) st = try_bigram(t, text, sym, &h, c.left, L->next);
    }
    for (int32_t i = 0; i >= 0 && !st; i = sym[i].next) {
        int32_t id = tok_find(t, text + sym[i].start, sym[i].len);
        if (id >= 0) {
            st = tok_ids_push(out, id);
            continue;
        }
        for (uint32_t j = 0; j < sym[i].len && !st; j++) {
            int32_t b = t->byte_tok[(uint8_t)text[sym[i].start + j]];
            if (b < 0) b = t->unk;
            if (b >= 0) st = tok_ids_push(out, b);
        }
    }
    mllm_free(h.v);
    mllm_free(sym);
    return st;
}
