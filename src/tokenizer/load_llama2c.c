/* llama2.c tokenizer.bin: int32 max_token_length, then per token f32 score,
   int32 length, bytes. The file has no token count: tokens run to EOF.
   Encoding follows llama2.c run.c: dummy-prefix " ", characters missing from
   the vocab become <0xXX> byte tokens at once, merges by highest score.
   BOS = 1, EOS = 2, and the pieces store real spaces (no U+2581). */
#include "core/alloc.h"
#include "core/error.h"
#include "tokenizer/tokenizer_internal.h"
#include "core/file_open.h"
#include <stdio.h>
#include <string.h>

#define LLAMA2C_MAX_FILE (64u << 20)

static uint32_t rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool is_byte_piece(const uint8_t *s, uint32_t n) {
    return n == 6 && s[0] == '<' && s[1] == '0' && s[2] == 'x' && s[5] == '>';
}

static mllm_status parse(const uint8_t *d, size_t size, const char *path, mllm_tokenizer **out) {
    if (size < 4) return mllm_err(MLLM_ERR_FORMAT, "%s: too short for a llama2.c tokenizer", path);
    uint32_t max_len = rd_u32(d);
    if (max_len == 0 || max_len > TOK_MAX_TOKEN_BYTES)
        return mllm_err(MLLM_ERR_FORMAT, "%s: bad max_token_length %u", path, max_len);
    /* First pass: count and validate every record. */
    int32_t n = 0;
    for (size_t o = 4; o < size; n++) {
        if (size - o < 8)
            return mllm_err(MLLM_ERR_FORMAT, "%s: token %d: record header truncated at byte %zu",
                            path, n, o);
        uint32_t len = rd_u32(d + o + 4);
        if (len > max_len || len > size - o - 8)
            return mllm_err(MLLM_ERR_FORMAT, "%s: token %d: length %u at byte %zu is %s", path, n,
                            len, o + 4, len > max_len ? "over max_token_length" : "past the end");
        o += 8 + len;
        if (n >= TOK_MAX_VOCAB) return mllm_err(MLLM_ERR_FORMAT, "%s: too many tokens", path);
    }
    if (n < 3) return mllm_err(MLLM_ERR_FORMAT, "%s: only %d tokens (need <unk>, <s>, </s>)", path, n);
    mllm_tokenizer *t;
    mllm_status st = tok_new(TOK_KIND_SPM, n, path, &t);
    if (st) return st;
    size_t o = 4;
    for (int32_t id = 0; id < n && !st; id++) {
        float score;
        memcpy(&score, d + o, 4);
        uint32_t len = rd_u32(d + o + 4);
        const uint8_t *s = d + o + 8;
        int type = id == 0 ? MLLM_TOKEN_UNKNOWN
                   : id <= 2 ? MLLM_TOKEN_CONTROL
                   : is_byte_piece(s, len) ? MLLM_TOKEN_BYTE : MLLM_TOKEN_NORMAL;
        st = tok_set_token(t, id, (const char *)s, len, score, type);
        o += 8 + len;
    }
    if (!st) {
        t->bos = 1;
        t->eos = 2;
        t->unk = 0;
        t->add_bos = true;
        t->add_space_prefix = true;
        t->strict_chars = true;
        st = tok_finish(t);
    }
    if (st) {
        mllm_tokenizer_free(t);
        return st;
    }
    *out = t;
    return MLLM_OK;
}

mllm_status mllm_tokenizer_from_llama2c(const char *path, mllm_tokenizer **out) {
    if (!path || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_tokenizer_from_llama2c: NULL argument");
    *out = NULL;
    FILE *f = mllm_file_fopen(path);
    if (!f) return MLLM_ERR_IO; /* the message names the file and why */
    uint8_t *d = NULL;
    size_t size = 0;
    mllm_status st = MLLM_OK;
    if (fseek(f, 0, SEEK_END) != 0) st = mllm_err(MLLM_ERR_IO, "%s: cannot seek", path);
    long end = st ? -1 : ftell(f);
    if (!st && (end < 0 || (unsigned long)end > LLAMA2C_MAX_FILE))
        st = mllm_err(MLLM_ERR_FORMAT, "%s: size %ld is not that of a tokenizer file", path, end);
    if (!st) {
        size = (size_t)end;
        d = mllm_malloc(size ? size : 1);
        if (!d) st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    }
    if (!st && (fseek(f, 0, SEEK_SET) != 0 || fread(d, 1, size, f) != size))
        st = mllm_err(MLLM_ERR_IO, "%s: read failed", path);
    fclose(f);
    if (!st) st = parse(d, size, path, out);
    mllm_free(d);
    return st;
}
