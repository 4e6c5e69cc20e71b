/* The Idefics3 / SmolVLM vision forward pass (idefics3_vision.h) on f32
   activations: the tiles are one batch of tokens, attention is per tile
   (one segment each), every linear layer runs through the CPU GEMM. The
   processor only makes full square tiles, so every patch is valid and
   SigLIP's bucketed position ids are the identity (checked in
   tools/reference/make_smolvlm_tiny.py): no patch mask is needed. */
#include <math.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "models/vision/idefics3_vision_internal.h"

/* As torch's LayerNorm: mean and biased variance, in float32 with a
   double accumulator. */
static void layernorm(const float *x, const float *w, const float *b, float eps, int64_t M, int64_t D, float *y) {
    for (int64_t m = 0; m < M; m++) {
        const float *a = x + m * D;
        float *o = y + m * D;
        double s = 0, s2 = 0;
        for (int64_t i = 0; i < D; i++) s += a[i];
        const float mean = (float)(s / (double)D);
        for (int64_t i = 0; i < D; i++) s2 += (double)(a[i] - mean) * (a[i] - mean);
        const float r = 1.0f / sqrtf((float)(s2 / (double)D) + eps);
        for (int64_t i = 0; i < D; i++) o[i] = (a[i] - mean) * r * w[i] + b[i];
    }
}

/* gelu_pytorch_tanh */
static float gelu_tanh(float x) { return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x))); }

mllm_status mllm_idefics3_vision_encode(mllm_idefics3_vision *v, const mllm_idefics3_pixels *px, float **emb,
                                        int64_t *n_tokens) {
    if (emb) *emb = NULL;
    if (n_tokens) *n_tokens = 0;
    if (!v || !px || !px->pixels || !emb || !n_tokens)
        return mllm_err(MLLM_ERR_INVALID_ARG, "idefics3 vision: NULL argument");
    const mllm_idefics3_vision_config *c = &v->c;
    if (px->tile != c->image_size || px->n_tiles < 1 || px->n_tiles > MLLM_IDEFICS3_MAX_TILES)
        return mllm_err(MLLM_ERR_INVALID_ARG, "idefics3 vision: %d tiles of %d pixels (the tower takes %d)",
                        px->n_tiles, px->tile, c->image_size);
    const int P = c->patch, side = c->image_size / P, s = c->scale, T = c->image_size;
    const int64_t per = (int64_t)side * side, n = per * px->n_tiles, H = c->hidden, F = c->intermediate;
    const int64_t hd = H / c->heads, pd = 3LL * P * P, rows_per = per / ((int64_t)s * s), nrows = rows_per * px->n_tiles;
    const int nth = v->pool ? mllm_pool_size(v->pool) : 1;
    const size_t sper = qv_attention_scratch((int)per, (int)hd);
    float *patches = mllm_malloc_aligned((size_t)n * (size_t)(pd > 3 * H ? pd : 3 * H) * sizeof(float));
    float *Hs = mllm_malloc_aligned((size_t)n * H * sizeof(float));
    float *Xn = mllm_malloc_aligned((size_t)n * H * sizeof(float));
    float *big = mllm_malloc_aligned((size_t)n * (size_t)(3 * H > F ? 3 * H : F) * sizeof(float));
    float *scratch = mllm_malloc_aligned(sper * (size_t)nth * sizeof(float));
    int32_t *segs = mllm_malloc(((size_t)px->n_tiles + 1) * sizeof(int32_t));
    float *out = mllm_malloc((size_t)nrows * c->out_hidden * sizeof(float));
    if (!patches || !Hs || !Xn || !big || !scratch || !segs || !out) {
        mllm_free_aligned(patches), mllm_free_aligned(Hs), mllm_free_aligned(Xn), mllm_free_aligned(big);
        mllm_free_aligned(scratch), mllm_free(segs), mllm_free(out);
        return mllm_err(MLLM_ERR_NOMEM, "idefics3 vision: out of memory for %d tiles", px->n_tiles);
    }
    /* the conv as a matmul: one row per patch, (channel, y, x) as the kernel */
    const size_t plane = (size_t)T * T;
    for (int t = 0; t < px->n_tiles; t++) {
        segs[t] = (int32_t)(t * per);
        const float *tile = px->pixels + (size_t)t * 3 * plane;
        for (int py = 0; py < side; py++)
            for (int pxx = 0; pxx < side; pxx++) {
                float *o = patches + ((size_t)t * per + (size_t)py * side + pxx) * pd;
                for (int ch = 0; ch < 3; ch++)
                    for (int y = 0; y < P; y++) {
                        memcpy(o, tile + ch * plane + (size_t)(py * P + y) * T + (size_t)pxx * P, (size_t)P * sizeof(float));
                        o += P;
                    }
            }
    }
    segs[px->n_tiles] = (int32_t)n;
    qv_linear_run(v->pool, &v->patch, patches, n, Hs);
    for (int64_t t = 0; t < n; t++)
        for (int64_t i = 0; i < H; i++) Hs[t * H + i] += v->pos[(t % per) * H + i];
    float *qkv = patches; /* n x 3H, the patches are consumed */
    for (int l = 0; l < c->depth; l++) {
        const i3_block *b = &v->blocks[l];
        layernorm(Hs, b->ln1_w, b->ln1_b, c->eps, n, H, Xn);
        /* q, k, v side by side in each row, as the attention reads them */
        const qv_linear *qkvw[3] = {&b->q, &b->k, &b->v};
        for (int j = 0; j < 3; j++) {
            qv_linear_run(v->pool, qkvw[j], Xn, n, big);
            for (int64_t t = 0; t < n; t++) memcpy(qkv + t * 3 * H + j * H, big + t * H, (size_t)H * sizeof(float));
        }
        qv_attention_job aj = {qkv, Xn, segs, px->n_tiles, c->heads, (int)hd, (int)H, (int)per, scratch, sper};
        qv_attention(v->pool, &aj);
        qv_linear_run(v->pool, &b->o, Xn, n, big);
        for (int64_t i = 0; i < n * H; i++) Hs[i] += big[i];
        layernorm(Hs, b->ln2_w, b->ln2_b, c->eps, n, H, Xn);
        qv_linear_run(v->pool, &b->fc1, Xn, n, big);
        for (int64_t i = 0; i < n * F; i++) big[i] = gelu_tanh(big[i]);
        qv_linear_run(v->pool, &b->fc2, big, n, Xn);
        for (int64_t i = 0; i < n * H; i++) Hs[i] += Xn[i];
    }
    layernorm(Hs, v->post_w, v->post_b, c->eps, n, H, Xn);
    /* pixel shuffle: row (by, bx) of a tile is the s x s block's patches
       (i, j) in order, each H wide */
    float *sh = big; /* nrows x s^2 H = n x H floats */
    const int bs = side / s;
    for (int t = 0; t < px->n_tiles; t++)
        for (int by = 0; by < bs; by++)
            for (int bx = 0; bx < bs; bx++) {
                float *o = sh + ((size_t)t * rows_per + (size_t)by * bs + bx) * (size_t)(H * s * s);
                for (int i = 0; i < s; i++)
                    for (int j = 0; j < s; j++, o += H)
                        memcpy(o, Xn + ((size_t)t * per + (size_t)(by * s + i) * side + (size_t)(bx * s + j)) * H,
                               (size_t)H * sizeof(float));
            }
    qv_linear_run(v->pool, &v->proj, sh, nrows, out);
    mllm_free_aligned(patches), mllm_free_aligned(Hs), mllm_free_aligned(Xn), mllm_free_aligned(big);
    mllm_free_aligned(scratch), mllm_free(segs);
    *emb = out;
    *n_tokens = nrows;
    return MLLM_OK;
}
