/* --to gguf: the standard llama.cpp keys (general.architecture and the
   `<arch>.*` hyper-parameters, from the config), the source's tokenizer.*
   keys, and the tensors under their GGUF names, through gguf_writer. */
#include "convert/convert_internal.h"
#include "models/registry.h"
#include "formats/gguf.h"
#include "core/dtype.h"
#include "core/error.h"
#include <stdio.h>
#include <string.h>

static mllm_status arch_keys(const mllm_model_file *f, const mllm_hparams *hp, mllm_gguf_writer *w) {
    mllm_meta m = {0};
    mllm_status st = mllm_family_model_meta(f, hp, &m);
    if (!st) st = mllm_family_write_gguf_keys(&m, w);
    mllm_meta_free(&m);
    return st;
}

/* What GGUF cannot say about this model, refused rather than written wrong. */
static mllm_status check_exportable(const mllm_model_file *f, const mllm_hparams *c, const char *out) {
    if (c->rope_neox != c->row->rope_neox) {
        return mllm_err(MLLM_ERR_UNSUPPORTED,
                        "%s: GGUF '%s' expects %s RoPE but these weights use the other layout (HF Llama q/k "
                        "weights would need permuting); not supported yet", out, c->arch,
                        c->row->rope_neox ? "neox" : "interleaved");
    }
    if (c->rope_scaling == MLLM_ROPE_SCALING_LLAMA3 && !mllm_model_file_find(f, "rope_freqs.weight")) {
        return mllm_err(MLLM_ERR_UNSUPPORTED,
                        "%s: llama3 RoPE scaling needs a rope_freqs.weight tensor in GGUF; not supported yet", out);
    }
    if (f->kind != MLLM_FILE_GGUF || !f->gguf) {
        return mllm_err(MLLM_ERR_UNSUPPORTED,
                        "%s: GGUF export needs a GGUF tokenizer (tokenizer.* keys); this source's tokenizer is %s",
                        out, f->kind == MLLM_FILE_HF ? "tokenizer.json (HF to GGUF vocab conversion not supported yet)"
                                                     : "absent");
    }
    return MLLM_OK;
}

mllm_status cv_write_gguf(const mllm_model_file *f, const mllm_hparams *hp, cv_tensor *t, size_t n,
                          const char *out) {
    mllm_status st = check_exportable(f, hp, out);
    if (st) return st;
    mllm_gguf_writer *w = NULL;
    if ((st = mllm_gguf_writer_new(&w))) return st;
    st = arch_keys(f, hp, w);
    if (!st) st = cv_copy_kvs(f->gguf, w, "tokenizer.");
    for (size_t i = 0; i < n && !st; i++) {
        if (!mllm_dtype_in_gguf(t[i].dtype)) { /* our kernel layouts: no GGUF reader knows them */
            st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: tensor '%s': dtype %s cannot be stored in GGUF", out,
                          t[i].w->name, mllm_dtype_name(t[i].dtype));
            break;
        }
        st = mllm_gguf_writer_add_tensor_fn(w, t[i].w->name, t[i].dtype, t[i].w->n_dims, t[i].w->ne, cv_fill, &t[i]);
    }
    if (!st) st = mllm_gguf_writer_write(w, out);
    mllm_gguf_writer_free(w);
    return st;
}
