/* mllm convert's kernel packing (--pack x8, the default for .mllm): the
   matmul weights are stored in the q4_0x8 / q8_0x8 layouts, byte for byte
   as docs/format.md describes them (checked against this file's own packer,
   written from that description, not the library's); everything else is
   stored as before. The packed .mllm gives logits bit-identical to loading
   the GGUF (which repacks at load into the same layouts); packed -> GGUF
   gives back the original tensor bytes; --pack none and GGUF output store
   plain dtypes; a packed source converts to other dtypes exactly as its
   plain original does. The same for q4_K / q6_K matrices and their x8
   layouts. */
#include "backends/cpu.h"
#include "testutil.h"
#include "convert/convert.h"
#include "convert/convert_internal.h"
#include "formats/gguf_writer.h"
#include "core/dtype.h"
#include "formats/model_file.h"
#include "synth/synth.h"
#include "synth/synth_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int32_t k_ids[] = {1, 5, 9, 42, 7, 3, 100, 11};
#define N_IDS (sizeof k_ids / sizeof *k_ids)

static void expect_same_logits(const char *a, const char *b) { tu_expect_same_logits(a, b, k_ids, N_IDS); }

static mllm_status convert(const char *in, const char *out, const char *quant, const char *pipeline, bool gguf,
                           int pack) {
    mllm_convert_params p;
    mllm_convert_default_params(&p);
    p.in = in, p.out = out, p.quant = quant, p.pipeline_path = pipeline, p.to_gguf = gguf, p.pack = pack;
    return mllm_convert(&p);
}

/* ---- the documented layouts, restated independently ------------------- */

/* q4_0 block: f16 d, 16 bytes; value i < 16 in the low nibble of byte i,
   value i >= 16 in the high nibble of byte i - 16. */
static int q4_value(const uint8_t *blk, int i) {
    return i < 16 ? blk[2 + i] & 15 : blk[2 + i - 16] >> 4;
}

/* q6_K block (ql[128], qh[64], int8 scales[16], f16 d): value i as its
   stored 6-bit number 0..63 (ggml's dequantize_row_q6_K order). */
static int q6_value(const uint8_t *blk, int i) {
    const uint8_t *ql = blk + 64 * (i / 128), *qh = blk + 128 + 32 * (i / 128);
    const int l = i % 32, quarter = (i % 128) / 32;
    const int lo = quarter & 1 ? ql[l + 32] : ql[l];
    return ((quarter < 2 ? lo & 15 : lo >> 4) | ((qh[l] >> (2 * quarter)) & 3) << 4);
}

static size_t plain_block_bytes(int plain) {
    switch (plain) {
    case MLLM_DTYPE_Q4_0: return 18;
    case MLLM_DTYPE_Q8_0: return 34;
    case MLLM_DTYPE_Q4_K: return 144;
    default: return 210; /* q6_K */
    }
}

/* The packed block b of one group of 8 rows (rows `rs` bytes apart), as
   docs/format.md lays it out. */
static void ref_pack_block(int plain, const uint8_t *rows, size_t rs, int64_t b, uint8_t *out) {
    const size_t bpb = plain_block_bytes(plain);
    for (int r = 0; r < 8; r++) {
        const uint8_t *blk = rows + (size_t)r * rs + (size_t)b * bpb;
        if (plain == MLLM_DTYPE_Q4_0 || plain == MLLM_DTYPE_Q8_0) {
            memcpy(out + 2 * r, blk, 2); /* d[r] */
            for (int t = 0; t < 8; t++) {
                for (int j = 0; j < 4; j++) {
                    if (plain == MLLM_DTYPE_Q4_0 && t < 4) /* 32t+4r+j: value 8t+j low, 8t+4+j high */
                        out[16 + 32 * t + 4 * r + j] = (uint8_t)(q4_value(blk, 8 * t + j) | q4_value(blk, 8 * t + 4 + j) << 4);
                    else if (plain == MLLM_DTYPE_Q8_0) /* 32g+4r+j: value 4g+j */
                        out[16 + 32 * t + 4 * r + j] = blk[2 + 4 * t + j];
                }
            }
        } else if (plain == MLLM_DTYPE_Q4_K) { /* d, dmin, scales[12], qs[128] */
            memcpy(out + 2 * r, blk, 2);
            memcpy(out + 16 + 2 * r, blk + 2, 2);
            for (int k = 0; k < 12; k++) out[32 + 8 * k + r] = blk[4 + k];
            for (int c = 0; c < 4; c++)
                for (int t = 0; t < 8; t++)
                    for (int j = 0; j < 4; j++) out[128 + 256 * c + 32 * t + 4 * r + j] = blk[16 + 32 * c + 4 * t + j];
        } else { /* q6_K */
            memcpy(out + 2 * r, blk + 208, 2);
            for (int p = 0; p < 8; p++)
                for (int e = 0; e < 2; e++) out[16 + 16 * p + 2 * r + e] = blk[192 + 2 * p + e];
            for (int u = 0; u < 8; u++) {
                for (int j = 0; j < 4; j++) {
                    for (int i = 0; i < 4; i++)
                        out[144 + 32 * (4 * u + i) + 4 * r + j] =
                            (uint8_t)((q6_value(blk, 32 * u + 4 * i + j) & 15) | (q6_value(blk, 32 * u + 16 + 4 * i + j) & 15) << 4);
                    for (int h = 0; h < 2; h++) {
                        int v = 0;
                        for (int k = 0; k < 4; k++) v |= (q6_value(blk, 32 * u + 16 * h + 4 * k + j) >> 4) << (2 * k);
                        out[1168 + 32 * (2 * u + h) + 4 * r + j] = (uint8_t)v;
                    }
                }
            }
        }
    }
}

/* A whole (K x N) matrix: group g of 8 rows starts where row 8g started. */
static uint8_t *ref_pack(int plain, const uint8_t *src, int64_t K, int64_t N, size_t size) {
    const int64_t qk = plain == MLLM_DTYPE_Q4_0 || plain == MLLM_DTYPE_Q8_0 ? 32 : 256;
    const size_t bpb = plain_block_bytes(plain), rs = (size_t)(K / qk) * bpb;
    assert_int_equal(rs * (size_t)N, size);
    uint8_t *out = calloc(1, size);
    for (int64_t g = 0; g < N / 8; g++) {
        for (int64_t b = 0; b < K / qk; b++) {
            ref_pack_block(plain, src + (size_t)g * 8 * rs, rs, b, out + (size_t)g * 8 * rs + (size_t)b * 8 * bpb);
        }
    }
    return out;
}

/* The tensors the converter must pack: the matmul weights of the layers
   and the output projection (the embedding when tied), q4_0 / q8_0 (K % 32
   == 0) or q4_K / q6_K (K % 256 == 0), N % 8 == 0. */
static int expected_pack(const mllm_model_file *f, const mllm_weight *w) {
    static const char *mats[] = {".attn_q.weight", ".attn_k.weight", ".attn_v.weight", ".attn_output.weight",
                                 ".ffn_gate.weight", ".ffn_up.weight", ".ffn_down.weight"};
    bool want = !strcmp(w->name, "output.weight") ||
                (!strcmp(w->name, "token_embd.weight") && !mllm_model_file_find(f, "output.weight"));
    for (int i = 0; i < 7 && !want; i++) {
        size_t n = strlen(w->name), m = strlen(mats[i]);
        want = !strncmp(w->name, "blk.", 4) && n > m && !strcmp(w->name + n - m, mats[i]);
    }
    if (!want || w->n_dims != 2 || w->ne[1] % 8) return -1;
    if (w->dtype == MLLM_DTYPE_Q4_0 && w->ne[0] % 32 == 0) return MLLM_DTYPE_Q4_0_X8;
    if (w->dtype == MLLM_DTYPE_Q8_0 && w->ne[0] % 32 == 0) return MLLM_DTYPE_Q8_0_X8;
    if (w->dtype == MLLM_DTYPE_Q4_K && w->ne[0] % 256 == 0) return MLLM_DTYPE_Q4_K_X8;
    if (w->dtype == MLLM_DTYPE_Q6_K && w->ne[0] % 256 == 0) return MLLM_DTYPE_Q6_K_X8;
    return -1;
}

/* Every tensor of `got` equals the one of `plain` (a file in plain dtypes),
   packed where expected_pack says (pack == true) or as is. Returns the
   number of packed tensors. */
static int expect_tensors(const char *plain, const char *got, bool pack) {
    mllm_model_file *a, *b;
    if (mllm_model_file_open(plain, &a)) fail_msg("%s", mllm_last_error());
    if (mllm_model_file_open(got, &b)) fail_msg("%s", mllm_last_error());
    assert_int_equal(a->n_weights, b->n_weights);
    int n_packed = 0;
    for (size_t i = 0; i < a->n_weights; i++) {
        const mllm_weight *wa = &a->weights[i], *wb = mllm_model_file_find(b, wa->name);
        if (!wb) fail_msg("%s: no tensor %s", got, wa->name);
        const int packed = pack ? expected_pack(a, wa) : -1;
        const int want = packed >= 0 ? packed : wa->dtype;
        if (wb->dtype != want) {
            fail_msg("%s: %s is %s, expected %s", got, wa->name, mllm_dtype_name(wb->dtype), mllm_dtype_name(want));
        }
        assert_int_equal(wa->size, wb->size);
        uint8_t *ref = packed >= 0 ? ref_pack(wa->dtype, wa->data, wa->ne[0], wa->ne[1], wa->size) : NULL;
        if (memcmp(ref ? ref : wa->data, wb->data, wa->size)) fail_msg("%s: %s: bytes differ", got, wa->name);
        free(ref);
        n_packed += packed >= 0;
    }
    mllm_model_file_close(a);
    mllm_model_file_close(b);
    return n_packed;
}

/* synth's models all tie the embedding: this gives dst = src plus its own
   output.weight (random q8_0 values: distinct from the embedding), so the
   output projection is output.weight and token_embd stays plain. */
static void make_untied(const char *src, const char *dst) {
    mllm_model_file *f;
    if (mllm_model_file_open(src, &f)) fail_msg("%s", mllm_last_error());
    assert_null(mllm_model_file_find(f, "output.weight"));
    const mllm_weight *e = mllm_model_file_find(f, "token_embd.weight");
    mllm_gguf_writer *w;
    assert_int_equal(mllm_gguf_writer_new(&w), MLLM_OK);
    assert_int_equal(cv_copy_kvs(f->gguf, w, NULL), MLLM_OK);
    for (size_t i = 0; i < f->n_weights; i++) {
        const mllm_weight *t = &f->weights[i];
        assert_int_equal(mllm_gguf_writer_add_tensor(w, t->name, t->dtype, t->n_dims, t->ne, t->data), MLLM_OK);
    }
    const size_t n = (size_t)(e->ne[0] * e->ne[1]);
    float *x = malloc(n * sizeof *x);
    tu_fill_random(x, n, 77);
    uint8_t *q = malloc(mllm_dtype_row_size(MLLM_DTYPE_Q8_0, e->ne[0]) * (size_t)e->ne[1]);
    mllm_cpu_type_get(MLLM_DTYPE_Q8_0)->from_float(x, q, (int64_t)n);
    assert_int_equal(mllm_gguf_writer_add_tensor(w, "output.weight", MLLM_DTYPE_Q8_0, 2, e->ne, q), MLLM_OK);
    if (mllm_gguf_writer_write(w, dst)) fail_msg("%s", mllm_last_error());
    mllm_gguf_writer_free(w);
    free(x);
    free(q);
    mllm_model_file_close(f);
}

/* A synth model in dtype: tied (untied == false) or with output.weight. */
static void make_model(const char *arch, const char *dtype, bool untied, const char *path) {
    if (!untied) {
        assert_int_equal(mllm_synth_write(arch, "tiny", dtype, "gguf", path, NULL, NULL), MLLM_OK);
        return;
    }
    char tied[4200];
    snprintf(tied, sizeof tied, "%s.tied.gguf", path);
    assert_int_equal(mllm_synth_write(arch, "tiny", dtype, "gguf", tied, NULL, NULL), MLLM_OK);
    make_untied(tied, path);
    remove(tied);
}

static const char *k_archs[] = {"qwen3", "llama"};
static const char *k_dtypes[] = {"q4_0", "q8_0"};

/* GGUF -> packed .mllm: the documented bytes, and the GGUF's logits bit for
   bit (the GGUF load packs the same tensors the same way). */
static void test_gguf_to_packed_mllm(void **state) {
    (void)state;
    for (int k = 0; k < 8; k++) {
        const char *g = tu_tmp("p.gguf"), *m = tu_tmp("p.mllm");
        const bool untied = k & 4;
        make_model(k_archs[k & 1], k_dtypes[(k >> 1) & 1], untied, g);
        if (convert(g, m, NULL, NULL, false, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
        /* 7 matrices x 2 layers + the output projection */
        assert_int_equal(expect_tensors(g, m, true), 15);
        mllm_model_file *f;
        assert_int_equal(mllm_model_file_open(m, &f), MLLM_OK);
        const int emb = mllm_model_file_find(f, "token_embd.weight")->dtype;
        assert_int_equal(emb == MLLM_DTYPE_Q8_0_X8, !untied); /* synth's embedding is q8_0 */
        if (untied) assert_int_equal(mllm_model_file_find(f, "output.weight")->dtype, MLLM_DTYPE_Q8_0_X8);
        mllm_model_file_close(f);
        expect_same_logits(g, m);
        free((void *)g);
        free((void *)m);
    }
}

/* Quantize and pack in one go: f32 -> --quant q8_0 (packed) is synth's q8_0
   GGUF, packed. A pipeline rule giving a matrix a dtype without an x8
   layout leaves that matrix plain. */
static void test_quantize_then_pack(void **state) {
    (void)state;
    const char *f32 = tu_tmp("q.f32.gguf"), *q8 = tu_tmp("q.q8.gguf"), *m = tu_tmp("q.mllm"), *pl = tu_tmp("pl.json");
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "f32", "gguf", f32, NULL, NULL), MLLM_OK);
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "q8_0", "gguf", q8, NULL, NULL), MLLM_OK);
    if (convert(f32, m, "q8_0", NULL, false, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
    assert_int_equal(expect_tensors(q8, m, true), 15);
    expect_same_logits(q8, m);
    FILE *fp = fopen(pl, "w");
    fputs("{\"default\": \"keep\", \"rules\": [{\"pattern\": \"ffn_down\", \"dtype\": \"f16\"}]}", fp);
    fclose(fp);
    if (convert(q8, m, NULL, pl, false, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
    mllm_model_file *f;
    assert_int_equal(mllm_model_file_open(m, &f), MLLM_OK);
    assert_int_equal(mllm_model_file_find(f, "blk.1.ffn_down.weight")->dtype, MLLM_DTYPE_F16);
    assert_int_equal(mllm_model_file_find(f, "blk.1.ffn_up.weight")->dtype, MLLM_DTYPE_Q8_0_X8);
    assert_int_equal(mllm_model_file_find(f, "blk.1.attn_norm.weight")->dtype, MLLM_DTYPE_F32);
    mllm_model_file_close(f);
    const char *paths[] = {f32, q8, m, pl};
    for (int i = 0; i < 4; i++) free((void *)paths[i]);
}

/* Packed .mllm -> GGUF: plain dtypes, the original bytes, the same logits;
   packed -> --pack none: plain, original bytes; packed -> packed: copied. */
static void test_packed_mllm_back_to_plain(void **state) {
    (void)state;
    /* tied/untied x qwen3/llama x q4_0/q8_0 */
    for (int k = 0; k < 8; k++) {
        const char *g = tu_tmp("b.gguf"), *m = tu_tmp("b.mllm"), *g2 = tu_tmp("b2.gguf");
        const char *plain = tu_tmp("b-plain.mllm"), *again = tu_tmp("b-again.mllm");
        make_model(k_archs[k & 1], k_dtypes[(k >> 1) & 1], k & 4, g);
        if (convert(g, m, NULL, NULL, false, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
        if (convert(m, g2, NULL, NULL, true, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
        assert_int_equal(expect_tensors(g, g2, false), 0);
        expect_same_logits(g, g2);
        if (convert(m, plain, NULL, NULL, false, MLLM_CONVERT_PACK_NONE)) fail_msg("%s", mllm_last_error());
        assert_int_equal(expect_tensors(g, plain, false), 0);
        if (convert(m, again, NULL, NULL, false, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
        assert_int_equal(expect_tensors(g, again, true), 15);
        const char *paths[] = {g, m, g2, plain, again};
        for (int i = 0; i < 5; i++) free((void *)paths[i]);
    }
}

/* --pack none from GGUF: every tensor as the source had it. */
static void test_pack_none(void **state) {
    (void)state;
    const char *g = tu_tmp("n.gguf"), *m = tu_tmp("n.mllm");
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "q4_0", "gguf", g, NULL, NULL), MLLM_OK);
    if (convert(g, m, NULL, NULL, false, MLLM_CONVERT_PACK_NONE)) fail_msg("%s", mllm_last_error());
    assert_int_equal(expect_tensors(g, m, false), 0);
    expect_same_logits(g, m);
    free((void *)g);
    free((void *)m);
}

/* A packed source requantized (unpacked first) gives exactly what its plain
   original gives: to q8_0 (packed again) and to f32 (GGUF). */
static void test_packed_source_requantized(void **state) {
    (void)state;
    const char *g = tu_tmp("r.gguf"), *m = tu_tmp("r.mllm");
    const char *from_g = tu_tmp("r-g.mllm"), *from_m = tu_tmp("r-m.mllm");
    const char *f_g = tu_tmp("r-g.gguf"), *f_m = tu_tmp("r-m.gguf");
    make_model("llama", "q4_0", true, g);
    if (convert(g, m, NULL, NULL, false, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
    if (convert(g, from_g, "q8_0", NULL, false, MLLM_CONVERT_PACK_NONE)) fail_msg("%s", mllm_last_error());
    if (convert(m, from_m, "q8_0", NULL, false, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
    assert_int_equal(expect_tensors(from_g, from_m, true), 15);
    if (convert(g, f_g, "f32", NULL, true, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
    if (convert(m, f_m, "f32", NULL, true, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
    assert_int_equal(expect_tensors(f_g, f_m, false), 0);
    expect_same_logits(f_g, f_m);
    const char *paths[] = {g, m, from_g, from_m, f_g, f_m};
    for (int i = 0; i < 6; i++) free((void *)paths[i]);
}

/* A qwen3 shape whose rows hold 256 values, so k-quants fit (tiny's 64 do
   not): one layer, E = F = 256, tied embedding. */
static const synth_preset k_k256 = {"qwen3", "k256", "qwen3-k256-synth", .E = 256, .L = 1, .H = 4, .Hkv = 2,
                                    .D = 64, .F = 256, .V = 512, .ctx = 4096, .theta = 1e6f, .eps = 1e-6f,
                                    .qk_norm = true, .tied = true};

static void test_kquants_packed(void **state) {
    (void)state;
    const char *f32 = tu_tmp("k.f32.gguf"), *g = tu_tmp("k.gguf"), *m = tu_tmp("k.mllm"), *g2 = tu_tmp("k2.gguf");
    const char *pl = tu_tmp("k.json"), *fg = tu_tmp("k-f-g.gguf"), *fm = tu_tmp("k-f-m.gguf");
    assert_int_equal(synth_write_gguf(&k_k256, MLLM_DTYPE_F32, f32, NULL, NULL), MLLM_OK);
    FILE *fp = fopen(pl, "w");
    fputs("{\"default\": \"q4_k\", \"rules\": [{\"pattern\": \"ffn_down|attn_v|token_embd\", \"dtype\": \"q6_k\"}]}", fp);
    fclose(fp);
    if (convert(f32, g, NULL, pl, true, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
    if (convert(g, m, NULL, NULL, false, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
    mllm_model_file *f;
    assert_int_equal(mllm_model_file_open(m, &f), MLLM_OK);
    static const struct { const char *name; int dtype; } want[] = {
        {"token_embd.weight", MLLM_DTYPE_Q6_K_X8},     {"blk.0.attn_q.weight", MLLM_DTYPE_Q4_K_X8},
        {"blk.0.attn_k.weight", MLLM_DTYPE_Q4_K_X8},   {"blk.0.attn_v.weight", MLLM_DTYPE_Q6_K_X8},
        {"blk.0.attn_output.weight", MLLM_DTYPE_Q4_K_X8}, {"blk.0.ffn_gate.weight", MLLM_DTYPE_Q4_K_X8},
        {"blk.0.ffn_up.weight", MLLM_DTYPE_Q4_K_X8},   {"blk.0.ffn_down.weight", MLLM_DTYPE_Q6_K_X8},
        {"blk.0.attn_norm.weight", MLLM_DTYPE_F32},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const mllm_weight *w = mllm_model_file_find(f, want[i].name);
        assert_non_null(w);
        if (w->dtype != want[i].dtype) fail_msg("%s: %s", want[i].name, mllm_dtype_name(w->dtype));
    }
    mllm_model_file_close(f);
    assert_int_equal(expect_tensors(g, m, true), 8); /* the documented bytes */
    expect_same_logits(g, m);
    if (convert(m, g2, NULL, NULL, true, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
    assert_int_equal(expect_tensors(g, g2, false), 0);
    /* unpacked, then dequantized: the same f32 as from the plain file */
    if (convert(g, fg, "f32", NULL, true, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
    if (convert(m, fm, "f32", NULL, true, MLLM_CONVERT_PACK_X8)) fail_msg("%s", mllm_last_error());
    assert_int_equal(expect_tensors(fg, fm, false), 0);
    const char *paths[] = {f32, g, m, g2, pl, fg, fm};
    for (int i = 0; i < 7; i++) free((void *)paths[i]);
}

static void test_refusals(void **state) {
    (void)state;
    const char *g = tu_tmp("x.gguf"), *m = tu_tmp("x.mllm");
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "f32", "gguf", g, NULL, NULL), MLLM_OK);
    assert_int_equal(convert(g, m, "q4_0x8", NULL, false, MLLM_CONVERT_PACK_X8), MLLM_ERR_INVALID_ARG);
    assert_non_null(strstr(mllm_last_error(), "kernel layout"));
    assert_int_equal(convert(g, m, NULL, NULL, false, 7), MLLM_ERR_INVALID_ARG);
    assert_non_null(strstr(mllm_last_error(), "pack"));
    FILE *fp = fopen(m, "rb");
    assert_null(fp); /* nothing written */
    free((void *)g);
    free((void *)m);
}

int main(void) {
    /* A packed .mllm and its GGUF source give the same bits only if the
       loader repacks the GGUF too: force it, whatever this CPU's path. */
    setenv("MLLM_REPACK", "1", 1);
    mllm_cpu_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gguf_to_packed_mllm),
        cmocka_unit_test(test_quantize_then_pack),
        cmocka_unit_test(test_packed_mllm_back_to_plain),
        cmocka_unit_test(test_pack_none),
        cmocka_unit_test(test_packed_source_requantized),
        cmocka_unit_test(test_kquants_packed),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
