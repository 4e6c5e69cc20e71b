/* The arm64 tiles for the x8 packed layouts (src/backends/cpu/arm/
   repack_body.h: q4_0x8, q4_1x8, q5_0x8, q8_0x8, q4_Kx8, q5_Kx8, q6_Kx8;
   repack_i8mm.c: SMMLA tiles for q4_0x8, q4_1x8, q5_0x8, q8_0x8) against
   the generic packed kernel, per variant: NEON (SDOT emulated: every arm64
   CPU), NEON+dotprod (SDOT by element) and neon-i8mm (the SMMLA tiles for
   2+ activation rows, the SDOT ones otherwise), each where the CPU has it
   (under qemu: QEMU_CPU=max has all three, cortex-a57 only NEON;
   scripts/test.sh runs both). Odd K, every activation-tile size (M = 1..9,
   so 1..4 rows per tile and remainders), sub-ranges of row groups.
   Bounds:
     tiles vs mllm_mul_mat_packed_generic: bit for bit (exact int32 block
       sums, the generic float steps in the generic order), NMSE 0;
     tiles vs the plain generic matmul on the unpacked rows: NMSE < 1e-10
       (the float terms are summed in another order);
     rows not multiples of 8: the tiles refuse (false), nothing written;
     the NEON q8_0s activation quantizer: the generic bytes.
   On other architectures the test prints SKIPPED. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/kquants.h"
#include "backends/cpu/repack.h"
#include "backends/cpu.h"
#include "testutil.h"

#if MLLM_HAVE_ARM_KERNELS
#include "backends/cpu/arm/arm_kernels.h"

#define TOL_PLAIN 1e-10

static const mllm_cpu_isa k_isas[] = {MLLM_CPU_ISA_NEON, MLLM_CPU_ISA_NEON_DOTPROD, MLLM_CPU_ISA_NEON_I8MM};
static const mllm_dtype k_types[] = {MLLM_DTYPE_Q4_0, MLLM_DTYPE_Q4_1, MLLM_DTYPE_Q5_0,
                                     MLLM_DTYPE_Q8_0, MLLM_DTYPE_Q4_K, MLLM_DTYPE_Q5_K, MLLM_DTYPE_Q6_K};

/* Activations the generic way (the NEON quantizers are checked below). */
static void quantize_generic(mllm_dtype vt, const float *x, void *y, int64_t n) {
    switch (vt) {
    case MLLM_DTYPE_Q8_0: mllm_quantize_row_q8_0_act_generic(x, y, n); break;
    case MLLM_DTYPE_Q8_0S: mllm_quantize_row_q8_0s_generic(x, y, n); break;
    case MLLM_DTYPE_Q8_1: mllm_quantize_row_q8_1_act_generic(x, y, n); break;
    case MLLM_DTYPE_Q8_K32: mllm_quantize_row_q8_k32_generic(x, y, n); break;
    default: fail_msg("no activation type %d", (int)vt);
    }
}

/* Returns how many variants ran. */
static int check(mllm_dtype t, int64_t N, int64_t K, int64_t M, int64_t r0, int64_t r1) {
    const int packed = mllm_repack_type_for(t, K, N);
    assert_true(packed > 0);
    const mllm_dtype vt = mllm_dtype_get(t)->vec_dot_type, pvt = mllm_dtype_get(packed)->vec_dot_type;
    const size_t rs = mllm_dtype_row_size(t, K);
    char *W = tu_quant_matrix(t, N, K, 300 + (uint64_t)K), *P = malloc((size_t)N * rs);
    mllm_repack_groups((mllm_dtype)packed, W, P, K, 0, N / 8);
    const size_t xs = mllm_dtype_row_size(vt, K) + 32, pxs = mllm_dtype_row_size(pvt, K) + 8;
    char *X = malloc((size_t)M * xs), *PX = malloc((size_t)M * pxs);
    float *src = malloc((size_t)K * sizeof(float));
    for (int64_t m = 0; m < M; m++) {
        tu_fill_random(src, (size_t)K, 900 + (uint64_t)m);
        if (m == 1) src[K / 3] = -30.0f;
        quantize_generic(vt, src, X + (size_t)m * xs, K);
        quantize_generic(pvt, src, PX + (size_t)m * pxs, K);
    }
    const size_t ys = (size_t)N + 3, ny = (size_t)M * ys;
    float *ref = malloc(ny * sizeof(float)), *gen = malloc(ny * sizeof(float)), *got = malloc(ny * sizeof(float));
    for (size_t i = 0; i < ny; i++) ref[i] = gen[i] = -777.0f;
    mllm_mul_mat_generic(mllm_cpu_vec_dot_for(t, "generic"), W, rs, K, X, xs, M, ref, ys, r0, r1);
    mllm_mul_mat_packed_generic((mllm_dtype)packed, P, rs, K, PX, pxs, M, gen, ys, r0, r1);
    assert_true(tu_nmse(gen, ref, ny) <= TOL_PLAIN); /* the packing itself */
    int ran = 0;
    for (size_t v = 0; v < sizeof k_isas / sizeof k_isas[0]; v++) {
        if (!mllm_cpu_isa_available(k_isas[v])) continue;
        for (size_t i = 0; i < ny; i++) got[i] = -777.0f;
        const bool done = mllm_mul_mat_packed_arm(k_isas[v], (mllm_dtype)packed, P, rs, K, PX, pxs, M, got, ys, r0, r1);
        if (r0 % 8 != 0 || r1 % 8 != 0) {
            assert_false(done);
            for (size_t i = 0; i < ny; i++) assert_true(got[i] == -777.0f);
            continue;
        }
        assert_true(done);
        if (memcmp(got, gen, ny * sizeof(float)) != 0) {
            printf("%s %s N=%lld K=%lld M=%lld [%lld,%lld): NMSE %.3g vs generic packed (want bit-equal)\n",
                   mllm_cpu_isa_name(k_isas[v]), mllm_dtype_name(packed), (long long)N, (long long)K, (long long)M,
                   (long long)r0, (long long)r1, tu_nmse(got, gen, ny));
            fail();
        }
        assert_true(tu_nmse(got, ref, ny) <= TOL_PLAIN);
        ran++;
    }
    /* the SMMLA set called directly too, so a dispatch that stopped picking
       it could not hide it */
    const mllm_packed_group_fn *mm = mllm_packed_tiles_i8mm((mllm_dtype)packed);
    if (mm && mllm_cpu_isa_available(MLLM_CPU_ISA_NEON_I8MM)) {
        for (size_t i = 0; i < ny; i++) got[i] = -777.0f;
        const bool done = mllm_mul_mat_packed_tiles(mm, (mllm_dtype)packed, P, rs, K, PX, pxs, M, got, ys, r0, r1);
        assert_true(done == (r0 % 8 == 0 && r1 % 8 == 0));
        if (done && memcmp(got, gen, ny * sizeof(float)) != 0) {
            printf("i8mm tiles %s N=%lld K=%lld M=%lld: NMSE %.3g vs generic packed (want bit-equal)\n",
                   mllm_dtype_name(packed), (long long)N, (long long)K, (long long)M, tu_nmse(got, gen, ny));
            fail();
        }
        ran += done;
    }
    free(W), free(P), free(X), free(PX), free(src), free(ref), free(gen), free(got);
    return ran;
}

static void test_packed_tiles(void **state) {
    (void)state;
    static const int64_t Ms[] = {1, 2, 3, 4, 5, 9};
    static const struct { int64_t n, r0, r1; } ranges[] = {{8, 0, 8}, {40, 8, 32}, {24, 3, 21}};
    int ran = 0;
    for (size_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ti++) {
        const bool kq = mllm_dtype_get(k_types[ti])->block_size == 256;
        const int64_t Ks[2] = {kq ? 256 : 32, kq ? 768 : 224}; /* 1 block; an odd count */
        for (int ki = 0; ki < 2; ki++)
            for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
                for (size_t ri = 0; ri < sizeof ranges / sizeof ranges[0]; ri++)
                    ran += check(k_types[ti], ranges[ri].n, Ks[ki], Ms[mi], ranges[ri].r0, ranges[ri].r1);
    }
    /* more groups than one L2 chunk holds, prefill-sized */
    ran += check(MLLM_DTYPE_Q4_0, 1024, 1024, 6, 0, 1024);
    ran += check(MLLM_DTYPE_Q8_0, 64, 512, 7, 0, 64);
    assert_true(ran > 0);
    if (!mllm_cpu_isa_available(MLLM_CPU_ISA_NEON_DOTPROD)) printf("SKIPPED neon-dotprod: this CPU does not have it\n");
    if (!mllm_cpu_isa_available(MLLM_CPU_ISA_NEON_I8MM)) printf("SKIPPED neon-i8mm (SMMLA tiles): this CPU does not have it\n");
}

/* Only the types with tiles are repacked by default on the NEON paths. */
static void test_dispatch(void **state) {
    (void)state;
    printf("cpu path: %s\n", mllm_cpu_path());
    assert_true(mllm_cpu_has_packed_kernels());
    assert_true(mllm_cpu_has_packed_kernel(MLLM_DTYPE_Q4_0_X8));
    assert_true(mllm_cpu_has_packed_kernel(MLLM_DTYPE_Q4_K_X8));
    assert_true(mllm_cpu_has_packed_kernel(MLLM_DTYPE_Q5_0_X8));
    assert_true(mllm_cpu_has_packed_kernel(MLLM_DTYPE_Q6_K_X8));
    assert_true(mllm_cpu_has_packed_kernel(MLLM_DTYPE_Q5_K_X8));
    /* SMMLA tiles for the 32-value layouts; the k-quant ones keep SDOT */
    assert_non_null(mllm_packed_tiles_i8mm(MLLM_DTYPE_Q4_0_X8));
    assert_non_null(mllm_packed_tiles_i8mm(MLLM_DTYPE_Q4_1_X8));
    assert_non_null(mllm_packed_tiles_i8mm(MLLM_DTYPE_Q5_0_X8));
    assert_non_null(mllm_packed_tiles_i8mm(MLLM_DTYPE_Q8_0_X8));
    assert_null(mllm_packed_tiles_i8mm(MLLM_DTYPE_Q4_K_X8));
    assert_null(mllm_packed_tiles_i8mm(MLLM_DTYPE_Q8_0));
}

static void test_q8_0s_neon(void **state) {
    (void)state;
    const int64_t K = 4064, nb = K / 32;
    float *x = malloc((size_t)K * sizeof(float));
    tu_fill_random(x, (size_t)K, 5);
    x[100] = 40.0f;
    mllm_block_q8_0s *a = malloc((size_t)nb * sizeof *a), *b = malloc((size_t)nb * sizeof *b);
    mllm_quantize_row_q8_0s_generic(x, a, K);
    assert_true(mllm_quantize_row_arm(MLLM_DTYPE_Q8_0S, x, b, K));
    assert_memory_equal(a, b, (size_t)nb * sizeof *a);
    free(x), free(a), free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_q8_0s_neon),
        cmocka_unit_test(test_packed_tiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
    printf("SKIPPED: the arm64 kernels are built for arm64 targets only (this build: other CPU)\n");
    return 0;
}
#endif
