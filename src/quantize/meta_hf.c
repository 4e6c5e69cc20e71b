/* Tokenizer keys for a GGUF made from a Hugging Face folder: a byte-level
   BPE tokenizer.json written the way convert_hf_to_gguf.py writes it (ids
   without a token become "[PAD<id>]" UNUSED; added tokens are CONTROL when
   special or spelled <|...|>, else USER_DEFINED), bos/eos and the chat
   template from tokenizer_config.json. The pre-tokenizer name is chosen by
   registry row (mllm_arch.tokenizer_pre: "qwen2" for the Qwen rows; else
   "llama-bpe" with a >= 128k vocab, "gpt2" below), since tokenizer.json
   does not name it. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "formats/gguf_writer.h"
#include "formats/model_file.h"
#include "models/registry.h"
#include "quantize/quantize_internal.h"
#include "core/file_open.h"

enum { MAX_JSON = 256 << 20, TT_NORMAL = 1, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5 };

static cJSON *read_json(const char *path) {
    FILE *fp = mllm_file_fopen(path);
    if (!fp) return NULL;
    char *buf = NULL;
    long len = -1;
    if (fseek(fp, 0, SEEK_END) == 0) len = ftell(fp);
    if (len >= 0 && len < MAX_JSON && fseek(fp, 0, SEEK_SET) == 0 && (buf = mllm_malloc((size_t)len + 1)) &&
        fread(buf, 1, (size_t)len, fp) == (size_t)len)
        buf[len] = 0;
    else
        mllm_free(buf), buf = NULL;
    fclose(fp);
    cJSON *j = buf ? cJSON_Parse(buf) : NULL;
    mllm_free(buf);
    return j;
}

/* "bos_token": "<s>" or {"content": "<s>", ...} */
static const char *token_str(const cJSON *cfg, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsString(v)) return v->valuestring;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(c) ? c->valuestring : NULL;
}

mllm_status quant_meta_hf_tokenizer(const mllm_model_file *f, const mllm_hparams *hp, mllm_gguf_writer *w) {
    if (!f->tokenizer_json) return MLLM_OK;
    cJSON *tj = read_json(f->tokenizer_json);
    if (!tj) return mllm_err(MLLM_ERR_FORMAT, "%s: cannot read or parse", f->tokenizer_json);
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(tj, "model");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(tj, "added_tokens");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "BPE") != 0 || !cJSON_IsObject(vocab)) {
        cJSON_Delete(tj);
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: only byte-level BPE tokenizers can be written to GGUF",
                        f->tokenizer_json);
    }
    int n = hp->n_vocab > 0 ? hp->n_vocab : 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, vocab) if (cJSON_IsNumber(it) && it->valueint >= n) n = it->valueint + 1;
    cJSON_ArrayForEach(it, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        if (cJSON_IsNumber(id) && id->valueint >= n) n = id->valueint + 1;
    }
    const int n_merges = cJSON_GetArraySize(merges);
    const char **toks = mllm_calloc((size_t)n + 1, sizeof *toks);
    int32_t *types = mllm_calloc((size_t)n + 1, sizeof *types);
    char **owned = mllm_calloc((size_t)n + (size_t)n_merges + 1, sizeof *owned);
    const char **mstr = mllm_calloc((size_t)n_merges + 1, sizeof *mstr);
    size_t n_owned = 0;
    mllm_status st = (!toks || !types || !owned || !mstr) ? mllm_err(MLLM_ERR_NOMEM, "quantize: out of memory") : MLLM_OK;
    if (!st) {
        cJSON_ArrayForEach(it, vocab) {
            if (cJSON_IsNumber(it) && it->valueint >= 0 && it->valueint < n) toks[it->valueint] = it->string, types[it->valueint] = TT_NORMAL;
        }
        cJSON_ArrayForEach(it, added) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id"), *c = cJSON_GetObjectItemCaseSensitive(it, "content");
            const cJSON *sp = cJSON_GetObjectItemCaseSensitive(it, "special");
            if (!cJSON_IsNumber(id) || id->valueint < 0 || id->valueint >= n || !cJSON_IsString(c)) continue;
            const char *s = c->valuestring;
            const size_t L = strlen(s);
            const bool ctl = cJSON_IsTrue(sp) || (L >= 4 && !strncmp(s, "<|", 2) && !strcmp(s + L - 2, "|>"));
            toks[id->valueint] = s, types[id->valueint] = ctl ? TT_CONTROL : TT_USER;
        }
        for (int i = 0; i < n && !st; i++) {
            if (toks[i]) continue;
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%d]", i);
            if (!(owned[n_owned] = mllm_strndup(pad, strlen(pad)))) st = mllm_err(MLLM_ERR_NOMEM, "quantize: out of memory");
            else toks[i] = owned[n_owned++], types[i] = TT_UNUSED;
        }
        int m = 0;
        cJSON_ArrayForEach(it, merges) {
            if (st) break;
            if (cJSON_IsString(it)) {
                mstr[m++] = it->valuestring;
            } else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 && cJSON_IsString(cJSON_GetArrayItem(it, 0)) &&
                       cJSON_IsString(cJSON_GetArrayItem(it, 1))) {
                const char *a = cJSON_GetArrayItem(it, 0)->valuestring, *b = cJSON_GetArrayItem(it, 1)->valuestring;
                char *s = mllm_malloc(strlen(a) + strlen(b) + 2);
                if (!s) { st = mllm_err(MLLM_ERR_NOMEM, "quantize: out of memory"); break; }
                sprintf(s, "%s %s", a, b);
                owned[n_owned++] = s;
                mstr[m++] = s;
            }
        }
        const char *pre = hp->row && hp->row->tokenizer_pre ? hp->row->tokenizer_pre : n >= 128000 ? "llama-bpe" : "gpt2";
        if (!st) st = mllm_gguf_writer_add_str(w, "tokenizer.ggml.model", "gpt2");
        if (!st) st = mllm_gguf_writer_add_str(w, "tokenizer.ggml.pre", pre);
        if (!st) st = mllm_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, (uint64_t)n);
        if (!st) st = mllm_gguf_writer_add_arr(w, "tokenizer.ggml.token_type", MLLM_GGUF_INT32, types, (uint64_t)n);
        if (!st) st = mllm_gguf_writer_add_arr_str(w, "tokenizer.ggml.merges", mstr, NULL, (uint64_t)m);
    }
    cJSON *cfg = (!st && f->tokenizer_config) ? read_json(f->tokenizer_config) : NULL;
    if (cfg) {
        static const char *const keys[][2] = {{"bos_token", "tokenizer.ggml.bos_token_id"},
                                              {"eos_token", "tokenizer.ggml.eos_token_id"},
                                              {"pad_token", "tokenizer.ggml.padding_token_id"}};
        for (int k = 0; k < 3 && !st; k++) {
            const char *s = token_str(cfg, keys[k][0]);
            for (int i = 0; s && i < n; i++)
                if (!strcmp(toks[i], s)) { st = mllm_gguf_writer_add_u32(w, keys[k][1], (uint32_t)i); break; }
        }
        const cJSON *ab = cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token");
        if (!st && cJSON_IsBool(ab)) st = mllm_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", cJSON_IsTrue(ab));
        const cJSON *tpl = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
        if (!st && cJSON_IsString(tpl)) st = mllm_gguf_writer_add_str(w, "tokenizer.chat_template", tpl->valuestring);
        cJSON_Delete(cfg);
    }
    for (size_t i = 0; i < n_owned; i++) mllm_free(owned[i]);
    mllm_free(owned), mllm_free(toks), mllm_free(types), mllm_free(mstr);
    cJSON_Delete(tj);
    return st;
}
