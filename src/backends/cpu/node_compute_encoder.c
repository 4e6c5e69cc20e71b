/* The CPU compute of the encoders' ops (graph.h): RoPE from per-token
   angle tables and attention over segments of tokens (a ViT's windows or
   tiles). */
#include <math.h>
#include <string.h>
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels.h"

/* Queries per attention block: a block's scores are SEG_QBLOCK x segment
   floats of scratch per thread. */
#define SEG_QBLOCK 64

void mllm_compute_rope_table(mllm_tensor *t, int ith, int nth) {
    const mllm_cpu_ops *k = mllm_cpu_ops_get();
    const int64_t D = t->ne[0], H = t->ne[1], T = t->ne[2];
    const float *x = t->src[0]->data, *cs = t->src[1]->data, *sn = t->src[2]->data;
    for (int64_t r = ith; r < H * T; r += nth) {
        const int64_t tt = r / H;
        float *dst = (float *)t->data + r * D;
        memcpy(dst, x + r * D, (size_t)D * sizeof(float));
        k->rope(dst, (int)D, cs + tt * (D / 2), sn + tt * (D / 2), true);
    }
}

static int longest_segment(const mllm_tensor *t) {
    const mllm_tensor *segs = t->src[3];
    const int32_t *s = segs->data;
    int n = 0;
    for (int64_t i = 0; i + 1 < segs->ne[0]; i++)
        if (s[i + 1] - s[i] > n) n = s[i + 1] - s[i];
    return n;
}

static size_t per_thread(int max_len, int64_t hd) {
    return (size_t)SEG_QBLOCK * (size_t)max_len + (size_t)hd * (size_t)max_len;
}

size_t mllm_attention_segments_work_size(const mllm_tensor *t, int nth) {
    return (size_t)nth * per_thread(longest_segment(t), t->ne[0] / t->ip[0]) * sizeof(float);
}

/* One job per (segment, head): scores of a block of SEG_QBLOCK queries
   against the segment's keys and their product with V^T, both through the
   CPU GEMM (the scores' rows are as many as the segment's tokens: this is
   the hot spot of a ViT at high resolution). Offsets outside [0, T] or out
   of order: the segment is skipped (its output rows keep what they held). */
void mllm_compute_attention_segments(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth) {
    const int heads = t->ip[0];
    const int64_t E = t->ne[0], T = t->ne[1], hd = E / heads;
    const int max_len = longest_segment(t);
    float *S = (float *)g->work + per_thread(max_len, hd) * (size_t)ith, *VT = S + (size_t)SEG_QBLOCK * max_len;
    const float scale = t->fp[0];
    const mllm_cpu_ops *ops = mllm_cpu_ops_get();
    const size_t row = (size_t)E * sizeof(float);
    const int32_t *segs = t->src[3]->data;
    const int n_segs = (int)t->src[3]->ne[0] - 1;
    int task = 0;
    for (int s = 0; s < n_segs; s++)
        for (int h = 0; h < heads; h++, task++) {
            const int t0 = segs[s], n = segs[s + 1] - t0;
            if (task % nth != ith || t0 < 0 || n < 1 || t0 + n > T) continue;
            const float *q = (const float *)t->src[0]->data + (size_t)t0 * E + (size_t)h * hd;
            const float *kk = (const float *)t->src[1]->data + (size_t)t0 * E + (size_t)h * hd;
            const float *vv = (const float *)t->src[2]->data + (size_t)t0 * E + (size_t)h * hd;
            for (int j = 0; j < n; j++)
                for (int64_t d = 0; d < hd; d++) VT[(size_t)d * n + j] = vv[(size_t)j * E + d];
            for (int i0 = 0; i0 < n; i0 += SEG_QBLOCK) {
                const int nb = n - i0 < SEG_QBLOCK ? n - i0 : SEG_QBLOCK;
                mllm_cpu_gemm(MLLM_DTYPE_F32, kk, row, hd, q + (size_t)i0 * E, row, nb, S, (size_t)n, 0, n);
                for (int i = 0; i < nb; i++) ops->softmax(S + (size_t)i * n, n, scale);
                float *o = (float *)t->data + (size_t)(t0 + i0) * E + (size_t)h * hd;
                mllm_cpu_gemm(MLLM_DTYPE_F32, VT, (size_t)n * sizeof(float), n, S, (size_t)n * sizeof(float), nb, o,
                              (size_t)E, 0, hd);
            }
        }
}
