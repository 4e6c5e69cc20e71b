/* mllm_model: open a file of any supported format, bind the decoder, build
   the tokenizer. */
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "api/internal.h"
#include "api/vision.h"
#include "backends/cpu.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/dtype.h"
#include "core/error.h"
#include "models/encoder.h"
#include "template/template.h"

MLLM_API double mllm_time_ms(void) { return mllm_clock_mono_ms(); }

MLLM_API const char *mllm_version(void) { return "0.1.0"; }
MLLM_API int mllm_abi_version(void) { return MLLM_ABI_VERSION; }

MLLM_API void mllm_load_default_params(mllm_load_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->n_threads = 0;
    p->use_mmap = 1;
    p->n_gpu_layers = -1;
}

static mllm_status load_tokenizer(mllm_model *m, const mllm_load_params *p) {
    mllm_model_file *f = m->file;
    if (p && p->tokenizer_path) return mllm_tokenizer_from_llama2c(p->tokenizer_path, &m->tok);
    switch (f->kind) {
    case MLLM_FILE_GGUF: return mllm_tokenizer_from_gguf(f->gguf, &m->tok);
    case MLLM_FILE_HF:
        if (!f->tokenizer_json)
            return mllm_err(MLLM_ERR_FORMAT, "%s: no tokenizer.json in the folder", f->path);
        return mllm_tokenizer_from_hf(f->tokenizer_json, f->tokenizer_config, &m->tok);
    case MLLM_FILE_LLAMA2C:
        return mllm_err(MLLM_ERR_INVALID_ARG,
                        "%s: a llama2.c checkpoint needs its tokenizer: pass --tokenizer tok.bin", f->path);
    }
    return mllm_err(MLLM_ERR_FORMAT, "%s: unknown file kind", f->path);
}

/* The weight types a model may be requantized to at load (mllm_load_params.requant). */
static int requant_type(const char *name) {
    static const int ok[] = {MLLM_DTYPE_Q4_0, MLLM_DTYPE_Q4_1, MLLM_DTYPE_Q5_0, MLLM_DTYPE_Q5_1,
                             MLLM_DTYPE_Q8_0, MLLM_DTYPE_Q4_K, MLLM_DTYPE_Q5_K, MLLM_DTYPE_Q6_K};
    const int t = mllm_dtype_from_name(name);
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (t == ok[i]) return t;
    return -1;
}

/* The decoder's load inputs. The environment is read here, not in the
   model: MLLM_BACKENDS when the caller names no backend, MLLM_REPACK=0
   (never) / =1 (always) for the x8 weight layouts (unset: where this CPU
   has kernels for them), MLLM_PACK_THREADS=N to cap the packing threads
   (1: all on the calling thread, as the qemu instruction counts of bench/
   need: their counter is exact for one thread only). */
static mllm_decoder_params decoder_params(const mllm_load_params *p, int requant) {
    mllm_decoder_params dp = {.n_offload = p ? p->n_gpu_layers : -1, .requant = requant, .repack = -1};
    if (p && p->backend) {
        dp.backends = p->backend;
        dp.backends_from = "backend";
    } else {
        dp.backends = getenv("MLLM_BACKENDS");
        dp.backends_from = "MLLM_BACKENDS";
    }
    const char *e = getenv("MLLM_REPACK");
    if (e && strcmp(e, "0") == 0) dp.repack = 0;
    if (e && strcmp(e, "1") == 0) dp.repack = 1;
    const char *pt = getenv("MLLM_PACK_THREADS");
    const long n = pt ? atol(pt) : 0;
    dp.pack_threads = n > 0 && n < 1024 ? (int)n : 0;
    return dp;
}

MLLM_API mllm_status mllm_model_load(const char *path, const mllm_load_params *p, mllm_model **out) {
    if (!path || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_model_load: NULL argument");
    *out = NULL;
    /* Callers built against the ABI-1 header pass the struct without
       chat_template: accept it, zero-extended. */
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    if (p) {
        size_t v1 = offsetof(mllm_load_params, chat_template), v3 = offsetof(mllm_load_params, exact),
               v4 = offsetof(mllm_load_params, mmproj), v5 = offsetof(mllm_load_params, backend),
               v6 = offsetof(mllm_load_params, requant), v7 = offsetof(mllm_load_params, weights);
        if (p->struct_size != sizeof *p && p->struct_size != v1 && p->struct_size != v3 && p->struct_size != v4 &&
            p->struct_size != v5 && p->struct_size != v6 && p->struct_size != v7)
            return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_model_load: params struct_size %u, expected %zu",
                            p->struct_size, sizeof *p);
        memcpy(&lp, p, p->struct_size);
        lp.struct_size = sizeof lp;
        p = &lp;
    }
    mllm_cpu_init();
    double t0 = mllm_clock_mono_ms();
    mllm_model *m = mllm_calloc(1, sizeof *m);
    if (!m) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    m->n_threads = p && p->n_threads > 0 ? p->n_threads : mllm_cpu_count();
    if (!(m->pool = mllm_pool_new(m->n_threads))) { /* first: every part of the model runs on it */
        mllm_free(m);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory for a thread pool");
    }
    const mllm_arch *speech = mllm_arch_probe_speech(path);
    if (speech) { /* speech to text: api/transcribe.c */
        mllm_status st = mllm_model_load_speech(m, speech, path, p);
        if (st != MLLM_OK) {
            mllm_model_free(m);
            return st;
        }
        m->load_ms = mllm_clock_mono_ms() - t0;
        *out = m;
        return MLLM_OK;
    }
    const int requant = p && p->requant ? requant_type(p->requant) : -1;
    if (p && p->requant && requant < 0) {
        mllm_model_free(m);
        return mllm_err(MLLM_ERR_INVALID_ARG,
                        "requant '%s': expected q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q5_k or q6_k", p->requant);
    }
    mllm_hparams hp;
    mllm_status st = mllm_family_open(path, &m->file, &hp);
    if (st == MLLM_OK) m->row = hp.row;
    if (st == MLLM_OK && hp.row->kind == MLLM_KIND_ENCODER) {
        m->dec.cfg = hp;
        st = hp.row->encoder->bind(m->file, &hp, &m->enc);
    } else if (st == MLLM_OK) {
        const mllm_decoder_params dp = decoder_params(p, requant);
        st = mllm_decoder_bind(&m->dec, m->file, &hp, &dp);
    }
    if (st == MLLM_OK && m->file->kind == MLLM_FILE_HF) st = mllm_st_config_load(m->file->path, &m->st);
    if (st == MLLM_OK) st = load_tokenizer(m, p);
    if (st == MLLM_OK && mllm_tokenizer_n_vocab(m->tok) > m->dec.cfg.n_vocab)
        st = mllm_err(MLLM_ERR_FORMAT, "%s: tokenizer has %d tokens but the model only %d", path,
                      mllm_tokenizer_n_vocab(m->tok), m->dec.cfg.n_vocab);
    if (st == MLLM_OK) st = mllm_model_file_check_intact(m->file); /* shrank while we read it? */
    if (st != MLLM_OK) {
        mllm_model_free(m);
        return st;
    }
    if (p && p->chat_template) {
        mllm_model_init_template(m, p->chat_template);
        if (!m->tmpl) {
            st = mllm_err(MLLM_ERR_INVALID_ARG, "%s", m->tmpl_error ? m->tmpl_error : "bad chat template");
            mllm_model_free(m);
            return st;
        }
    } else {
        mllm_model_init_template(m, NULL);
    }
    m->exact = p && p->exact;
    if (p && p->mmproj && !(m->mmproj = mllm_strndup(p->mmproj, strlen(p->mmproj)))) {
        mllm_model_free(m);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    m->load_ms = mllm_clock_mono_ms() - t0;
    *out = m;
    return MLLM_OK;
}

#define MLLM_DEFAULT_CTX 4096 /* a session's and the engine's, unless asked */

int mllm_model_default_ctx(const mllm_model *m) {
    const mllm_hparams *c = &m->dec.cfg;
    return c->n_ctx_train > 0 && c->n_ctx_train < MLLM_DEFAULT_CTX ? c->n_ctx_train : MLLM_DEFAULT_CTX;
}

MLLM_API void mllm_model_free(mllm_model *m) {
    if (!m) return;
    mllm_template_free(m->tmpl);
    mllm_free(m->tmpl_error);
    mllm_vocab_trie_free(atomic_load(&m->trie));
    mllm_model_free_vision(m);
    mllm_free(m->mmproj);
    mllm_model_free_speech(m); /* before the tokenizer: a speech model only lends it */
    mllm_tokenizer_free(m->tok);
    mllm_decoder_release(&m->dec);
    if (m->enc) m->row->encoder->release(m->enc);
    mllm_model_file_close(m->file);
    mllm_pool_free(m->pool); /* last: everything above may have run on it */
    mllm_free(m);
}

MLLM_API int32_t mllm_model_n_vocab(const mllm_model *m) { return m ? m->dec.cfg.n_vocab : 0; }
MLLM_API int32_t mllm_model_n_ctx_train(const mllm_model *m) { return m ? m->dec.cfg.n_ctx_train : 0; }
MLLM_API int32_t mllm_model_bos(const mllm_model *m) { return m ? mllm_tokenizer_bos(m->tok) : -1; }
MLLM_API int32_t mllm_model_eos(const mllm_model *m) { return m ? mllm_tokenizer_eos(m->tok) : -1; }

MLLM_API mllm_status mllm_model_info_json(const mllm_model *m, char *buf, size_t cap, size_t *needed) {
    if (!m) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_model_info_json: NULL model");
    const mllm_hparams *c = &m->dec.cfg;
    int n_sliding = 0, n_no_rope = 0;
    for (int l = 0; l < c->n_layer; l++) {
        const mllm_layer_spec sp = mllm_hparams_layer(c, l);
        n_sliding += sp.sliding;
        n_no_rope += !sp.rope;
    }
    char tmp[2048];
    int n = snprintf(tmp, sizeof tmp,
                     "{\"arch\":\"%s\",\"family\":\"%s\",\"n_vocab\":%d,\"n_embd\":%d,\"n_layer\":%d,\"n_head\":%d,"
                     "\"n_head_kv\":%d,\"head_dim\":%d,\"n_ff\":%d,\"n_ctx_train\":%d,\"n_rot\":%d,"
                     "\"rope_theta\":%g,\"rope_theta_swa\":%g,\"rope_neox\":%s,\"rope_scaling\":%d,\"rms_eps\":%g,"
                     "\"attn_scale\":%g,\"embd_scale\":%g,\"final_softcap\":%g,\"ffn\":\"%s\",\"post_norms\":%s,"
                     "\"sliding_window\":%d,\"n_sliding_layers\":%d,\"n_no_rope_layers\":%d,"
                     "\"qkv_bias\":%s,\"qk_norm\":%s,\"tied_embd\":%s,\"n_params\":%zu,"
                     "\"tokenizer\":\"%s\"}",
                     c->arch, c->row ? c->row->family : "?", c->n_vocab, c->n_embd, c->n_layer, c->n_head,
                     c->n_head_kv, c->head_dim, c->n_ff, c->n_ctx_train, c->n_rot, c->rope_theta, c->rope_theta_swa,
                     c->rope_neox ? "true" : "false", (int)c->rope_scaling, c->rms_eps, c->attn_scale, c->embd_scale,
                     c->final_softcap, c->act == MLLM_ACT_GELU_TANH ? "geglu" : c->act == MLLM_ACT_GELU_ERF ? "gelu" : "swiglu",
                     c->post_norms ? "true" : "false", c->swa_window, n_sliding, n_no_rope,
                     c->qkv_bias ? "true" : "false", c->qk_norm ? "true" : "false", c->tied_embd ? "true" : "false",
                     m->enc ? m->row->encoder->n_params(m->enc) : m->dec.n_params, mllm_tokenizer_kind(m->tok));
    size_t need = (size_t)n + 1;
    if (needed) *needed = need;
    if (!buf || cap < need) return mllm_err(MLLM_ERR_BUFFER_TOO_SMALL, "need %zu bytes", need);
    memcpy(buf, tmp, need);
    return MLLM_OK;
}
