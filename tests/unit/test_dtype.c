/* The dtype table: GGUF sizes, f16/bf16 conversions of special values,
   hand-computed quantized blocks (from ggml's reference rules), and
   quantize -> dequantize error bounds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu.h"
#include "core/dtype.h"
#include "testutil.h"

static float f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t bits_from_f32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static void test_table_sizes(void **state) {
    (void)state;
    /* (type, block size, bytes per block) as ggml defines them. */
    static const struct { int t; int blk; size_t size; const char *name; bool sup; } rows[] = {
        {0, 1, 4, "f32", true},      {1, 1, 2, "f16", true},       {2, 32, 18, "q4_0", true},
        {3, 32, 20, "q4_1", true},   {6, 32, 22, "q5_0", true},    {7, 32, 24, "q5_1", true},
        {8, 32, 34, "q8_0", true},   {9, 32, 36, "q8_1", true},    {10, 256, 84, "q2_k", false},
        {11, 256, 110, "q3_k", false}, {12, 256, 144, "q4_k", true}, {13, 256, 176, "q5_k", true},
        {14, 256, 210, "q6_k", true}, {15, 256, 292, "q8_k", true}, {16, 256, 66, "iq2_xxs", false},
        {20, 32, 18, "iq4_nl", false}, {23, 256, 136, "iq4_xs", false}, {24, 1, 1, "i8", false},
        {25, 1, 2, "i16", false},    {26, 1, 4, "i32", false},     {27, 1, 8, "i64", false},
        {28, 1, 8, "f64", false},    {29, 256, 56, "iq1_m", false}, {30, 1, 2, "bf16", true},
        {34, 256, 54, "tq1_0", false}, {35, 256, 66, "tq2_0", false}, {39, 32, 17, "mxfp4", true},
        {200, 32, 18, "w4a32", true}, {201, 64, 34, "w4a32_g64", true},
        {210, 256, 320, "q8_k32", false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const mllm_dtype_traits *tr = mllm_dtype_get(rows[i].t);
        const mllm_cpu_type *ktr = mllm_cpu_type_get(rows[i].t);
        assert_non_null(tr);
        assert_string_equal(tr->name, rows[i].name);
        assert_int_equal(tr->block_size, rows[i].blk);
        assert_int_equal(tr->type_size, rows[i].size);
        assert_int_equal(tr->supported, rows[i].sup);
        assert_int_equal(mllm_dtype_from_name(rows[i].name), rows[i].t);
        if (rows[i].sup) {
            assert_non_null(ktr->to_float);
            assert_non_null(ktr->vec_dot);
            assert_non_null(ktr->from_float);
            assert_non_null(mllm_cpu_type_get(tr->vec_dot_type)->from_float);
        }
    }
    /* Gaps and out-of-range numbers have no row. */
    assert_null(mllm_dtype_get(4));
    assert_null(mllm_dtype_get(5));
    assert_null(mllm_dtype_get(31));
    assert_null(mllm_dtype_get(-1));
    assert_null(mllm_dtype_get(MLLM_DTYPE_COUNT));
    assert_null(mllm_dtype_get(1000));
    assert_int_equal(mllm_dtype_from_name("Q4_K"), MLLM_DTYPE_Q4_K);
    assert_int_equal(mllm_dtype_from_name("q4"), -1);
    assert_int_equal(mllm_dtype_from_name(NULL), -1);
    assert_string_equal(mllm_dtype_name(MLLM_DTYPE_Q6_K), "q6_k");

    assert_int_equal(mllm_dtype_row_size(MLLM_DTYPE_Q4_0, 4096), 4096 / 32 * 18);
    assert_int_equal(mllm_dtype_row_size(MLLM_DTYPE_Q6_K, 4096), 16 * 210);
    assert_int_equal(mllm_dtype_row_size(MLLM_DTYPE_F16, 7), 14);
    assert_int_equal(mllm_dtype_row_size(MLLM_DTYPE_Q4_0, 33), 0);
    assert_int_equal(mllm_dtype_row_size(MLLM_DTYPE_Q4_0, -32), 0);
    assert_int_equal(mllm_dtype_row_size((mllm_dtype)4, 32), 0);
    assert_int_equal(mllm_dtype_row_size(MLLM_DTYPE_F64, INT64_MAX), 0); /* would wrap */

    /* vec_dot_type per weight type, as llama.cpp converts activations. */
    assert_int_equal(mllm_dtype_get(MLLM_DTYPE_F32)->vec_dot_type, MLLM_DTYPE_F32);
    assert_int_equal(mllm_dtype_get(MLLM_DTYPE_F16)->vec_dot_type, MLLM_DTYPE_F16);
    assert_int_equal(mllm_dtype_get(MLLM_DTYPE_BF16)->vec_dot_type, MLLM_DTYPE_BF16);
    assert_int_equal(mllm_dtype_get(MLLM_DTYPE_Q8_0)->vec_dot_type, MLLM_DTYPE_Q8_0);
    assert_int_equal(mllm_dtype_get(MLLM_DTYPE_Q4_0)->vec_dot_type, MLLM_DTYPE_Q8_0);
    assert_int_equal(mllm_dtype_get(MLLM_DTYPE_Q4_1)->vec_dot_type, MLLM_DTYPE_Q8_1);
    /* k-quants: q8_K32 (one scale per 32 values; llama.cpp's q8_K has one per 256) */
    assert_int_equal(mllm_dtype_get(MLLM_DTYPE_Q4_K)->vec_dot_type, MLLM_DTYPE_Q8_K32);
    assert_int_equal(mllm_dtype_get(MLLM_DTYPE_Q5_K)->vec_dot_type, MLLM_DTYPE_Q8_K32);
    assert_int_equal(mllm_dtype_get(MLLM_DTYPE_Q6_K)->vec_dot_type, MLLM_DTYPE_Q8_K32);
    assert_int_equal(mllm_dtype_get(MLLM_DTYPE_Q4_K_X8)->vec_dot_type, MLLM_DTYPE_Q8_K32);
    assert_int_equal(mllm_dtype_get(MLLM_DTYPE_Q5_K_X8)->vec_dot_type, MLLM_DTYPE_Q8_K32);
    assert_int_equal(mllm_dtype_get(MLLM_DTYPE_Q6_K_X8)->vec_dot_type, MLLM_DTYPE_Q8_K32);
    assert_false(mllm_dtype_get(MLLM_DTYPE_Q8_K32)->supported); /* activation-only */
    assert_false(mllm_dtype_in_gguf(MLLM_DTYPE_Q8_K32));
}

static void test_f16_special(void **state) {
    (void)state;
    static const struct { float f; uint16_t h; } cases[] = {
        {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3c00}, {-2.0f, 0xc000},
        {0.1f, 0x2e66}, {1.0f / 3.0f, 0x3555}, {65504.0f, 0x7bff},
        {65519.99f, 0x7bff}, {65520.0f, 0x7c00}, {1e10f, 0x7c00}, {-1e10f, 0xfc00},
        {INFINITY, 0x7c00}, {-INFINITY, 0xfc00},
        {0x1p-14f, 0x0400},               /* smallest normal */
        {0x1p-24f, 0x0001},               /* smallest subnormal */
        {0x1p-25f, 0x0000},               /* tie between 0 and 2^-24: even (0) */
        {0x1.000002p-25f, 0x0001},        /* just above the tie */
        {0x3p-25f, 0x0002},               /* tie between 1 and 2 ulps: even (2) */
        {1023 * 0x1p-24f, 0x03ff},        /* largest subnormal */
        {1.0f + 0x1p-11f, 0x3c00},        /* tie: even mantissa (0) */
        {1.0f + 0x3p-11f, 0x3c02},        /* tie: even mantissa (2) */
        {0x1p-30f, 0x0000}, {-0x1p-24f, 0x8001}, {0x1p-149f, 0x0000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t h = mllm_f32_to_f16(cases[i].f);
        if (h != cases[i].h) printf("case %zu: %a -> 0x%04x, want 0x%04x\n", i, (double)cases[i].f, h, cases[i].h);
        assert_int_equal(h, cases[i].h);
    }
    /* NaN stays NaN (quiet), with its sign. */
    uint16_t hn = mllm_f32_to_f16(f32_from_bits(0x7f800001));
    assert_int_equal(hn & 0x7c00, 0x7c00);
    assert_true((hn & 0x3ff) != 0);
    assert_true(isnan(mllm_f16_to_f32(0x7e00)));
    assert_true(isinf(mllm_f16_to_f32(0x7c00)));
    assert_true(mllm_f16_to_f32(0xfc00) < 0);
    assert_true(mllm_f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(mllm_f16_to_f32(0x3555) == 0.333251953125f);
    assert_true(mllm_f16_to_f32(0x8000) == 0.0f && signbit(mllm_f16_to_f32(0x8000)));
    /* Every non-NaN half survives a round trip through float. */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;
        assert_int_equal(mllm_f32_to_f16(mllm_f16_to_f32((uint16_t)h)), h);
    }
}

/* F16C's vcvtps2ph (round to nearest even) is an independent reference for
   our software conversion: compare over a sweep of float bit patterns. */
#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("f16c"))) static uint16_t hw_f32_to_f16(float f) { return (uint16_t)_cvtss_sh(f, 0); }
#endif

static void test_f16_vs_hardware(void **state) {
    (void)state;
#if defined(__x86_64__)
    if (!__builtin_cpu_supports("avx2")) { /* every F16C CPU we target has AVX2 */
        printf("SKIPPED: no F16C on this CPU\n");
        return;
    }
    int bad = 0;
    for (uint64_t u = 0; u < 0x100000000ull; u += 4093) {
        const float f = f32_from_bits((uint32_t)u);
        const uint16_t sw = mllm_f32_to_f16(f), hw = hw_f32_to_f16(f);
        if (sw != hw && bad++ < 5) printf("0x%08x: ours 0x%04x, f16c 0x%04x\n", (unsigned)u, sw, hw);
    }
    assert_int_equal(bad, 0);
#else
    printf("SKIPPED: not x86-64\n");
#endif
}

static void test_bf16_special(void **state) {
    (void)state;
    assert_int_equal(mllm_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(mllm_f32_to_bf16(-0.0f), 0x8000);
    assert_int_equal(mllm_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);  /* tie: even */
    assert_int_equal(mllm_f32_to_bf16(1.0f + 0x3p-8f), 0x3f82);  /* tie: even */
    assert_int_equal(mllm_f32_to_bf16(1.0f + 0x1.2p-8f), 0x3f81); /* above tie */
    assert_int_equal(mllm_f32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(mllm_f32_to_bf16(-INFINITY), 0xff80);
    assert_int_equal(mllm_f32_to_bf16(f32_from_bits(0x7f7fffff)), 0x7f80); /* FLT_MAX rounds up */
    assert_int_equal(mllm_f32_to_bf16(f32_from_bits(0x7f800001)), 0x7fc0); /* sNaN -> qNaN */
    assert_int_equal(mllm_f32_to_bf16(f32_from_bits(0xffc12345)), 0xffc1);
    assert_true(mllm_bf16_to_f32(0x3f80) == 1.0f);
    assert_int_equal(bits_from_f32(mllm_bf16_to_f32(0xc049)), 0xc0490000u);
}

/* 0, 1, ..., 31: bytes worked out by hand from ggml's reference rules. */
static void ramp(float *x) { for (int j = 0; j < 32; j++) x[j] = (float)j; }

static const int8_t k_ramp_q8[32] = {0,  4,  8,  12, 16, 20, 25, 29, 33,  37,  41,  45,  49,  53,  57,  61,
                                     66, 70, 74, 78, 82, 86, 90, 94, 98, 102, 107, 111, 115, 119, 123, 127};

static void test_known_blocks(void **state) {
    (void)state;
    float x[32], neg[32];
    ramp(x);
    for (int j = 0; j < 32; j++) neg[j] = -x[j];
    const mllm_cpu_type *q80 = mllm_cpu_type_get(MLLM_DTYPE_Q8_0);
    const mllm_cpu_type *q81 = mllm_cpu_type_get(MLLM_DTYPE_Q8_1);
    const mllm_cpu_type *q40 = mllm_cpu_type_get(MLLM_DTYPE_Q4_0);
    const mllm_cpu_type *q41 = mllm_cpu_type_get(MLLM_DTYPE_Q4_1);

    /* q8_0: d = 31/127 -> f16 0x33d0; q = round(j * 127/31). */
    mllm_block_q8_0 b8;
    q80->from_float(x, &b8, 32);
    assert_int_equal(b8.d, 0x33d0);
    assert_memory_equal(b8.qs, k_ramp_q8, 32);

    /* q8_1: same, plus s = d * 2032 = 496 -> 0x5fc0. */
    mllm_block_q8_1 b81;
    q81->from_float(x, &b81, 32);
    assert_int_equal(b81.d, 0x33d0);
    assert_int_equal(b81.s, 0x5fc0);
    assert_memory_equal(b81.qs, k_ramp_q8, 32);

    /* q4_0: max = 31, d = -3.875 (0xc3c0); q = trunc(8.5 - j/3.875). */
    static const uint8_t k_q40[16] = {0x48, 0x48, 0x37, 0x37, 0x37, 0x37, 0x26, 0x26,
                                      0x26, 0x26, 0x15, 0x15, 0x15, 0x15, 0x04, 0x04};
    mllm_block_q4_0 b4;
    q40->from_float(x, &b4, 32);
    assert_int_equal(b4.d, 0xc3c0);
    assert_memory_equal(b4.qs, k_q40, 16);
    /* The mirrored block keeps the nibbles and flips the scale. */
    q40->from_float(neg, &b4, 32);
    assert_int_equal(b4.d, 0x43c0);
    assert_memory_equal(b4.qs, k_q40, 16);

    /* q4_1: m = 0, d = 31/15 (0x4022); q = trunc(j*15/31 + 0.5). */
    static const uint8_t k_q41[16] = {0x80, 0x80, 0x91, 0x91, 0xa2, 0xa2, 0xb3, 0xb3,
                                      0xc4, 0xc4, 0xd5, 0xd5, 0xe6, 0xe6, 0xf7, 0xf7};
    mllm_block_q4_1 b41;
    q41->from_float(x, &b41, 32);
    assert_int_equal(b41.d, 0x4022);
    assert_int_equal(b41.m, 0x0000);
    assert_memory_equal(b41.qs, k_q41, 16);

    /* q5_0: max = 31, d = -1.9375 (0xbfc0); q = min(31, trunc(16.5 - j*16/31)):
       16,15,15,14,...,1,1,0. Only q[0] = 16 has the fifth bit (qh = 1). */
    static const uint8_t k_q50[16] = {0x80, 0x7f, 0x7f, 0x6e, 0x6e, 0x5d, 0x5d, 0x4c,
                                      0x4c, 0x3b, 0x3b, 0x2a, 0x2a, 0x19, 0x19, 0x08};
    uint8_t b5[22];
    mllm_cpu_type_get(MLLM_DTYPE_Q5_0)->from_float(x, b5, 32);
    assert_int_equal(b5[0] | (b5[1] << 8), 0xbfc0);
    static const uint8_t k_qh[4] = {1, 0, 0, 0};
    assert_memory_equal(b5 + 2, k_qh, 4);
    assert_memory_equal(b5 + 6, k_q50, 16);
    float b5back[32];
    mllm_cpu_type_get(MLLM_DTYPE_Q5_0)->to_float(b5, b5back, 32);
    assert_true(b5back[0] == 0.0f && b5back[31] == 16 * 1.9375f && b5back[1] == 1.9375f);

    /* All-zero block: d = 0, every quant at its zero point. */
    float z[32] = {0};
    q80->from_float(z, &b8, 32);
    assert_int_equal(b8.d, 0);
    for (int j = 0; j < 32; j++) assert_int_equal(b8.qs[j], 0);
    q40->from_float(z, &b4, 32);
    assert_int_equal(b4.d, 0x8000); /* 0 / -8 is -0, as in ggml */
    for (int j = 0; j < 16; j++) assert_int_equal(b4.qs[j], 0x88);

    /* Dequantizing the ramp's q8_0 block gives q * f16(d). */
    float back[32];
    q80->from_float(x, &b8, 32);
    q80->to_float(&b8, back, 32);
    for (int j = 0; j < 32; j++) assert_true(back[j] == (float)k_ramp_q8[j] * 0x1.f4p-3f);
}

/* quantize -> dequantize on random rows; NMSE bounds per dtype. */
static void test_round_trip(void **state) {
    (void)state;
    static const struct { mllm_dtype t; double max_nmse; } cases[] = {
        {MLLM_DTYPE_F32, 0.0},   {MLLM_DTYPE_F16, 1e-6},  {MLLM_DTYPE_BF16, 3e-5},
        {MLLM_DTYPE_Q8_0, 1e-4}, {MLLM_DTYPE_Q8_1, 1e-4}, {MLLM_DTYPE_Q4_0, 1e-2},
        {MLLM_DTYPE_Q4_1, 1e-2}, {MLLM_DTYPE_Q5_0, 3e-3}, {MLLM_DTYPE_Q5_1, 3e-3},
    };
    enum { N = 4096 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    void *q = malloc(N * 4);
    tu_fill_random(x, N, 42);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const mllm_dtype_traits *tr = mllm_dtype_get(cases[i].t);
        const mllm_cpu_type *ktr = mllm_cpu_type_get(cases[i].t);
        ktr->from_float(x, q, N);
        ktr->to_float(q, y, N);
        const double e = tu_nmse(y, x, N);
        printf("%-5s round-trip nmse %.3g (bound %.0e)\n", tr->name, e, cases[i].max_nmse);
        assert_true(e <= cases[i].max_nmse);
    }
    free(x), free(y), free(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_sizes),  cmocka_unit_test(test_f16_special),
        cmocka_unit_test(test_f16_vs_hardware),
        cmocka_unit_test(test_bf16_special), cmocka_unit_test(test_known_blocks),
        cmocka_unit_test(test_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
