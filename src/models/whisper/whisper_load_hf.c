/* Whisper from a Hugging Face folder (openai/whisper-* style: config.json
   with model_type "whisper", model.safetensors, tokenizer.json). The HF
   tensors are renamed to CTranslate2's WhisperSpec variables, the
   attention projections fused as CTranslate2 fuses them (self-attention
   linear_0 = [q; k; v], cross-attention linear_1 = [k; v]; HF's k_proj has
   no bias, CTranslate2 stores zeros), and written into an in-memory
   model.bin image that the CTranslate2 reader parses and
   mllm_whisper_load_ct2 loads: one loader, one set of shape checks, for
   both layouts. The suppress lists come from config.json's
   suppress_tokens / begin_suppress_tokens (or generation_config.json's). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/file_map.h"
#include "formats/ctranslate2.h"
#include "formats/safetensors.h"
#include "models/whisper/whisper_internal.h"
#include "models/whisper/whisper_load_hf.h"

#define HF_MAX_CONFIG (1u << 20)
#define HF_MAX_LAYERS 256

/* The CTranslate2 image being written; sizing pass when buf is NULL. */
typedef struct {
    char *buf;
    size_t n;
    uint32_t count;
} img;

static void put(img *m, const void *p, size_t n) {
    if (m->buf && n) memcpy(m->buf + m->n, p, n);
    m->n += n;
}
static void put_u32(img *m, uint32_t v) {
    const unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                                (unsigned char)(v >> 24)};
    put(m, b, 4);
}
static void put_str(img *m, const char *s) {
    const size_t n = strlen(s) + 1;
    const unsigned char b[2] = {(unsigned char)n, (unsigned char)(n >> 8)};
    put(m, b, 2);
    put(m, s, n);
}

/* CTranslate2's dtype codes (formats/ctranslate2.c's table order). */
static int ct2_code(int dtype) {
    return dtype == MLLM_DTYPE_F32 ? 0 : dtype == MLLM_DTYPE_I32 ? 3 : dtype == MLLM_DTYPE_F16 ? 4 : 5;
}

/* One variable made of parts: parts[i] of bytes[i] bytes (data NULL: zeros). */
static void var(img *m, const char *name, int dtype, int rank, uint32_t d0, uint32_t d1, uint32_t d2,
                const void *const *parts, const size_t *bytes, int n_parts) {
    const uint32_t dims[3] = {d0, d1, d2};
    size_t total = 0;
    for (int i = 0; i < n_parts; i++) total += bytes[i];
    put_str(m, name);
    const unsigned char r = (unsigned char)rank, code = (unsigned char)ct2_code(dtype);
    put(m, &r, 1);
    for (int i = 0; i < rank; i++) put_u32(m, dims[i]);
    put(m, &code, 1);
    put_u32(m, (uint32_t)total);
    for (int i = 0; i < n_parts; i++) {
        if (parts[i]) put(m, parts[i], bytes[i]);
        else {
            if (m->buf) memset(m->buf + m->n, 0, bytes[i]);
            m->n += bytes[i];
        }
    }
    m->count++;
}

typedef struct {
    const mllm_safetensors *st;
    const char *path, *prefix; /* "model." for WhisperForConditionalGeneration, "" for WhisperModel */
    int dtype;                 /* every weight's: one dtype per file */
    mllm_status status;
} src;

/* A tensor of the HF file with exactly this shape (HF order: d0 slowest; 0 = any). */
static const mllm_st_tensor *get(src *s, const char *name, int rank, int64_t d0, int64_t d1, int64_t d2) {
    if (s->status != MLLM_OK) return NULL;
    char full[256];
    snprintf(full, sizeof full, "%s%s", s->prefix, name);
    const mllm_st_tensor *t = mllm_safetensors_find(s->st, full);
    const int64_t want[3] = {d0, d1, d2};
    bool ok = t && t->n_dims == rank;
    for (int i = 0; ok && i < rank; i++) ok = t->ne[rank - 1 - i] == want[i];
    if (!ok) {
        s->status = mllm_err(MLLM_ERR_FORMAT, "%s: %s %s", s->path, full, t ? "has an unexpected shape" : "is missing");
        return NULL;
    }
    if (s->dtype < 0) s->dtype = t->dtype;
    if (t->dtype != s->dtype) {
        s->status = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: %s is %s, the other weights %s (one dtype per file is read)",
                             s->path, full, mllm_dtype_get(t->dtype)->name, mllm_dtype_get(s->dtype)->name);
        return NULL;
    }
    return t;
}

/* HF tensor `name` as CTranslate2 variable `ct2` (same shape, same bytes). */
static void copy(img *m, src *s, const char *ct2, const char *name, int rank, int64_t d0, int64_t d1, int64_t d2) {
    const mllm_st_tensor *t = get(s, name, rank, d0, d1, d2);
    if (!t) return;
    const void *parts[1] = {t->data};
    const size_t bytes[1] = {t->size};
    var(m, ct2, t->dtype, rank, (uint32_t)d0, (uint32_t)d1, (uint32_t)d2, parts, bytes, 1);
}

/* A LayerNorm: HF weight/bias -> gamma/beta. */
static void norm(img *m, src *s, const char *ct2, const char *hf, int64_t d) {
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/gamma", ct2);
    snprintf(b, sizeof b, "%s.weight", hf);
    copy(m, s, a, b, 1, d, 0, 0);
    snprintf(a, sizeof a, "%s/beta", ct2);
    snprintf(b, sizeof b, "%s.bias", hf);
    copy(m, s, a, b, 1, d, 0, 0);
}

/* A linear layer: HF weight/bias -> weight/bias. */
static void linear(img *m, src *s, const char *ct2, const char *hf, int64_t n_out, int64_t n_in) {
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/weight", ct2);
    snprintf(b, sizeof b, "%s.weight", hf);
    copy(m, s, a, b, 2, n_out, n_in, 0);
    snprintf(a, sizeof a, "%s/bias", ct2);
    snprintf(b, sizeof b, "%s.bias", hf);
    copy(m, s, a, b, 1, n_out, 0, 0);
}

/* Projections `projs` ("qkv" or "kv") of attention `hf` fused into one
   linear: weights stacked, k's missing bias as zeros. */
static void fused(img *m, src *s, const char *ct2, const char *hf, const char *projs, int64_t d) {
    const void *wp[3], *bp[3];
    size_t wb[3], bb[3];
    const int n = (int)strlen(projs);
    for (int i = 0; i < n; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s.%c_proj.weight", hf, projs[i]);
        const mllm_st_tensor *w = get(s, name, 2, d, d, 0);
        if (!w) return;
        wp[i] = w->data;
        wb[i] = w->size;
        bb[i] = w->size / (size_t)d; /* one row of the weight's dtype */
        bp[i] = NULL;
        if (projs[i] != 'k') {
            snprintf(name, sizeof name, "%s.%c_proj.bias", hf, projs[i]);
            const mllm_st_tensor *b = get(s, name, 1, d, 0, 0);
            if (!b) return;
            bp[i] = b->data;
        }
    }
    char a[256];
    snprintf(a, sizeof a, "%s/weight", ct2);
    var(m, a, s->dtype, 2, (uint32_t)(n * d), (uint32_t)d, 0, wp, wb, n);
    snprintf(a, sizeof a, "%s/bias", ct2);
    var(m, a, s->dtype, 1, (uint32_t)(n * d), 0, 0, bp, bb, n);
}

static void scalar_i32(img *m, const char *name, int32_t v) {
    const unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                                (unsigned char)(v >> 24)};
    const void *parts[1] = {b};
    const size_t bytes[1] = {4};
    var(m, name, MLLM_DTYPE_I32, 0, 0, 0, 0, parts, bytes, 1);
}

/* The whole WhisperSpec image (m->buf NULL: only its size). */
static void write_image(img *m, src *s, const mllm_whisper_hf_config *c) {
    const int64_t d = c->d_model;
    char a[160], b[160];
    put_u32(m, 6); /* binary version */
    put_str(m, "WhisperSpec");
    put_u32(m, 3); /* spec revision */
    const size_t count_at = m->n;
    put_u32(m, 0); /* the variable count, patched below */
    m->count = 0;
    copy(m, s, "encoder/conv1/weight", "encoder.conv1.weight", 3, d, c->n_mels, 3);
    copy(m, s, "encoder/conv1/bias", "encoder.conv1.bias", 1, d, 0, 0);
    copy(m, s, "encoder/conv2/weight", "encoder.conv2.weight", 3, d, d, 3);
    copy(m, s, "encoder/conv2/bias", "encoder.conv2.bias", 1, d, 0, 0);
    copy(m, s, "encoder/position_encodings/encodings", "encoder.embed_positions.weight", 2, c->n_audio_ctx, d, 0);
    copy(m, s, "decoder/position_encodings/encodings", "decoder.embed_positions.weight", 2, c->n_text_ctx, d, 0);
    copy(m, s, "decoder/embeddings/weight", "decoder.embed_tokens.weight", 2, c->n_vocab, d, 0);
    scalar_i32(m, "encoder/num_heads", c->n_head);
    scalar_i32(m, "decoder/num_heads", c->n_head);
    for (int side = 0; side < 2; side++) {
        const char *nm = side ? "decoder" : "encoder";
        const int n = side ? c->n_dec_layers : c->n_enc_layers;
        snprintf(a, sizeof a, "%s/layer_norm", nm);
        snprintf(b, sizeof b, "%s.layer_norm", nm);
        norm(m, s, a, b, d);
        for (int i = 0; i < n && s->status == MLLM_OK; i++) {
            char ct[96], hf[96];
            snprintf(ct, sizeof ct, "%s/layer_%d", nm, i);
            snprintf(hf, sizeof hf, "%s.layers.%d", nm, i);
#define CT(suffix) (snprintf(a, sizeof a, "%s/" suffix, ct), a)
#define HF(suffix) (snprintf(b, sizeof b, "%s." suffix, hf), b)
            norm(m, s, CT("self_attention/layer_norm"), HF("self_attn_layer_norm"), d);
            fused(m, s, CT("self_attention/linear_0"), HF("self_attn"), "qkv", d);
            linear(m, s, CT("self_attention/linear_1"), HF("self_attn.out_proj"), d, d);
            if (side) {
                norm(m, s, CT("attention/layer_norm"), HF("encoder_attn_layer_norm"), d);
                linear(m, s, CT("attention/linear_0"), HF("encoder_attn.q_proj"), d, d);
                fused(m, s, CT("attention/linear_1"), HF("encoder_attn"), "kv", d);
                linear(m, s, CT("attention/linear_2"), HF("encoder_attn.out_proj"), d, d);
            }
            norm(m, s, CT("ffn/layer_norm"), HF("final_layer_norm"), d);
            linear(m, s, CT("ffn/linear_0"), HF("fc1"), c->d_ff, d);
            linear(m, s, CT("ffn/linear_1"), HF("fc2"), d, c->d_ff);
#undef CT
#undef HF
        }
    }
    put_u32(m, 0); /* aliases */
    if (m->buf) {
        const uint32_t v = m->count;
        const unsigned char cb[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                                     (unsigned char)(v >> 24)};
        memcpy(m->buf + count_at, cb, 4);
    }
}

static int get_int(const cJSON *j, const char *key, int dflt, bool *bad) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v) return dflt;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1e7) || /* range before the cast */
        v->valuedouble != (double)(int)v->valuedouble) {
        *bad = true;
        return dflt;
    }
    return (int)v->valuedouble;
}

/* The suppress lists as CTranslate2's config.json names them. */
static char *suppress_json(const cJSON *cfg, const cJSON *gen) {
    cJSON *o = cJSON_CreateObject();
    static const char *const from[2] = {"suppress_tokens", "begin_suppress_tokens"};
    static const char *const to[2] = {"suppress_ids", "suppress_ids_begin"};
    for (int i = 0; o && i < 2; i++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(cfg, from[i]);
        if (!a && gen) a = cJSON_GetObjectItemCaseSensitive(gen, from[i]);
        if (a && !cJSON_IsNull(a)) cJSON_AddItemToObject(o, to[i], cJSON_Duplicate(a, true)); /* checked by the parser */
    }
    char *txt = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return txt;
}

mllm_status mllm_whisper_hf_config_parse(const char *json, size_t len, const char *label, mllm_whisper_hf_config *c) {
    memset(c, 0, sizeof *c);
    cJSON *j = cJSON_ParseWithLength(json, len);
    mllm_status st = MLLM_OK;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "model_type");
    if (!cJSON_IsObject(j) || !cJSON_IsString(mt) || strcmp(mt->valuestring, "whisper"))
        st = mllm_err(MLLM_ERR_FORMAT, "%s: not a Whisper config (model_type \"whisper\")", label);
    bool bad = false;
    if (st == MLLM_OK) {
        c->d_model = get_int(j, "d_model", 0, &bad);
        c->n_head = get_int(j, "encoder_attention_heads", 0, &bad);
        c->n_enc_layers = get_int(j, "encoder_layers", 0, &bad);
        c->n_dec_layers = get_int(j, "decoder_layers", 0, &bad);
        c->d_ff = get_int(j, "encoder_ffn_dim", 0, &bad);
        c->n_mels = get_int(j, "num_mel_bins", 80, &bad);
        c->n_vocab = get_int(j, "vocab_size", 0, &bad);
        c->n_audio_ctx = get_int(j, "max_source_positions", 1500, &bad);
        c->n_text_ctx = get_int(j, "max_target_positions", 448, &bad);
        const cJSON *act = cJSON_GetObjectItemCaseSensitive(j, "activation_function");
        if (bad || c->d_model < 1 || c->d_model > 8192 || c->n_head < 1 || c->n_enc_layers < 1 ||
            c->n_enc_layers > HF_MAX_LAYERS || c->n_dec_layers < 1 || c->n_dec_layers > HF_MAX_LAYERS || c->d_ff < 1 ||
            c->d_ff > 65536 || c->n_vocab < 1 || c->n_vocab > 1000000 || c->n_audio_ctx < 1 || c->n_audio_ctx > 1 << 16 ||
            c->n_text_ctx < 1 || c->n_text_ctx > 1 << 16)
            st = mllm_err(MLLM_ERR_FORMAT, "%s: a Whisper size is missing or out of range", label);
        else if (get_int(j, "decoder_attention_heads", c->n_head, &bad) != c->n_head ||
                 get_int(j, "decoder_ffn_dim", c->d_ff, &bad) != c->d_ff || bad)
            st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: encoder and decoder of different widths are not read", label);
        else if (act && (!cJSON_IsString(act) || strcmp(act->valuestring, "gelu")))
            st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: activation_function other than gelu", label);
        else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "scale_embedding")))
            st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: scale_embedding is not Whisper's", label);
    }
    cJSON_Delete(j);
    return st;
}

static mllm_status map_json(const char *path, bool optional, void **base, size_t *size) {
    *base = NULL;
    *size = 0;
    if (optional) {
        FILE *f = fopen(path, "rb");
        if (!f) return MLLM_OK;
        fclose(f);
    }
    mllm_status st = mllm_file_map(path, 2, "too short for JSON", base, size);
    if (st == MLLM_OK && *size > HF_MAX_CONFIG) {
        mllm_file_unmap(*base, *size);
        *base = NULL;
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: over %u bytes", path, HF_MAX_CONFIG);
    }
    return st;
}

mllm_status mllm_whisper_load_hf(const char *dir, const mllm_whisper_params *p, mllm_whisper **out) {
    *out = NULL;
    char cfg_path[4096], gen_path[4096], st_path[4096], tok_path[4096];
    if ((size_t)snprintf(cfg_path, sizeof cfg_path, "%s/config.json", dir) >= sizeof cfg_path ||
        (size_t)snprintf(gen_path, sizeof gen_path, "%s/generation_config.json", dir) >= sizeof gen_path ||
        (size_t)snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir) >= sizeof st_path ||
        (size_t)snprintf(tok_path, sizeof tok_path, "%s/tokenizer.json", dir) >= sizeof tok_path)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: path too long", dir);
    void *cb = NULL, *gb = NULL;
    size_t cn = 0, gn = 0;
    mllm_whisper_hf_config c;
    mllm_safetensors *sf = NULL;
    cJSON *cj = NULL, *gj = NULL;
    char *sup = NULL;
    img m = {0};
    mllm_ct2 *ct2 = NULL;
    mllm_status st = map_json(cfg_path, false, &cb, &cn);
    if (st == MLLM_OK) st = mllm_whisper_hf_config_parse(cb, cn, cfg_path, &c);
    if (st == MLLM_OK) st = map_json(gen_path, true, &gb, &gn);
    if (st == MLLM_OK) {
        cj = cJSON_ParseWithLength(cb, cn);
        gj = gb ? cJSON_ParseWithLength(gb, gn) : NULL;
        if (!(sup = suppress_json(cj, gj))) st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    if (st == MLLM_OK) st = mllm_safetensors_open(st_path, &sf);
    src s = {.st = sf, .path = st_path, .prefix = "model.", .dtype = -1, .status = st};
    if (st == MLLM_OK && !mllm_safetensors_find(sf, "model.encoder.conv1.weight")) s.prefix = "";
    if (st == MLLM_OK) {
        write_image(&m, &s, &c); /* sizing pass: every name and shape checked */
        st = s.status;
    }
    if (st == MLLM_OK && s.dtype != MLLM_DTYPE_F32 && s.dtype != MLLM_DTYPE_F16 && s.dtype != MLLM_DTYPE_BF16)
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: weights of dtype %s", st_path, mllm_dtype_get(s.dtype)->name);
    if (st == MLLM_OK) {
        const size_t total = m.n;
        m = (img){.buf = mllm_malloc(total)};
        if (!m.buf) st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory for %zu bytes", st_path, total);
        else write_image(&m, &s, &c);
    }
    if (st == MLLM_OK && mllm_safetensors_damaged(sf)) st = mllm_err(MLLM_ERR_IO, "%s: the file shrank while read", st_path);
    if (st == MLLM_OK) st = mllm_ct2_open_memory(m.buf, m.n, st_path, &ct2);
    if (st == MLLM_OK) {
        /* The model takes ct2 and, as its weights kept as stored point into
           the image, the image too. */
        st = mllm_whisper_load_ct2(ct2, st_path, sup, strlen(sup), tok_path, p, out);
        if (st == MLLM_OK) {
            (*out)->image = m.buf;
            m.buf = NULL;
        }
    }
    mllm_free(m.buf);
    mllm_safetensors_close(sf);
    cJSON_Delete(cj);
    cJSON_Delete(gj);
    cJSON_free(sup);
    if (cb) mllm_file_unmap(cb, cn);
    if (gb) mllm_file_unmap(gb, gn);
    return st;
}
