/* A generated token's text, whole UTF-8 characters only (token_text.h). */
#include "runtime/token_text.h"
#include <string.h>

/* Length of the longest prefix of b[0..n) that ends on a UTF-8 character
   boundary, so a multi-byte character split over tokens is sent whole. */
static size_t utf8_complete(const char *b, size_t n) {
    size_t i = n;
    int back = 0;
    while (i > 0 && back < 4) {
        unsigned char ch = (unsigned char)b[i - 1];
        if ((ch & 0xC0) != 0x80) {
            int need = ch < 0x80 ? 1 : (ch >> 5) == 6 ? 2 : (ch >> 4) == 14 ? 3 : (ch >> 3) == 30 ? 4 : 1;
            return (back + 1 >= need) ? n : i - 1;
        }
        i--;
        back++;
    }
    return n;
}

int mllm_token_text_emit(mllm_token_text *tt, const mllm_tokenizer *tok, int32_t id, mllm_on_token cb, void *user) {
    size_t plen = 0;
    const char *piece = mllm_tokenizer_piece(tok, id, &plen);
    /* Control tokens (<|im_start|>, <s>, ...) are not text. */
    if (!piece || mllm_tokenizer_token_type(tok, id) == MLLM_TOKEN_CONTROL) plen = 0;
    char buf[256];
    int stop = 0;
    if (tt->n_pending + plen <= sizeof buf) {
        memcpy(buf, tt->pending, tt->n_pending);
        if (plen) memcpy(buf + tt->n_pending, piece, plen); /* an id past the tokenizer's (padded vocab): no piece */
        size_t total = tt->n_pending + plen, ok = utf8_complete(buf, total);
        if (cb) stop = cb(user, id, buf, ok);
        tt->n_pending = total - ok;
        memcpy(tt->pending, buf + ok, tt->n_pending);
    } else {
        if (cb) stop = cb(user, -1, tt->pending, tt->n_pending) || cb(user, id, piece, plen);
        tt->n_pending = 0;
    }
    return stop;
}

void mllm_token_text_flush(mllm_token_text *tt, mllm_on_token cb, void *user) {
    if (tt->n_pending && cb) cb(user, -1, tt->pending, tt->n_pending);
    tt->n_pending = 0;
}
