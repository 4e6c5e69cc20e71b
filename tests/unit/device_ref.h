/* References shared by the device-kernel tests (test_opencl_ops,
   test_cuda_ops, test_cuda_math): random inputs, and attention in double
   precision. */
#ifndef MLLM_TESTS_DEVICE_REF_H
#define MLLM_TESTS_DEVICE_REF_H
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "testutil.h"

static inline float *rnd(size_t n, uint64_t seed) {
    float *x = malloc(n * sizeof *x);
    tu_fill_random(x, n, seed);
    return x;
}

/* RoPE tables for the device tests: T rows of n_rot/2 cos and sin of
   (t + 3) * 10000^(-2i/n_rot); the caller frees *cs and *sn. */
static inline void tu_rope_tables(int T, int n_rot, float **cs, float **sn) {
    const int half = n_rot / 2;
    *cs = malloc((size_t)(T * half) * sizeof(float)), *sn = malloc((size_t)(T * half) * sizeof(float));
    for (int t = 0; t < T; t++)
        for (int i = 0; i < half; i++) {
            const float th = (float)(t + 3) * powf(10000.0f, -2.0f * (float)i / (float)n_rot);
            (*cs)[t * half + i] = cosf(th), (*sn)[t * half + i] = sinf(th);
        }
}

/* The generic C kernel's RoPE of x (T x H x D) with those tables, as a
   fresh array (the caller frees it). */
static inline float *tu_rope_ref(const float *x, int D, int H, int T, int n_rot, const float *cs, const float *sn,
                                 bool neox) {
    const int half = n_rot / 2;
    float *ref = malloc((size_t)(D * H * T) * sizeof(float));
    memcpy(ref, x, (size_t)(D * H * T) * sizeof(float));
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++)
            mllm_cpu_ops_generic()->rope(ref + (t * H + h) * D, n_rot, cs + t * half, sn + t * half, neox);
    return ref;
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

/* The attention cases of the device tests: D 40, 6 heads over 2 KV heads,
   37 keys; case 0: one token at the last position, 1: five tokens, 2: nine
   in a sliding window of 7, 3: four tokens non-causal. make fills the
   inputs and the double reference (ref); scale is 1/sqrt(D). */
enum { TU_ATT_D = 40, TU_ATT_H = 6, TU_ATT_HKV = 2, TU_ATT_KEYS = 37, TU_ATT_CASES = 4 };
typedef struct {
    int T, pos0, window;
    bool causal;
    float scale;
    int32_t pos[16];
    float *Q, *K, *V, *ref;
} tu_attention_case;

static inline void tu_attention_case_make(int ci, tu_attention_case *a) {
    static const struct { int T, pos0, window; bool causal; } cases[TU_ATT_CASES] = {
        {1, 36, 0, true}, {5, 32, 0, true}, {9, 20, 7, true}, {4, 0, 0, false},
    };
    const int D = TU_ATT_D, H = TU_ATT_H, Hkv = TU_ATT_HKV, n_keys = TU_ATT_KEYS, T = cases[ci].T;
    a->T = T, a->pos0 = cases[ci].pos0, a->window = cases[ci].window, a->causal = cases[ci].causal;
    a->scale = 1.0f / sqrtf((float)D);
    for (int t = 0; t < T; t++) a->pos[t] = a->pos0 + t;
    a->Q = rnd((size_t)(D * H * T), 61 + (uint64_t)ci);
    a->K = rnd((size_t)(n_keys * Hkv * D), 67);
    a->V = rnd((size_t)(n_keys * Hkv * D), 71);
    a->ref = malloc((size_t)(D * H * T) * sizeof(float));
    tu_attention_ref(a->Q, a->K, a->V, a->pos, a->ref, D, H, Hkv, T, n_keys, a->scale, a->window, a->causal);
}

static inline void tu_attention_case_free(tu_attention_case *a) { free(a->Q), free(a->K), free(a->V), free(a->ref); }

#endif
