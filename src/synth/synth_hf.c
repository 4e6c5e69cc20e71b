/* The Hugging Face folder form of a synthetic model: config.json,
   model.safetensors (streamed), tokenizer.json, tokenizer_config.json,
   written into <dir>.tmp.<pid> and renamed onto <dir> (core/atomic_write.h). */
#include "synth/synth_internal.h"
#include "core/alloc.h"
#include "core/atomic_write.h"
#include "core/dtype.h"
#include "core/error.h"
#include "formats/hf_config.h"
#include "models/registry.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HF_CHUNK (4u << 20)

static const char *const k_hf_files[] = {"config.json", "model.safetensors", "tokenizer.json",
                                         "tokenizer_config.json"};

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = mllm_malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static mllm_status write_file(const char *dir, const char *name, const void *data, size_t len) {
    char *path = join(dir, name);
    if (!path) return mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
    FILE *f = fopen(path, "wb");
    mllm_status st = MLLM_OK;
    if (!f) {
        st = mllm_err(MLLM_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    } else {
        if (fwrite(data, 1, len, f) != len || fflush(f) != 0 || fsync(fileno(f)) != 0) {
            st = mllm_err(MLLM_ERR_IO, "%s: write failed: %s", path, strerror(errno));
        }
        if (fclose(f) != 0 && !st) st = mllm_err(MLLM_ERR_IO, "%s: close failed", path);
    }
    mllm_free(path);
    return st;
}

static mllm_status write_json(const char *dir, const char *name, cJSON *j) {
    if (!j) return mllm_err(MLLM_ERR_NOMEM, "synth: out of memory building %s", name);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text) return mllm_err(MLLM_ERR_NOMEM, "synth: out of memory printing %s", name);
    mllm_status st = write_file(dir, name, text, strlen(text));
    cJSON_free(text);
    return st;
}

static const char *torch_dtype(int dt) {
    return dt == MLLM_DTYPE_F16 ? "float16" : dt == MLLM_DTYPE_BF16 ? "bfloat16" : "float32";
}

/* The first HF class and model_type of the preset's registry row. */
static const char *first_word(const char *list, char *buf, size_t cap) {
    const size_t n = strcspn(list ? list : "", " ");
    snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), list ? list : "");
    return buf;
}

/* The HF name of a GGUF tensor name: the registry row's table where the
   family has one (Gemma's four norms per layer), else the Llama names. */
static bool hf_name(const synth_preset *p, const char *gguf, char *out, size_t cap) {
    const mllm_arch *row = mllm_arch_find(p->arch);
    if (!row || !row->hf_layer_names || strncmp(gguf, "blk.", 4) != 0) return mllm_gguf_name_to_hf(gguf, out, cap);
    char *end;
    long l = strtol(gguf + 4, &end, 10);
    if (end == gguf + 4 || *end != '.') return false;
    for (const mllm_name_pair *np = row->hf_layer_names; np->from; np++)
        if (!strcmp(end + 1, np->to)) return snprintf(out, cap, "model.layers.%ld.%s", l, np->from) < (int)cap;
    return false;
}

/* Gemma 3's config fields beyond the shared ones (Gemma3TextConfig). */
static void gemma3_config(cJSON *j, const synth_preset *p) {
    cJSON_AddNullToObject(j, "attn_logit_softcapping");
    cJSON_AddNullToObject(j, "final_logit_softcapping");
    cJSON_AddStringToObject(j, "hidden_activation", "gelu_pytorch_tanh");
    cJSON *types = cJSON_AddArrayToObject(j, "layer_types");
    for (int l = 0; l < p->L; l++)
        cJSON_AddItemToArray(types, cJSON_CreateString((l + 1) % p->swa_pattern ? "sliding_attention"
                                                                                 : "full_attention"));
    cJSON_AddNumberToObject(j, "query_pre_attn_scalar", p->query_pre_attn_scalar);
    cJSON_AddNumberToObject(j, "rope_local_base_freq", p->theta_swa);
    cJSON_AddNumberToObject(j, "sliding_window", p->swa_window);
    cJSON_AddBoolToObject(j, "use_bidirectional_attention", false);
}

/* SmolLM3's: no_rope_layers lists 1 (rotates) or 0 per layer. */
static void smollm3_config(cJSON *j, const synth_preset *p) {
    cJSON *nr = cJSON_AddArrayToObject(j, "no_rope_layers");
    for (int l = 0; l < p->L; l++) cJSON_AddItemToArray(nr, cJSON_CreateNumber((l + 1) % p->no_rope_interval != 0));
    cJSON_AddNumberToObject(j, "no_rope_layer_interval", p->no_rope_interval);
    cJSON_AddBoolToObject(j, "mlp_bias", false);
    cJSON_AddNullToObject(j, "sliding_window");
    cJSON_AddBoolToObject(j, "use_sliding_window", false);
}

static cJSON *config_json(const synth_preset *p, int dtype, const synth_vocab *v) {
    /* Qwen2 configs have no attention_bias (the q/k/v biases are implied)
       and no head_dim (hidden_size / num_attention_heads), but have the
       sliding-window fields, switched off. */
    bool qwen2 = !strcmp(p->arch, "qwen2");
    cJSON *j = cJSON_CreateObject();
    cJSON *archs = cJSON_AddArrayToObject(j, "architectures");
    const mllm_arch *row = mllm_arch_find(p->arch);
    char cls[64], type[64];
    cJSON_AddItemToArray(archs, cJSON_CreateString(first_word(row ? row->hf_classes : NULL, cls, sizeof cls)));
    cJSON_AddStringToObject(j, "model_type", first_word(row ? row->hf_types : NULL, type, sizeof type));
    if (qwen2) cJSON_AddNumberToObject(j, "attention_dropout", 0.0);
    else cJSON_AddBoolToObject(j, "attention_bias", false);
    cJSON_AddNumberToObject(j, "bos_token_id", v->bos);
    cJSON_AddNumberToObject(j, "eos_token_id", v->eos);
    /* Gemma3 / SmolLM3 configs default pad_token_id to ids past a tiny vocabulary. */
    if (p->gemma || p->no_rope_interval > 0) cJSON_AddNumberToObject(j, "pad_token_id", v->pad);
    if (!qwen2) cJSON_AddNumberToObject(j, "head_dim", p->D);
    if (!p->gemma) cJSON_AddStringToObject(j, "hidden_act", "silu");
    cJSON_AddNumberToObject(j, "hidden_size", p->E);
    cJSON_AddNumberToObject(j, "intermediate_size", p->F);
    cJSON_AddNumberToObject(j, "max_position_embeddings", p->ctx);
    if (qwen2) cJSON_AddNumberToObject(j, "max_window_layers", p->L);
    cJSON_AddNumberToObject(j, "num_attention_heads", p->H);
    cJSON_AddNumberToObject(j, "num_hidden_layers", p->L);
    cJSON_AddNumberToObject(j, "num_key_value_heads", p->Hkv);
    cJSON_AddNumberToObject(j, "rms_norm_eps", p->eps);
    if (p->llama3_rope) {
        cJSON *rs = cJSON_AddObjectToObject(j, "rope_scaling");
        cJSON_AddNumberToObject(rs, "factor", p->rope_factor);
        cJSON_AddNumberToObject(rs, "high_freq_factor", p->rope_high);
        cJSON_AddNumberToObject(rs, "low_freq_factor", p->rope_low);
        cJSON_AddNumberToObject(rs, "original_max_position_embeddings", p->rope_orig_ctx);
        cJSON_AddStringToObject(rs, "rope_type", "llama3");
    } else {
        cJSON_AddNullToObject(j, "rope_scaling");
    }
    cJSON_AddNumberToObject(j, "rope_theta", p->theta);
    if (qwen2) cJSON_AddNumberToObject(j, "sliding_window", p->ctx);
    cJSON_AddBoolToObject(j, "tie_word_embeddings", p->tied);
    cJSON_AddStringToObject(j, "torch_dtype", torch_dtype(dtype));
    if (qwen2) cJSON_AddBoolToObject(j, "use_sliding_window", false);
    cJSON_AddNumberToObject(j, "vocab_size", p->V);
    if (p->gemma) gemma3_config(j, p);
    if (p->no_rope_interval > 0) smollm3_config(j, p);
    return j;
}

static cJSON *added_token(const synth_vocab *v, int32_t id, bool special) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddNumberToObject(t, "id", id);
    cJSON_AddStringToObject(t, "content", v->tokens[id]);
    cJSON_AddBoolToObject(t, "single_word", false);
    cJSON_AddBoolToObject(t, "lstrip", false);
    cJSON_AddBoolToObject(t, "rstrip", false);
    cJSON_AddBoolToObject(t, "normalized", false);
    cJSON_AddBoolToObject(t, "special", special);
    return t;
}

static cJSON *byte_level(bool add_prefix_space) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "ByteLevel");
    cJSON_AddBoolToObject(b, "add_prefix_space", add_prefix_space);
    cJSON_AddBoolToObject(b, "trim_offsets", false);
    cJSON_AddBoolToObject(b, "use_regex", false);
    return b;
}

/* Llama adds BOS through a TemplateProcessing post-processor. */
static cJSON *bos_template(const synth_vocab *v) {
    const char *bos = v->tokens[v->bos];
    cJSON *pp = cJSON_CreateObject();
    cJSON_AddStringToObject(pp, "type", "TemplateProcessing");
    const char *seqs[] = {"single", "pair"};
    for (int k = 0; k < 2; k++) {
        cJSON *arr = cJSON_AddArrayToObject(pp, seqs[k]);
        for (int part = 0; part < (k ? 2 : 1); part++) {
            cJSON *sp = cJSON_CreateObject(), *inner = cJSON_AddObjectToObject(sp, "SpecialToken");
            cJSON_AddStringToObject(inner, "id", bos);
            cJSON_AddNumberToObject(inner, "type_id", part);
            cJSON_AddItemToArray(arr, sp);
            cJSON *sq = cJSON_CreateObject(), *sin = cJSON_AddObjectToObject(sq, "Sequence");
            cJSON_AddStringToObject(sin, "id", part ? "B" : "A");
            cJSON_AddNumberToObject(sin, "type_id", part);
            cJSON_AddItemToArray(arr, sq);
        }
    }
    cJSON *st = cJSON_AddObjectToObject(pp, "special_tokens"), *e = cJSON_AddObjectToObject(st, bos);
    cJSON_AddStringToObject(e, "id", bos);
    cJSON_AddItemToObject(e, "ids", cJSON_CreateIntArray(&v->bos, 1));
    cJSON_AddItemToObject(e, "tokens", cJSON_CreateStringArray(&bos, 1));
    return pp;
}

static cJSON *tokenizer_json(const synth_preset *p, const synth_vocab *v) {
    bool qwen = synth_is_qwen(p);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "version", "1.0");
    cJSON_AddNullToObject(j, "truncation");
    cJSON_AddNullToObject(j, "padding");
    cJSON *added = cJSON_AddArrayToObject(j, "added_tokens");
    for (int i = 0; i < v->n_special; i++) {
        cJSON_AddItemToArray(added, added_token(v, v->first_special + i, synth_special_is_hf_special(p, i)));
    }
    if (qwen) {
        cJSON *norm = cJSON_AddObjectToObject(j, "normalizer");
        cJSON_AddStringToObject(norm, "type", "NFC");
    } else {
        cJSON_AddNullToObject(j, "normalizer");
    }
    cJSON *pre = cJSON_AddObjectToObject(j, "pre_tokenizer");
    cJSON_AddStringToObject(pre, "type", "Sequence");
    cJSON *pres = cJSON_AddArrayToObject(pre, "pretokenizers");
    cJSON *split = cJSON_CreateObject();
    cJSON_AddStringToObject(split, "type", "Split");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(split, "pattern"), "Regex", v->hf_regex);
    cJSON_AddStringToObject(split, "behavior", "Isolated");
    cJSON_AddBoolToObject(split, "invert", false);
    cJSON_AddItemToArray(pres, split);
    cJSON_AddItemToArray(pres, byte_level(false));
    cJSON_AddItemToObject(j, "post_processor", qwen ? byte_level(false) : bos_template(v));
    cJSON_AddItemToObject(j, "decoder", byte_level(false));
    cJSON *m = cJSON_AddObjectToObject(j, "model");
    cJSON_AddStringToObject(m, "type", "BPE");
    cJSON_AddNullToObject(m, "dropout");
    cJSON_AddNullToObject(m, "unk_token");
    cJSON_AddStringToObject(m, "continuing_subword_prefix", "");
    cJSON_AddStringToObject(m, "end_of_word_suffix", "");
    cJSON_AddBoolToObject(m, "fuse_unk", false);
    cJSON_AddBoolToObject(m, "byte_fallback", false);
    cJSON_AddBoolToObject(m, "ignore_merges", false);
    cJSON *vocab = cJSON_AddObjectToObject(m, "vocab");
    for (int32_t i = 0; i < v->n_bpe; i++) cJSON_AddNumberToObject(vocab, v->tokens[i], i);
    cJSON_AddItemToObject(m, "merges", cJSON_CreateStringArray((const char *const *)v->merges, v->n_merges));
    return j;
}

static cJSON *tokenizer_config_json(const synth_preset *p, const synth_vocab *v) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "add_bos_token", v->add_bos);
    cJSON_AddBoolToObject(j, "add_eos_token", false);
    cJSON *dec = cJSON_AddObjectToObject(j, "added_tokens_decoder");
    for (int i = 0; i < v->n_special; i++) {
        char id[16];
        snprintf(id, sizeof id, "%d", (int)(v->first_special + i));
        cJSON *t = added_token(v, v->first_special + i, synth_special_is_hf_special(p, i));
        cJSON_DeleteItemFromObject(t, "id");
        cJSON_AddItemToObject(dec, id, t);
    }
    if (v->add_bos) cJSON_AddStringToObject(j, "bos_token", v->tokens[v->bos]);
    else cJSON_AddNullToObject(j, "bos_token");
    cJSON_AddStringToObject(j, "eos_token", v->tokens[v->eos]);
    cJSON_AddStringToObject(j, "pad_token", v->tokens[v->pad]);
    cJSON_AddStringToObject(j, "chat_template", v->chat_template);
    cJSON_AddNumberToObject(j, "model_max_length", p->ctx);
    cJSON_AddStringToObject(j, "tokenizer_class", synth_is_qwen(p) ? "Qwen2Tokenizer" : "PreTrainedTokenizerFast");
    return j;
}

static const char *st_dtype(int dt) { return dt == MLLM_DTYPE_F16 ? "F16" : dt == MLLM_DTYPE_BF16 ? "BF16" : "F32"; }

/* safetensors header for the tensor list, padded with spaces to 8 bytes. */
static char *st_header(const synth_preset *p, synth_tensor *ts, size_t n, size_t *len) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(cJSON_AddObjectToObject(j, "__metadata__"), "format", "pt");
    uint64_t off = 0;
    char hf[128];
    for (size_t i = 0; i < n; i++) {
        if (!hf_name(p, ts[i].name, hf, sizeof hf)) continue;
        cJSON *e = cJSON_AddObjectToObject(j, hf);
        cJSON_AddStringToObject(e, "dtype", st_dtype(ts[i].dtype));
        double shape[2] = {(double)ts[i].ne1, (double)ts[i].ne0};
        cJSON_AddItemToObject(e, "shape", ts[i].ne1 > 1 ? cJSON_CreateDoubleArray(shape, 2)
                                                        : cJSON_CreateDoubleArray(shape + 1, 1));
        double range[2] = {(double)off, (double)(off + synth_tensor_bytes(&ts[i]))};
        cJSON_AddItemToObject(e, "data_offsets", cJSON_CreateDoubleArray(range, 2));
        off += synth_tensor_bytes(&ts[i]);
    }
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!text) return NULL;
    size_t tl = strlen(text), padded = (tl + 7) / 8 * 8;
    char *out = mllm_malloc(padded + 1);
    if (out) {
        memcpy(out, text, tl);
        memset(out + tl, ' ', padded - tl);
        out[padded] = 0;
        *len = padded;
    }
    cJSON_free(text);
    return out;
}

static mllm_status write_safetensors(const synth_preset *p, const char *dir, synth_tensor *ts, size_t n,
                                     synth_progress_fn progress, void *user) {
    size_t hlen = 0;
    char *hdr = st_header(p, ts, n, &hlen);
    char *path = join(dir, "model.safetensors");
    uint8_t *chunk = mllm_malloc(HF_CHUNK);
    FILE *f = hdr && path && chunk ? fopen(path, "wb") : NULL;
    mllm_status st = MLLM_OK;
    if (!hdr || !path || !chunk) st = mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
    else if (!f) st = mllm_err(MLLM_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    uint64_t hl = hlen;
    if (!st && (fwrite(&hl, 8, 1, f) != 1 || fwrite(hdr, 1, hlen, f) != hlen)) {
        st = mllm_err(MLLM_ERR_IO, "%s: write failed", path);
    }
    char hf[128];
    for (size_t i = 0; i < n && !st; i++) {
        if (!hf_name(p, ts[i].name, hf, sizeof hf)) continue;
        if (progress) {
            char msg[192];
            snprintf(msg, sizeof msg, "[%zu/%zu] %s %s", i + 1, n, hf, st_dtype(ts[i].dtype));
            progress(user, msg);
        }
        size_t size = synth_tensor_bytes(&ts[i]);
        for (size_t off = 0; off < size && !st; off += HF_CHUNK) {
            size_t k = size - off < HF_CHUNK ? size - off : HF_CHUNK;
            st = synth_fill(&ts[i], chunk, off, k);
            if (!st && fwrite(chunk, 1, k, f) != k) st = mllm_err(MLLM_ERR_IO, "%s: write failed", path);
        }
    }
    if (f) {
        if (!st && (fflush(f) != 0 || fsync(fileno(f)) != 0)) st = mllm_err(MLLM_ERR_IO, "%s: fsync failed", path);
        if (fclose(f) != 0 && !st) st = mllm_err(MLLM_ERR_IO, "%s: close failed", path);
    }
    mllm_free(hdr);
    mllm_free(path);
    mllm_free(chunk);
    return st;
}

/* Removes a folder holding only files this writer makes (a previous run). */
static mllm_status remove_previous(const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) != 0) return MLLM_OK;
    if (!S_ISDIR(sb.st_mode)) return mllm_err(MLLM_ERR_IO, "%s: exists and is not a folder", dir);
    for (size_t i = 0; i < sizeof k_hf_files / sizeof *k_hf_files; i++) {
        char *p = join(dir, k_hf_files[i]);
        if (!p) return mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
        remove(p);
        mllm_free(p);
    }
    if (rmdir(dir) != 0) return mllm_err(MLLM_ERR_IO, "%s: exists and holds other files: %s", dir, strerror(errno));
    return MLLM_OK;
}

static void remove_tmp(const char *tmp) {
    for (size_t i = 0; i < sizeof k_hf_files / sizeof *k_hf_files; i++) {
        char *p = join(tmp, k_hf_files[i]);
        if (p) remove(p);
        mllm_free(p);
    }
    rmdir(tmp);
}

mllm_status synth_write_hf(const synth_preset *p, int dtype, const char *dir, synth_progress_fn progress,
                           void *user) {
    char *tmp = mllm_atomic_tmp_name(dir);
    if (!tmp) return mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
    remove_tmp(tmp);
    if (mkdir(tmp, 0755) != 0) {
        mllm_status st = mllm_err(MLLM_ERR_IO, "%s: cannot create folder: %s", tmp, strerror(errno));
        mllm_free(tmp);
        return st;
    }
    synth_vocab v;
    mllm_status st = synth_vocab_build(p, &v);
    size_t n = 0;
    float *freqs = NULL;
    synth_tensor *ts = st ? NULL : synth_tensor_list(p, dtype, false, &n, &freqs);
    if (!st && !ts) st = mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
    if (!st) st = write_json(tmp, "config.json", config_json(p, dtype, &v));
    if (!st) st = write_json(tmp, "tokenizer.json", tokenizer_json(p, &v));
    if (!st) st = write_json(tmp, "tokenizer_config.json", tokenizer_config_json(p, &v));
    if (!st) st = write_safetensors(p, tmp, ts, n, progress, user);
    if (!st) st = remove_previous(dir);
    if (!st) st = mllm_atomic_rename(tmp, dir);
    if (st) remove_tmp(tmp);
    for (size_t i = 0; ts && i < n; i++) synth_tensor_free(&ts[i]);
    mllm_free(ts);
    mllm_free(freqs);
    if (v.tokens) synth_vocab_free(&v);
    mllm_free(tmp);
    return st;
}
