/* llama2.c checkpoint -> mllm_model_file. Layout after the 28-byte header,
   all fp32, matrices row-major (out, in):
     token_embedding (V, E), rms_att (L, E), wq (L, E, E), wk (L, KV, E),
     wv (L, KV, E), wo (L, E, E), rms_ffn (L, E), w1 (L, F, E), w2 (L, E, F),
     w3 (L, F, E), rms_final (E), freq_cis_real (seq, hd/2),
     freq_cis_imag (seq, hd/2), then wcls (V, E) if vocab_size < 0.
   Row-major (out, in) is GGUF's ne = {in, out}, so every weight is a view. */
#include "formats/llama2c.h"
#include "formats/model_file_internal.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/file_map.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define L2C_MAX_DIM (1 << 20)

typedef struct {
    uint64_t E, F, L, H, KV, V, seq, hd; /* KV = n_kv_heads * head_dim */
} dims;

static bool add_ok(uint64_t *acc, uint64_t a, uint64_t b) {
    if (a != 0 && b > UINT64_MAX / a) return false;
    if (*acc > UINT64_MAX - a * b) return false;
    *acc += a * b;
    return true;
}

static mllm_status get_dims(const mllm_llama2c_header *h, const char *label, dims *d) {
    const int32_t v[] = {h->dim, h->hidden_dim, h->n_layers, h->n_heads, h->n_kv_heads, h->seq_len};
    static const char *names[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "seq_len"};
    for (int i = 0; i < 6; i++) {
        if (v[i] <= 0 || v[i] > L2C_MAX_DIM) {
            return mllm_err(MLLM_ERR_FORMAT, "%s: not a GGUF file, HF folder or llama2.c checkpoint (llama2.c header field %s = %d is out of range)", label, names[i], v[i]);
        }
    }
    if (h->vocab_size == 0 || h->vocab_size == INT32_MIN || (h->vocab_size > 0 ? h->vocab_size : -h->vocab_size) > (1 << 24)) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: llama2.c header vocab_size = %d is out of range", label, h->vocab_size);
    }
    if (h->dim % h->n_heads != 0 || h->n_heads % h->n_kv_heads != 0 || (h->dim / h->n_heads) % 2 != 0) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: llama2.c header: dim %d, n_heads %d, n_kv_heads %d do not divide evenly",
                        label, h->dim, h->n_heads, h->n_kv_heads);
    }
    d->E = (uint64_t)h->dim;
    d->F = (uint64_t)h->hidden_dim;
    d->L = (uint64_t)h->n_layers;
    d->H = (uint64_t)h->n_heads;
    d->hd = d->E / d->H;
    d->KV = (uint64_t)h->n_kv_heads * d->hd;
    d->V = (uint64_t)(h->vocab_size > 0 ? h->vocab_size : -h->vocab_size);
    d->seq = (uint64_t)h->seq_len;
    return MLLM_OK;
}

/* Number of floats before the optional classifier; false on overflow. */
static bool count_floats(const dims *d, uint64_t *n) {
    uint64_t LE = d->L * d->E; /* both <= 2^20 */
    *n = 0;
    return add_ok(n, d->V, d->E) && add_ok(n, LE, 1) && add_ok(n, LE, d->E) && add_ok(n, LE, 2 * d->KV) &&
           add_ok(n, LE, d->E) && add_ok(n, LE, 1) && add_ok(n, LE, 3 * d->F) && add_ok(n, d->E, 1) &&
           add_ok(n, d->seq, d->hd); /* real + imag, hd/2 each */
}

mllm_status mllm_llama2c_check(const mllm_llama2c_header *h, uint64_t file_size, const char *label, bool *shared) {
    dims d = {0};
    mllm_status st = get_dims(h, label, &d);
    if (st) return st;
    uint64_t n;
    if (!count_floats(&d, &n) || n > (UINT64_MAX - MLLM_LLAMA2C_HEADER_BYTES) / 4 - d.V * d.E) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: llama2.c header implies an impossible size", label);
    }
    uint64_t want = MLLM_LLAMA2C_HEADER_BYTES + 4 * n;
    if (h->vocab_size < 0) want += 4 * d.V * d.E;
    if (file_size != want) {
        return mllm_err(MLLM_ERR_FORMAT,
                        "%s: not a GGUF file, and not a llama2.c checkpoint: its header implies %llu bytes, the file has %llu",
                        label, (unsigned long long)want, (unsigned long long)file_size);
    }
    *shared = h->vocab_size > 0;
    return MLLM_OK;
}

typedef struct {
    mllm_model_file *f;
    const float *p; /* next array in the file */
} walker;

/* Adds `count` consecutive matrices (in x out) named blk.N.<suffix>, or one
   named `suffix` when count is 0, and advances past them. */
static mllm_status take(walker *w, const char *suffix, uint64_t count, uint64_t in, uint64_t out) {
    char name[96];
    int64_t ne[2] = {(int64_t)in, (int64_t)out};
    int nd = out > 1 ? 2 : 1;
    size_t bytes = (size_t)(in * out * 4);
    if (count == 0) {
        mllm_status st = mllm_model_file_add_weight(w->f, suffix, MLLM_DTYPE_F32, nd, ne, w->p, bytes);
        w->p += in * out;
        return st;
    }
    for (uint64_t l = 0; l < count; l++) {
        snprintf(name, sizeof name, "blk.%llu.%s", (unsigned long long)l, suffix);
        mllm_status st = mllm_model_file_add_weight(w->f, name, MLLM_DTYPE_F32, nd, ne, w->p, bytes);
        if (st) return st;
        w->p += in * out;
    }
    return MLLM_OK;
}

static mllm_status add_weights(mllm_model_file *f, const dims *d, const void *base, bool shared) {
    walker w = {f, (const float *)((const uint8_t *)base + MLLM_LLAMA2C_HEADER_BYTES)};
    mllm_status st;
    if ((st = take(&w, "token_embd.weight", 0, d->E, d->V))) return st;
    if ((st = take(&w, "attn_norm.weight", d->L, d->E, 1))) return st;
    if ((st = take(&w, "attn_q.weight", d->L, d->E, d->E))) return st;
    if ((st = take(&w, "attn_k.weight", d->L, d->E, d->KV))) return st;
    if ((st = take(&w, "attn_v.weight", d->L, d->E, d->KV))) return st;
    if ((st = take(&w, "attn_output.weight", d->L, d->E, d->E))) return st;
    if ((st = take(&w, "ffn_norm.weight", d->L, d->E, 1))) return st;
    if ((st = take(&w, "ffn_gate.weight", d->L, d->E, d->F))) return st;
    if ((st = take(&w, "ffn_down.weight", d->L, d->F, d->E))) return st;
    if ((st = take(&w, "ffn_up.weight", d->L, d->E, d->F))) return st;
    if ((st = take(&w, "output_norm.weight", 0, d->E, 1))) return st;
    w.p += d->seq * d->hd; /* freq_cis_real and freq_cis_imag: RoPE is recomputed */
    if (!shared && (st = take(&w, "output.weight", 0, d->E, d->V))) return st;
    return MLLM_OK;
}

/* llama2.c checkpoints are Llama models by definition: their header says it
   in llama.cpp's key names, as a GGUF of the same model would. */
static mllm_status fill_meta(mllm_meta *m, const mllm_llama2c_header *h, const dims *d) {
    mllm_status st = mllm_meta_set_str(m, "general.architecture", "llama", 5);
    if (!st) st = mllm_meta_set_int(m, "llama.vocab_size", d->V);
    if (!st) st = mllm_meta_set_int(m, "llama.embedding_length", h->dim);
    if (!st) st = mllm_meta_set_int(m, "llama.block_count", h->n_layers);
    if (!st) st = mllm_meta_set_int(m, "llama.attention.head_count", h->n_heads);
    if (!st) st = mllm_meta_set_int(m, "llama.attention.head_count_kv", h->n_kv_heads);
    if (!st) st = mllm_meta_set_int(m, "llama.attention.key_length", d->hd);
    if (!st) st = mllm_meta_set_int(m, "llama.feed_forward_length", h->hidden_dim);
    if (!st) st = mllm_meta_set_int(m, "llama.context_length", h->seq_len);
    if (!st) st = mllm_meta_set_int(m, "llama.rope.dimension_count", d->hd);
    if (!st) st = mllm_meta_set_float(m, "llama.rope.freq_base", 10000.0);
    if (!st) st = mllm_meta_set_float(m, "llama.attention.layer_norm_rms_epsilon", 1e-5);
    return st; /* llama2.c rotates adjacent pairs, as GGUF llama files do */
}

mllm_status mllm_model_file_open_llama2c(mllm_model_file *f) {
    mllm_model_file_priv *p = f->priv;
    void *m = NULL;
    size_t size = 0;
    mllm_status st = mllm_file_map(f->path, MLLM_LLAMA2C_HEADER_BYTES,
                                   "not a GGUF file, HF folder or llama2.c checkpoint (too short)", &m, &size);
    if (st) return st;
    /* Kept from here on, so model_file_close unmaps it on any error below. */
    p->map = m;
    p->map_size = size;
    mllm_llama2c_header h;
    memcpy(&h, m, sizeof h);
    if (memcmp(&h, "ak42", 4) == 0)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: llama2.c version 1/2 exports are not supported (legacy v0 only)",
                        f->path);
    bool shared;
    st = mllm_llama2c_check(&h, (uint64_t)size, f->path, &shared);
    if (st) return st;
    dims d = {0};
    get_dims(&h, f->path, &d);
    if ((st = fill_meta(&f->meta, &h, &d))) return st;
    return add_weights(f, &d, m, shared);
}
