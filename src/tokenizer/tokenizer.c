/* Accessors and the destructor of a tokenizer. */
#include "core/alloc.h"
#include "tokenizer/tokenizer_internal.h"

void mllm_tokenizer_free(mllm_tokenizer *t) {
    if (!t) return;
    mllm_free(t->text_pool);
    mllm_free(t->text_off);
    mllm_free(t->text_len);
    mllm_free(t->scores);
    mllm_free(t->types);
    mllm_free(t->flags);
    mllm_free(t->eog);
    mllm_free(t->piece_pool);
    mllm_free(t->piece_off);
    mllm_free(t->piece_len);
    tok_strmap_free(&t->text_map);
    tok_pairmap_free(&t->merges);
    tok_pretok_free(&t->pre);
    mllm_free(t->special);
    mllm_free(t->chat_template);
    mllm_free(t->source);
    mllm_free(t);
}

static bool in_range(const mllm_tokenizer *t, int32_t id) {
    return t && id >= 0 && id < t->n_vocab;
}

const char *mllm_tokenizer_piece(const mllm_tokenizer *t, int32_t id, size_t *len) {
    if (!in_range(t, id) || !t->piece_pool) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = t->piece_len[id];
    return t->piece_pool + t->piece_off[id];
}

const char *mllm_tokenizer_token_text(const mllm_tokenizer *t, int32_t id, size_t *len) {
    if (!in_range(t, id)) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = t->text_len[id];
    return t->text_pool + t->text_off[id];
}

int32_t mllm_tokenizer_n_vocab(const mllm_tokenizer *t) { return t ? t->n_vocab : 0; }
int32_t mllm_tokenizer_bos(const mllm_tokenizer *t) { return t ? t->bos : -1; }
int32_t mllm_tokenizer_eos(const mllm_tokenizer *t) { return t ? t->eos : -1; }
int32_t mllm_tokenizer_n_special(const mllm_tokenizer *t) { return t ? t->n_special : 0; }
int32_t mllm_tokenizer_special_at(const mllm_tokenizer *t, int32_t k) {
    return t && k >= 0 && k < t->n_special ? t->special[k] : -1;
}
int32_t mllm_tokenizer_eot(const mllm_tokenizer *t) { return t ? t->eot : -1; }
bool mllm_tokenizer_add_bos(const mllm_tokenizer *t) { return t && t->add_bos; }

bool mllm_tokenizer_is_eog(const mllm_tokenizer *t, int32_t id) {
    return in_range(t, id) && t->eog[id];
}

const char *mllm_tokenizer_chat_template(const mllm_tokenizer *t) {
    return t ? t->chat_template : NULL;
}

const char *mllm_tokenizer_kind(const mllm_tokenizer *t) {
    return !t ? "bpe" : t->kind == TOK_KIND_SPM ? "spm" : t->kind == TOK_KIND_WORDPIECE ? "wordpiece" : "bpe";
}

mllm_token_type mllm_tokenizer_token_type(const mllm_tokenizer *t, int32_t id) {
    return in_range(t, id) ? (mllm_token_type)t->types[id] : (mllm_token_type)0;
}
