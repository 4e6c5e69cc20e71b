/* The wasm SIMD128 dot products against the generic C kernels of the same
   dtype (the specification), on odd sizes. A plain program (cmocka has no
   wasm build): built by the wasi preset as test_simd128.wasm and run under
   node by tests/e2e/wasi_kernels.sh; it prints one line per kernel and exits
   non-zero on any failure.
   Bounds: q8_0, q4_0, q4_1, q4_K, q6_K must equal the generic result bit for bit (both
   sum each block exactly in int32, then evaluate the same float expression
   in the same order); f32 sums the same float products in double in another
   order, so it may differ by the rounding of the final double: NMSE over
   all outputs <= 1e-13, and every output within 2 float ulps of the
   generic one. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu.h"
#include "backends/cpu/wasm/simd128.h"
#include "core/dtype.h"

#define F32_NMSE_BOUND 1e-13
#define N_TRIALS 8

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static float frand(void) { /* uniform in [-1, 1), fixed sequence */
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static int ulps_apart(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    if (ia < 0) ia = INT32_MIN - ia;
    if (ib < 0) ib = INT32_MIN - ib;
    const int64_t d = (int64_t)ia - ib;
    return d < 0 ? (int)-d : (int)d;
}

static int check_f32(void) {
    static const int sizes[] = {1, 3, 7, 8, 9, 15, 17, 33, 100, 257, 1023, 4097};
    double err = 0.0, ref = 0.0;
    int worst_ulps = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const int n = sizes[k];
        float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
        for (int t = 0; t < N_TRIALS; t++) {
            for (int i = 0; i < n; i++) x[i] = frand(), y[i] = frand() * 3.0f;
            float a, b;
            mllm_vec_dot_f32_simd128(n, &a, x, y);
            mllm_vec_dot_f32_generic(n, &b, x, y);
            err += ((double)a - b) * ((double)a - b);
            ref += (double)b * b;
            const int u = ulps_apart(a, b);
            if (u > worst_ulps) worst_ulps = u;
        }
        free(x);
        free(y);
    }
    const double nmse = ref > 0 ? err / ref : err;
    const int ok = nmse <= F32_NMSE_BOUND && worst_ulps <= 2;
    printf("%s f32: NMSE %.3g (bound %.0e), worst %d ulps (bound 2), sizes 1..4097\n", ok ? "ok  " : "FAIL", nmse,
           F32_NMSE_BOUND, worst_ulps);
    return ok ? 0 : 1;
}

static int check_quant(mllm_dtype t, const char *name) {
    static const int blocks[] = {1, 3, 5, 7, 33, 127};
    const mllm_dtype_traits *tr = mllm_dtype_get(t), *ty = mllm_dtype_get(tr->vec_dot_type);
    const mllm_vec_dot_fn simd = mllm_vec_dot_simd128_for(t), gen = mllm_cpu_vec_dot_for(t, "generic");
    int bad = 0, n_cmp = 0;
    for (size_t k = 0; k < sizeof blocks / sizeof blocks[0]; k++) {
        const int n = blocks[k] * tr->block_size;
        float *xf = malloc((size_t)n * sizeof *xf), *yf = malloc((size_t)n * sizeof *yf);
        void *xq = malloc((size_t)blocks[k] * tr->type_size);
        void *yq = malloc((size_t)(n / ty->block_size) * ty->type_size);
        for (int tr_i = 0; tr_i < N_TRIALS; tr_i++) {
            for (int i = 0; i < n; i++) xf[i] = frand() * (1.0f + (float)(i % 7)), yf[i] = frand();
            mllm_cpu_type_get(t)->from_float(xf, xq, n);
            mllm_cpu_quantize_row(tr->vec_dot_type, yf, yq, n);
            float a, b;
            simd(n, &a, xq, yq);
            gen(n, &b, xq, yq);
            n_cmp++;
            if (memcmp(&a, &b, sizeof a) != 0) {
                if (!bad) printf("     %s: n=%d: simd128 %.9g, generic %.9g\n", name, n, a, b);
                bad++;
            }
        }
        free(xf);
        free(yf);
        free(xq);
        free(yq);
    }
    printf("%s %s: %d of %d dots bit-identical to the generic kernel (1..127 blocks of %d)\n", bad ? "FAIL" : "ok  ", name,
           n_cmp - bad, n_cmp, tr->block_size);
    return bad ? 1 : 0;
}

int main(void) {
    int fails = check_f32();
    fails += check_quant(MLLM_DTYPE_Q8_0, "q8_0");
    fails += check_quant(MLLM_DTYPE_Q4_0, "q4_0");
    fails += check_quant(MLLM_DTYPE_Q4_1, "q4_1");
    fails += check_quant(MLLM_DTYPE_Q4_K, "q4_K");
    fails += check_quant(MLLM_DTYPE_Q6_K, "q6_K");
    /* The table a model uses holds them (unless MLLM_CPU=generic). */
    const char *want = getenv("MLLM_CPU");
    const int forced_generic = want && strcmp(want, "generic") == 0;
    const mllm_dtype ts[] = {MLLM_DTYPE_F32, MLLM_DTYPE_Q8_0, MLLM_DTYPE_Q4_0, MLLM_DTYPE_Q4_1, MLLM_DTYPE_Q4_K,
                             MLLM_DTYPE_Q6_K};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        const int in_table = mllm_cpu_type_get(ts[i])->vec_dot == mllm_vec_dot_simd128_for(ts[i]);
        if (in_table == forced_generic) {
            printf("FAIL dtype %d: the dtype table %s the SIMD128 kernel\n", (int)ts[i],
                   in_table ? "holds" : "does not hold");
            fails++;
        }
    }
    printf("%s\n", fails ? "FAILED" : "all SIMD128 kernels agree with the generic ones");
    return fails ? 1 : 0;
}
