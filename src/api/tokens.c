/* Text to token ids and back with a model's tokenizer (mllm.h). */
#include <string.h>
#include "api/internal.h"
#include "core/error.h"

MLLM_API mllm_status mllm_tokenize(const mllm_model *m, const char *text, size_t len, int add_special,
                                   int32_t *ids, size_t cap, size_t *n_ids) {
    if (!m || (!text && len)) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_tokenize: NULL argument");
    return mllm_tokenizer_encode(m->tok, text ? text : "", len, add_special != 0, true, ids, cap, n_ids);
}

MLLM_API mllm_status mllm_detokenize(const mllm_model *m, const int32_t *ids, size_t n, int skip_special, char *buf,
                                     size_t cap, size_t *needed) {
    if (!m || (!ids && n)) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_detokenize: NULL argument");
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= mllm_tokenizer_n_vocab(m->tok))
            return mllm_err(MLLM_ERR_INVALID_ARG, "token id %d out of range [0, %d)", ids[i],
                            mllm_tokenizer_n_vocab(m->tok));
    size_t len = 0;
    mllm_status st = mllm_tokenizer_decode(m->tok, ids, n, skip_special != 0, buf, buf ? cap : 0, &len);
    if (needed) *needed = len;
    if (st == MLLM_ERR_BUFFER_TOO_SMALL) return mllm_err(st, "need %zu bytes", len);
    return st;
}

MLLM_API mllm_status mllm_token_to_piece(const mllm_model *m, int32_t id, char *buf, size_t cap, size_t *n) {
    if (!m) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_token_to_piece: NULL model");
    size_t len = 0;
    const char *p = mllm_tokenizer_piece(m->tok, id, &len);
    if (!p) return mllm_err(MLLM_ERR_INVALID_ARG, "token id %d out of range", id);
    if (n) *n = len;
    if (!buf || cap < len) return mllm_err(MLLM_ERR_BUFFER_TOO_SMALL, "need %zu bytes", len);
    memcpy(buf, p, len);
    return MLLM_OK;
}

MLLM_API int mllm_model_add_bos(const mllm_model *m) {
    return m && m->tok && mllm_tokenizer_add_bos(m->tok) && mllm_model_bos(m) >= 0;
}
