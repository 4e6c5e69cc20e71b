/* Metadata of a quantized file: every key of a GGUF source copied with its
   type (tokenizer, chat template, ...), or, for other sources, the standard
   architecture keys from the parsed config. general.file_type and
   general.quantization_version are (re)written by the caller. */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "models/registry.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "formats/model_file.h"
#include "quantize/quantize_internal.h"

static mllm_status copy_kv(const mllm_gguf *g, uint64_t i, const char *key, mllm_gguf_writer *w) {
    const mllm_gguf_type t = mllm_gguf_kv_type(g, i);
    int64_t v = 0;
    float f = 0;
    bool b = false;
    mllm_gguf_str s;
    switch (t) {
    case MLLM_GGUF_STRING:
        if (!mllm_gguf_get_str(g, key, &s)) break;
        return mllm_gguf_writer_add_strn(w, key, s.ptr, (size_t)s.len);
    case MLLM_GGUF_BOOL:
        if (!mllm_gguf_get_bool(g, key, &b)) break;
        return mllm_gguf_writer_add_bool(w, key, b);
    case MLLM_GGUF_FLOAT32:
        if (!mllm_gguf_get_f32(g, key, &f)) break;
        return mllm_gguf_writer_add_f32(w, key, f);
    case MLLM_GGUF_ARRAY: {
        mllm_gguf_type elem;
        uint64_t n = 0;
        const void *data = NULL;
        if (!mllm_gguf_get_arr(g, key, &elem, &n, &data)) break;
        if (elem != MLLM_GGUF_STRING) return mllm_gguf_writer_add_arr(w, key, elem, data, n);
        const char **strs = mllm_calloc(n ? n : 1, sizeof *strs);
        size_t *lens = mllm_calloc(n ? n : 1, sizeof *lens);
        if (!strs || !lens) {
            mllm_free(strs), mllm_free(lens);
            return mllm_err(MLLM_ERR_NOMEM, "quantize: out of memory copying '%s'", key);
        }
        for (uint64_t k = 0; k < n; k++) {
            if (!mllm_gguf_get_arr_str(g, key, k, &s)) {
                mllm_free(strs), mllm_free(lens);
                return mllm_err(MLLM_ERR_FORMAT, "%s: key '%s': element %llu unreadable", mllm_gguf_path(g), key,
                                (unsigned long long)k);
            }
            strs[k] = s.ptr, lens[k] = (size_t)s.len;
        }
        const mllm_status st = mllm_gguf_writer_add_arr_str(w, key, strs, lens, n);
        mllm_free(strs), mllm_free(lens);
        return st;
    }
    case MLLM_GGUF_UINT64: case MLLM_GGUF_INT64: case MLLM_GGUF_UINT32: case MLLM_GGUF_INT32:
    case MLLM_GGUF_UINT16: case MLLM_GGUF_INT16: case MLLM_GGUF_UINT8: case MLLM_GGUF_INT8:
        if (!mllm_gguf_get_i64(g, key, &v)) break;
        switch (t) {
        case MLLM_GGUF_UINT64: return mllm_gguf_writer_add_u64(w, key, (uint64_t)v);
        case MLLM_GGUF_INT64: return mllm_gguf_writer_add_i64(w, key, v);
        case MLLM_GGUF_UINT32: return mllm_gguf_writer_add_u32(w, key, (uint32_t)v);
        case MLLM_GGUF_INT32: return mllm_gguf_writer_add_i32(w, key, (int32_t)v);
        case MLLM_GGUF_UINT16: return mllm_gguf_writer_add_u16(w, key, (uint16_t)v);
        case MLLM_GGUF_INT16: return mllm_gguf_writer_add_i16(w, key, (int16_t)v);
        case MLLM_GGUF_UINT8: return mllm_gguf_writer_add_u8(w, key, (uint8_t)v);
        default: return mllm_gguf_writer_add_i8(w, key, (int8_t)v);
        }
    case MLLM_GGUF_FLOAT64: {
        double d = 0;
        /* No scalar f64 getter: GGUF f64 keys are rare; keep the f32 value. */
        if (!mllm_gguf_get_f32(g, key, &f)) break;
        d = f;
        return mllm_gguf_writer_add_f64(w, key, d);
    }
    }
    return mllm_err(MLLM_ERR_FORMAT, "%s: key '%s' (type %d) cannot be read back for copying", mllm_gguf_path(g),
                    key, (int)t);
}

mllm_status quant_meta_copy_gguf(const mllm_gguf *g, mllm_gguf_writer *w, const char *skip_prefix) {
    const uint64_t n = mllm_gguf_n_kv(g);
    for (uint64_t i = 0; i < n; i++) {
        const mllm_gguf_str k = mllm_gguf_kv_key(g, i);
        char key[256];
        if (k.len >= sizeof key)
            return mllm_err(MLLM_ERR_FORMAT, "%s: key %llu is %llu bytes long (max %zu)", mllm_gguf_path(g),
                            (unsigned long long)i, (unsigned long long)k.len, sizeof key - 1);
        memcpy(key, k.ptr, (size_t)k.len);
        key[k.len] = 0;
        if (!strcmp(key, "general.file_type") || !strcmp(key, "general.quantization_version") ||
            !strcmp(key, "general.alignment") || (skip_prefix && !strncmp(key, skip_prefix, strlen(skip_prefix))))
            continue;
        const mllm_status st = copy_kv(g, i, key, w);
        if (st) return st;
    }
    return MLLM_OK;
}

/* The model's keys (general.architecture and <arch>.*), as llama.cpp's
   loader reads them, from the generic metadata. */
mllm_status quant_meta_from_config(const mllm_model_file *f, const mllm_hparams *hp, mllm_gguf_writer *w) {
    mllm_meta m = {0};
    mllm_status st = mllm_family_model_meta(f, hp, &m);
    if (!st) st = mllm_family_write_gguf_keys(&m, w);
    mllm_meta_free(&m);
    return st;
}
