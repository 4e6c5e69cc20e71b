/* A model's metadata as it is written out again (convert, quantize). */
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "models/registry.h"

mllm_status mllm_family_model_meta(const mllm_model_file *f, const mllm_hparams *hp, mllm_meta *out) {
    char prefix[48];
    snprintf(prefix, sizeof prefix, "%s.", hp->arch);
    mllm_status st = mllm_meta_set_str(out, "general.architecture", hp->arch, strlen(hp->arch));
    if (!st) st = mllm_meta_copy(out, &f->meta, prefix, prefix);
    if (!st) st = mllm_meta_copy(out, &f->meta, "mllm.", "mllm.");
    /* A vocabulary size the tokenizer arrays would have said. */
    char key[64];
    snprintf(key, sizeof key, "%svocab_size", prefix);
    if (!st && !mllm_meta_find(out, key)) st = mllm_meta_set_int(out, key, hp->n_vocab);
    return st;
}

mllm_status mllm_family_write_gguf_keys(const mllm_meta *m, struct mllm_gguf_writer *w) {
    mllm_status st = MLLM_OK;
    for (size_t i = 0; i < m->n && !st; i++) {
        const mllm_meta_entry *e = &m->e[i];
        if (!strncmp(e->key, "mllm.", 5)) continue;
        switch (e->type) {
        case MLLM_META_INT:
            st = e->i >= 0 && e->i <= UINT32_MAX ? mllm_gguf_writer_add_u32(w, e->key, (uint32_t)e->i)
                                                 : mllm_gguf_writer_add_i64(w, e->key, e->i);
            break;
        case MLLM_META_FLOAT: st = mllm_gguf_writer_add_f32(w, e->key, (float)e->f); break;
        case MLLM_META_BOOL: st = mllm_gguf_writer_add_bool(w, e->key, e->i != 0); break;
        case MLLM_META_STR: st = mllm_gguf_writer_add_strn(w, e->key, e->s, e->len); break;
        case MLLM_META_ARR_STR:
            st = mllm_gguf_writer_add_arr_str(w, e->key, (const char *const *)e->str, NULL, e->len);
            break;
        case MLLM_META_ARR_NUM: {
            float *v = mllm_malloc((e->len ? e->len : 1) * sizeof *v);
            if (!v) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
            for (size_t k = 0; k < e->len; k++) v[k] = (float)e->num[k];
            st = mllm_gguf_writer_add_arr(w, e->key, MLLM_GGUF_FLOAT32, v, e->len);
            mllm_free(v);
            break;
        }
        default: break;
        }
    }
    return st;
}
