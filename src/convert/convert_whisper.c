/* mllm convert of a Whisper folder (CTranslate2 or Hugging Face) to .mllm:
   the model is loaded as `mllm transcribe --weights T` loads it (f16 as
   stored, f32 widened, q8_0 / q4_0 quantized and packed into the x8
   kernel layouts; conv1 stays f16), and every weight the loader reports
   is written as it is, so loading the file back maps the exact bytes the
   folder's load computed: same weights, same transcripts, no conversion
   at load. Layout: models/whisper/whisper_load_mllm.c. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include "convert/convert_internal.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/file_map.h"
#include "models/whisper/whisper_open.h"

#define CW_MAX_WEIGHTS 4096

typedef struct {
    char *name;
    int dtype, rank;
    int64_t ne[4];
    const void *data;
    size_t bytes;
} cw_weight;

typedef struct {
    cw_weight *w;
    size_t n;
    int32_t heads;
    bool overflow, oom;
} cw_list;

static void on_weight(void *user, const char *name, int dtype, int rank, const uint32_t *dims, const void *data,
                      size_t bytes) {
    cw_list *l = user;
    if (l->n >= CW_MAX_WEIGHTS || rank < 1 || rank > 4) {
        l->overflow = true;
        return;
    }
    cw_weight *w = &l->w[l->n];
    if (!(w->name = mllm_strndup(name, strlen(name)))) {
        l->oom = true;
        return;
    }
    w->dtype = dtype;
    w->rank = rank;
    for (int d = 0; d < 4; d++) w->ne[d] = d < rank ? dims[rank - 1 - d] : 1; /* innermost first */
    w->data = data;
    w->bytes = bytes;
    l->n++;
}

static mllm_status fill(void *user, void *buf, size_t offset, size_t n) {
    memcpy(buf, (const char *)((const cw_weight *)user)->data + offset, n);
    return MLLM_OK;
}

static mllm_status fill_heads(void *user, void *buf, size_t offset, size_t n) {
    memcpy(buf, (const char *)user + offset, n);
    return MLLM_OK;
}

/* {"arch": "whisper", "whisper_weights": T, "suppress_ids": [...], "suppress_ids_begin": [...]} */
static char *config_json(const mllm_whisper *m, int type) {
    cJSON *j = cJSON_CreateObject();
    bool ok = j && cJSON_AddStringToObject(j, "arch", "whisper") &&
              cJSON_AddStringToObject(j, "whisper_weights", mllm_dtype_name(type));
    static const char *const keys[2] = {"suppress_ids", "suppress_ids_begin"};
    for (int b = 0; b < 2 && ok; b++) {
        int n = 0;
        const int32_t *ids = mllm_whisper_suppress(m, b == 1, &n);
        cJSON *a = cJSON_AddArrayToObject(j, keys[b]);
        ok = a != NULL;
        for (int i = 0; i < n && ok; i++) ok = cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
    }
    char *s = ok ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    return s;
}

/* The folder's tokenizer.json as an MLLM_TOK_HF_JSON section. */
static mllm_status tokenizer_section(const char *dir, void **data, size_t *len) {
    char path[4200];
    if ((size_t)snprintf(path, sizeof path, "%s/tokenizer.json", dir) >= sizeof path)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: path too long", dir);
    void *base = NULL;
    size_t size = 0;
    mllm_status st = mllm_file_map(path, 2, "too short for JSON", &base, &size);
    if (st) return st;
    uint8_t *blob = mllm_malloc(16 + size);
    if (!blob) st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
    else {
        const uint64_t a = size, b = 0;
        memcpy(blob, &a, 8);
        memcpy(blob + 8, &b, 8);
        memcpy(blob + 16, base, size);
        *data = blob;
        *len = 16 + size;
    }
    mllm_file_unmap(base, size);
    return st;
}

static mllm_status write_file(const mllm_convert_params *p, const mllm_whisper *m, int type, cw_list *l) {
    mllm_mllmfile_writer *w = NULL;
    mllm_status st = mllm_mllmfile_writer_new(&w);
    if (st) return st;
    char *cfg = config_json(m, type);
    void *tok = NULL;
    size_t tok_len = 0;
    st = cfg ? mllm_mllmfile_writer_set_config(w, cfg, strlen(cfg)) : mllm_err(MLLM_ERR_NOMEM, "out of memory");
    if (!st) st = tokenizer_section(p->in, &tok, &tok_len);
    if (!st) st = mllm_mllmfile_writer_set_tokenizer(w, MLLM_TOK_HF_JSON, tok, tok_len);
    for (size_t i = 0; i < l->n && !st; i++) {
        cw_weight *t = &l->w[i];
        st = mllm_mllmfile_writer_add_tensor(w, t->name, t->dtype, t->rank, t->ne, fill, t);
        if (!st && p->progress) {
            char line[512];
            snprintf(line, sizeof line, "[%3zu/%zu] %-44s %-7s %zu bytes", i + 1, l->n, t->name,
                     mllm_dtype_name(t->dtype), t->bytes);
            p->progress(p->user, line);
        }
    }
    /* the head count: CTranslate2 keeps it as scalars, read back as such */
    static const char *const heads[2] = {"encoder/num_heads", "decoder/num_heads"};
    const int64_t one[1] = {1};
    for (int i = 0; i < 2 && !st; i++)
        st = mllm_mllmfile_writer_add_tensor(w, heads[i], MLLM_DTYPE_I32, 1, one, fill_heads, &l->heads);
    if (!st) st = mllm_mllmfile_writer_write(w, p->out);
    mllm_free(cfg);
    mllm_free(tok);
    mllm_mllmfile_writer_free(w);
    return st;
}

mllm_status cv_convert_whisper(const mllm_convert_params *p) {
    if (p->to_gguf)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: a Whisper model converts to .mllm only (GGUF has no Whisper layout "
                                              "mllm reads)", p->in);
    if (p->pipeline_path)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: Whisper takes --quant f16|f32|q8_0|q4_0, not --pipeline", p->in);
    if (p->pack != MLLM_CONVERT_PACK_X8)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: Whisper's q8_0 / q4_0 matrices are always stored in the x8 kernel "
                                              "layouts (--pack none is for decoder models)", p->in);
    if (mllm_whisper_probe(p->in) == MLLM_WHISPER_MLLM)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: already a converted Whisper; convert its source folder again", p->in);
    const int type = p->quant ? mllm_dtype_from_name(p->quant) : MLLM_DTYPE_F16;
    if (type != MLLM_DTYPE_F16 && type != MLLM_DTYPE_F32 && type != MLLM_DTYPE_Q8_0 && type != MLLM_DTYPE_Q4_0)
        return mllm_err(MLLM_ERR_INVALID_ARG, "--quant %s: Whisper's weights can be f16, f32, q8_0 or q4_0", p->quant);
    cw_list l = {.w = mllm_calloc(CW_MAX_WEIGHTS, sizeof(cw_weight))};
    if (!l.w) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    const mllm_whisper_params wp = {.n_threads = 1, .weight_type = type, .on_weight = on_weight, .user = &l};
    mllm_whisper *m = NULL;
    mllm_status st = mllm_whisper_open(p->in, &wp, &m);
    if (!st && (l.overflow || l.oom))
        st = l.oom ? mllm_err(MLLM_ERR_NOMEM, "out of memory")
                   : mllm_err(MLLM_ERR_UNSUPPORTED, "%s: more than %d weights", p->in, CW_MAX_WEIGHTS);
    if (!st) {
        l.heads = mllm_whisper_hp(m)->n_head;
        st = write_file(p, m, type, &l);
    }
    if (!st && p->progress) {
        char line[256];
        snprintf(line, sizeof line, "whisper: %zu weights, matrices %s%s", l.n, mllm_dtype_name(type),
                 type == MLLM_DTYPE_Q8_0 || type == MLLM_DTYPE_Q4_0 ? " (x8 kernel layouts; conv1 f16)" : "");
        p->progress(p->user, line);
    }
    mllm_whisper_free(m);
    for (size_t i = 0; i < l.n; i++) mllm_free(l.w[i].name);
    mllm_free(l.w);
    return st;
}
