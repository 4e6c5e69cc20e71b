/* The Qwen2.5-VL vision tower's forward pass (qwen2vl_vision.h), on f32
   activations: every linear layer through the CPU GEMM (weights f32 / f16
   / bf16 as stored), attention per window and head as two GEMMs per block
   of queries, all split over the thread pool. Token order inside: the
   window order of transformers (get_vision_window_index), so each window
   is a contiguous run of rows; the merger's output is put back in image
   order at the end. */
#include <math.h>
#include <string.h>
#include "backends/cpu/kernels.h"
#include "core/alloc.h"
#include "core/error.h"
#include "models/vision/qwen2vl_vision_internal.h"

static void linear(mllm_qwen2vl_vision *v, const qv_linear *L, const float *X, int64_t M, float *Y) {
    qv_linear_run(v->pool, L, X, M, Y);
}

/* As transformers' RMSNorm: x / sqrt(mean(x^2) + 1e-6) * w, in float32. */
static void rmsnorm(const float *x, const float *w, int64_t M, int64_t D, float *y) {
    for (int64_t m = 0; m < M; m++) {
        const float *a = x + m * D;
        float *o = y + m * D;
        double s = 0;
        for (int64_t i = 0; i < D; i++) s += (double)a[i] * a[i];
        float r = 1.0f / sqrtf((float)(s / (double)D) + 1e-6f);
        for (int64_t i = 0; i < D; i++) o[i] = w[i] * (a[i] * r);
    }
}

/* rotate_half rotary: dims i and i + hd/2 turn by ang[i] */
static void rope(float *x, const float *cs, const float *sn, int hd) {
    const int half = hd / 2;
    for (int i = 0; i < half; i++) {
        float a = x[i], b = x[i + half];
        x[i] = a * cs[i] - b * sn[i];
        x[i + half] = b * cs[i] + a * sn[i];
    }
}

mllm_status mllm_qwen2vl_vision_encode(mllm_qwen2vl_vision *v, const mllm_qwen2vl_pixels *px, float **emb,
                                       int64_t *n_tokens) {
    if (emb) *emb = NULL;
    if (n_tokens) *n_tokens = 0;
    if (!v || !px || !px->patches || !emb || !n_tokens)
        return mllm_err(MLLM_ERR_INVALID_ARG, "qwen2vl vision: NULL argument");
    const mllm_qwen2vl_vision_config *c = &v->c;
    const int ms = c->merge, gh = px->grid_h, gw = px->grid_w;
    if (px->grid_t != 1)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "qwen2vl vision: grid_t %d (videos are not encoded yet)", px->grid_t);
    if (gh < ms || gw < ms || gh % ms || gw % ms || gh > MLLM_QWEN2VL_MAX_GRID || gw > MLLM_QWEN2VL_MAX_GRID ||
        px->n_patches != (int64_t)gh * gw || px->patch_dim != v->patch.n_in)
        return mllm_err(MLLM_ERR_INVALID_ARG,
                        "qwen2vl vision: %lld patches of %lld values for a %d x %d grid (the tower takes %lld)",
                        (long long)px->n_patches, (long long)px->patch_dim, gh, gw, (long long)v->patch.n_in);
    const int64_t n = px->n_patches, H = c->hidden, F = c->intermediate, hd = H / c->heads;
    const int unit = ms * ms, lh = gh / ms, lw = gw / ms, nu = lh * lw;
    const int wu = c->window / ms / c->patch; /* window side in merged units */
    /* window order of the merged units, and the windows' token offsets */
    const int nwh = (lh + wu - (lh % wu)) / wu, nww = (lw + wu - (lw % wu)) / wu; /* as transformers pads */
    int32_t *order = mllm_malloc((size_t)nu * sizeof(int32_t));
    int32_t *wsegs = mllm_malloc(((size_t)nwh * nww + 2) * sizeof(int32_t));
    int32_t fsegs[2] = {0, (int32_t)n};
    float *Hs = mllm_malloc_aligned((size_t)n * H * sizeof(float));
    float *Xn = mllm_malloc_aligned((size_t)n * H * sizeof(float));
    float *big = mllm_malloc_aligned((size_t)n * (size_t)(3 * H > 2 * F ? 3 * H : 2 * F) * sizeof(float));
    float *cs = mllm_malloc((size_t)n * (hd / 2) * sizeof(float)), *sn = mllm_malloc((size_t)n * (hd / 2) * sizeof(float));
    const int nth = v->pool ? mllm_pool_size(v->pool) : 1;
    const int max_len = (int)n;
    const size_t per = qv_attention_scratch(max_len, (int)hd);
    float *scratch = mllm_malloc_aligned(per * (size_t)nth * sizeof(float));
    float *out = mllm_malloc((size_t)nu * c->out_hidden * sizeof(float));
    float *m1 = mllm_malloc_aligned((size_t)nu * v->mlp0.n_out * sizeof(float));
    float *m2 = mllm_malloc_aligned((size_t)nu * c->out_hidden * sizeof(float));
    if (!order || !wsegs || !Hs || !Xn || !big || !cs || !sn || !scratch || !out || !m1 || !m2) {
        mllm_free(order), mllm_free(wsegs), mllm_free_aligned(Hs), mllm_free_aligned(Xn), mllm_free_aligned(big);
        mllm_free(cs), mllm_free(sn), mllm_free_aligned(scratch), mllm_free(out), mllm_free_aligned(m1);
        mllm_free_aligned(m2);
        return mllm_err(MLLM_ERR_NOMEM, "qwen2vl vision: out of memory for %lld patches", (long long)n);
    }
    int k = 0, nseg = 0;
    wsegs[0] = 0;
    for (int wy = 0; wy < nwh; wy++)
        for (int wx = 0; wx < nww; wx++) {
            int cnt = 0;
            for (int iy = 0; iy < wu; iy++)
                for (int ix = 0; ix < wu; ix++) {
                    int y = wy * wu + iy, x = wx * wu + ix;
                    if (y < lh && x < lw) order[k++] = y * lw + x, cnt++;
                }
            if (cnt) wsegs[nseg + 1] = wsegs[nseg] + cnt * unit, nseg++; /* empty windows dropped (unique_consecutive) */
        }
    /* patch embedding, in window order: unit u's rows are patches 4u .. 4u+3 */
    float *X0 = big; /* n x H, before the permutation */
    linear(v, &v->patch, px->patches, n, X0);
    /* 2-D rotary angles of each token: h for the first half of the pairs, w for the second */
    const int q4 = (int)hd / 4;
    float inv[256]; /* head size <= 1024 (qwen2vl_vision_load.c) */
    for (int j = 0; j < q4; j++) inv[j] = 1.0f / powf(c->rope_theta, (float)(2 * j) / (float)(hd / 2));
    for (int i = 0; i < nu; i++) {
        const int u = order[i], by = u / lw, bx = u % lw;
        for (int r = 0; r < unit; r++) {
            const int64_t src = (int64_t)u * unit + r, dst = (int64_t)i * unit + r;
            memcpy(Hs + dst * H, X0 + src * H, (size_t)H * sizeof(float));
            const int hp = by * ms + r / ms, wp = bx * ms + r % ms;
            for (int j = 0; j < q4; j++) {
                float ah = (float)hp * inv[j], aw = (float)wp * inv[j];
                cs[dst * (hd / 2) + j] = cosf(ah), sn[dst * (hd / 2) + j] = sinf(ah);
                cs[dst * (hd / 2) + q4 + j] = cosf(aw), sn[dst * (hd / 2) + q4 + j] = sinf(aw);
            }
        }
    }
    for (int l = 0; l < c->depth; l++) {
        const qv_block *b = &v->blocks[l];
        bool full = false;
        for (int i = 0; i < c->n_fullatt; i++) full |= c->fullatt[i] == l;
        rmsnorm(Hs, b->norm1, n, H, Xn);
        float *qkv = big;
        linear(v, &b->qkv, Xn, n, qkv);
        for (int64_t t = 0; t < n; t++)
            for (int h = 0; h < c->heads; h++) {
                rope(qkv + t * 3 * H + h * hd, cs + t * (hd / 2), sn + t * (hd / 2), (int)hd);
                rope(qkv + t * 3 * H + H + h * hd, cs + t * (hd / 2), sn + t * (hd / 2), (int)hd);
            }
        qv_attention_job aj = {qkv, Xn, full ? fsegs : wsegs, full ? 1 : nseg, c->heads, (int)hd, (int)H, max_len, scratch, per};
        qv_attention(v->pool, &aj);
        float *po = big; /* qkv is consumed: reuse for the projection */
        linear(v, &b->proj, Xn, n, po);
        for (int64_t i = 0; i < n * H; i++) Hs[i] += po[i];
        rmsnorm(Hs, b->norm2, n, H, Xn);
        float *g = big, *u = big + n * F;
        linear(v, &b->gate, Xn, n, g);
        linear(v, &b->up, Xn, n, u);
        for (int64_t i = 0; i < n * F; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
        linear(v, &b->down, g, n, Xn);
        for (int64_t i = 0; i < n * H; i++) Hs[i] += Xn[i];
    }
    /* merger: RMSNorm per token, 4 consecutive tokens as one row, MLP with exact GELU */
    rmsnorm(Hs, v->merge_norm, n, H, Xn);
    linear(v, &v->mlp0, Xn, nu, m1);
    for (int64_t i = 0; i < (int64_t)nu * v->mlp0.n_out; i++) m1[i] = 0.5f * m1[i] * (1.0f + erff(m1[i] * (float)M_SQRT1_2));
    linear(v, &v->mlp2, m1, nu, m2);
    for (int i = 0; i < nu; i++) memcpy(out + (size_t)order[i] * c->out_hidden, m2 + (size_t)i * c->out_hidden,
                                        (size_t)c->out_hidden * sizeof(float));
    mllm_free(order), mllm_free(wsegs), mllm_free_aligned(Hs), mllm_free_aligned(Xn), mllm_free_aligned(big);
    mllm_free(cs), mllm_free(sn), mllm_free_aligned(scratch), mllm_free_aligned(m1), mllm_free_aligned(m2);
    *emb = out;
    *n_tokens = nu;
    return MLLM_OK;
}
