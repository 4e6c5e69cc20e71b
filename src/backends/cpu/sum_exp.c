/* mllm_cpu_sum_exp: the log-softmax normaliser's sum over a vocabulary
   (Whisper's decoder calls it once or twice per sequence and step, on its
   51,864 logits: with libm's exp one after another it was a fifth of a
   beam-5 decode, serial). The generic path is that loop; x86 with AVX2
   runs a 4-lane double exp (x86/sum_exp_avx2.c). */
#include <math.h>

#include "backends/cpu/kernels_internal.h"

/* The reference: libm exp in double, index order. */
double mllm_sum_exp_generic(const float *x, int n, float mx, int ts_from, double *ts_sum) {
    double sum = 0, ts = 0;
    for (int i = 0; i < n; i++) {
        const double e = x[i] == -INFINITY ? 0.0 : exp((double)(x[i] - mx));
        sum += e;
        if (i >= ts_from) ts += e;
    }
    if (ts_sum) *ts_sum = ts;
    return sum;
}

double mllm_cpu_sum_exp(const float *x, int n, float mx, int ts_from, double *ts_sum) {
    if (ts_from < 0) ts_from = 0;
    if (ts_from > n) ts_from = n;
#if MLLM_HAVE_X86_KERNELS
    /* mx = -inf: every term is -inf - -inf, which the generic loop skips */
    if (mx > -INFINITY && mllm_cpu_isa_is_x86(mllm_cpu_isa_get())) return mllm_sum_exp_avx2(x, n, mx, ts_from, ts_sum);
#endif
    return mllm_sum_exp_generic(x, n, mx, ts_from, ts_sum);
}
