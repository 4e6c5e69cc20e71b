/* Private layout of a tokenizer, shared by the loaders (tokenizer.json,
   GGUF, llama2.c tokenizer.bin), the builder (vocab.c) and the encoders
   (bpe.c, spm.c, encode.c). A tokenizer is immutable after load, so one may
   be shared by any number of threads: every encode call owns its scratch. */
#ifndef MLLM_TOKENIZER_INTERNAL_H
#define MLLM_TOKENIZER_INTERNAL_H
#include "tokenizer/tokenizer.h"
#include "tokenizer/pretok.h"
#include "tokenizer/tok_maps.h"

/* Hard limits (named, so bad files fail with a clear message). */
#define TOK_MAX_VOCAB (1 << 22)        /* 4M tokens */
#define TOK_MAX_TOKEN_BYTES (1 << 16)  /* one token's text */

typedef enum { TOK_KIND_BPE = 0, TOK_KIND_SPM = 1, TOK_KIND_WORDPIECE = 2 } tok_kind;

/* WordPiece's longest continuation prefix ("##"), bytes. */
#define TOK_WP_MAX_PREFIX 15

/* Per-token attribute flags beyond the type (HF added_tokens lstrip/rstrip). */
enum { TOK_FLAG_LSTRIP = 1, TOK_FLAG_RSTRIP = 2 };

struct mllm_tokenizer {
    tok_kind kind;
    int32_t n_vocab;

    /* Token texts as stored in the vocab, NUL-terminated, in one pool. */
    char *text_pool;         /* (text_cap bytes) */
    size_t text_len_total, text_cap;
    uint64_t *text_off;      /* (n_vocab) */
    uint32_t *text_len;      /* (n_vocab) */
    float *scores;           /* (n_vocab) SPM merge priority */
    uint8_t *types;          /* (n_vocab) mllm_token_type */
    uint8_t *flags;          /* (n_vocab) TOK_FLAG_* */
    uint8_t *eog;            /* (n_vocab) 1 = ends generation */

    /* Decoded bytes of each token, precomputed by tok_finish(). */
    char *piece_pool;
    uint64_t *piece_off;     /* (n_vocab) */
    uint32_t *piece_len;     /* (n_vocab) */

    tok_strmap text_map;     /* token text -> id (later ids win, as llama.cpp) */

    /* BPE */
    tok_pairmap merges;      /* (left id, right id) -> (rank, merged id) */
    bool byte_level;         /* GPT-2 byte-to-unicode mapping of the vocab */
    bool ignore_merges;      /* a whole word found in the vocab is one token */
    bool nfc;                /* NFC-normalize text before pre-tokenizing */
    tok_pretok pre;          /* regex split before the merges */
    bool regex_prefix_space; /* HF ByteLevel add_prefix_space */

    /* SPM */
    bool add_space_prefix;   /* dummy-prefix space before the first text */
    bool escape_ws;          /* ' ' -> U+2581 before matching (GGUF/HF SPM) */
    bool strict_chars;       /* llama2.c run.c: unknown chars become bytes at once */

    /* WordPiece (BERT): tokenizers' BertNormalizer, then BertPreTokenizer
       (whitespace and punctuation split), then greedy longest-match-first. */
    struct {
        bool on, clean_text, chinese_chars, strip_accents, lowercase;
    } bert_norm;
    bool bert_pre;
    int32_t wp_max_chars;    /* a longer word is [UNK] (max_input_chars_per_word) */
    char wp_prefix[TOK_WP_MAX_PREFIX + 1]; /* continuing_subword_prefix */

    /* Byte fallback / initial symbols: BPE byte-level char of byte b, or SPM
       <0xXX> token (then the one-byte token); -1 if none. */
    int32_t byte_tok[256];

    /* Tokens split out of the text before tokenizing: CONTROL, UNKNOWN and
       USER_DEFINED ids, sorted by length (longest first). */
    int32_t *special;        /* (n_special) */
    int32_t n_special;

    int32_t bos, eos, eot, eom, unk, pad;
    bool add_bos, add_eos;
    char *chat_template;     /* NUL-terminated or NULL */
    char *source;            /* label for error messages (path) */
};

/* ---- builder (vocab.c) ----------------------------------------------- */
/* A tokenizer with n_vocab empty tokens (type UNUSED) and no special ids. */
mllm_status tok_new(tok_kind kind, int32_t n_vocab, const char *source, mllm_tokenizer **out);
mllm_status tok_set_token(mllm_tokenizer *t, int32_t id, const char *s, size_t n, float score,
                          int type);
/* Builds the text -> id map; call after every tok_set_token. */
mllm_status tok_build_index(mllm_tokenizer *t);
/* -1 if absent. */
int32_t tok_find(const mllm_tokenizer *t, const char *s, size_t n);
/* Sizes the merge map for n merges; call before tok_add_merge. */
mllm_status tok_reserve_merges(mllm_tokenizer *t, size_t n_merges);
/* Adds merge rank `rank` of (a, b); silently skips a pair whose parts or
   result are not in the vocab (HF would refuse it; llama.cpp never uses it). */
mllm_status tok_add_merge(mllm_tokenizer *t, const char *a, size_t na, const char *b, size_t nb,
                          uint32_t rank);
/* Byte tables, special list, EOG set, piece cache; validates special ids. */
mllm_status tok_finish(mllm_tokenizer *t);
/* Special ids of GGUF's defaults: -1 everywhere. */
void tok_clear_special_ids(mllm_tokenizer *t);

/* ---- byte-level mapping (bytelevel.c) --------------------------------- */
/* UTF-8 of the code point GPT-2 maps byte b to (1 or 2 bytes); returns len. */
int tok_byte_to_utf8(uint8_t b, char out[2]);
/* Byte for a mapped code point, or -1. */
int tok_cp_to_byte(uint32_t cp);
/* Decodes one UTF-8 sequence at s (n bytes left): code point and its length
   (1 for an invalid byte, which decodes as U+FFFD). */
uint32_t tok_utf8_next(const char *s, size_t n, size_t *len);
/* Length of the UTF-8 sequence starting with byte c (1 for invalid). */
size_t tok_utf8_len(uint8_t c);

/* ---- output buffer ---------------------------------------------------- */
typedef struct {
    int32_t *ids;
    size_t n, cap;
} tok_ids;
mllm_status tok_ids_push(tok_ids *v, int32_t id);

/* ---- encoders --------------------------------------------------------- */
/* Byte-level (or plain) BPE of one text fragment: pre-tokenize + merge. */
mllm_status tok_bpe_encode(const mllm_tokenizer *t, const char *text, size_t len, tok_ids *out);
/* SentencePiece-style bigram merge of one fragment (already escaped/prefixed). */
mllm_status tok_spm_encode(const mllm_tokenizer *t, const char *text, size_t len, tok_ids *out);
/* BERT normalizer + pre-tokenizer + WordPiece of one fragment (wordpiece.c). */
mllm_status tok_wordpiece_encode(const mllm_tokenizer *t, const char *text, size_t len, tok_ids *out);

#endif
