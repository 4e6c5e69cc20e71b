/* Random weights from a portable RNG: every row of every tensor has its own
   stream, seeded from the tensor's GGUF name and the row index, so a row can
   be produced in any order (the GGUF Llama q/k permutation) and GGUF and HF
   files of one preset hold the same numbers. Values: N(0,1) * 0.02 for
   matrices and biases, 1 + 0.1 * N(0,1) for norm weights (not 1.0, so a model that
   ignores a norm weight is caught; Gemma's norms, which multiply by 1 + w,
   hold w = 0.1 * N(0,1)). Every dtype is made from the same f32
   values, converted row by row as it is streamed out. */
#include "backends/cpu.h"
#include "synth/synth_internal.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "models/registry.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define SYNTH_SEED 0x6d6c6c6d2d633137ull /* "mllm-c17" */

static uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint64_t xorshift64s(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static uint64_t name_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

void synth_gen_row(const char *name, synth_kind kind, int64_t row, float *out, int64_t n) {
    uint64_t s = splitmix64(SYNTH_SEED ^ name_hash(name)) ^ splitmix64((uint64_t)row);
    if (s == 0) s = 1;
    const double two_pi = 6.283185307179586;
    for (int64_t i = 0; i < n; i += 2) {
        /* Box-Muller: u1 in (0, 1], u2 in [0, 1). */
        double u1 = ((double)(xorshift64s(&s) >> 11) + 1.0) * 0x1.0p-53;
        double u2 = (double)(xorshift64s(&s) >> 11) * 0x1.0p-53;
        double r = sqrt(-2.0 * log(u1));
        double z[2] = {r * cos(two_pi * u2), r * sin(two_pi * u2)};
        for (int k = 0; k < 2 && i + k < n; k++) {
            out[i + k] = kind == SYNTH_NORM     ? (float)(1.0 + 0.1 * z[k])
                         : kind == SYNTH_NORM_W ? (float)(0.1 * z[k])
                                                : (float)(0.02 * z[k]);
        }
    }
}

size_t synth_tensor_bytes(const synth_tensor *t) {
    return mllm_dtype_row_size((mllm_dtype)t->dtype, t->ne0) * (size_t)t->ne1;
}

void synth_tensor_reset(synth_tensor *t) {
    t->row = 0;
    t->row_pos = t->row_bytes = 0;
}

void synth_tensor_free(synth_tensor *t) {
    mllm_free(t->rowbuf);
    t->rowbuf = NULL;
}

/* Source row of file row r under the Llama q/k permutation: within each
   head, file rows (2b, 2b+1) come from source rows (b, b + hd/2). */
static int64_t source_row(const synth_tensor *t, int64_t r) {
    if (t->permute_heads <= 0) return r;
    int64_t hd = t->ne1 / t->permute_heads, h = r / hd, j = r % hd;
    return h * hd + (j % 2) * (hd / 2) + j / 2;
}

static mllm_status next_row(synth_tensor *t) {
    size_t rb = mllm_dtype_row_size((mllm_dtype)t->dtype, t->ne0);
    if (!t->rowbuf) {
        /* f32 scratch for the values, then the row converted in place after it. */
        t->rowbuf = mllm_malloc((size_t)t->ne0 * sizeof(float) + rb);
        if (!t->rowbuf) return mllm_err(MLLM_ERR_NOMEM, "synth: out of memory");
    }
    float *vals = (float *)t->rowbuf;
    uint8_t *out = t->rowbuf + (size_t)t->ne0 * sizeof(float);
    if (t->kind == SYNTH_CONST) {
        memcpy(vals, t->values, (size_t)t->ne0 * sizeof(float));
    } else {
        synth_gen_row(t->name, t->kind, source_row(t, t->row), vals, t->ne0);
        if (t->plus_one)
            for (int64_t i = 0; i < t->ne0; i++) vals[i] += 1.0f;
    }
    /* The dtype table's converter: for q8_0 / q4_0 / q4_1 it is the ggml
       reference quantizer, so a quantized synth file holds exactly the f32
       file's values quantized (each row is whole blocks: checked by
       synth_check_blocks). */
    mllm_cpu_type_get(t->dtype)->from_float(vals, out, t->ne0);
    t->row++;
    t->row_bytes = rb;
    t->row_pos = 0;
    return MLLM_OK;
}

mllm_status synth_fill(void *user, void *buf, size_t offset, size_t n) {
    synth_tensor *t = user;
    if (offset == 0) synth_tensor_reset(t);
    uint8_t *dst = buf;
    while (n > 0) {
        if (t->row_pos == t->row_bytes) {
            if (t->row >= t->ne1) return mllm_err(MLLM_ERR_INVALID_ARG, "synth: %s: read past the end", t->name);
            mllm_status st = next_row(t);
            if (st) return st;
        }
        size_t k = t->row_bytes - t->row_pos;
        if (k > n) k = n;
        memcpy(dst, t->rowbuf + (size_t)t->ne0 * sizeof(float) + t->row_pos, k);
        t->row_pos += k;
        dst += k;
        n -= k;
    }
    if (t->row == t->ne1 && t->row_pos == t->row_bytes) synth_tensor_free(t);
    return MLLM_OK;
}

/* llama.cpp's rope_freqs for Llama 3 scaling: per rotated pair, the divisor
   of the base frequency (1 for high frequencies, `factor` for low ones,
   smoothly interpolated between). */
static float *llama3_freqs(const synth_preset *p) {
    int n = p->D / 2;
    float *f = mllm_malloc((size_t)n * sizeof *f);
    if (!f) return NULL;
    double lo_wave = p->rope_orig_ctx / p->rope_low, hi_wave = p->rope_orig_ctx / p->rope_high;
    for (int i = 0; i < n; i++) {
        double freq = pow(p->theta, -2.0 * i / p->D), wave = 6.283185307179586 / freq;
        if (wave < hi_wave) {
            f[i] = 1.0f;
        } else if (wave > lo_wave) {
            f[i] = p->rope_factor;
        } else {
            double smooth = (p->rope_orig_ctx / wave - p->rope_low) / (p->rope_high - p->rope_low);
            f[i] = (float)(1.0 / ((1.0 - smooth) / p->rope_factor + smooth));
        }
    }
    return f;
}

int synth_embd_dtype(int dtype) {
    return dtype == MLLM_DTYPE_Q4_0 || dtype == MLLM_DTYPE_Q4_1 ? MLLM_DTYPE_Q8_0 : dtype;
}

mllm_status synth_check_blocks(const synth_tensor *ts, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const mllm_dtype_traits *tr = mllm_dtype_get(ts[i].dtype);
        if (!tr || !mllm_cpu_type_get(ts[i].dtype)->from_float) {
            return mllm_err(MLLM_ERR_UNSUPPORTED, "synth: %s: no converter to %s", ts[i].name,
                            mllm_dtype_name(ts[i].dtype));
        }
        if (ts[i].ne0 % tr->block_size != 0) {
            return mllm_err(MLLM_ERR_INVALID_ARG, "synth: %s: row length %lld is not a multiple of %s's block of %d",
                            ts[i].name, (long long)ts[i].ne0, tr->name, tr->block_size);
        }
    }
    return MLLM_OK;
}

static void set(synth_tensor *t, const char *name, int dtype, int64_t ne0, int64_t ne1, synth_kind kind) {
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = kind == SYNTH_MATRIX ? dtype : MLLM_DTYPE_F32;
    t->ne0 = ne0;
    t->ne1 = ne1;
    t->kind = kind;
}

synth_tensor *synth_tensor_list(const synth_preset *p, int dtype, bool gguf_layout, size_t *n, float **rope_freqs) {
    size_t per_layer = 9 + (p->qk_norm ? 2 : 0) + (p->qkv_bias ? 3 : 0) + (p->gemma ? 2 : 0);
    size_t cap = 4 + (size_t)p->L * per_layer;
    synth_tensor *ts = mllm_calloc(cap, sizeof *ts);
    *rope_freqs = NULL;
    if (!ts) return NULL;
    size_t k = 0;
    const int64_t E = p->E, QD = (int64_t)p->H * p->D, KD = (int64_t)p->Hkv * p->D;
    /* GGUF files of the pairwise-RoPE rows (llama, smollm3) hold q/k permuted. */
    const mllm_arch *row = mllm_arch_find(p->arch);
    const bool permute = gguf_layout && row && !row->rope_neox;
    /* Gemma's norms: w in HF folders, 1 + w in GGUF. */
    const synth_kind norm = p->gemma ? SYNTH_NORM_W : SYNTH_NORM;
    char nm[96];
    set(&ts[k++], "token_embd.weight", synth_embd_dtype(dtype), E, p->V, SYNTH_MATRIX);
    for (int l = 0; l < p->L; l++) {
#define LAYER(suffix, ne0, ne1, kind) \
    (snprintf(nm, sizeof nm, "blk.%d.%s", l, suffix), set(&ts[k++], nm, dtype, ne0, ne1, kind))
        LAYER("attn_norm.weight", E, 1, norm);
        LAYER("attn_q.weight", E, QD, SYNTH_MATRIX);
        if (permute) ts[k - 1].permute_heads = p->H;
        /* Qwen2 only, so never under the Llama permutation (NeoX RoPE). */
        if (p->qkv_bias) LAYER("attn_q.bias", QD, 1, SYNTH_BIAS);
        LAYER("attn_k.weight", E, KD, SYNTH_MATRIX);
        if (permute) ts[k - 1].permute_heads = p->Hkv;
        if (p->qkv_bias) LAYER("attn_k.bias", KD, 1, SYNTH_BIAS);
        LAYER("attn_v.weight", E, KD, SYNTH_MATRIX);
        if (p->qkv_bias) LAYER("attn_v.bias", KD, 1, SYNTH_BIAS);
        LAYER("attn_output.weight", QD, E, SYNTH_MATRIX);
        if (p->qk_norm) {
            LAYER("attn_q_norm.weight", p->D, 1, norm);
            LAYER("attn_k_norm.weight", p->D, 1, norm);
        }
        if (p->gemma) LAYER("post_attention_norm.weight", E, 1, norm);
        LAYER("ffn_norm.weight", E, 1, norm);
        LAYER("ffn_gate.weight", E, p->F, SYNTH_MATRIX);
        LAYER("ffn_up.weight", E, p->F, SYNTH_MATRIX);
        LAYER("ffn_down.weight", p->F, E, SYNTH_MATRIX);
        if (p->gemma) LAYER("post_ffw_norm.weight", E, 1, norm);
#undef LAYER
    }
    set(&ts[k++], "output_norm.weight", dtype, E, 1, norm);
    for (size_t i = 0; i < k; i++) ts[i].plus_one = gguf_layout && ts[i].kind == SYNTH_NORM_W;
    if (!p->tied) set(&ts[k++], "output.weight", synth_embd_dtype(dtype), E, p->V, SYNTH_MATRIX);
    if (gguf_layout && p->llama3_rope) {
        *rope_freqs = llama3_freqs(p);
        if (!*rope_freqs) {
            mllm_free(ts);
            return NULL;
        }
        set(&ts[k], "rope_freqs.weight", MLLM_DTYPE_F32, p->D / 2, 1, SYNTH_CONST);
        ts[k++].values = *rope_freqs;
    }
    *n = k;
    return ts;
}
