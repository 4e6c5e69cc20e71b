/* The CUDA kernels' arithmetic on the host, without a GPU: cu_math.h's
   functions are the per-element and per-row math of cu_kernels.cu
   (__host__ __device__ there, plain C here). Each case replays a kernel as
   the device runs it (MLLM_CU_LWS lanes taking every LWS-th element or
   block, then the kernel's pairwise tree over the lanes' parts) and
   compares with the CPU's generic C kernels on odd sizes. Bounds
   (normalised MSE over a case's outputs):
     f16 -> f32: bit-identical to src/core/dtype.c for all 65536 halves;
     q8_0, q4_0, q4_K, q6_K values (get_rows): identical to the CPU's
       dequantization (to_float), every element;
     row dots (matmul, f32 / f16 / q8_0 / q4_0 / q4_K / q6_K): < 1e-10 vs a
       double product of the dequantized weights and vs mllm_cpu_mul_mat_exact;
     rmsnorm, layernorm, softmax (masked, a row fully masked), rope (neox,
       pairs, partial), add / silu_mul / gelu_mul / gelu / scale / softcap /
       gelu_tanh:
       < 1e-10 vs the generic C kernels;
     attention (causal GQA, sliding window, non-causal): < 1e-10 vs a double
       softmax(q k^T) v;
     the encoders' ops against the CPU's nodes (graph.h in eager mode):
       im2col identical; the encoder attention (full over strided rows of
       a fused QKV, over segments with an empty one) < 1e-10.
   Not checked here: the launches (grids, shared memory, barriers) and the
   device's own expf/tanhf/erff; test_cuda_ops does that where a GPU is. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu.h"
#include "backends/cuda/cu_math.h"
#include "graph/graph.h"
#include "device_ref.h"
#include "testutil.h"

#define TOL 1e-10
#define LWS MLLM_CU_LWS

/* block_sum / block_max of cu_kernels.cu, in the same order */
static float tree_sum(float *part) {
    for (int o = LWS / 2; o > 0; o >>= 1)
        for (int l = 0; l < o; l++) part[l] += part[l + o];
    return part[0];
}

static float tree_max(float *part) {
    for (int o = LWS / 2; o > 0; o >>= 1)
        for (int l = 0; l < o; l++) part[l] = fmaxf(part[l], part[l + o]);
    return part[0];
}

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void test_f16(void **state) {
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) assert_int_equal(bits(mllm_cu_f16((uint16_t)h)), bits(mllm_f16_to_f32((mllm_f16)h)));
}

typedef float (*value_fn)(const uint8_t *, int);
typedef float (*dot_fn)(const uint8_t *, int, const float *, int, int);

static float value_f32(const uint8_t *row, int k) { return mllm_cu_f32_at(row + 4 * k); }
static float value_f16(const uint8_t *row, int k) { return mllm_cu_f16_at(row + 2 * k); }
static float value_q8_0(const uint8_t *row, int k) { return mllm_cu_q8_0_value(row + 34 * (k / 32), k % 32); }
static float value_q4_0(const uint8_t *row, int k) { return mllm_cu_q4_0_value(row + 18 * (k / 32), k % 32); }
static float value_q4_K(const uint8_t *row, int k) { return mllm_cu_q4_K_value(row + 144 * (k / 256), k % 256); }
static float value_q6_K(const uint8_t *row, int k) { return mllm_cu_q6_K_value(row + 210 * (k / 256), k % 256); }

static const struct {
    mllm_dtype t;
    value_fn value;
    dot_fn dot;
    int64_t K[2];
} g_types[] = {
    {MLLM_DTYPE_F32, value_f32, mllm_cu_dot_f32, {77, 1001}},
    {MLLM_DTYPE_F16, value_f16, mllm_cu_dot_f16, {77, 1001}},
    {MLLM_DTYPE_Q8_0, value_q8_0, mllm_cu_dot_q8_0, {224, 4096}},
    {MLLM_DTYPE_Q4_0, value_q4_0, mllm_cu_dot_q4_0, {224, 4096}},
    {MLLM_DTYPE_Q4_K, value_q4_K, mllm_cu_dot_q4_K, {768, 4096}},
    {MLLM_DTYPE_Q6_K, value_q6_K, mllm_cu_dot_q6_K, {768, 4096}},
};
#define N_TYPES (sizeof g_types / sizeof g_types[0])

/* get_rows: every value of rows of every type, against to_float */
static void test_values(void **state) {
    (void)state;
    for (size_t i = 0; i < N_TYPES; i++) {
        const mllm_dtype t = g_types[i].t;
        const int64_t K = 768, R = 5;
        const size_t rb = mllm_dtype_row_size(t, K);
        float *wf = rnd((size_t)(K * R), 5 + i), *ref = malloc((size_t)K * sizeof(float));
        uint8_t *W = malloc(rb * (size_t)R);
        int64_t differ = 0;
        for (int64_t r = 0; r < R; r++) {
            mllm_cpu_type_get(t)->from_float(wf + r * K, W + (size_t)r * rb, K);
            mllm_cpu_get_row(t, W, rb, K, r, ref);
            for (int64_t k = 0; k < K; k++) differ += bits(g_types[i].value(W + (size_t)r * rb, (int)k)) != bits(ref[k]);
        }
        printf("values %-5s: %lld of %lld differ from to_float\n", mllm_dtype_name(t), (long long)differ, (long long)(K * R));
        assert_int_equal(differ, 0);
        free(wf), free(ref), free(W);
    }
}

/* k_mul_mat: LWS lanes per output, their parts added by the tree */
static void check_dot(size_t ti, int64_t K, int64_t N, int64_t T) {
    const mllm_dtype t = g_types[ti].t;
    const size_t rb = mllm_dtype_row_size(t, K);
    float *wf = rnd((size_t)(K * N), 11 + (uint64_t)t), *img = malloc((size_t)(K * N) * sizeof(float));
    uint8_t *W = malloc(rb * (size_t)N);
    for (int64_t n = 0; n < N; n++) {
        mllm_cpu_type_get(t)->from_float(wf + n * K, W + (size_t)n * rb, K);
        mllm_cpu_type_get(t)->to_float(W + (size_t)n * rb, img + n * K, K);
    }
    float *X = rnd((size_t)(K * T), 29), *got = malloc((size_t)(N * T) * sizeof(float));
    float *ref = malloc((size_t)(N * T) * sizeof(float)), *cpu = malloc((size_t)(N * T) * sizeof(float));
    float *row = malloc((size_t)K * sizeof(float));
    for (int64_t tt = 0; tt < T; tt++)
        for (int64_t n = 0; n < N; n++) {
            float part[LWS];
            for (int l = 0; l < LWS; l++) part[l] = g_types[ti].dot(W + (size_t)n * rb, (int)K, X + tt * K, l, LWS);
            got[tt * N + n] = tree_sum(part);
            double s = 0.0;
            for (int64_t k = 0; k < K; k++) s += (double)img[n * K + k] * X[tt * K + k];
            ref[tt * N + n] = (float)s;
        }
    mllm_cpu_mul_mat_exact(t, W, rb, K, X, (size_t)K * 4, T, cpu, (size_t)N, 0, N, row);
    const double e_ref = tu_nmse(got, ref, (size_t)(N * T)), e_cpu = tu_nmse(got, cpu, (size_t)(N * T));
    printf("row dot %-5s K %5lld N %3lld T %lld: NMSE vs double %.3g, vs CPU f32 %.3g\n", mllm_dtype_name(t),
           (long long)K, (long long)N, (long long)T, e_ref, e_cpu);
    assert_true(e_ref < TOL);
    assert_true(e_cpu < TOL);
    free(wf), free(img), free(W), free(X), free(got), free(ref), free(cpu), free(row);
}

static void test_row_dots(void **state) {
    (void)state;
    for (size_t i = 0; i < N_TYPES; i++) {
        check_dot(i, g_types[i].K[0], 13, 2);
        check_dot(i, g_types[i].K[1], 7, 3);
    }
}

/* k_rmsnorm, k_layernorm, k_softmax, one row */
static void rmsnorm_row(float *y, const float *x, const float *w, int n, float eps) {
    float part[LWS];
    for (int l = 0; l < LWS; l++) part[l] = mllm_cu_sumsq_part(x, n, l, LWS);
    const float scale = mllm_cu_norm_scale(tree_sum(part), n, eps);
    for (int i = 0; i < n; i++) y[i] = mllm_cu_rms_out(x[i], scale, w, i);
}

static void layernorm_row(float *y, const float *x, const float *w, const float *b, int n, float eps) {
    float part[LWS];
    for (int l = 0; l < LWS; l++) part[l] = mllm_cu_sum_part(x, n, l, LWS);
    const float mean = tree_sum(part) / (float)n;
    for (int l = 0; l < LWS; l++) part[l] = mllm_cu_var_part(x, n, mean, l, LWS);
    const float scale = mllm_cu_norm_scale(tree_sum(part), n, eps);
    for (int i = 0; i < n; i++) y[i] = mllm_cu_ln_out(x[i], mean, scale, w, b, i);
}

static void softmax_row(float *x, int n, float scale) {
    float part[LWS];
    for (int l = 0; l < LWS; l++) part[l] = mllm_cu_max_part(x, n, scale, l, LWS);
    const float mx = tree_max(part);
    if (mx == -INFINITY) {
        for (int i = 0; i < n; i++) x[i] = 0.0f;
        return;
    }
    for (int l = 0; l < LWS; l++) part[l] = 0.0f;
    for (int i = 0; i < n; i++) { /* lane i % LWS adds its entries in order */
        x[i] = mllm_cu_softmax_exp(x[i], scale, mx);
        part[i % LWS] += x[i];
    }
    const float inv = 1.0f / tree_sum(part);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

static void test_norms_softmax(void **state) {
    (void)state;
    const mllm_cpu_ops *g = mllm_cpu_ops_generic();
    static const int ns[] = {1, 7, 64, 65, 896, 2049};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        const int n = ns[i], rows = 3;
        float *x = rnd((size_t)(n * rows), 100 + i), *w = rnd((size_t)n, 200 + i), *b = rnd((size_t)n, 300 + i);
        float *ref = malloc((size_t)(n * rows) * sizeof(float)), *got = malloc((size_t)(n * rows) * sizeof(float));
        for (int withw = 0; withw <= 1; withw++) {
            for (int r = 0; r < rows; r++) {
                rmsnorm_row(got + r * n, x + r * n, withw ? w : NULL, n, 1e-6f);
                g->rmsnorm(ref + r * n, x + r * n, withw ? w : NULL, n, 1e-6f);
            }
            const double e = tu_nmse(got, ref, (size_t)(n * rows));
            printf("rmsnorm n %4d%s: NMSE %.3g\n", n, withw ? " w" : "", e);
            assert_true(e < TOL);
            for (int r = 0; r < rows; r++) {
                layernorm_row(got + r * n, x + r * n, withw ? w : NULL, withw ? b : NULL, n, 1e-5f);
                g->layernorm(ref + r * n, x + r * n, withw ? w : NULL, withw ? b : NULL, n, 1e-5f);
            }
            const double e2 = tu_nmse(got, ref, (size_t)(n * rows));
            printf("layernorm n %4d%s: NMSE %.3g\n", n, withw ? " w,b" : "", e2);
            assert_true(e2 < TOL);
        }
        for (int j = 0; j < n; j += 3) x[j] = -INFINITY;
        for (int j = 0; j < n; j++) x[2 * n + j] = -INFINITY;
        memcpy(got, x, (size_t)(n * rows) * sizeof(float));
        memcpy(ref, x, (size_t)(n * rows) * sizeof(float));
        for (int r = 0; r < rows; r++) {
            softmax_row(got + r * n, n, 0.125f);
            g->softmax(ref + r * n, n, 0.125f);
        }
        const double e = tu_nmse(got, ref, (size_t)(n * rows));
        for (int j = 0; j < n; j++) assert_true(got[2 * n + j] == 0.0f);
        printf("softmax n %4d: NMSE %.3g\n", n, e);
        assert_true(e < TOL);
        free(x), free(w), free(b), free(ref), free(got);
    }
}

static void test_rope(void **state) {
    (void)state;
    const int D = 24, H = 3, T = 5;
    for (int neox = 0; neox <= 1; neox++)
        for (int n_rot = 8; n_rot <= D; n_rot += 16) {
            const int half = n_rot / 2;
            float *x = rnd((size_t)(D * H * T), 7), *cs, *sn;
            tu_rope_tables(T, n_rot, &cs, &sn);
            float *got = malloc((size_t)(D * H * T) * sizeof(float)), *ref = tu_rope_ref(x, D, H, T, n_rot, cs, sn, neox);
            for (int i = 0; i < D * H * T; i++) { /* k_rope's index split */
                const int head = i / D, t = head / H;
                got[i] = mllm_cu_rope_value(x + head * D, i % D, n_rot, neox, cs + t * half, sn + t * half);
            }
            const double e = tu_nmse(got, ref, (size_t)(D * H * T));
            printf("rope %s n_rot %d of %d: NMSE %.3g\n", neox ? "neox" : "pairs", n_rot, D, e);
            assert_true(e < TOL);
            free(x), free(cs), free(sn), free(got), free(ref);
        }
}

static void test_elementwise(void **state) {
    (void)state;
    const mllm_cpu_ops *g = mllm_cpu_ops_generic();
    const int n = 1003;
    float *a = rnd((size_t)n, 41), *b = rnd((size_t)n, 43), *ref = malloc((size_t)n * sizeof(float)),
          *got = malloc((size_t)n * sizeof(float));
    for (int i = 0; i < n; i++) a[i] *= 4.0f; /* reach the tails of silu, tanh, erf */
    static const char *const names[] = {"silu_mul", "gelu_mul", "gelu", "softcap", "gelu_tanh"};
    for (int op = 0; op < 5; op++) {
        for (int i = 0; i < n; i++)
            got[i] = op == 0 ? mllm_cu_silu_mul(a[i], b[i]) : op == 1 ? mllm_cu_gelu_mul(a[i], b[i])
                     : op == 2 ? mllm_cu_gelu_erf(a[i]) : op == 3 ? mllm_cu_softcap(a[i], 3.0f) : mllm_cu_gelu_tanh(a[i]);
        if (op == 0) g->silu_mul(ref, a, b, n);
        else if (op == 1) g->gelu_mul(ref, a, b, n);
        else if (op == 2) g->gelu_erf(ref, a, n);
        else if (op == 3) for (int i = 0; i < n; i++) ref[i] = 3.0f * tanhf(a[i] / 3.0f);
        else /* node_compute.c's loop */
            for (int i = 0; i < n; i++)
                ref[i] = 0.5f * a[i] * (1.0f + tanhf(0.7978845608028654f * (a[i] + 0.044715f * a[i] * a[i] * a[i])));
        const double e = tu_nmse(got, ref, (size_t)n);
        printf("%-8s n %d: NMSE %.3g\n", names[op], n, e);
        assert_true(e < TOL);
    }
    free(a), free(b), free(ref), free(got);
}

/* k_attn_scores, the softmax over each row, k_attn_pv */
static void attn_cuda(const float *Q, const float *Kc, const float *Vc, const int32_t *pos, float *O, int D, int H,
                      int Hkv, int T, int n_keys, float scale, int window, bool causal) {
    float *S = malloc((size_t)(n_keys * H * T) * sizeof *S);
    for (int i = 0; i < n_keys * H * T; i++) {
        const int j = i % n_keys, th = i / n_keys, h = th % H, t = th / H;
        int lo, hi;
        mllm_cu_attn_range(pos[t], n_keys, window, causal, &lo, &hi);
        S[i] = j > hi || j < lo ? -INFINITY
                                : mllm_cu_dot_serial(Q + th * D, Kc + (j * Hkv + mllm_cu_kv_head(h, H, Hkv)) * D, D) * scale;
    }
    for (int r = 0; r < H * T; r++) softmax_row(S + r * n_keys, n_keys, 1.0f);
    for (int i = 0; i < D * H * T; i++) {
        const int d = i % D, th = i / D, h = th % H;
        float s = 0.0f;
        for (int j = 0; j < n_keys; j++) s += S[th * n_keys + j] * Vc[(j * Hkv + mllm_cu_kv_head(h, H, Hkv)) * D + d];
        O[i] = s;
    }
    free(S);
}

static void test_attention(void **state) {
    (void)state;
    const int D = TU_ATT_D, H = TU_ATT_H, Hkv = TU_ATT_HKV, n_keys = TU_ATT_KEYS;
    for (int ci = 0; ci < TU_ATT_CASES; ci++) {
        tu_attention_case a;
        tu_attention_case_make(ci, &a);
        float *got = malloc((size_t)(D * H * a.T) * sizeof(float));
        attn_cuda(a.Q, a.K, a.V, a.pos, got, D, H, Hkv, a.T, n_keys, a.scale, a.window, a.causal);
        const double e = tu_nmse(got, a.ref, (size_t)(D * H * a.T));
        printf("attention T %d pos0 %d window %d %s: NMSE %.3g\n", a.T, a.pos0, a.window, a.causal ? "causal" : "full", e);
        assert_true(e < TOL);
        tu_attention_case_free(&a);
        free(got);
    }
}

/* k_im2col and k_attn_enc, element by element and thread by thread */
static void test_encoder_ops(void **state) {
    (void)state;
    mllm_cpu_init();
    const int C = 7, T_in = 13, k = 3, stride = 2, pad = 1, T_out = (T_in + 2 * pad - k) / stride + 1;
    float *x = rnd((size_t)(C * T_in), 61);
    mllm_graph g;
    mllm_graph_init(&g, MLLM_MODE_EAGER, NULL, 1 << 20);
    const int64_t nx[2] = {C, T_in};
    const mllm_tensor *cols = mllm_op_im2col(&g, mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, nx, x, "x"), k, stride, pad);
    assert_non_null(cols);
    for (int r = 0; r < T_out; r++)
        for (int e = 0; e < C * k; e++)
            assert_true(mllm_cu_im2col_at(x, C, T_in, k, stride, pad, r, e) == ((const float *)cols->data)[r * C * k + e]);
    printf("im2col C %d T_in %d k %d stride %d pad %d: identical\n", C, T_in, k, stride, pad);
    /* attention: q, k, v views of a fused QKV (rows 3 * dim apart); segments over contiguous copies */
    const int D = 20, H = 3, dim = D * H, T = 37, n_segs = 4;
    static const int32_t segs[] = {0, 7, 7, 20, 37};
    float *qkv = rnd((size_t)(3 * dim * T), 81), *sep = malloc((size_t)(3 * dim * T) * sizeof(float));
    for (int i = 0; i < 3 * dim * T; i++) qkv[i] *= 3.0f;
    for (int t = 0; t < T; t++)
        for (int j = 0; j < 3; j++)
            memcpy(sep + ((size_t)j * T + t) * dim, qkv + ((size_t)t * 3 + j) * dim, (size_t)dim * 4);
    const int64_t nf[2] = {3 * dim, T}, ns[2] = {dim, T};
    mllm_tensor *f = mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, nf, qkv, "qkv");
    const mllm_tensor *full = mllm_op_attention_full(&g, mllm_op_view_elems(&g, f, 0, dim),
                                                     mllm_op_view_elems(&g, f, dim, dim),
                                                     mllm_op_view_elems(&g, f, 2 * dim, dim), H);
    mllm_tensor *ts = mllm_graph_input_i32(&g, n_segs + 1, "segs");
    memcpy(mllm_tensor_i32(ts), segs, sizeof segs);
    const mllm_tensor *seg = mllm_op_attention_segments(&g, mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, ns, sep, "q"),
                                                        mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, ns, sep + T * dim, "k"),
                                                        mllm_tensor_wrap(&g, MLLM_DTYPE_F32, 2, ns, sep + 2 * T * dim, "v"),
                                                        ts, H, 0.3f);
    assert_non_null(full);
    assert_non_null(seg);
    float *o = malloc((size_t)(dim * T) * sizeof(float));
    for (int pass = 0; pass < 2; pass++) {
        const bool s = pass == 1;
        const float *Q = s ? sep : qkv, *K = s ? sep + T * dim : qkv + dim, *V = s ? sep + 2 * T * dim : qkv + 2 * dim;
        const int64_t st = s ? dim : 3 * dim;
        for (int i = 0; i < T; i++)
            for (int h = 0; h < H; h++) {
                int lo, hi;
                assert_true(mllm_cu_enc_range(s ? segs : NULL, s ? n_segs : 0, T, i, &lo, &hi));
                mllm_cu_attn_enc_row(Q + i * st + h * D, K + h * D, V + h * D, st, st, D, lo, hi,
                                     s ? 0.3f : 1.0f / sqrtf((float)D), o + (i * H + h) * D);
            }
        const double e = tu_nmse(o, (s ? seg : full)->data, (size_t)(dim * T));
        printf("encoder attention %s, %d tokens, D %d H %d: NMSE %.3g\n", s ? "over segments" : "full, fused rows", T, D,
               H, e);
        assert_true(e < TOL);
    }
    int lo, hi; /* a query past the last segment is in none */
    assert_false(mllm_cu_enc_range(segs, n_segs - 1, T, 30, &lo, &hi));
    mllm_graph_free(&g);
    free(x), free(qkv), free(sep), free(o);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16),  cmocka_unit_test(test_values),      cmocka_unit_test(test_row_dots),
        cmocka_unit_test(test_norms_softmax), cmocka_unit_test(test_rope), cmocka_unit_test(test_elementwise),
        cmocka_unit_test(test_attention), cmocka_unit_test(test_encoder_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
