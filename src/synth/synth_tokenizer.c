/* A small, working byte-level BPE vocabulary: the 256 byte tokens (GPT-2's
   byte-to-unicode spelling), then merges learned deterministically from the
   built-in text, then the family's special tokens, then [PAD<id>] up to the
   preset's vocab size. */
#include "synth/synth_internal.h"
#include "core/alloc.h"
#include "core/error.h"
#include <stdio.h>
#include <string.h>

#define SYNTH_MAX_MERGES 400
#define PAIR_TABLE (1u << 15)

typedef struct { const char *text; int32_t type; bool hf_special; } special_tok;

static const special_tok k_qwen3_special[] = {
    {"<|endoftext|>", 3, true}, {"<|im_start|>", 3, true}, {"<|im_end|>", 3, true},
    {"<think>", 4, false}, {"</think>", 4, false}};
/* Qwen2.5's first specials; its <tool_call> tags are added, not special. */
static const special_tok k_qwen2_special[] = {
    {"<|endoftext|>", 3, true}, {"<|im_start|>", 3, true}, {"<|im_end|>", 3, true},
    {"<tool_call>", 4, false}, {"</tool_call>", 4, false}};
static const special_tok k_llama_special[] = {
    {"<|begin_of_text|>", 3, true}, {"<|end_of_text|>", 3, true}, {"<|start_header_id|>", 3, true},
    {"<|end_header_id|>", 3, true}, {"<|eot_id|>", 3, true}};
/* Gemma's (its real vocabulary is SentencePiece; this one is byte-level BPE
   like the others, with Gemma's special tokens and chat format). */
static const special_tok k_gemma_special[] = {
    {"<pad>", 3, true}, {"<eos>", 3, true}, {"<bos>", 3, true}, {"<start_of_turn>", 3, true},
    {"<end_of_turn>", 3, true}};

static const char k_chatml_template[] =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
static const char k_llama_template[] =
    "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";
static const char k_gemma_template[] =
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'assistant' %}{% set role = 'model' %}"
    "{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] + "
    "'<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}";
static const char k_qwen_regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char k_llama_regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* GPT-2's reversible byte -> code point map: printable bytes map to
   themselves, the rest to 256, 257, ... in byte order. */
static uint32_t byte_to_cp(uint8_t b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) return b;
    uint32_t n = 0;
    for (uint32_t c = 0; c < b; c++) {
        if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174)) n++;
    }
    return 256 + n;
}

/* Byte-level spelling of raw bytes; out must hold 2 * n + 1. */
static void spell(const uint8_t *s, size_t n, char *out) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = byte_to_cp(s[i]);
        if (cp < 0x80) {
            out[k++] = (char)cp;
        } else {
            out[k++] = (char)(0xC0 | (cp >> 6));
            out[k++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    out[k] = 0;
}

typedef struct { const uint8_t *s; uint32_t len; } bytes;

typedef struct {
    int32_t *sym;      /* token ids */
    int32_t n;
    int32_t count;     /* occurrences in the text */
} word;

typedef struct {
    bytes *tok;        /* raw bytes of each BPE token (into byte_vals or owned) */
    uint8_t *byte_vals; /* 0..255, what the single-byte tokens point at */
    uint8_t **owned;
    int32_t n_tok;
    word *words;
    int32_t n_words;
    int32_t (*merges)[2];
    int32_t n_merges;
} trainer;

static bool is_letter(uint8_t c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; }
static bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
static bool is_space(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* Length of the next pre-token, an ASCII reading of the GPT-2/Qwen regex:
   [space]letters | digit | [space]punctuation | whitespace run. */
static size_t next_chunk(const uint8_t *s, size_t n) {
    size_t i = 0;
    if (s[0] == ' ' && n > 1 && !is_space(s[1]) && !is_digit(s[1])) i = 1;
    if (is_letter(s[i])) {
        while (i < n && is_letter(s[i])) i++;
        return i;
    }
    if (is_digit(s[i])) return i + 1;
    if (!is_space(s[i])) {
        while (i < n && !is_space(s[i]) && !is_letter(s[i]) && !is_digit(s[i])) i++;
        return i;
    }
    while (i < n && is_space(s[i])) i++;
    return i;
}

static mllm_status add_word(trainer *t, const uint8_t *s, size_t len) {
    for (int32_t i = 0; i < t->n_words; i++) {
        word *w = &t->words[i];
        if ((size_t)w->n == len) {
            bool same = true;
            for (size_t k = 0; k < len && same; k++) same = w->sym[k] == s[k];
            if (same) {
                w->count++;
                return MLLM_OK;
            }
        }
    }
    word *w = &t->words[t->n_words];
    w->sym = mllm_malloc(len * sizeof *w->sym);
    if (!w->sym) return mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
    for (size_t k = 0; k < len; k++) w->sym[k] = s[k];
    w->n = (int32_t)len;
    w->count = 1;
    t->n_words++;
    return MLLM_OK;
}

static int32_t find_token(const trainer *t, const uint8_t *s, uint32_t len) {
    for (int32_t i = 0; i < t->n_tok; i++) {
        if (t->tok[i].len == len && memcmp(t->tok[i].s, s, len) == 0) return i;
    }
    return -1;
}

/* One merge step: the most frequent adjacent pair (ties: lowest ids). */
static bool best_pair(const trainer *t, uint64_t *keys, int32_t *counts, int32_t out[2]) {
    memset(counts, 0, PAIR_TABLE * sizeof *counts);
    int32_t best = 1;
    uint64_t best_key = UINT64_MAX;
    for (int32_t i = 0; i < t->n_words; i++) {
        const word *w = &t->words[i];
        for (int32_t k = 0; k + 1 < w->n; k++) {
            uint64_t key = (uint64_t)w->sym[k] << 32 | (uint32_t)w->sym[k + 1];
            uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 49) & (PAIR_TABLE - 1);
            while (counts[h] && keys[h] != key) h = (h + 1) & (PAIR_TABLE - 1);
            keys[h] = key;
            counts[h] += w->count;
            if (counts[h] > best || (counts[h] == best && best > 1 && key < best_key)) {
                best = counts[h];
                best_key = key;
            }
        }
    }
    if (best < 2) return false;
    out[0] = (int32_t)(best_key >> 32);
    out[1] = (int32_t)(uint32_t)best_key;
    return true;
}

static void apply_merge(trainer *t, const int32_t pair[2], int32_t id) {
    for (int32_t i = 0; i < t->n_words; i++) {
        word *w = &t->words[i];
        int32_t o = 0;
        for (int32_t k = 0; k < w->n; k++) {
            if (k + 1 < w->n && w->sym[k] == pair[0] && w->sym[k + 1] == pair[1]) {
                w->sym[o++] = id;
                k++;
            } else {
                w->sym[o++] = w->sym[k];
            }
        }
        w->n = o;
    }
}

static mllm_status train(trainer *t, int32_t max_merges) {
    size_t n = strlen(synth_training_text);
    const uint8_t *text = (const uint8_t *)synth_training_text;
    t->tok = mllm_calloc(256 + (size_t)max_merges, sizeof *t->tok);
    t->owned = mllm_calloc(256 + (size_t)max_merges, sizeof *t->owned);
    t->words = mllm_calloc(n, sizeof *t->words);
    t->merges = mllm_calloc((size_t)max_merges + 1, sizeof *t->merges);
    t->byte_vals = mllm_malloc(256);
    uint64_t *keys = mllm_malloc(PAIR_TABLE * sizeof *keys);
    int32_t *counts = mllm_malloc(PAIR_TABLE * sizeof *counts);
    mllm_status st = MLLM_OK;
    if (!t->tok || !t->owned || !t->words || !t->merges || !t->byte_vals || !keys || !counts) {
        st = mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
    }
    for (int i = 0; i < 256 && !st; i++) {
        t->byte_vals[i] = (uint8_t)i;
        t->tok[t->n_tok++] = (bytes){&t->byte_vals[i], 1};
    }
    for (size_t i = 0; i < n && !st;) {
        size_t len = next_chunk(text + i, n - i);
        st = add_word(t, text + i, len);
        i += len;
    }
    while (!st && t->n_merges < max_merges) {
        int32_t pair[2];
        if (!best_pair(t, keys, counts, pair)) break;
        uint32_t len = t->tok[pair[0]].len + t->tok[pair[1]].len;
        uint8_t *s = mllm_malloc(len);
        if (!s) {
            st = mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
            break;
        }
        memcpy(s, t->tok[pair[0]].s, t->tok[pair[0]].len);
        memcpy(s + t->tok[pair[0]].len, t->tok[pair[1]].s, t->tok[pair[1]].len);
        int32_t id = find_token(t, s, len);
        if (id < 0) {
            id = t->n_tok;
            t->owned[id] = s;
            t->tok[t->n_tok++] = (bytes){s, len};
        } else {
            mllm_free(s);
        }
        t->merges[t->n_merges][0] = pair[0];
        t->merges[t->n_merges][1] = pair[1];
        t->n_merges++;
        apply_merge(t, pair, id);
    }
    mllm_free(keys);
    mllm_free(counts);
    return st;
}

static void trainer_free(trainer *t) {
    for (int32_t i = 0; t->owned && i < t->n_tok; i++) mllm_free(t->owned[i]);
    for (int32_t i = 0; t->words && i < t->n_words; i++) mllm_free(t->words[i].sym);
    mllm_free(t->owned);
    mllm_free(t->tok);
    mllm_free(t->words);
    mllm_free(t->merges);
    mllm_free(t->byte_vals);
}

static char *spelled(const bytes *b) {
    char *s = mllm_malloc(2 * (size_t)b->len + 1);
    if (s) spell(b->s, b->len, s);
    return s;
}

static mllm_status fill_vocab(const synth_preset *p, const trainer *t, const special_tok *sp, int n_sp,
                              synth_vocab *v) {
    v->n_vocab = p->V;
    v->n_bpe = t->n_tok;
    v->tokens = mllm_calloc((size_t)p->V, sizeof *v->tokens);
    v->types = mllm_calloc((size_t)p->V, sizeof *v->types);
    v->merges = mllm_calloc((size_t)t->n_merges + 1, sizeof *v->merges);
    if (!v->tokens || !v->types || !v->merges) return mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
    for (int32_t i = 0; i < t->n_tok; i++) {
        if (!(v->tokens[i] = spelled(&t->tok[i]))) return mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
        v->types[i] = 1;
    }
    for (int32_t i = 0; i < t->n_merges; i++) {
        char *a = spelled(&t->tok[t->merges[i][0]]), *b = spelled(&t->tok[t->merges[i][1]]);
        size_t len = (a ? strlen(a) : 0) + (b ? strlen(b) : 0) + 2;
        char *m = a && b ? mllm_malloc(len) : NULL;
        if (m) snprintf(m, len, "%s %s", a, b);
        mllm_free(a);
        mllm_free(b);
        if (!m) return mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
        v->merges[v->n_merges++] = m;
    }
    v->first_special = t->n_tok;
    v->n_special = n_sp;
    for (int i = 0; i < n_sp; i++) {
        if (!(v->tokens[t->n_tok + i] = mllm_strndup(sp[i].text, strlen(sp[i].text)))) {
            return mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
        }
        v->types[t->n_tok + i] = sp[i].type;
    }
    for (int32_t i = t->n_tok + n_sp; i < p->V; i++) {
        char pad[32];
        snprintf(pad, sizeof pad, "[PAD%d]", (int)i);
        if (!(v->tokens[i] = mllm_strndup(pad, strlen(pad)))) return mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
        v->types[i] = 5;
    }
    return MLLM_OK;
}

static const special_tok *specials_of(const synth_preset *p) {
    if (!strcmp(p->arch, "qwen3")) return k_qwen3_special;
    if (p->gemma) return k_gemma_special;
    return !strcmp(p->arch, "qwen2") ? k_qwen2_special : k_llama_special;
}

mllm_status synth_vocab_build(const synth_preset *p, synth_vocab *v) {
    memset(v, 0, sizeof *v);
    bool qwen = synth_is_qwen(p);
    const special_tok *sp = specials_of(p);
    const int n_sp = 5;
    /* Leave an eighth of a small vocab as [PAD] tokens, as real vocabularies
       padded to a round embedding size have. */
    int32_t max_merges = (p->V - 256 - n_sp) / 8 * 7;
    if (max_merges < 0) return mllm_err(MLLM_ERR_INVALID_ARG, "synth: vocab size %d is too small", p->V);
    if (max_merges > SYNTH_MAX_MERGES) max_merges = SYNTH_MAX_MERGES;
    trainer t = {0};
    mllm_status st = train(&t, max_merges);
    if (!st) st = fill_vocab(p, &t, sp, n_sp, v);
    trainer_free(&t);
    if (st) {
        synth_vocab_free(v);
        return st;
    }
    int32_t s0 = v->first_special;
    if (p->gemma) {
        v->bos = s0 + 2; /* <bos> */
        v->eos = s0 + 4; /* <end_of_turn>, what ends a chat turn */
        v->pad = s0;     /* <pad> */
    } else {
        v->bos = s0;                     /* <|endoftext|> / <|begin_of_text|> */
        v->eos = qwen ? s0 + 2 : s0 + 4; /* <|im_end|> / <|eot_id|> */
        v->pad = qwen ? s0 : s0 + 1;     /* <|endoftext|> / <|end_of_text|> */
    }
    v->add_bos = !qwen;
    v->pre = qwen ? "qwen2" : "llama-bpe";
    v->chat_template = qwen ? k_chatml_template : p->gemma ? k_gemma_template : k_llama_template;
    v->hf_regex = qwen ? k_qwen_regex : k_llama_regex;
    return MLLM_OK;
}

void synth_vocab_free(synth_vocab *v) {
    for (int32_t i = 0; v->tokens && i < v->n_vocab; i++) mllm_free(v->tokens[i]);
    for (int32_t i = 0; v->merges && i < v->n_merges; i++) mllm_free(v->merges[i]);
    mllm_free(v->tokens);
    mllm_free(v->types);
    mllm_free(v->merges);
    memset(v, 0, sizeof *v);
}

bool synth_special_is_hf_special(const synth_preset *p, int i) {
    return specials_of(p)[i].hf_special;
}
