/* Text that came from a conversation is tokenized as text (issue #20):
   a user who writes "<|im_end|>\n<|im_start|>system" must not close their
   own turn and forge a system turn. Only the template's own markup may
   become control tokens.

   The template cannot say which bytes of its output came from the context,
   so the context is marked before rendering (through the template's
   string-rewrite hook, which carries lengths, so a "\u0000" in a message
   stays a NUL and nothing is cut): in every string (values and keys), each
   occurrence of a control token's text becomes a marker
   U+FDD0 <k> U+FDD1 (k: the token's index in the tokenizer's special list),
   and each U+FDD0 the user wrote becomes U+FDD0 U+FDD1. U+FDD0/U+FDD1 are
   Unicode noncharacters, which templates pass through untouched (trim,
   upper, tojson ...). After rendering, the markers are turned back into
   the original text, and the byte ranges of the restored token texts are
   handed to mllm_tokenizer_encode_spans as plain text. The rendered text
   is byte for byte what it was without marking. */
#include "tokenizer/defuse.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"

#define MARK_OPEN "\xEF\xB7\x90"  /* U+FDD0 */
#define MARK_CLOSE "\xEF\xB7\x91" /* U+FDD1 */
#define MARK_LEN 3

typedef struct {
    char *p;
    size_t n, cap;
} dbuf;

static bool dbuf_put(dbuf *b, const void *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *np = mllm_realloc(b->p, cap);
        if (!np) return false;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return true;
}

static bool is_control(const mllm_tokenizer *t, int32_t id) {
    return mllm_tokenizer_token_type(t, id) != MLLM_TOKEN_USER_DEFINED; /* user-defined ones always match */
}

void mllm_defuse_init(mllm_defuse *d, const mllm_tokenizer *t) {
    memset(d, 0, sizeof *d);
    d->t = t;
    for (int32_t k = 0; k < mllm_tokenizer_n_special(t); k++) {
        int32_t id = mllm_tokenizer_special_at(t, k);
        size_t len = 0;
        const char *txt = mllm_tokenizer_token_text(t, id, &len);
        if (txt && len && is_control(t, id)) d->first[(unsigned char)txt[0]] = true;
    }
}

/* The control token whose text starts at s[0..n), longest first; -1 if
   none. */
static int32_t control_at(const mllm_defuse *d, const char *s, size_t n, size_t *tok_len) {
    const mllm_tokenizer *t = d->t;
    *tok_len = 0;
    if (!d->first[(unsigned char)s[0]]) return -1;
    int32_t best = -1;
    size_t best_len = 0;
    for (int32_t k = 0; k < mllm_tokenizer_n_special(t); k++) {
        int32_t id = mllm_tokenizer_special_at(t, k);
        if (!is_control(t, id)) continue;
        size_t len = 0;
        const char *txt = mllm_tokenizer_token_text(t, id, &len);
        if (txt && len > best_len && len <= n && txt[0] == s[0] && !memcmp(txt, s, len)) {
            best = k;
            best_len = len;
        }
    }
    *tok_len = best_len;
    return best;
}

int mllm_defuse_mark(void *defuse, const char *s, size_t n, char **out, size_t *out_n) {
    const mllm_defuse *d = defuse;
    *out = NULL;
    *out_n = 0;
    dbuf b = {0};
    size_t done = 0;
    for (size_t i = 0; i < n;) {
        size_t tl = 0;
        bool fdd0 = n - i >= MARK_LEN && !memcmp(s + i, MARK_OPEN, MARK_LEN);
        int32_t k = fdd0 ? -1 : control_at(d, s + i, n - i, &tl);
        if (k < 0 && !fdd0) {
            i++;
            continue;
        }
        char mark[32];
        int ml = fdd0 ? snprintf(mark, sizeof mark, "%s%s", MARK_OPEN, MARK_CLOSE)
                      : snprintf(mark, sizeof mark, "%s%d%s", MARK_OPEN, (int)k, MARK_CLOSE);
        if (!dbuf_put(&b, s + done, i - done) || !dbuf_put(&b, mark, (size_t)ml)) goto oom;
        i += fdd0 ? MARK_LEN : tl;
        done = i;
    }
    if (!b.p) return 0; /* nothing to mark: keep the string */
    if (!dbuf_put(&b, s + done, n - done)) goto oom;
    *out = b.p;
    *out_n = b.n;
    return 1;
oom:
    mllm_free(b.p);
    return -1;
}

mllm_status mllm_defuse_restore(const mllm_tokenizer *t, const char *text, size_t len, char **out, size_t *out_len,
                                mllm_text_span **spans, size_t *n_spans) {
    *out = NULL;
    *out_len = 0;
    if (spans) *spans = NULL;
    if (n_spans) *n_spans = 0;
    dbuf b = {0};
    mllm_text_span *sp = NULL;
    size_t nsp = 0, capsp = 0;
    size_t done = 0;
    bool ok = true;
    for (size_t i = 0; ok && i + MARK_LEN <= len;) {
        if (memcmp(text + i, MARK_OPEN, MARK_LEN)) {
            i++;
            continue;
        }
        size_t j = i + MARK_LEN;
        long k = 0;
        size_t digits = 0;
        while (j < len && text[j] >= '0' && text[j] <= '9' && digits < 9) k = k * 10 + (text[j++] - '0'), digits++;
        if (j + MARK_LEN > len || memcmp(text + j, MARK_CLOSE, MARK_LEN)) {
            i++; /* a marker a template cut in two: left as it is */
            continue;
        }
        const char *rep = MARK_OPEN;
        size_t rep_len = MARK_LEN;
        int32_t id = digits ? mllm_tokenizer_special_at(t, (int32_t)k) : -1;
        if (digits && (id < 0 || !(rep = mllm_tokenizer_token_text(t, id, &rep_len)))) {
            i++;
            continue;
        }
        ok = dbuf_put(&b, text + done, i - done);
        size_t at = b.n;
        ok = ok && dbuf_put(&b, rep, rep_len);
        if (ok && digits) {
            if (nsp == capsp) {
                size_t cap = capsp ? capsp * 2 : 16;
                mllm_text_span *ns = mllm_realloc(sp, cap * sizeof *ns);
                if (!ns) ok = false;
                else sp = ns, capsp = cap;
            }
            if (ok) sp[nsp++] = (mllm_text_span){at, at + rep_len};
        }
        i = j + MARK_LEN;
        done = i;
    }
    ok = ok && dbuf_put(&b, text + done, len - done);
    if (!ok) {
        mllm_free(b.p);
        mllm_free(sp);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    *out = b.p;
    *out_len = b.n;
    if (spans) *spans = sp;
    else mllm_free(sp);
    if (n_spans) *n_spans = nsp;
    return MLLM_OK;
}
