/* Writes the seed corpora under tests/fuzz/corpus/<target>/: small, valid
   inputs made with our own GGUF writer or spelled out here, each checked to
   load with the library (so the fuzzers start deep inside the readers).
   Usage: fuzz_make_seeds <corpus folder>. Rerun after a format change and
   commit the result (each seed < 64 KB). */
#include "backends/cpu.h"
#include "make_seeds.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "formats/mllm_v1v2.h"
#include "formats/mllmfile.h"
#include "formats/mllmfile_model.h"
#include "formats/model_file.h"
#include "models/registry.h"
#include "tokenizer/tokenizer.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *g_root;
static int g_failed;

/* ---- byte buffer -------------------------------------------------------- */
void put(buf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
void put_u32(buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, x, 4);
}
void put_f32(buf *b, float f) {
    uint32_t v;
    memcpy(&v, &f, 4);
    put_u32(b, v);
}
void put_str(buf *b, const char *s) { put(b, s, strlen(s)); }
/* A part as fz_take_part reads it: u32 length, then the bytes. */
void put_part(buf *b, const void *d, size_t n) {
    put_u32(b, (uint32_t)n);
    put(b, d, n);
}

uint8_t *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(sz > 0 ? (size_t)sz : 1);
    *n = fread(p, 1, (size_t)sz, f);
    fclose(f);
    return p;
}

void save(const char *target, const char *name, const void *d, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", g_root, target);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", g_root, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(d, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    printf("  %-60s %6zu bytes\n", path, n);
    if (n >= 64 * 1024) {
        fprintf(stderr, "%s is over 64 KB\n", path);
        g_failed = 1;
    }
}

void expect_ok(const char *what, mllm_status st) {
    if (st == MLLM_OK) return;
    fprintf(stderr, "seed %s does not load: %s\n", what, mllm_last_error());
    g_failed = 1;
}

void check(mllm_status st) {
    if (st) {
        fprintf(stderr, "writer: %s\n", mllm_last_error());
        exit(1);
    }
}

/* ---- tiny Llama-family weights ------------------------------------------ */
typedef struct {
    const char *arch;
    int E, H, KV, D, F, L, V;
    int dtype;        /* of the matrices */
    bool bias, qk_norm, untied;
} shape;

static float g_vals[1 << 14];
/* Converted tensor data of the writer being filled (freed once written). */
static void *g_owned[64];
static size_t g_n_owned;

static void add_t(mllm_gguf_writer *w, const char *name, int dtype, int64_t ne0, int64_t ne1) {
    int64_t ne[2] = {ne0, ne1};
    int nd = ne1 > 1 ? 2 : 1;
    if (dtype == MLLM_DTYPE_F32) {
        check(mllm_gguf_writer_add_tensor(w, name, dtype, nd, ne, g_vals));
        return;
    }
    /* Quantized / f16: converted into a buffer kept until the file is written. */
    const mllm_cpu_type *ktr = mllm_cpu_type_get(dtype);
    size_t row = mllm_dtype_row_size((mllm_dtype)dtype, ne0);
    uint8_t *q = malloc(row * (size_t)ne1);
    if (!q || g_n_owned == sizeof g_owned / sizeof *g_owned) abort();
    g_owned[g_n_owned++] = q;
    for (int64_t r = 0; r < ne1; r++) ktr->from_float(g_vals, q + r * row, ne0);
    check(mllm_gguf_writer_add_tensor(w, name, dtype, nd, ne, q));
}

static void add_model(mllm_gguf_writer *w, const shape *s) {
    char k[128], n[64];
    check(mllm_gguf_writer_add_str(w, "general.architecture", s->arch));
    check(mllm_gguf_writer_add_str(w, "general.name", "fuzz seed"));
#define KEY(suffix) (snprintf(k, sizeof k, "%s.%s", s->arch, suffix), k)
    check(mllm_gguf_writer_add_u32(w, KEY("block_count"), (uint32_t)s->L));
    check(mllm_gguf_writer_add_u32(w, KEY("embedding_length"), (uint32_t)s->E));
    check(mllm_gguf_writer_add_u32(w, KEY("feed_forward_length"), (uint32_t)s->F));
    check(mllm_gguf_writer_add_u32(w, KEY("attention.head_count"), (uint32_t)s->H));
    check(mllm_gguf_writer_add_u32(w, KEY("attention.head_count_kv"), (uint32_t)s->KV));
    check(mllm_gguf_writer_add_u32(w, KEY("attention.key_length"), (uint32_t)s->D));
    check(mllm_gguf_writer_add_u32(w, KEY("context_length"), 64));
    check(mllm_gguf_writer_add_f32(w, KEY("rope.freq_base"), 10000.0f));
    check(mllm_gguf_writer_add_f32(w, KEY("attention.layer_norm_rms_epsilon"), 1e-6f));
    if (!strcmp(s->arch, "llama")) {
        check(mllm_gguf_writer_add_str(w, KEY("rope.scaling.type"), "linear"));
        check(mllm_gguf_writer_add_f32(w, KEY("rope.scaling.factor"), 2.0f));
    }
#undef KEY
    const int QD = s->H * s->D, KD = s->KV * s->D;
    add_t(w, "token_embd.weight", s->dtype, s->E, s->V);
    for (int l = 0; l < s->L; l++) {
#define NAME(suffix) (snprintf(n, sizeof n, "blk.%d.%s", l, suffix), n)
        add_t(w, NAME("attn_norm.weight"), MLLM_DTYPE_F32, s->E, 1);
        add_t(w, NAME("attn_q.weight"), s->dtype, s->E, QD);
        add_t(w, NAME("attn_k.weight"), s->dtype, s->E, KD);
        add_t(w, NAME("attn_v.weight"), s->dtype, s->E, KD);
        add_t(w, NAME("attn_output.weight"), s->dtype, QD, s->E);
        add_t(w, NAME("ffn_norm.weight"), MLLM_DTYPE_F32, s->E, 1);
        add_t(w, NAME("ffn_gate.weight"), s->dtype, s->E, s->F);
        add_t(w, NAME("ffn_up.weight"), s->dtype, s->E, s->F);
        add_t(w, NAME("ffn_down.weight"), s->dtype, s->F, s->E);
        if (s->bias) {
            add_t(w, NAME("attn_q.bias"), MLLM_DTYPE_F32, QD, 1);
            add_t(w, NAME("attn_k.bias"), MLLM_DTYPE_F32, KD, 1);
            add_t(w, NAME("attn_v.bias"), MLLM_DTYPE_F32, KD, 1);
        }
        if (s->qk_norm) {
            add_t(w, NAME("attn_q_norm.weight"), MLLM_DTYPE_F32, s->D, 1);
            add_t(w, NAME("attn_k_norm.weight"), MLLM_DTYPE_F32, s->D, 1);
        }
#undef NAME
    }
    add_t(w, "output_norm.weight", MLLM_DTYPE_F32, s->E, 1);
    if (s->untied) add_t(w, "output.weight", s->dtype, s->E, s->V);
}

/* ---- tokenizer metadata -------------------------------------------------- */
/* SentencePiece-style vocab (tokenizer.ggml.model "llama"). */
static const char *const k_spm_tokens[] = {
    "<unk>", "<s>", "</s>", "<0x0A>", "<0x41>", "\xe2\x96\x81", "a", "b", "c", "\xe2\x96\x81" "a",
    "ab", "\xe2\x96\x81" "ab", "\xe2\x96\x81" "b", "bc", "abc", "<|im_start|>"};
static const float k_spm_scores[] = {0, 0, 0, 0, 0, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, 0};
static const int32_t k_spm_types[] = {2, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3};

/* Byte-level BPE vocab (tokenizer.ggml.model "gpt2"): "Ġ" is the space. */
static const char *const k_bpe_tokens[] = {
    "a", "b", "c", "\xc4\xa0", "\xc4\x8a", "ab", "\xc4\xa0" "a", "\xc4\xa0" "ab", "bc", "abc",
    "1", "2", "!", "<|endoftext|>", "<|im_start|>", "<|im_end|>"};
static const int32_t k_bpe_types[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3};
static const char *const k_bpe_merges[] = {"a b", "\xc4\xa0 a", ("\xc4\xa0" "a b"), "b c", "ab c"};

static void add_spm_tokenizer(mllm_gguf_writer *w) {
    check(mllm_gguf_writer_add_str(w, "tokenizer.ggml.model", "llama"));
    check(mllm_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", k_spm_tokens, NULL, 16));
    check(mllm_gguf_writer_add_arr(w, "tokenizer.ggml.scores", MLLM_GGUF_FLOAT32, k_spm_scores, 16));
    check(mllm_gguf_writer_add_arr(w, "tokenizer.ggml.token_type", MLLM_GGUF_INT32, k_spm_types, 16));
    check(mllm_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", 1));
    check(mllm_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", 2));
    check(mllm_gguf_writer_add_u32(w, "tokenizer.ggml.unknown_token_id", 0));
    check(mllm_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", true));
    check(mllm_gguf_writer_add_bool(w, "tokenizer.ggml.add_space_prefix", true));
}

static void add_bpe_tokenizer(mllm_gguf_writer *w, const char *pre) {
    check(mllm_gguf_writer_add_str(w, "tokenizer.ggml.model", "gpt2"));
    check(mllm_gguf_writer_add_str(w, "tokenizer.ggml.pre", pre));
    check(mllm_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", k_bpe_tokens, NULL, 16));
    check(mllm_gguf_writer_add_arr(w, "tokenizer.ggml.token_type", MLLM_GGUF_INT32, k_bpe_types, 16));
    check(mllm_gguf_writer_add_arr_str(w, "tokenizer.ggml.merges", k_bpe_merges, NULL, 5));
    check(mllm_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", 13));
    check(mllm_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", 15));
    check(mllm_gguf_writer_add_u32(w, "tokenizer.ggml.eot_token_id", 15));
    check(mllm_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", false));
    check(mllm_gguf_writer_add_str(w, "tokenizer.chat_template",
                                   "{% for m in messages %}<|im_start|>{{ m.content }}<|im_end|>{% endfor %}"));
}

/* Every metadata type once, scalar and array. */
static void add_all_types(mllm_gguf_writer *w) {
    check(mllm_gguf_writer_add_u8(w, "t.u8", 200));
    check(mllm_gguf_writer_add_i8(w, "t.i8", -100));
    check(mllm_gguf_writer_add_u16(w, "t.u16", 60000));
    check(mllm_gguf_writer_add_i16(w, "t.i16", -30000));
    check(mllm_gguf_writer_add_u32(w, "t.u32", 4000000000u));
    check(mllm_gguf_writer_add_i32(w, "t.i32", -2000000000));
    check(mllm_gguf_writer_add_u64(w, "t.u64", UINT64_MAX));
    check(mllm_gguf_writer_add_i64(w, "t.i64", INT64_MIN));
    check(mllm_gguf_writer_add_f32(w, "t.f32", 1.5f));
    check(mllm_gguf_writer_add_f64(w, "t.f64", -2.25));
    check(mllm_gguf_writer_add_bool(w, "t.bool", true));
    check(mllm_gguf_writer_add_str(w, "t.str", "hello"));
    check(mllm_gguf_writer_add_u32(w, "general.alignment", 64));
    const uint8_t u8[3] = {1, 2, 255};
    const int16_t i16[2] = {-1, 7};
    const uint32_t u32[2] = {7, 4000000000u};
    const int64_t i64[2] = {-5, INT64_MAX};
    const uint64_t u64[2] = {5, UINT64_MAX};
    const float f32[2] = {0.5f, -1e30f};
    const double f64[2] = {1e300, -0.0};
    const uint8_t bools[2] = {0, 1};
    check(mllm_gguf_writer_add_arr(w, "a.u8", MLLM_GGUF_UINT8, u8, 3));
    check(mllm_gguf_writer_add_arr(w, "a.i16", MLLM_GGUF_INT16, i16, 2));
    check(mllm_gguf_writer_add_arr(w, "a.u32", MLLM_GGUF_UINT32, u32, 2));
    check(mllm_gguf_writer_add_arr(w, "a.i64", MLLM_GGUF_INT64, i64, 2));
    check(mllm_gguf_writer_add_arr(w, "a.u64", MLLM_GGUF_UINT64, u64, 2));
    check(mllm_gguf_writer_add_arr(w, "a.f32", MLLM_GGUF_FLOAT32, f32, 2));
    check(mllm_gguf_writer_add_arr(w, "a.f64", MLLM_GGUF_FLOAT64, f64, 2));
    check(mllm_gguf_writer_add_arr(w, "a.bool", MLLM_GGUF_BOOL, bools, 2));
    const char *strs[3] = {"x", "", "zz"};
    check(mllm_gguf_writer_add_arr_str(w, "a.str", strs, NULL, 3));
    check(mllm_gguf_writer_add_arr(w, "a.empty", MLLM_GGUF_INT32, u32, 0));
}

/* Writes w to a temp file and returns its bytes. */
static uint8_t *gguf_bytes(mllm_gguf_writer *w, size_t *n) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/mllm-seed-%d.gguf", (int)getpid());
    check(mllm_gguf_writer_write(w, path));
    mllm_gguf_writer_free(w);
    while (g_n_owned) free(g_owned[--g_n_owned]);
    uint8_t *d = read_all(path, n);
    unlink(path);
    return d;
}

static mllm_gguf_writer *new_writer(void) {
    mllm_gguf_writer *w;
    check(mllm_gguf_writer_new(&w));
    return w;
}

/* mllm_family_open, closing what it opened on success. */
static mllm_status mllm_family_open_ok(const char *path, mllm_model_file **f) {
    mllm_hparams hp;
    return mllm_family_open(path, f, &hp);
}

static void check_gguf_model(const char *what, const uint8_t *d, size_t n) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/mllm-seed-check-%d", (int)getpid());
    FILE *f = fopen(path, "wb");
    fwrite(d, 1, n, f);
    fclose(f);
    mllm_model_file *mf = NULL;
    expect_ok(what, mllm_family_open_ok(path, &mf));
    mllm_model_file_close(mf);
    unlink(path);
}

static void check_gguf_tokenizer(const char *what, const uint8_t *d, size_t n) {
    mllm_gguf *g = NULL;
    mllm_tokenizer *t = NULL;
    mllm_status st = mllm_gguf_open_memory(d, n, what, &g);
    if (!st) st = mllm_tokenizer_from_gguf(g, &t);
    expect_ok(what, st);
    mllm_tokenizer_free(t);
    mllm_gguf_close(g);
}

static const char k_text[] = "abc ab\nA <|im_start|>b c! 12 \xc3\xa9\xe2\x82\xac \xff end";

/* Text part of a tokenizer seed: a flag byte (add_special | parse_special). */
void put_text(buf *b, uint8_t flags) {
    put(b, &flags, 1);
    put_str(b, k_text);
}

static void gguf_seeds(void) {
    for (size_t i = 0; i < sizeof g_vals / sizeof *g_vals; i++) g_vals[i] = sinf((float)i * 0.37f);
    static const shape shapes[] = {
        {"llama", 8, 2, 1, 4, 16, 1, 16, MLLM_DTYPE_F32, false, false, false},
        {"qwen2", 32, 2, 2, 16, 32, 1, 16, MLLM_DTYPE_Q8_0, true, false, true},
        {"qwen3", 32, 2, 1, 16, 32, 2, 16, MLLM_DTYPE_F16, false, true, false},
    };
    for (size_t i = 0; i < 3; i++) {
        mllm_gguf_writer *w = new_writer();
        add_model(w, &shapes[i]);
        if (i == 0) add_spm_tokenizer(w);
        else add_bpe_tokenizer(w, "qwen2");
        size_t n;
        uint8_t *d = gguf_bytes(w, &n);
        char name[64];
        snprintf(name, sizeof name, "model_%s.gguf", shapes[i].arch);
        check_gguf_model(name, d, n);
        save("gguf", name, d, n);
        free(d);
    }
    mllm_gguf_writer *w = new_writer();
    add_all_types(w);
    int64_t ne[3] = {32, 2, 2};
    check(mllm_gguf_writer_add_tensor(w, "q4_0.weight", MLLM_DTYPE_Q4_0, 3, ne, g_vals));
    check(mllm_gguf_writer_add_tensor(w, "i32.weight", MLLM_DTYPE_I32, 1, ne, g_vals));
    size_t n;
    uint8_t *d = gguf_bytes(w, &n);
    save("gguf", "all_types.gguf", d, n);
    free(d);

    /* Tokenizers: GGUF image (metadata only) + text. */
    const char *pres[] = {"qwen2", "llama3", "default", "gpt-2", "deepseek-coder", "starcoder"};
    for (int i = 0; i < 7; i++) {
        w = new_writer();
        if (i == 0) add_spm_tokenizer(w);
        else add_bpe_tokenizer(w, pres[i - 1]);
        d = gguf_bytes(w, &n);
        char name[64];
        snprintf(name, sizeof name, "%s.bin", i == 0 ? "spm" : pres[i - 1]);
        check_gguf_tokenizer(name, d, n);
        buf b = {0};
        put_part(&b, d, n);
        put_text(&b, (uint8_t)(i & 3));
        save("gguf_tokenizer", name, b.p, b.n);
        free(b.p);
        free(d);
    }
}

/* ---- safetensors and HF folders ------------------------------------------- */
typedef struct {
    const char *name, *dtype;
    int64_t shape[2];
    int nd;
} st_entry;

/* A safetensors image: header JSON, then each tensor's bytes in order. */
static void st_image(buf *out, const st_entry *e, size_t n, bool metadata) {
    buf h = {0};
    put_str(&h, "{");
    if (metadata) put_str(&h, "\"__metadata__\":{\"format\":\"pt\"},");
    uint64_t off = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t el = 1;
        char tmp[256];
        int k = snprintf(tmp, sizeof tmp, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "", e[i].name,
                         e[i].dtype);
        put(&h, tmp, (size_t)k);
        for (int d = 0; d < e[i].nd; d++) {
            k = snprintf(tmp, sizeof tmp, "%s%lld", d ? "," : "", (long long)e[i].shape[d]);
            put(&h, tmp, (size_t)k);
            el *= (uint64_t)e[i].shape[d];
        }
        uint64_t bytes = el * (strcmp(e[i].dtype, "F32") ? 2 : 4);
        k = snprintf(tmp, sizeof tmp, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                     (unsigned long long)(off + bytes));
        put(&h, tmp, (size_t)k);
        off += bytes;
    }
    put_str(&h, "}");
    while (h.n % 8) put_str(&h, " ");
    total = (size_t)off;
    uint64_t hl = h.n;
    put(out, &hl, 8);
    put(out, h.p, h.n);
    for (size_t i = 0; i < total; i++) {
        uint8_t v = (uint8_t)(i * 7 + 0x3c);
        if (i % 2 == 1) v = 0x3c; /* f16/bf16 values near 1 */
        put(out, &v, 1);
    }
    free(h.p);
}

static void safetensors_seeds(void) {
    const st_entry e[] = {{"a.weight", "F32", {3, 4}, 2}, {"b.bias", "F16", {5}, 1},
                          {"c", "BF16", {2, 2}, 2}, {"scalar", "F32", {0}, 0}};
    buf b = {0};
    st_image(&b, e, 4, true);
    save("safetensors", "mixed.safetensors", b.p, b.n);
    free(b.p);
    buf empty = {0};
    uint64_t hl = 2;
    put(&empty, &hl, 8);
    put_str(&empty, "{}");
    save("safetensors", "empty.safetensors", empty.p, empty.n);
    free(empty.p);
}

static const char k_cfg_llama[] =
    "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\",\"hidden_size\":8,"
    "\"intermediate_size\":16,\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":1,"
    "\"vocab_size\":16,\"max_position_embeddings\":64,\"rms_norm_eps\":1e-05,\"rope_theta\":500000.0,"
    "\"rope_scaling\":{\"factor\":8.0,\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,"
    "\"original_max_position_embeddings\":8192,\"rope_type\":\"llama3\"},\"tie_word_embeddings\":true,"
    "\"attention_bias\":false,\"torch_dtype\":\"float32\"}";
static const char k_cfg_qwen2[] =
    "{\"architectures\":[\"Qwen2ForCausalLM\"],\"hidden_size\":8,\"intermediate_size\":16,"
    "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"num_key_value_heads\":2,\"vocab_size\":16,"
    "\"rope_scaling\":{\"type\":\"linear\",\"factor\":2.0},\"tie_word_embeddings\":false,\"head_dim\":null}";
static const char k_cfg_qwen3[] =
    "{\"model_type\":\"qwen3\",\"hidden_size\":8,\"intermediate_size\":16,\"num_hidden_layers\":1,"
    "\"num_attention_heads\":2,\"num_key_value_heads\":1,\"head_dim\":8,\"vocab_size\":16,"
    "\"rope_parameters\":{\"rope_theta\":1000000.0,\"rope_type\":\"default\"},\"tie_word_embeddings\":true}";

/* HF tensors of a tiny model matching one of the configs above. */
static size_t hf_entries(st_entry *e, const char *dtype, int E, int QD, int KD, int F, int V, bool bias,
                         bool qk_norm, bool untied, int D) {
    size_t n = 0;
    e[n++] = (st_entry){"model.embed_tokens.weight", dtype, {V, E}, 2};
    e[n++] = (st_entry){"model.layers.0.input_layernorm.weight", dtype, {E}, 1};
    e[n++] = (st_entry){"model.layers.0.self_attn.q_proj.weight", dtype, {QD, E}, 2};
    e[n++] = (st_entry){"model.layers.0.self_attn.k_proj.weight", dtype, {KD, E}, 2};
    e[n++] = (st_entry){"model.layers.0.self_attn.v_proj.weight", dtype, {KD, E}, 2};
    e[n++] = (st_entry){"model.layers.0.self_attn.o_proj.weight", dtype, {E, QD}, 2};
    e[n++] = (st_entry){"model.layers.0.post_attention_layernorm.weight", dtype, {E}, 1};
    e[n++] = (st_entry){"model.layers.0.mlp.gate_proj.weight", dtype, {F, E}, 2};
    e[n++] = (st_entry){"model.layers.0.mlp.up_proj.weight", dtype, {F, E}, 2};
    e[n++] = (st_entry){"model.layers.0.mlp.down_proj.weight", dtype, {E, F}, 2};
    if (bias) {
        e[n++] = (st_entry){"model.layers.0.self_attn.q_proj.bias", dtype, {QD}, 1};
        e[n++] = (st_entry){"model.layers.0.self_attn.k_proj.bias", dtype, {KD}, 1};
        e[n++] = (st_entry){"model.layers.0.self_attn.v_proj.bias", dtype, {KD}, 1};
    }
    if (qk_norm) {
        e[n++] = (st_entry){"model.layers.0.self_attn.q_norm.weight", dtype, {D}, 1};
        e[n++] = (st_entry){"model.layers.0.self_attn.k_norm.weight", dtype, {D}, 1};
    }
    e[n++] = (st_entry){"model.norm.weight", dtype, {E}, 1};
    if (untied) e[n++] = (st_entry){"lm_head.weight", dtype, {V, E}, 2};
    return n;
}

static void write_file(const char *dir, const char *name, const void *d, size_t n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    fwrite(d, 1, n, f);
    fclose(f);
}

static void check_hf_folder(const char *what, const char *cfg, const buf *st1, const buf *st2,
                            const char *index) {
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/mllm-seed-hf-%d", (int)getpid());
    mkdir(dir, 0700);
    write_file(dir, "config.json", cfg, strlen(cfg));
    if (!index) {
        write_file(dir, "model.safetensors", st1->p, st1->n);
    } else {
        write_file(dir, "model-00001-of-00002.safetensors", st1->p, st1->n);
        write_file(dir, "model-00002-of-00002.safetensors", st2->p, st2->n);
        write_file(dir, "model.safetensors.index.json", index, strlen(index));
    }
    mllm_model_file *f = NULL;
    expect_ok(what, mllm_family_open_ok(dir, &f));
    mllm_model_file_close(f);
    const char *names[] = {"config.json", "model.safetensors", "model-00001-of-00002.safetensors",
                           "model-00002-of-00002.safetensors", "model.safetensors.index.json"};
    char path[512];
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void hf_seeds(void) {
    const char *cfgs[] = {k_cfg_llama, k_cfg_qwen2, k_cfg_qwen3};
    const char *cfg_names[] = {"llama.json", "qwen2.json", "qwen3.json"};
    for (int i = 0; i < 3; i++) save("hf_config", cfg_names[i], cfgs[i], strlen(cfgs[i]));

    st_entry e[24];
    struct { const char *name, *cfg, *dtype; int QD, KD, D; bool bias, qk, untied; } m[] = {
        {"llama_f32.bin", k_cfg_llama, "F32", 8, 4, 4, false, false, false},
        {"qwen2_bf16.bin", k_cfg_qwen2, "BF16", 8, 8, 4, true, false, true},
        {"qwen3_f16.bin", k_cfg_qwen3, "F16", 16, 8, 8, false, true, false},
    };
    for (int i = 0; i < 3; i++) {
        size_t n = hf_entries(e, m[i].dtype, 8, m[i].QD, m[i].KD, 16, 16, m[i].bias, m[i].qk, m[i].untied, m[i].D);
        buf st = {0};
        st_image(&st, e, n, i == 0);
        check_hf_folder(m[i].name, m[i].cfg, &st, NULL, NULL);
        buf b = {0};
        uint8_t flag = 0;
        put(&b, &flag, 1);
        put_part(&b, m[i].cfg, strlen(m[i].cfg));
        put_part(&b, st.p, st.n);
        save("hf_folder", m[i].name, b.p, b.n);
        free(b.p);
        free(st.p);
    }
    /* Sharded: the llama tensors split over two files and an index. */
    size_t n = hf_entries(e, "F32", 8, 8, 4, 16, 16, false, false, false, 4);
    buf s1 = {0}, s2 = {0};
    st_image(&s1, e, 6, false);
    st_image(&s2, e + 6, n - 6, false);
    buf idx = {0};
    put_str(&idx, "{\"metadata\":{\"total_size\":1},\"weight_map\":{");
    for (size_t i = 0; i < n; i++) {
        char tmp[160];
        int k = snprintf(tmp, sizeof tmp, "%s\"%s\":\"model-0000%d-of-00002.safetensors\"", i ? "," : "",
                         e[i].name, i < 6 ? 1 : 2);
        put(&idx, tmp, (size_t)k);
    }
    put_str(&idx, "}}");
    put(&idx, "", 1);
    check_hf_folder("sharded", k_cfg_llama, &s1, &s2, (const char *)idx.p);
    buf b = {0};
    uint8_t flag = 1;
    put(&b, &flag, 1);
    put_part(&b, k_cfg_llama, strlen(k_cfg_llama));
    put_part(&b, s1.p, s1.n);
    put_part(&b, s2.p, s2.n);
    put_part(&b, idx.p, idx.n - 1);
    save("hf_folder", "llama_sharded.bin", b.p, b.n);
    free(b.p);
    free(s1.p);
    free(s2.p);
    free(idx.p);
}

/* ---- llama2.c checkpoints -------------------------------------------------- */
static void llama2c_seeds(void) {
    struct { const char *name; int32_t h[7]; } ck[] = {
        {"shared.bin", {8, 16, 1, 2, 2, 16, 4}},
        {"untied_gqa.bin", {8, 12, 2, 2, 1, -10, 2}},
    };
    for (int i = 0; i < 2; i++) {
        const int32_t *h = ck[i].h;
        uint64_t E = (uint64_t)h[0], F = (uint64_t)h[1], L = (uint64_t)h[2], H = (uint64_t)h[3];
        uint64_t KV = (uint64_t)h[4] * (E / H), V = (uint64_t)(h[5] < 0 ? -h[5] : h[5]), seq = (uint64_t)h[6];
        uint64_t nf = V * E + L * E + L * E * E + 2 * L * E * KV + L * E * E + L * E + 3 * L * E * F + E +
                      seq * (E / H);
        if (h[5] < 0) nf += V * E;
        buf b = {0};
        for (int k = 0; k < 7; k++) put_u32(&b, (uint32_t)h[k]);
        for (uint64_t k = 0; k < nf; k++) put_f32(&b, g_vals[k % (sizeof g_vals / sizeof *g_vals)]);
        char name[64], path[80];
        snprintf(name, sizeof name, "mllm-seed-l2c-%d.bin", (int)getpid());
        snprintf(path, sizeof path, "/tmp/%s", name);
        write_file("/tmp", name, b.p, b.n);
        mllm_model_file *f = NULL;
        expect_ok(ck[i].name, mllm_family_open_ok(path, &f));
        mllm_model_file_close(f);
        unlink(path);
        save("llama2c", ck[i].name, b.p, b.n);
        free(b.p);
    }
}

/* ---- native .mllm (v3, and MLLM v1/v2) ------------------------------------ */
static mllm_status fill_vals(void *user, void *dst, size_t offset, size_t n) {
    (void)user;
    memcpy(dst, (const uint8_t *)g_vals + offset, n);
    return MLLM_OK;
}

/* A v3 file of the tiny llama shape (GGUF names), with a tokenizer section. */
static void mllm_v3_seed(const char *name, mllm_tok_kind kind) {
    mllm_meta c = {0};
    check(mllm_meta_set_str(&c, "general.architecture", "llama", 5));
    check(mllm_meta_set_int(&c, "llama.vocab_size", 16));
    check(mllm_meta_set_int(&c, "llama.embedding_length", 8));
    check(mllm_meta_set_int(&c, "llama.block_count", 1));
    check(mllm_meta_set_int(&c, "llama.attention.head_count", 2));
    check(mllm_meta_set_int(&c, "llama.attention.head_count_kv", 1));
    check(mllm_meta_set_int(&c, "llama.feed_forward_length", 16));
    check(mllm_meta_set_int(&c, "llama.context_length", 64));
    char *cfg = NULL;
    size_t cl = 0;
    check(mllm_mllmfile_config_to_json(&c, &cfg, &cl));
    mllm_meta_free(&c);
    mllm_mllmfile_writer *w;
    check(mllm_mllmfile_writer_new(&w));
    check(mllm_mllmfile_writer_set_config(w, cfg, cl));
    mllm_free(cfg);
    buf tok = {0};
    if (kind == MLLM_TOK_GGUF_KV) {
        mllm_gguf_writer *g = new_writer();
        add_spm_tokenizer(g);
        size_t n;
        uint8_t *d = gguf_bytes(g, &n);
        put(&tok, d, n);
        free(d);
    } else {
        uint64_t a = strlen(k_bpe_json), b = strlen(k_bpe_config);
        put(&tok, &a, 8);
        put(&tok, &b, 8);
        put_str(&tok, k_bpe_json);
        put_str(&tok, k_bpe_config);
    }
    check(mllm_mllmfile_writer_set_tokenizer(w, kind, tok.p, tok.n));
    check(mllm_mllmfile_writer_set_chat_template(w, "{{ messages }}", 14));
    const struct { const char *n; int64_t ne0, ne1; } t[] = {
        {"token_embd.weight", 8, 16}, {"blk.0.attn_norm.weight", 8, 1}, {"blk.0.attn_q.weight", 8, 8},
        {"blk.0.attn_k.weight", 8, 4}, {"blk.0.attn_v.weight", 8, 4}, {"blk.0.attn_output.weight", 8, 8},
        {"blk.0.ffn_norm.weight", 8, 1}, {"blk.0.ffn_gate.weight", 8, 16}, {"blk.0.ffn_up.weight", 8, 16},
        {"blk.0.ffn_down.weight", 16, 8}, {"output_norm.weight", 8, 1}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        int64_t ne[2] = {t[i].ne0, t[i].ne1};
        check(mllm_mllmfile_writer_add_tensor(w, t[i].n, MLLM_DTYPE_F32, t[i].ne1 > 1 ? 2 : 1, ne, fill_vals, NULL));
    }
    char path[64];
    snprintf(path, sizeof path, "/tmp/mllm-seed-%d.mllm", (int)getpid());
    check(mllm_mllmfile_writer_write(w, path));
    mllm_mllmfile_writer_free(w);
    mllm_model_file *f = NULL;
    expect_ok(name, mllm_family_open_ok(path, &f));
    mllm_model_file_close(f);
    size_t n;
    uint8_t *d = read_all(path, &n);
    unlink(path);
    buf b = {0};
    uint8_t mode = 7;
    put(&b, &mode, 1);
    put_part(&b, d, n);
    save("mllmfile", name, b.p, b.n);
    free(b.p);
    free(d);
    free(tok.p);
}

/* MLLM v1 / v2 files of the tiny llama shape (HF names) + config.json. */
static void mllm_v1v2_seed(int version) {
    st_entry e[24];
    size_t n = hf_entries(e, "F32", 8, 8, 4, 16, 16, false, false, false, 4);
    mllm_v1v2_tensor t[24];
    for (size_t i = 0; i < n; i++) {
        t[i] = (mllm_v1v2_tensor){e[i].name, 0, e[i].nd, {1, 1, 1, 1}, g_vals, 0};
        size_t el = 1;
        for (int d = 0; d < e[i].nd; d++) {
            t[i].ne[d] = e[i].shape[e[i].nd - 1 - d];
            el *= (size_t)e[i].shape[d];
        }
        t[i].size = 4 * el;
    }
    char dir[64], path[96], cfg[96];
    snprintf(dir, sizeof dir, "/tmp/mllm-seed-v%d-%d", version, (int)getpid());
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/model.mllm", dir);
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    check(version == 1 ? mllm_v1_write(path, t, n) : mllm_v2_write(path, "fuzz-seed", t, n));
    write_file(dir, "config.json", k_cfg_llama, strlen(k_cfg_llama));
    mllm_model_file *f = NULL;
    expect_ok(version == 1 ? "v1" : "v2", mllm_family_open_ok(path, &f));
    mllm_model_file_close(f);
    size_t len;
    uint8_t *d = read_all(path, &len);
    unlink(path);
    unlink(cfg);
    rmdir(dir);
    buf b = {0};
    uint8_t mode = 4;
    put(&b, &mode, 1);
    put_part(&b, d, len);
    put_str(&b, k_cfg_llama);
    save("mllmfile", version == 1 ? "v1_llama.bin" : "v2_llama.bin", b.p, b.n);
    free(b.p);
    free(d);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s <corpus folder>\n", argv[0]);
        return 2;
    }
    g_root = argv[1];
    mkdir(g_root, 0755);
    mllm_cpu_init();
    gguf_seeds();
    tokenizer_json_seeds();
    st_config_seeds();
    tokenizer_bin_seeds();
    safetensors_seeds();
    hf_seeds();
    llama2c_seeds();
    mllm_v3_seed("v3_gguf_tokenizer.bin", MLLM_TOK_GGUF_KV);
    mllm_v3_seed("v3_hf_tokenizer.bin", MLLM_TOK_HF_JSON);
    mllm_v1v2_seed(1);
    mllm_v1v2_seed(2);
    template_seeds();
    media_seeds();
    kv_store_seeds();
    if (g_failed) fprintf(stderr, "some seeds failed their check\n");
    return g_failed;
}
