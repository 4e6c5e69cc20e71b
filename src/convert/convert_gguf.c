/* --to gguf: the standard llama.cpp keys (general.architecture and the
   `<arch>.*` hyper-parameters, from the config), the source's tokenizer.*
   keys, and the tensors under their GGUF names, through gguf_writer. */
#include "convert/convert_internal.h"
#include "formats/gguf.h"
#include "core/dtype.h"
#include "core/error.h"
#include <stdio.h>
#include <string.h>

static mllm_status arch_keys(const mllm_model_file *f, mllm_gguf_writer *w) {
    const mllm_llama_config *c = &f->cfg;
    char k[128];
    mllm_status st = mllm_gguf_writer_add_str(w, "general.architecture", c->arch);
#define U32(suffix, v)                                                         \
    if (!st) {                                                                 \
        snprintf(k, sizeof k, "%s." suffix, c->arch);                          \
        st = mllm_gguf_writer_add_u32(w, k, (uint32_t)(v));                    \
    }
#define F32(suffix, v)                                                         \
    if (!st) {                                                                 \
        snprintf(k, sizeof k, "%s." suffix, c->arch);                          \
        st = mllm_gguf_writer_add_f32(w, k, (v));                              \
    }
    U32("context_length", c->n_ctx_train);
    U32("embedding_length", c->n_embd);
    U32("block_count", c->n_layer);
    U32("feed_forward_length", c->n_ff);
    U32("attention.head_count", c->n_head);
    U32("attention.head_count_kv", c->n_head_kv);
    U32("attention.key_length", c->head_dim);
    U32("attention.value_length", c->head_dim);
    U32("rope.dimension_count", c->n_rot);
    U32("vocab_size", c->n_vocab);
    F32("rope.freq_base", c->rope_theta);
    F32("attention.layer_norm_rms_epsilon", c->rms_eps);
    if (c->rope_scaling == MLLM_ROPE_SCALING_LINEAR) {
        if (!st) {
            snprintf(k, sizeof k, "%s.rope.scaling.type", c->arch);
            st = mllm_gguf_writer_add_str(w, k, "linear");
        }
        F32("rope.scaling.factor", c->rope_factor);
    }
#undef U32
#undef F32
    return st;
}

/* What GGUF cannot say about this model, refused rather than written wrong. */
static mllm_status check_exportable(const mllm_model_file *f, const char *out) {
    const mllm_llama_config *c = &f->cfg;
    bool llama = !strcmp(c->arch, "llama");
    if (llama == c->rope_neox) {
        return mllm_err(MLLM_ERR_UNSUPPORTED,
                        "%s: GGUF '%s' expects %s RoPE but these weights use the other layout (HF Llama q/k "
                        "weights would need permuting); not supported yet", out, c->arch,
                        llama ? "interleaved" : "neox");
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

mllm_status cv_write_gguf(const mllm_model_file *f, cv_tensor *t, size_t n, const char *out) {
    mllm_status st = check_exportable(f, out);
    if (st) return st;
    mllm_gguf_writer *w = NULL;
    if ((st = mllm_gguf_writer_new(&w))) return st;
    st = arch_keys(f, w);
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
