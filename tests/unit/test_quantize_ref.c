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

#include "backends/cpu/type_kernels.h"
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

static void check_type(const char *name) {
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
        ktr->from_float(x + (size_t)r * N, got + r * row, N);
        for (size_t b = 0; b < row / tr->type_size; b++) {
            const size_t off = r * row + b * tr->type_size;
            if (memcmp(got + off, want + off, tr->type_size) != 0) {
                if (bad_blocks < 4) printf("%s: row %d block %zu differs from ggml\n", name, r, b);
                bad_blocks++;
            }
        }
    }
    printf("%s: %d of %zu blocks differ\n", name, bad_blocks, ROWS * row / tr->type_size);
    assert_int_equal(bad_blocks, 0);
    free(x), free(want), free(got);
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
        cmocka_unit_test(test_mxfp4),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
