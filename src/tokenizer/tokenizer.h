/* Tokenizers: byte-level BPE (GPT-2 / Llama 3 / Qwen2 / SmolLM pre-tokenizer
   regexes via PCRE2) and SentencePiece-style (llama / llama2.c), built from
   GGUF metadata, tokenizer.json, or a llama2.c tokenizer.bin. */
#ifndef MLLM_TOKENIZER_TOKENIZER_H
#define MLLM_TOKENIZER_TOKENIZER_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mllm_gguf;
typedef struct mllm_tokenizer mllm_tokenizer;

/* Token types, numbered as GGUF's tokenizer.ggml.token_type. */
typedef enum {
    MLLM_TOKEN_NORMAL = 1, MLLM_TOKEN_UNKNOWN = 2, MLLM_TOKEN_CONTROL = 3,
    MLLM_TOKEN_USER_DEFINED = 4, MLLM_TOKEN_UNUSED = 5, MLLM_TOKEN_BYTE = 6,
} mllm_token_type;

mllm_status mllm_tokenizer_from_gguf(const struct mllm_gguf *g, mllm_tokenizer **out);
/* Paths of tokenizer.json and tokenizer_config.json. tokenizer_config_json
   may be NULL (then BOS/EOS come from tokenizer.json's added tokens where
   they can be told). BPE models only (byte-level or with byte fallback). */
mllm_status mllm_tokenizer_from_hf(const char *tokenizer_json, const char *tokenizer_config_json,
                                   mllm_tokenizer **out);
/* The same from JSON texts in memory (config_json may be NULL); label names
   the source in error messages. */
mllm_status mllm_tokenizer_from_hf_memory(const char *json, size_t len, const char *config_json,
                                          size_t config_len, const char *label,
                                          mllm_tokenizer **out);
mllm_status mllm_tokenizer_from_llama2c(const char *path, mllm_tokenizer **out);
void mllm_tokenizer_free(mllm_tokenizer *t);

/* add_special: prepend BOS (append EOS) if the tokenizer's config says so.
   SentencePiece: the dummy-prefix space is added as configured
   (add_space_prefix) whatever add_special says, as llama.cpp and HF do.
   parse_special: text like "<|im_start|>" becomes the special token.
   Writes up to cap ids; *n_ids = the count needed; MLLM_ERR_BUFFER_TOO_SMALL
   if cap < *n_ids. */
mllm_status mllm_tokenizer_encode(const mllm_tokenizer *t, const char *text, size_t len,
                                  bool add_special, bool parse_special, int32_t *ids,
                                  size_t cap, size_t *n_ids);
/* A byte range [start, end) of a text. */
typedef struct {
    size_t start, end;
} mllm_text_span;

/* mllm_tokenizer_encode with parse_special on, except that no control
   token may start inside the `plain` spans (sorted, disjoint, within the
   text): there the text is tokenized as text, as parse_special = false
   would. Chat uses it so text that came from a message can never become
   <|im_end|> (only the template's own markup does). Errors as
   mllm_tokenizer_encode, and MLLM_ERR_INVALID_ARG for bad spans. */
mllm_status mllm_tokenizer_encode_spans(const mllm_tokenizer *t, const char *text, size_t len, bool add_special,
                                        const mllm_text_span *plain, size_t n_plain, int32_t *ids, size_t cap,
                                        size_t *n_ids);
/* The special tokens matched in text (control, unknown and user-defined):
   their count, and the id of the k-th (-1 out of range). parse_special
   gates all but the user-defined ones, which always match. */
int32_t mllm_tokenizer_n_special(const mllm_tokenizer *t);
int32_t mllm_tokenizer_special_at(const mllm_tokenizer *t, int32_t k);

/* The bytes this token decodes to (byte-level mapping undone, "▁" -> " ",
   "<0x0A>" -> "\n"); control tokens give their text. NULL if out of range. */
const char *mllm_tokenizer_piece(const mllm_tokenizer *t, int32_t id, size_t *len);
/* The token's raw vocabulary string (as stored in the vocab). */
const char *mllm_tokenizer_token_text(const mllm_tokenizer *t, int32_t id, size_t *len);
int32_t mllm_tokenizer_n_vocab(const mllm_tokenizer *t);
int32_t mllm_tokenizer_bos(const mllm_tokenizer *t); /* -1 if none */
int32_t mllm_tokenizer_eos(const mllm_tokenizer *t); /* -1 if none */
bool mllm_tokenizer_add_bos(const mllm_tokenizer *t);
/* End of generation: EOS, EOT, <|im_end|>, <|eot_id|>, <|endoftext|> ... */
bool mllm_tokenizer_is_eog(const mllm_tokenizer *t, int32_t id);
/* The chat template carried by the source (GGUF tokenizer.chat_template or
   tokenizer_config.json chat_template); NULL if none. */
const char *mllm_tokenizer_chat_template(const mllm_tokenizer *t);
/* "bpe" or "spm". */
const char *mllm_tokenizer_kind(const mllm_tokenizer *t);
/* The token's type; 0 if out of range. */
mllm_token_type mllm_tokenizer_token_type(const mllm_tokenizer *t, int32_t id);
/* -1 if none. */
int32_t mllm_tokenizer_eot(const mllm_tokenizer *t);
/* The text of ids (pieces concatenated). skip_special: CONTROL/UNKNOWN
   tokens give nothing. SentencePiece: the dummy-prefix space of the first
   piece is removed (so decode(encode(x)) == x). Writes up to cap bytes (no
   NUL); *len = the size needed; MLLM_ERR_BUFFER_TOO_SMALL if cap < *len. */
mllm_status mllm_tokenizer_decode(const mllm_tokenizer *t, const int32_t *ids, size_t n_ids,
                                  bool skip_special, char *buf, size_t cap, size_t *len);

#endif
