/* Our quantizers against ggml's, byte for byte. tests/data/quant/ holds 8
   rows x 1024 floats (gaussian, heavy-tailed, all-positive, all-negative,
   zero and constant super-blocks, tiny (f16-subnormal scales), large,
   exact ties) and the bytes ggml's quantize_row_<type>_ref wrote for them
   (tools/reference/quant_reference.py: ggml's C code from llama-cpp-python,
   cross-checked with gguf.quants' numpy ports where those exist). Any
   difference fails: llama-quantize uses these same reference quantizers,
   so equal bytes here mean our quantized files equal llama.cpp's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu.h"
#include "core/dtype.h"
#include "testutil.h"

enum { ROWS = 8, N = 1024 };

static float *load_input(void) {
    size_t len = 0;
    const char *path = tu_data("quant/input.f32");
    float *x = tu_read_file(path, &len);
    free((void *)path);
    assert_non_null(x);
    assert_int_equal(len, sizeof(float) * ROWS * N);
    return x;
}

/* via: 0 the reference quantizer (from_float), 1 the weight-row dispatch
   (mllm_cpu_quantize_weight_row: SIMD where this CPU has it). */
static void check_type_via(const char *name, int via) {
    const int t = mllm_dtype_from_name(name);
    assert_true(t >= 0);
    const mllm_dtype_traits *tr = mllm_dtype_get(t);
    const mllm_cpu_type *ktr = mllm_cpu_type_get(t);
    assert_non_null(tr);
    assert_non_null(ktr->from_float);
    float *x = load_input();
    char rel[64];
    snprintf(rel, sizeof rel, "quant/%s.bin", name);
    const char *path = tu_data(rel);
    size_t len = 0;
    uint8_t *want = tu_read_file(path, &len);
    free((void *)path);
    const size_t row = mllm_dtype_row_size((mllm_dtype)t, N);
    assert_non_null(want);
    assert_int_equal(len, row * ROWS);
    uint8_t *got = calloc(ROWS, row);
    int bad_blocks = 0;
    for (int r = 0; r < ROWS; r++) {
        if (via) mllm_cpu_quantize_weight_row((mllm_dtype)t, x + (size_t)r * N, got + r * row, N);
        else ktr->from_float(x + (size_t)r * N, got + r * row, N);
        for (size_t b = 0; b < row / tr->type_size; b++) {
            const size_t off = r * row + b * tr->type_size;
            if (memcmp(got + off, want + off, tr->type_size) != 0) {
                if (bad_blocks < 4) printf("%s: row %d block %zu differs from ggml\n", name, r, b);
                bad_blocks++;
            }
        }
    }
    printf("%s%s: %d of %zu blocks differ\n", name, via ? " (weight-row dispatch)" : "", bad_blocks,
           ROWS * row / tr->type_size);
    assert_int_equal(bad_blocks, 0);
    free(x), free(want), free(got);
}

static void check_type(const char *name) {
    check_type_via(name, 0);
    check_type_via(name, 1);
}

/* The dispatch on rows of an odd number of blocks, random scales, a block
   whose largest magnitude appears twice with both signs, all zeros: the
   reference's bytes. (Not NaN or infinity: the reference's int8 cast of
   those is undefined behaviour; the SIMD q4_0 hands such blocks to it.) */
static void test_weight_row_dispatch(void **s) {
    (void)s;
    enum { NB = 7, K = 32 * NB };
    float x[K];
    tu_fill_random(x, K, 77);
    for (int i = 0; i < K; i++) x[i] *= (float)(1 + i / 32) * 0.37f;
    x[40] = 9.0f, x[50] = -9.0f;           /* block 1: tie, the first (+9) wins */
    x[70] = -9.5f, x[90] = 9.5f;           /* block 2: tie, the first (-9.5) wins */
    for (int i = 96; i < 128; i++) x[i] = 0; /* block 3: zeros */
    x[130] = 1e-30f;                        /* block 4: a tiny value beside ordinary ones */
    static const int types[] = {MLLM_DTYPE_Q4_0, MLLM_DTYPE_Q4_1, MLLM_DTYPE_Q8_0, MLLM_DTYPE_Q5_0};
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        const size_t row = mllm_dtype_row_size((mllm_dtype)types[t], K);
        uint8_t *a = calloc(1, row), *b = calloc(1, row);
        mllm_cpu_type_get(types[t])->from_float(x, a, K);
        mllm_cpu_quantize_weight_row((mllm_dtype)types[t], x, b, K);
        assert_memory_equal(a, b, row);
        free(a), free(b);
    }
}

static void test_q4_0(void **s) { (void)s; check_type("q4_0"); }
static void test_q4_1(void **s) { (void)s; check_type("q4_1"); }
static void test_q5_0(void **s) { (void)s; check_type("q5_0"); }
static void test_q5_1(void **s) { (void)s; check_type("q5_1"); }
static void test_q8_0(void **s) { (void)s; check_type("q8_0"); }
static void test_q4_k(void **s) { (void)s; check_type("q4_k"); }
static void test_q5_k(void **s) { (void)s; check_type("q5_k"); }
static void test_q6_k(void **s) { (void)s; check_type("q6_k"); }
static void test_q8_k(void **s) { (void)s; check_type("q8_k"); }
static void test_mxfp4(void **s) { (void)s; check_type("mxfp4"); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q4_0), cmocka_unit_test(test_q4_1), cmocka_unit_test(test_q5_0),
        cmocka_unit_test(test_q5_1), cmocka_unit_test(test_q8_0), cmocka_unit_test(test_q4_k),
        cmocka_unit_test(test_q5_k), cmocka_unit_test(test_q6_k), cmocka_unit_test(test_q8_k),
        cmocka_unit_test(test_mxfp4), cmocka_unit_test(test_weight_row_dispatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
