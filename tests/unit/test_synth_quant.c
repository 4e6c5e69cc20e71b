/* Quantized synthetic models (q8_0, q4_0, q4_1): a quantized synth file is
   the f32 synth file quantized row by row. Checked three ways: the bytes of
   every matrix equal the f32 file's rows put through the dtype table's
   quantizer (same RNG stream; the quantizers themselves are checked against
   ggml's bytes in test_dtype), the dequantized matrices are within the
   dtype's error of the f32 values, and the whole model run through the
   public API gives logits close to the f32 model's. */
#include "backends/cpu.h"
#include "testutil.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "formats/gguf.h"
#include "formats/model_file.h"
#include "synth/synth.h"
#include <mllm/mllm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bounds. Weights: the worst matrix's NMSE against the f32 values
   (measured on tiny qwen3: q8_0 3.1e-5, q4_0 7.7e-3, q4_1 6.7e-3; token_embd,
   q8_0 in every case, 2.9e-5). Logits: NMSE of the last position's logits
   against the f32 model's, 8 tokens, activations quantized as the kernels do
   (measured qwen3 / llama: q8_0 1.6e-4 / 1.5e-4, q4_0 2.2e-2 / 2.0e-2,
   q4_1 1.4e-2 / 9.8e-3). */
#define Q8_0_WEIGHT_NMSE 1e-4
#define Q4_WEIGHT_NMSE 1e-2
#define Q8_0_LOGIT_NMSE 1e-3
#define Q4_LOGIT_NMSE 5e-2

typedef struct {
    const char *name;
    int dtype;
    uint32_t ftype; /* llama.cpp's LLAMA_FTYPE_MOSTLY_* */
    int embd_dtype;
    double weight_nmse, logit_nmse;
} quant_case;

static const quant_case k_cases[] = {
    {"q8_0", MLLM_DTYPE_Q8_0, 7, MLLM_DTYPE_Q8_0, Q8_0_WEIGHT_NMSE, Q8_0_LOGIT_NMSE},
    {"q4_0", MLLM_DTYPE_Q4_0, 2, MLLM_DTYPE_Q8_0, Q4_WEIGHT_NMSE, Q4_LOGIT_NMSE},
    {"q4_1", MLLM_DTYPE_Q4_1, 3, MLLM_DTYPE_Q8_0, Q4_WEIGHT_NMSE, Q4_LOGIT_NMSE},
};
#define N_CASES (sizeof k_cases / sizeof *k_cases)

/* tu_tmp path of a freshly written tiny model; the caller frees it. */
static char *synth_path(const char *arch, const char *dtype) {
    char name[64];
    snprintf(name, sizeof name, "%s-%s.gguf", arch, dtype);
    char *path = (char *)tu_tmp(name);
    if (access(path, F_OK) != 0) {
        mllm_status st = mllm_synth_write(arch, "tiny", dtype, "gguf", path, NULL, NULL);
        if (st) fail_msg("synth %s %s: %s", arch, dtype, mllm_last_error());
    }
    return path;
}

static mllm_model_file *open_synth(const char *arch, const char *dtype) {
    char *path = synth_path(arch, dtype);
    mllm_model_file *f = NULL;
    if (mllm_model_file_open(path, &f)) fail_msg("open %s: %s", path, mllm_last_error());
    free(path);
    return f;
}

static bool is_embd(const char *name) {
    return !strcmp(name, "token_embd.weight") || !strcmp(name, "output.weight");
}

/* Every tensor: vectors f32 and byte-equal to the f32 file's; matrices in
   the case's dtype and byte-equal to the f32 file's rows quantized. */
static void check_bytes(const char *arch, const quant_case *qc) {
    mllm_model_file *ref = open_synth(arch, "f32"), *q = open_synth(arch, qc->name);
    uint32_t ftype = 99;
    assert_true(mllm_gguf_get_u32(q->gguf, "general.file_type", &ftype));
    assert_int_equal(ftype, qc->ftype);
    assert_int_equal(q->n_weights, ref->n_weights);
    int n_matrices = 0;
    for (size_t i = 0; i < ref->n_weights; i++) {
        const mllm_weight *wr = &ref->weights[i], *wq = mllm_model_file_find(q, wr->name);
        if (!wq) fail_msg("%s %s lacks %s", arch, qc->name, wr->name);
        assert_int_equal(wq->n_dims, wr->n_dims);
        assert_memory_equal(wq->ne, wr->ne, sizeof wq->ne);
        if (wr->n_dims == 1) {
            assert_int_equal(wq->dtype, MLLM_DTYPE_F32);
            assert_int_equal(wq->size, wr->size);
            if (memcmp(wq->data, wr->data, wr->size)) fail_msg("%s: %s differs from f32", qc->name, wr->name);
            continue;
        }
        int want = is_embd(wr->name) ? qc->embd_dtype : qc->dtype;
        if (wq->dtype != want) {
            fail_msg("%s %s: %s is %s, expected %s", arch, qc->name, wr->name, mllm_dtype_name(wq->dtype),
                     mllm_dtype_name(want));
        }
        size_t rb = mllm_dtype_row_size(want, wr->ne[0]);
        assert_int_equal(wq->size, rb * (size_t)wr->ne[1]);
        uint8_t *row = mllm_malloc(rb);
        assert_non_null(row);
        for (int64_t r = 0; r < wr->ne[1]; r++) {
            mllm_cpu_type_get(want)->from_float((const float *)wr->data + r * wr->ne[0], row, wr->ne[0]);
            if (memcmp(row, (const uint8_t *)wq->data + r * rb, rb)) {
                fail_msg("%s %s: %s row %lld is not the f32 row quantized", arch, qc->name, wr->name, (long long)r);
            }
        }
        mllm_free(row);
        n_matrices++;
    }
    assert_true(n_matrices == 1 + 2 * 7);
    mllm_model_file_close(ref);
    mllm_model_file_close(q);
}

static void test_types_and_bytes(void **state) {
    (void)state;
    mllm_cpu_init();
    for (size_t c = 0; c < N_CASES; c++) {
        check_bytes("qwen3", &k_cases[c]);
        check_bytes("llama", &k_cases[c]); /* q/k rows permuted before quantizing */
    }
}

/* Dequantized matrices against the f32 values, one NMSE per matrix. */
static void test_dequant_error(void **state) {
    (void)state;
    mllm_cpu_init();
    mllm_model_file *ref = open_synth("qwen3", "f32");
    for (size_t c = 0; c < N_CASES; c++) {
        const quant_case *qc = &k_cases[c];
        mllm_model_file *q = open_synth("qwen3", qc->name);
        double worst = 0, worst_embd = 0;
        for (size_t i = 0; i < ref->n_weights; i++) {
            const mllm_weight *wr = &ref->weights[i], *wq = mllm_model_file_find(q, wr->name);
            if (wr->n_dims != 2) continue;
            size_t n = (size_t)(wr->ne[0] * wr->ne[1]);
            float *deq = mllm_malloc(n * sizeof *deq);
            assert_non_null(deq);
            mllm_cpu_type_get(wq->dtype)->to_float(wq->data, deq, (int64_t)n);
            double e = tu_nmse(deq, wr->data, n);
            mllm_free(deq);
            if (is_embd(wr->name)) worst_embd = e > worst_embd ? e : worst_embd;
            else worst = e > worst ? e : worst;
        }
        printf("%s: worst matrix weight NMSE %.3g (token_embd %.3g), bound %.0e\n", qc->name, worst, worst_embd,
               qc->weight_nmse);
        assert_true(worst > 0);
        assert_true(worst < qc->weight_nmse);
        assert_true(worst_embd > 0 && worst_embd < Q8_0_WEIGHT_NMSE);
        mllm_model_file_close(q);
    }
    mllm_model_file_close(ref);
}

/* Runs `ids` through the model at `path`; copies the last logits. */
static void run_logits(const char *path, const int32_t *ids, size_t n, float *logits, int32_t n_vocab) {
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 1;
    mllm_model *m = NULL;
    if (mllm_model_load(path, &lp, &m)) fail_msg("load %s: %s", path, mllm_last_error());
    assert_int_equal(mllm_model_n_vocab(m), n_vocab);
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = 64;
    mllm_session *s = NULL;
    if (mllm_session_new(m, &sp, &s)) fail_msg("session %s: %s", path, mllm_last_error());
    if (mllm_session_eval(s, ids, n)) fail_msg("eval %s: %s", path, mllm_last_error());
    const float *l = mllm_session_logits(s);
    assert_non_null(l);
    memcpy(logits, l, (size_t)n_vocab * sizeof *logits);
    mllm_session_free(s);
    mllm_model_free(m);
}

static void test_model_logits(void **state) {
    (void)state;
    enum { V = 512 };
    static const int32_t ids[] = {1, 300, 42, 7, 255, 400, 13, 99};
    static float ref[V], got[V];
    const char *archs[] = {"qwen3", "llama"};
    for (int a = 0; a < 2; a++) {
        char *path = synth_path(archs[a], "f32");
        run_logits(path, ids, sizeof ids / sizeof *ids, ref, V);
        free(path);
        for (size_t c = 0; c < N_CASES; c++) {
            const quant_case *qc = &k_cases[c];
            path = synth_path(archs[a], qc->name);
            run_logits(path, ids, sizeof ids / sizeof *ids, got, V);
            free(path);
            double e = tu_nmse(got, ref, V);
            printf("%s %s: last-logit NMSE vs f32 %.3g, bound %.0e\n", archs[a], qc->name, e, qc->logit_nmse);
            assert_true(e > 0); /* the quantized weights really were used */
            assert_true(e < qc->logit_nmse);
        }
    }
}

static void test_bad_dtype_format(void **state) {
    (void)state;
    const char *dir = tu_tmp("quant-hf");
    const char *bad[] = {"q8_0", "q4_0", "q4_1"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(mllm_synth_write("qwen3", "tiny", bad[i], "hf", dir, NULL, NULL), MLLM_ERR_INVALID_ARG);
        assert_non_null(strstr(mllm_last_error(), "hf format supports f32|f16|bf16"));
        assert_int_not_equal(access(dir, F_OK), 0);
    }
    /* Types the table has but synth does not write. */
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "q5_0", "gguf", dir, NULL, NULL), MLLM_ERR_INVALID_ARG);
    assert_non_null(strstr(mllm_last_error(), "q5_0"));
    free((void *)dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types_and_bytes),
        cmocka_unit_test(test_dequant_error),
        cmocka_unit_test(test_model_logits),
        cmocka_unit_test(test_bad_dtype_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
