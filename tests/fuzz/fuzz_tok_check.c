/* Tokenizer contract checks for the tokenizer fuzz targets. */
#include "fuzz_tok_check.h"
#include <stdlib.h>
#include <string.h>

/* Vocabulary entries looked at one by one (bounds the cost per input). */
#define FZ_VOCAB_VISIT 4096

static void check_id_api(const mllm_tokenizer *t, int32_t id, int32_t n_vocab) {
    size_t len = 0;
    const char *p = mllm_tokenizer_piece(t, id, &len);
    const char *s = mllm_tokenizer_token_text(t, id, &len);
    mllm_token_type ty = mllm_tokenizer_token_type(t, id);
    (void)mllm_tokenizer_is_eog(t, id);
    if (id < 0 || id >= n_vocab) {
        FZ_CHECK(p == NULL && s == NULL && ty == 0);
        return;
    }
    FZ_CHECK(s != NULL);
    volatile char sink = 0;
    if (len) sink ^= s[len - 1];
    if (p && mllm_tokenizer_piece(t, id, &len) && len) sink ^= p[len - 1];
    (void)sink;
}

static void check_special(const mllm_tokenizer *t, int32_t id, int32_t n_vocab) {
    FZ_CHECK(id >= -1 && id < n_vocab);
}

void fz_exercise_tokenizer(const mllm_tokenizer *t, fz_input in) {
    int32_t n_vocab = mllm_tokenizer_n_vocab(t);
    FZ_CHECK(n_vocab > 0);
    check_special(t, mllm_tokenizer_bos(t), n_vocab);
    check_special(t, mllm_tokenizer_eos(t), n_vocab);
    check_special(t, mllm_tokenizer_eot(t), n_vocab);
    const char *kind = mllm_tokenizer_kind(t);
    FZ_CHECK(kind && (!strcmp(kind, "bpe") || !strcmp(kind, "spm") || !strcmp(kind, "wordpiece")));
    const char *tmpl = mllm_tokenizer_chat_template(t);
    if (tmpl) FZ_CHECK(strlen(tmpl) < ((size_t)1 << 30));
    int32_t visit = n_vocab < FZ_VOCAB_VISIT ? n_vocab : FZ_VOCAB_VISIT;
    for (int32_t id = 0; id < visit; id++) check_id_api(t, id, n_vocab);
    check_id_api(t, n_vocab - 1, n_vocab);
    check_id_api(t, n_vocab, n_vocab);
    check_id_api(t, -1, n_vocab);

    uint8_t flags = fz_take_u8(&in);
    bool add_special = flags & 1, parse_special = flags & 2;
    char *text = fz_dup(in.p, in.n);
    size_t need = 0;
    /* First with no room: must say how much it needs. */
    mllm_status st = mllm_tokenizer_encode(t, text, in.n, add_special, parse_special, NULL, 0, &need);
    fz_check_status(st);
    if (st != MLLM_OK && st != MLLM_ERR_BUFFER_TOO_SMALL) {
        free(text);
        return;
    }
    FZ_CHECK(st == MLLM_OK ? need == 0 : need > 0);
    int32_t *ids = malloc((need ? need : 1) * sizeof *ids);
    size_t got = 0;
    st = mllm_tokenizer_encode(t, text, in.n, add_special, parse_special, ids, need, &got);
    fz_check_status(st);
    FZ_CHECK(st == MLLM_OK && got == need);
    for (size_t i = 0; i < got; i++) FZ_CHECK(ids[i] >= 0 && ids[i] < n_vocab);
    free(text);

    bool skip = flags & 4;
    size_t len = 0;
    st = mllm_tokenizer_decode(t, ids, got, skip, NULL, 0, &len);
    fz_check_status(st);
    FZ_CHECK(st == MLLM_OK || st == MLLM_ERR_BUFFER_TOO_SMALL);
    FZ_CHECK(st == MLLM_OK ? len == 0 : len > 0);
    char *out = malloc(len ? len : 1);
    size_t len2 = 0;
    st = mllm_tokenizer_decode(t, ids, got, skip, out, len, &len2);
    fz_check_status(st);
    FZ_CHECK(st == MLLM_OK && len2 == len);
    /* Out-of-range ids are an error, never a read out of bounds. */
    int32_t bad[2] = {n_vocab, -1};
    st = mllm_tokenizer_decode(t, bad + (flags >> 7), 1, skip, out, len, &len2);
    fz_check_status(st);
    free(out);
    free(ids);
}
