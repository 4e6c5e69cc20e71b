/* Pre-tokenizer: a sequence of regexes, each splitting every piece from the
   previous step into its matches and the gaps between them (both kept, as
   HF's Split "Isolated" behaviour and llama.cpp's unicode_regex_split do).
   Regexes run through PCRE2 in UTF + UCP mode, JIT-compiled when the
   library has a JIT. The regex lists are the ones llama.cpp uses for each
   GGUF tokenizer.ggml.pre value (facts looked up, code our own). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/tokenizer_internal.h"
#include "core/alloc.h"
#include "core/error.h"
#include <pcre2.h>
#include <string.h>

/* GPT-2's regex (HF ByteLevel pre-tokenizer with use_regex). */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
/* Llama 3 (tokenizer.json original, with a case-insensitive group). */
#define RE_LLAMA3                                                                              \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "               \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* Qwen2 / Qwen2.5 / Qwen3: as Llama 3 but single digits. */
#define RE_QWEN2                                                                               \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "                     \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* llama.cpp's GPT-2 variant without the trailing \s+ (gaps are kept anyway). */
#define RE_GPT2_NOTAIL "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"

static const char *const k_re_deepseek_llm[] = {
    "[\r\n]",
    /* Cased letters (Unicode LC) as llama.cpp lists them; written as escapes
       so that no editor or tool can NFC-fold a code point such as U+1F7D. */
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
    "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}"
    "\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-"
    "\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}"
    "\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}"
    "\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"
    "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}"
    "\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-"
    "\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-"
    "\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}"
    "\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-"
    "\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}"
    "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}"
    "\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}"
    "\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}"
    "\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"
    "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"
    "\\x{1E900}-\\x{1E943}]+",
    "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
    "\\s+$",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}+",
    NULL,
};
static const char *const k_re_deepseek_coder[] = {
    "[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}", NULL,
};
static const char *const k_re_falcon[] = {
    "[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2_NOTAIL, "[0-9][0-9][0-9]", NULL,
};
static const char *const k_re_starcoder[] = {"\\p{N}", RE_GPT2_NOTAIL, NULL};
static const char *const k_re_gpt2[] = {RE_GPT2, NULL};
static const char *const k_re_llama3[] = {RE_LLAMA3, NULL};
static const char *const k_re_qwen2[] = {RE_QWEN2, NULL};
static const char *const k_re_default[] = {
    "[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2_NOTAIL, "\\p{N}+", "[0-9][0-9][0-9]", NULL,
};

typedef struct {
    const char *name;
    const char *const *regexes;
    bool ignore_merges, add_bos;
} pre_entry;

static const pre_entry k_pre[] = {
    {"default", k_re_default, false, false},
    {"llama3", k_re_llama3, true, true},
    {"llama-v3", k_re_llama3, true, true},
    {"llama-bpe", k_re_llama3, true, true},
    {"falcon3", k_re_llama3, true, true},
    {"dbrx", k_re_llama3, false, false},
    {"smaug-bpe", k_re_llama3, false, false},
    {"deepseek-llm", k_re_deepseek_llm, false, false},
    {"deepseek-coder", k_re_deepseek_coder, false, false},
    {"falcon", k_re_falcon, false, false},
    {"mpt", k_re_gpt2, false, false},
    {"gpt-2", k_re_gpt2, false, false},
    {"phi-2", k_re_gpt2, false, false},
    {"olmo", k_re_gpt2, false, false},
    {"starcoder", k_re_starcoder, false, false},
    {"refact", k_re_starcoder, false, false},
    {"command-r", k_re_starcoder, false, false},
    {"smollm", k_re_starcoder, false, false},
    {"codeshell", k_re_starcoder, false, false},
    {"qwen2", k_re_qwen2, false, false},
    {"deepseek-r1-qwen", k_re_qwen2, false, false},
    {"stablelm2", k_re_qwen2, false, false},
    {"megrez", k_re_qwen2, false, false},
};

mllm_status tok_pretok_add(tok_pretok *p, const char *pattern, size_t len, bool literal,
                           const char *source) {
    if (p->n >= TOK_MAX_REGEXES)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: more than %d pre-tokenizer regexes", source,
                        TOK_MAX_REGEXES);
    int err = 0;
    PCRE2_SIZE off = 0;
    uint32_t opts = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY;
    if (literal) opts |= PCRE2_LITERAL;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, len, opts, &err, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: pre-tokenizer regex does not compile at %zu: %s",
                        source, (size_t)off, (const char *)msg);
    }
    /* JIT is an optimisation only: a library without it still matches. */
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    p->re[p->n++] = re;
    return MLLM_OK;
}

void tok_pretok_free(tok_pretok *p) {
    for (int i = 0; i < p->n; i++) pcre2_code_free(p->re[i]);
    p->n = 0;
}

mllm_status tok_pretok_by_name(tok_pretok *p, const char *pre, size_t n, bool *ignore_merges,
                               bool *add_bos, const char *source) {
    for (size_t i = 0; i < sizeof k_pre / sizeof k_pre[0]; i++) {
        if (strlen(k_pre[i].name) != n || memcmp(k_pre[i].name, pre, n) != 0) continue;
        for (const char *const *r = k_pre[i].regexes; *r; r++) {
            mllm_status st = tok_pretok_add(p, *r, strlen(*r), false, source);
            if (st) return st;
        }
        *ignore_merges = k_pre[i].ignore_merges;
        *add_bos = k_pre[i].add_bos;
        return MLLM_OK;
    }
    return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: unsupported pre-tokenizer '%.*s'", source, (int)n,
                    pre);
}

/* ---- splitting -------------------------------------------------------- */

static mllm_status push_span(tok_spans *s, size_t start, size_t len) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        tok_span *p = mllm_realloc(s->v, cap * sizeof(tok_span));
        if (!p) return mllm_err(MLLM_ERR_NOMEM, "tokenizer: out of memory (pre-tokens)");
        s->v = p;
        s->cap = cap;
    }
    s->v[s->n].start = start;
    s->v[s->n].len = len;
    s->n++;
    return MLLM_OK;
}

/* Splits text[span] by one regex, appending the pieces to out. */
static mllm_status split_one(const pcre2_code *re, pcre2_match_data *md, const char *text,
                             tok_span span, tok_spans *out) {
    PCRE2_SPTR subj = (PCRE2_SPTR)(text + span.start);
    size_t n = span.len, pos = 0, gap = 0;
    mllm_status st = MLLM_OK;
    while (pos <= n) {
        int rc = pcre2_match(re, subj, n, pos, 0, md, NULL);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
            rc = pcre2_match(re, subj, n, pos, PCRE2_NO_JIT, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) return mllm_err(MLLM_ERR_INVALID_ARG, "tokenizer: regex match failed (%d)", rc);
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) { /* empty match: step one character */
            if (ms >= n) break;
            pos = ms + tok_utf8_len(subj[ms]);
            continue;
        }
        if (ms > gap && (st = push_span(out, span.start + gap, ms - gap))) return st;
        if ((st = push_span(out, span.start + ms, me - ms))) return st;
        gap = pos = me;
    }
    if (gap < n) st = push_span(out, span.start + gap, n - gap);
    return st;
}

mllm_status tok_pretok_split(const tok_pretok *p, const char *text, size_t len, tok_spans *out) {
    out->n = 0;
    mllm_status st = push_span(out, 0, len);
    if (st || p->n == 0 || len == 0) return st;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md) return mllm_err(MLLM_ERR_NOMEM, "tokenizer: out of memory (regex match)");
    tok_spans tmp = {0};
    for (int r = 0; r < p->n && !st; r++) {
        tmp.n = 0;
        for (size_t i = 0; i < out->n && !st; i++) st = split_one(p->re[r], md, text, out->v[i], &tmp);
        tok_spans sw = *out;
        *out = tmp;
        tmp = sw;
    }
    mllm_free(tmp.v);
    pcre2_match_data_free(md);
    return st;
}
