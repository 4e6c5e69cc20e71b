/* Loading Whisper from a CTranslate2 folder: hyper-parameters from the
   variables' shapes; matrices kept as stored are used in place from the
   file's mapping (kept open), the rest (f32 widening, q8_0 / q4_0
   quantization, repacked into the x8 kernel layouts, and the f32 vectors and
   position tables) copied once into one aligned block, the file pages they
   came from dropped; the suppress lists from config.json; the special tokens
   from tokenizer.json. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include "backends/cpu.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/file_map.h"
#include "formats/ctranslate2.h"
#include "formats/mllmfile.h"
#include "models/whisper/whisper_internal.h"

/* Largest config.json read (the real ones are 2-3 KB). */
#define WH_MAX_CONFIG (1u << 20)

typedef struct {
    const mllm_ct2 *c;
    const char *path;
    int wtype;
    bool stored;     /* a .mllm file: every tensor already in its final dtype */
    const mllm_whisper_params *p; /* its on_weight, if any, sees every weight */
    char *block;     /* NULL: sizing pass */
    size_t used;
    float *row;      /* a widened row (n_in floats at most) */
    void *raw;       /* the row's bytes, aligned */
    void *group;     /* 8 converted rows, before they are packed */
    mllm_status st;
} loader;

static const mllm_ct2_tensor *var(loader *l, const char *name, int rank, uint32_t d0, uint32_t d1, uint32_t d2) {
    if (l->st != MLLM_OK) return NULL;
    const mllm_ct2_tensor *t = mllm_ct2_find(l->c, name);
    const uint32_t want[3] = {d0, d1, d2};
    bool ok = t && t->rank == rank;
    for (int i = 0; ok && i < rank; i++) ok = !want[i] || t->dims[i] == want[i];
    if (ok && !l->stored && t->dtype != MLLM_DTYPE_F16 && t->dtype != MLLM_DTYPE_F32 && t->dtype != MLLM_DTYPE_BF16) {
        l->st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: %s is %s; only float16/float32/bfloat16 Whisper weights are read",
                         l->path, name, mllm_ct2_dtype_name(t->dtype));
        return NULL;
    }
    if (!ok) {
        l->st = t ? mllm_err(MLLM_ERR_FORMAT, "%s: %s has an unexpected shape for Whisper", l->path, name)
                  : mllm_err(MLLM_ERR_FORMAT, "%s: no variable %s (not a Whisper model?)", l->path, name);
        return NULL;
    }
    return t;
}

static void *take(loader *l, size_t bytes) {
    size_t at = (l->used + 63) & ~(size_t)63;
    l->used = at + bytes;
    return l->block ? l->block + at : NULL;
}

/* Row r of t (n values) as floats in l->row. */
static const float *widen(loader *l, const mllm_ct2_tensor *t, uint64_t r, int64_t n) {
    const size_t isz = mllm_dtype_get(t->dtype)->type_size;
    memcpy(l->raw, (const char *)t->data + r * (uint64_t)n * isz, (size_t)n * isz);
    mllm_cpu_to_float(t->dtype, l->raw, l->row, n);
    return l->row;
}

/* Reports a weight to the params' on_weight (the final pass only). */
static void seen(loader *l, const mllm_ct2_tensor *t, int dtype, int rank, const uint32_t *dims, const void *data,
                 size_t bytes) {
    if (l->block && l->p && l->p->on_weight && l->st == MLLM_OK)
        l->p->on_weight(l->p->user, t->name, dtype, rank, dims, data, bytes);
}

static const float *f32_of(loader *l, const mllm_ct2_tensor *t) {
    if (!t) return NULL;
    if (l->stored && t->dtype != MLLM_DTYPE_F32) {
        l->st = mllm_err(MLLM_ERR_FORMAT, "%s: %s is %s; a converted Whisper stores its vectors f32", l->path, t->name,
                         mllm_dtype_name((mllm_dtype)t->dtype));
        return NULL;
    }
    const int64_t n = (int64_t)t->n_elements, cols = t->rank >= 2 ? t->dims[t->rank - 1] : n;
    float *dst = take(l, (size_t)n * sizeof(float));
    seen(l, t, MLLM_DTYPE_F32, t->rank, t->dims, dst, (size_t)n * sizeof(float));
    if (!dst) return NULL;
    for (int64_t r = 0; r < n / cols; r++) memcpy(dst + r * cols, widen(l, t, (uint64_t)r, cols), (size_t)cols * 4);
    mllm_file_map_drop(t->data, t->size);
    return dst;
}

static const float *vec(loader *l, const char *name, uint32_t n) { return f32_of(l, var(l, name, 1, n, 0, 0)); }

static wh_norm norm(loader *l, const char *prefix, uint32_t d) {
    char g[256], b[256];
    snprintf(g, sizeof g, "%s/gamma", prefix);
    snprintf(b, sizeof b, "%s/beta", prefix);
    return (wh_norm){.gamma = vec(l, g, d), .beta = vec(l, b, d)};
}

/* Whether the kernels can read t's rows where the file has them. The file's
   tensors are unaligned (formats/ctranslate2.h): fine for the AVX2 float
   kernels, which load 8 values at a time without alignment and have no
   scalar tail when n_in % 8 == 0; the generic ones read element by element,
   so there the data must be aligned to its item size. */
static bool in_place(const mllm_ct2_tensor *t, int n_in) {
    const size_t isz = mllm_dtype_get(t->dtype)->type_size;
    if ((uintptr_t)t->data % isz == 0 || (uintptr_t)t->data % 64 == 0) return true;
    return n_in % 8 == 0 && mllm_cpu_reads_unaligned_rows();
}

/* A matrix of n_out rows of n_in values (conv weights: n_in = channels x
   3, already in [out][in][k] order): in place when kept as stored, else
   converted (and, for q8_0 / q4_0, packed 8 rows at a time into the x8
   layout the AVX2 prefill tiles read) into the block. */
static void matrix(loader *l, const mllm_ct2_tensor *t, int n_out, int n_in, bool bias_needed, const char *bias_name,
                   wh_linear *L) {
    if (!t) return;
    int dt = l->wtype;
    const bool quant = dt == MLLM_DTYPE_Q8_0 || dt == MLLM_DTYPE_Q4_0;
    if (quant && n_in % MLLM_QK8_0 != 0) dt = MLLM_DTYPE_F16; /* conv1 (240 inputs) */
    if (dt == MLLM_DTYPE_F16 && t->dtype == MLLM_DTYPE_BF16) dt = MLLM_DTYPE_BF16;
    const int packed = quant ? mllm_repack_type_for((mllm_dtype)dt, n_in, n_out) : -1;
    L->dtype = packed >= 0 ? packed : dt;
    L->n_out = n_out;
    L->n_in = n_in;
    L->row_bytes = mllm_dtype_row_size((mllm_dtype)dt, n_in);
    L->b = bias_name ? vec(l, bias_name, (uint32_t)n_out) : NULL;
    (void)bias_needed;
    const uint32_t dims[2] = {(uint32_t)n_out, (uint32_t)n_in};
    if (L->dtype == t->dtype && in_place(t, n_in)) {
        L->w = t->data;
        seen(l, t, L->dtype, 2, dims, L->w, L->row_bytes * (size_t)n_out);
        return;
    }
    if (l->stored) { /* converted files are used as they are, never converted again */
        l->st = mllm_err(MLLM_ERR_FORMAT, "%s: %s is %s; this file's %s weights need %s there", l->path, t->name,
                         mllm_dtype_name((mllm_dtype)t->dtype), mllm_dtype_name((mllm_dtype)l->wtype),
                         mllm_dtype_name((mllm_dtype)L->dtype));
        return;
    }
    char *dst = take(l, L->row_bytes * (size_t)n_out);
    L->w = dst;
    seen(l, t, L->dtype, 2, dims, dst, L->row_bytes * (size_t)n_out);
    if (!dst) return;
    for (int r0 = 0; r0 < n_out; r0 += 8) {
        const int nr = n_out - r0 < 8 ? n_out - r0 : 8;
        char *out = packed >= 0 ? l->group : dst + (size_t)r0 * L->row_bytes;
        /* q8_0 through the activation quantizer (AVX2; ties to even, see
           kernels.h), the others through their from_float */
        for (int r = 0; r < nr; r++)
            mllm_cpu_quantize_row((mllm_dtype)dt, widen(l, t, (uint64_t)(r0 + r), n_in), out + (size_t)r * L->row_bytes, n_in);
        if (packed >= 0) mllm_repack_groups((mllm_dtype)packed, l->group, dst + (size_t)r0 * L->row_bytes, n_in, 0, 1);
    }
    mllm_file_map_drop(t->data, t->size);
}

static void linear(loader *l, const char *prefix, int n_out, int n_in, wh_linear *L) {
    char wn[256], bn[256];
    snprintf(wn, sizeof wn, "%s/weight", prefix);
    snprintf(bn, sizeof bn, "%s/bias", prefix);
    matrix(l, var(l, wn, 2, (uint32_t)n_out, (uint32_t)n_in, 0), n_out, n_in, true, bn, L);
}

static int scalar(const mllm_ct2 *c, const char *name, int dflt) {
    const mllm_ct2_tensor *t = mllm_ct2_find(c, name);
    if (!t || t->rank != 0) return dflt;
    if (t->dtype == MLLM_DTYPE_I8) return *(const int8_t *)t->data;
    if (t->dtype == MLLM_DTYPE_I16) {
        int16_t v;
        memcpy(&v, t->data, sizeof v);
        return v;
    }
    if (t->dtype == MLLM_DTYPE_I32) {
        int32_t v;
        memcpy(&v, t->data, sizeof v);
        return v;
    }
    return dflt;
}

static int count_layers(const mllm_ct2 *c, const char *side) {
    int n = 0;
    char name[128];
    for (;; n++) {
        snprintf(name, sizeof name, "%s/layer_%d/ffn/linear_0/weight", side, n);
        if (!mllm_ct2_find(c, name) || n > 256) return n;
    }
}


/* "<side>/layer_<i>/<part>": CTranslate2's per-layer variable names. */
static void layer_linear(loader *l, const char *side, int i, const char *part, int n_out, int n_in, wh_linear *L) {
    char p[128];
    snprintf(p, sizeof p, "%s/layer_%d/%s", side, i, part);
    linear(l, p, n_out, n_in, L);
}

static wh_norm layer_norm(loader *l, const char *side, int i, const char *part, int d) {
    char p[128];
    snprintf(p, sizeof p, "%s/layer_%d/%s", side, i, part);
    return norm(l, p, (uint32_t)d);
}

static void load_all(loader *l, mllm_whisper *w) {
    const mllm_whisper_hparams *hp = &w->hp;
    const int d = hp->d_model, f = hp->d_ff;
    matrix(l, var(l, "encoder/conv1/weight", 3, (uint32_t)d, (uint32_t)hp->n_mels, 3), d, hp->n_mels * 3, true,
           "encoder/conv1/bias", &w->conv1);
    matrix(l, var(l, "encoder/conv2/weight", 3, (uint32_t)d, (uint32_t)d, 3), d, d * 3, true, "encoder/conv2/bias",
           &w->conv2);
    w->enc_pos = f32_of(l, var(l, "encoder/position_encodings/encodings", 2, (uint32_t)hp->n_audio_ctx, (uint32_t)d, 0));
    w->dec_pos = f32_of(l, var(l, "decoder/position_encodings/encodings", 2, (uint32_t)hp->n_text_ctx, (uint32_t)d, 0));
    for (int i = 0; i < hp->n_enc_layers; i++) {
        wh_enc_layer *L = &w->enc[i];
        L->attn_ln = layer_norm(l, "encoder", i, "self_attention/layer_norm", d);
        layer_linear(l, "encoder", i, "self_attention/linear_0", 3 * d, d, &L->qkv);
        layer_linear(l, "encoder", i, "self_attention/linear_1", d, d, &L->out);
        L->ffn_ln = layer_norm(l, "encoder", i, "ffn/layer_norm", d);
        layer_linear(l, "encoder", i, "ffn/linear_0", f, d, &L->fc1);
        layer_linear(l, "encoder", i, "ffn/linear_1", d, f, &L->fc2);
    }
    w->enc_ln = norm(l, "encoder/layer_norm", (uint32_t)d);
    for (int i = 0; i < hp->n_dec_layers; i++) {
        wh_dec_layer *L = &w->dec[i];
        L->self_ln = layer_norm(l, "decoder", i, "self_attention/layer_norm", d);
        layer_linear(l, "decoder", i, "self_attention/linear_0", 3 * d, d, &L->self_qkv);
        layer_linear(l, "decoder", i, "self_attention/linear_1", d, d, &L->self_out);
        L->cross_ln = layer_norm(l, "decoder", i, "attention/layer_norm", d);
        layer_linear(l, "decoder", i, "attention/linear_0", d, d, &L->cross_q);
        layer_linear(l, "decoder", i, "attention/linear_1", 2 * d, d, &L->cross_kv);
        layer_linear(l, "decoder", i, "attention/linear_2", d, d, &L->cross_out);
        L->ffn_ln = layer_norm(l, "decoder", i, "ffn/layer_norm", d);
        layer_linear(l, "decoder", i, "ffn/linear_0", f, d, &L->fc1);
        layer_linear(l, "decoder", i, "ffn/linear_1", d, f, &L->fc2);
    }
    w->dec_ln = norm(l, "decoder/layer_norm", (uint32_t)d);
    matrix(l, var(l, "decoder/embeddings/weight", 2, (uint32_t)hp->n_vocab, (uint32_t)d, 0), hp->n_vocab, d, false,
           NULL, &w->logits);
    w->tok_emb = w->logits.w;
}

static mllm_status read_hparams(const mllm_ct2 *c, const char *path, mllm_whisper_hparams *hp) {
    if (strcmp(mllm_ct2_spec_name(c), "WhisperSpec") != 0)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: spec %s is not WhisperSpec", path, mllm_ct2_spec_name(c));
    const mllm_ct2_tensor *c1 = mllm_ct2_find(c, "encoder/conv1/weight");
    const mllm_ct2_tensor *ep = mllm_ct2_find(c, "encoder/position_encodings/encodings");
    const mllm_ct2_tensor *dp = mllm_ct2_find(c, "decoder/position_encodings/encodings");
    const mllm_ct2_tensor *em = mllm_ct2_find(c, "decoder/embeddings/weight");
    const mllm_ct2_tensor *ff = mllm_ct2_find(c, "encoder/layer_0/ffn/linear_0/weight");
    if (!c1 || c1->rank != 3 || !ep || ep->rank != 2 || !dp || dp->rank != 2 || !em || em->rank != 2 || !ff ||
        ff->rank != 2)
        return mllm_err(MLLM_ERR_FORMAT, "%s: the conv stem, position tables, embedding or FFN is missing", path);
    hp->d_model = (int)c1->dims[0];
    hp->n_mels = (int)c1->dims[1];
    hp->n_audio_ctx = (int)ep->dims[0];
    hp->n_text_ctx = (int)dp->dims[0];
    hp->n_vocab = (int)em->dims[0];
    hp->d_ff = (int)ff->dims[0];
    hp->n_head = scalar(c, "encoder/num_heads", 0);
    hp->n_enc_layers = count_layers(c, "encoder");
    hp->n_dec_layers = count_layers(c, "decoder");
    if (hp->n_mels != 80 && hp->n_mels != 128)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: %d mel bins (80 or 128 are read)", path, hp->n_mels);
    if (hp->n_audio_ctx != MLLM_WHISPER_N_FRAMES / 2 || hp->n_text_ctx < 8 || hp->n_text_ctx > 4096)
        return mllm_err(MLLM_ERR_FORMAT, "%s: %d audio / %d text positions (Whisper has 1500 / 448)", path,
                        hp->n_audio_ctx, hp->n_text_ctx);
    if (hp->n_head < 1 || hp->d_model % hp->n_head != 0 || hp->d_model > 8192 || hp->d_ff > 65536 ||
        hp->n_vocab < 1000 || hp->n_vocab > 1000000 || hp->n_enc_layers < 1 || hp->n_dec_layers < 1 ||
        scalar(c, "decoder/num_heads", hp->n_head) != hp->n_head || em->dims[1] != (uint32_t)hp->d_model)
        return mllm_err(MLLM_ERR_FORMAT, "%s: inconsistent Whisper dimensions (d %d, heads %d, layers %d+%d)", path,
                        hp->d_model, hp->n_head, hp->n_enc_layers, hp->n_dec_layers);
    hp->head_dim = hp->d_model / hp->n_head;
    /* CTranslate2's ActivationType: 3 is GELU (erf). Whisper never used other
       settings; refuse them rather than compute something else. */
    if (scalar(c, "decoder/activation", 3) != 3 || scalar(c, "decoder/pre_norm", 1) != 1 ||
        scalar(c, "decoder/scale_embeddings", 0) != 0 || scalar(c, "decoder/alibi", 0) != 0)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: activation / norm / embedding settings other than Whisper's", path);
    return MLLM_OK;
}

/* An int list of config.json, each id inside the vocabulary. */
static mllm_status id_list(const cJSON *j, const char *key, int n_vocab, const char *path, int32_t **out, int *n) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, key);
    *out = NULL;
    *n = 0;
    if (!a) return MLLM_OK;
    int len = cJSON_GetArraySize(a);
    if (!cJSON_IsArray(a) || len > MLLM_WHISPER_MAX_SUPPRESS)
        return mllm_err(MLLM_ERR_FORMAT, "%s: %s is not an array of at most %d ids", path, key,
                        MLLM_WHISPER_MAX_SUPPRESS);
    *out = mllm_calloc((size_t)len + 1, sizeof(int32_t));
    if (!*out) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    const cJSON *e;
    cJSON_ArrayForEach(e, a) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= n_vocab || e->valuedouble != (int)e->valuedouble)
            return mllm_err(MLLM_ERR_FORMAT, "%s: %s holds an entry that is not a token id below %d", path, key, n_vocab);
        (*out)[(*n)++] = (int32_t)e->valuedouble;
    }
    return MLLM_OK;
}

mllm_status mllm_whisper_config_parse(const char *json, size_t len, const char *label, int n_vocab, int32_t **sup,
                                      int *n_sup, int32_t **begin, int *n_begin) {
    *sup = *begin = NULL;
    *n_sup = *n_begin = 0;
    cJSON *j = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return mllm_err(MLLM_ERR_FORMAT, "%s: not a JSON object", label);
    }
    mllm_status st = id_list(j, "suppress_ids", n_vocab, label, sup, n_sup);
    if (st == MLLM_OK) st = id_list(j, "suppress_ids_begin", n_vocab, label, begin, n_begin);
    cJSON_Delete(j);
    if (st != MLLM_OK) {
        mllm_free(*sup);
        mllm_free(*begin);
        *sup = *begin = NULL;
        *n_sup = *n_begin = 0;
    }
    return st;
}

/* The id of a special token's text, or -1. */
static int32_t special(const mllm_tokenizer *t, const char *text) {
    int32_t ids[4];
    size_t n = 0;
    if (mllm_tokenizer_encode(t, text, strlen(text), false, true, ids, 4, &n) != MLLM_OK || n != 1) return -1;
    return mllm_tokenizer_token_type(t, ids[0]) == MLLM_TOKEN_CONTROL ? ids[0] : -1;
}

static mllm_status read_tokens(mllm_whisper *w, const char *path, const char *json, size_t json_len) {
    mllm_status st = json ? mllm_tokenizer_from_hf_memory(json, json_len, NULL, 0, path, &w->tok)
                          : mllm_tokenizer_from_hf(path, NULL, &w->tok);
    if (st != MLLM_OK) return st;
    mllm_whisper_special *s = &w->sp;
    s->eot = special(w->tok, "<|endoftext|>");
    s->sot = special(w->tok, "<|startoftranscript|>");
    s->sot_prev = special(w->tok, "<|startofprev|>");
    s->sot_lm = special(w->tok, "<|startoflm|>");
    s->transcribe = special(w->tok, "<|transcribe|>");
    s->translate = special(w->tok, "<|translate|>");
    s->no_timestamps = special(w->tok, "<|notimestamps|>");
    s->no_speech = special(w->tok, "<|nospeech|>");
    if (s->no_speech < 0) s->no_speech = special(w->tok, "<|nocaptions|>");
    s->lang_first = special(w->tok, "<|en|>");
    /* As openai-whisper decides it: multilingual vocabularies have 51865+. */
    s->multilingual = w->hp.n_vocab >= 51865;
    if (s->eot < 0 || s->sot < 0 || s->no_timestamps < 0 || s->transcribe < 0 || s->lang_first != s->sot + 1 ||
        s->no_timestamps + 1 >= w->hp.n_vocab)
        return mllm_err(MLLM_ERR_FORMAT, "%s: Whisper's special tokens are missing", path);
    s->timestamp_begin = s->no_timestamps + 1;
    /* Language tokens follow <|startoftranscript|> up to <|translate|>. */
    s->n_lang = s->multilingual && s->translate > s->lang_first ? s->translate - s->lang_first : 1;
    w->lang_codes = mllm_calloc((size_t)s->n_lang, sizeof *w->lang_codes);
    if (!w->lang_codes) return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory");
    for (int i = 0; i < s->n_lang; i++) {
        size_t len = 0;
        const char *txt = mllm_tokenizer_token_text(w->tok, s->lang_first + i, &len);
        if (txt && len > 4 && len < 4 + sizeof *w->lang_codes && !memcmp(txt, "<|", 2))
            memcpy(w->lang_codes[i], txt + 2, len - 4);
    }
    return MLLM_OK;
}

static mllm_status alloc_state(mllm_whisper *w) {
    const mllm_whisper_hparams *hp = &w->hp;
    const size_t per = (size_t)hp->n_audio_ctx * (size_t)hp->d_model;
    w->cross_k = mllm_malloc_aligned(per * (size_t)hp->n_dec_layers * sizeof(float));
    w->cross_vt = mllm_malloc_aligned(per * (size_t)hp->n_dec_layers * sizeof(float));
    w->enc = mllm_calloc((size_t)hp->n_enc_layers, sizeof *w->enc);
    w->dec = mllm_calloc((size_t)hp->n_dec_layers, sizeof *w->dec);
    if (!w->cross_k || !w->cross_vt || !w->enc || !w->dec)
        return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory for the encoder state");
    return MLLM_OK;
}

mllm_status wh_load(mllm_ct2 *c, const char *path, const char *config, size_t config_len, const wh_source *src,
                    const mllm_whisper_params *p, mllm_whisper **out) {
    *out = NULL;
    int wtype = src->stored ? src->stored_type : p ? p->weight_type : MLLM_DTYPE_F16;
    if (wtype != MLLM_DTYPE_F16 && wtype != MLLM_DTYPE_F32 && wtype != MLLM_DTYPE_Q8_0 && wtype != MLLM_DTYPE_Q4_0) {
        mllm_ct2_close(c);
        mllm_mllmfile_close(src->file);
        return mllm_err(MLLM_ERR_INVALID_ARG, "whisper: weights can be kept f16, f32, q8_0 or q4_0");
    }
    mllm_whisper *w = mllm_calloc(1, sizeof *w);
    if (!w) {
        mllm_ct2_close(c);
        mllm_mllmfile_close(src->file);
        return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory");
    }
    w->ct2 = c; /* owned from here: in-place weights point into its mapping */
    w->mf = src->file;
    mllm_status st = read_hparams(c, path, &w->hp);
    if (st == MLLM_OK) st = alloc_state(w);
    loader l = {.c = c, .path = path, .wtype = wtype, .stored = src->stored, .p = p};
    w->cross_f16 = wtype != MLLM_DTYPE_F32; /* f32 weights: the exact path, f32 throughout */
    if (st == MLLM_OK) {
        const int widest = w->hp.d_ff > w->hp.d_model * 3 ? w->hp.d_ff : w->hp.d_model * 3;
        l.row = mllm_malloc_aligned((size_t)widest * sizeof(float) + 64);
        l.raw = mllm_malloc_aligned((size_t)widest * sizeof(float) + 64);
        l.group = mllm_malloc_aligned(8 * (size_t)widest * sizeof(float) + 64);
        if (!l.row || !l.raw || !l.group) st = mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory");
    }
    if (st == MLLM_OK) {
        load_all(&l, w); /* sizing pass: every shape checked, nothing written */
        st = l.st;
    }
    if (st == MLLM_OK) {
        l.block = w->weights = mllm_malloc_aligned(l.used + 64);
        l.used = 0;
        if (!l.block) st = mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory for %zu bytes of weights", l.used);
    }
    if (st == MLLM_OK) {
        load_all(&l, w);
        st = l.st;
    }
    if (st == MLLM_OK && mllm_ct2_damaged(c)) st = mllm_err(MLLM_ERR_IO, "%s: the file shrank while read", path);
    mllm_free_aligned(l.row);
    mllm_free_aligned(l.raw);
    mllm_free_aligned(l.group);
    if (st == MLLM_OK)
        st = mllm_whisper_config_parse(config, config_len, path, w->hp.n_vocab, &w->suppress, &w->n_suppress,
                                       &w->suppress_begin, &w->n_suppress_begin);
    if (st == MLLM_OK) st = read_tokens(w, src->tokenizer_path, src->tokenizer_json, src->tokenizer_len);
    if (st == MLLM_OK && p && p->pool) {
        w->pool = p->pool;
    } else if (st == MLLM_OK) {
        w->pool = mllm_pool_new(p && p->n_threads > 0 ? p->n_threads : 1);
        w->own_pool = w->pool != NULL;
        if (!w->pool) st = mllm_err(MLLM_ERR_NOMEM, "whisper: cannot start the thread pool");
        /* Whisper's parallel jobs are few per decoder step (whisper_ops.c):
           idle workers sleep after ~0.1 ms instead of spinning ~5 ms, which
           on a busy machine took the core from the thread doing the work */
        else mllm_pool_set_spin(w->pool, 4000);
    }
    if (st == MLLM_OK) st = wh_graph_init(w, p);
    if (st != MLLM_OK) {
        mllm_whisper_free(w);
        return st;
    }
    *out = w;
    return MLLM_OK;
}

mllm_status mllm_whisper_load_ct2(mllm_ct2 *c, const char *path, const char *config, size_t config_len,
                                  const char *tokenizer, const mllm_whisper_params *p, mllm_whisper **out) {
    const wh_source src = {.tokenizer_path = tokenizer};
    return wh_load(c, path, config, config_len, &src, p, out);
}

mllm_status mllm_whisper_load(const char *dir, const mllm_whisper_params *p, mllm_whisper **out) {
    *out = NULL;
    const int wtype = p ? p->weight_type : MLLM_DTYPE_F16;
    if (wtype != MLLM_DTYPE_F16 && wtype != MLLM_DTYPE_F32 && wtype != MLLM_DTYPE_Q8_0 && wtype != MLLM_DTYPE_Q4_0) /* before any file */
        return mllm_err(MLLM_ERR_INVALID_ARG, "whisper: weights can be kept f16, f32, q8_0 or q4_0");
    char path[4096], cfg[4096], tok[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/model.bin", dir) >= sizeof path ||
        (size_t)snprintf(cfg, sizeof cfg, "%s/config.json", dir) >= sizeof cfg ||
        (size_t)snprintf(tok, sizeof tok, "%s/tokenizer.json", dir) >= sizeof tok)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: path too long", dir);
    mllm_ct2 *c = NULL;
    mllm_status st = mllm_ct2_open(path, &c);
    if (st != MLLM_OK) return st;
    void *base = NULL;
    size_t size = 0;
    st = mllm_file_map(cfg, 2, "too short for JSON", &base, &size);
    if (st == MLLM_OK && size > WH_MAX_CONFIG) st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: over %u bytes", cfg, WH_MAX_CONFIG);
    if (st == MLLM_OK) st = mllm_whisper_load_ct2(c, path, base, size, tok, p, out); /* takes c */
    else mllm_ct2_close(c);
    if (base) mllm_file_unmap(base, size);
    return st;
}

void mllm_whisper_free(mllm_whisper *w) {
    if (!w) return;
    wh_graph_free(w);
    if (w->own_pool) mllm_pool_free(w->pool);
    mllm_ct2_close(w->ct2);
    mllm_free(w->image); /* after the ct2 view of it */
    mllm_mllmfile_close(w->mf);
    mllm_tokenizer_free(w->tok);
    mllm_free(w->lang_codes);
    mllm_free(w->suppress);
    mllm_free(w->suppress_begin);
    mllm_free(w->enc);
    mllm_free(w->dec);
    mllm_free_aligned(w->weights);
    mllm_free_aligned(w->cross_k);
    mllm_free_aligned(w->cross_vt);
    mllm_free_aligned(w->self_k);
    mllm_free_aligned(w->self_vt);
    mllm_free(w);
}

const mllm_whisper_hparams *mllm_whisper_hp(const mllm_whisper *w) { return &w->hp; }
const mllm_whisper_special *mllm_whisper_tokens(const mllm_whisper *w) { return &w->sp; }
struct mllm_tokenizer *mllm_whisper_tokenizer(const mllm_whisper *w) { return w->tok; }

const int32_t *mllm_whisper_suppress(const mllm_whisper *w, bool begin, int *n) {
    *n = begin ? w->n_suppress_begin : w->n_suppress;
    return begin ? w->suppress_begin : w->suppress;
}

int32_t mllm_whisper_lang_token(const mllm_whisper *w, const char *code) {
    for (int i = 0; i < w->sp.n_lang; i++)
        if (!strcmp(w->lang_codes[i], code)) return w->sp.lang_first + i;
    return -1;
}
