/* References shared by the device-kernel tests (test_opencl_ops,
   test_cuda_ops, test_cuda_math): random inputs, and attention in double
   precision. */
#ifndef MLLM_TESTS_DEVICE_REF_H
#define MLLM_TESTS_DEVICE_REF_H
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "testutil.h"

static inline float *rnd(size_t n, uint64_t seed) {
    float *x = malloc(n * sizeof *x);
    tu_fill_random(x, n, seed);
    return x;
}

/* softmax(q k^T * scale) v per token and head, in double: Q and O are
   T x H x D, K and V position-major rows of Hkv * D; token t at pos[t]
   sees keys [lo, pos[t]] when causal (lo = pos[t] + 1 - window with a
   window), all n_keys otherwise. */
static inline void tu_attention_ref(const float *Q, const float *Kc, const float *Vc, const int32_t *pos, float *O, int D, int H,
                     int Hkv, int T, int n_keys, float scale, int window, bool causal) {
    double *s = malloc((size_t)n_keys * sizeof *s);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            const int kvh = h / (H / Hkv), hi = causal ? pos[t] : n_keys - 1;
            const int lo = causal && window > 0 && pos[t] + 1 > window ? pos[t] + 1 - window : 0;
            double mx = -INFINITY, sum = 0;
            for (int j = lo; j <= hi; j++) {
                double d = 0;
                for (int e = 0; e < D; e++) d += (double)Q[(t * H + h) * D + e] * Kc[(j * Hkv + kvh) * D + e];
                s[j] = d * scale;
                mx = fmax(mx, s[j]);
            }
            for (int j = lo; j <= hi; j++) sum += (s[j] = exp(s[j] - mx));
            for (int e = 0; e < D; e++) {
                double o = 0;
                for (int j = lo; j <= hi; j++) o += s[j] / sum * Vc[(j * Hkv + kvh) * D + e];
                O[(t * H + h) * D + e] = (float)o;
            }
        }
    free(s);
}

#endif
