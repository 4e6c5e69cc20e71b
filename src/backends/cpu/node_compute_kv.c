/* The encoder-decoder ops of the graph (graph.h) on the CPU: the columns
   of a 1-D convolution, attention over K and V given as tensors (an
   encoder's self-attention, on the packed f32 GEMM), and the slot cache's
   store and attention (a decoder's self- and cross-attention, on the
   matmul tiles; f16 dots for an f16 cache). Attention is two matmuls per
   (head, block of ATT_QB queries), the structure of the graph's causal
   attention (node_compute.c). */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels.h"
#include "core/dtype.h"

/* Queries per job: each key and value row read serves this many (48 = 8
   of the GEMM's 6-row tiles; P is 48 x 1500 floats = 288 KB, in L2). */
#define ATT_QB 48
/* From this many queries in a job on, an f32 cache's products run on the
   f32 GEMM; decoder steps (a few queries) stay on the tiles. */
#define ATT_GEMM_MIN_Q 16

static int64_t take(mllm_tensor *t) { return __atomic_fetch_add(&t->next_chunk, 1, __ATOMIC_RELAXED); }

void mllm_compute_im2col(mllm_tensor *t, int ith, int nth) {
    const mllm_tensor *x = t->src[0];
    const int k = t->ip[0], stride = t->ip[1], pad = t->ip[2];
    const int64_t C = x->ne[0], t_in = x->ne[1];
    for (int64_t r = ith; r < t->ne[1]; r += nth) {
        float *row = (float *)t->data + r * t->ne[0];
        for (int j = 0; j < k; j++) {
            const int64_t ti = r * stride + j - pad;
            const float *src = ti >= 0 && ti < t_in ? (const float *)x->data + ti * C : NULL;
            for (int64_t c = 0; c < C; c++) row[c * k + j] = src ? src[c] : 0.0f;
        }
    }
}

/* Floats of one thread's probabilities: ATT_QB rows of n_k, then (f16)
   their f16 copy or the queries'. */
static size_t per_thread(int64_t n_k, int64_t hd, bool f16) {
    const size_t n = (size_t)ATT_QB * (size_t)n_k * (f16 ? 2 : 1) + (size_t)ATT_QB * (size_t)hd;
    return (n + 15) & ~(size_t)15;
}

size_t mllm_attention_kv_work_size(const mllm_tensor *t, int nth) {
    if (t->op == MLLM_OP_ATTENTION_FULL) {
        const int64_t H = t->ip[0], hd = t->ne[0] / H, n_k = t->src[1]->ne[1];
        const size_t pack = (mllm_cpu_gemm_f32_packed_size(hd, n_k) + mllm_cpu_gemm_f32_packed_size(n_k, hd)) * (size_t)H;
        return ((size_t)nth * per_thread(n_k, hd, false) + pack) * sizeof(float);
    }
    const mllm_kv_slots *kv = t->pp;
    const int64_t n_k = t->ip[1] ? kv->n_ctx : t->ip[2];
    return (size_t)nth * per_thread(n_k, kv->head_dim, kv->f16) * sizeof(float);
}

/* Every head's K (n_k x hd) and V (as V^T, hd x n_k) packed once into the
   GEMM's panels, then per job: P = K q (scaled softmax per row), out = V^T P. */
void mllm_compute_attention_full(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth) {
    const mllm_tensor *q = t->src[0], *k = t->src[1], *v = t->src[2];
    const int64_t H = t->ip[0], dim = t->ne[0], hd = dim / H, n_q = q->ne[1], n_k = k->ne[1];
    const size_t kp_head = mllm_cpu_gemm_f32_packed_size(hd, n_k), vp_head = mllm_cpu_gemm_f32_packed_size(n_k, hd);
    const size_t per = per_thread(n_k, hd, false);
    float *kp = (float *)g->work + per * (size_t)nth, *vp = kp + kp_head * (size_t)H;
    for (int64_t h = ith; h < H; h += nth) {
        mllm_cpu_gemm_f32_pack((const float *)k->data + h * hd, k->nb[1], hd, n_k, kp + (size_t)h * kp_head);
        mllm_cpu_gemm_f32_pack_t((const float *)v->data + h * hd, v->nb[1], n_k, hd, vp + (size_t)h * vp_head);
    }
    mllm_pool_barrier(g->pool);
    const mllm_cpu_ops *ops = mllm_cpu_ops_get();
    float *P = (float *)g->work + per * (size_t)ith;
    const int64_t n_qb = (n_q + ATT_QB - 1) / ATT_QB;
    const float scale = 1.0f / sqrtf((float)hd);
    for (int64_t job; (job = take(t)) < H * n_qb;) {
        const int64_t h = job / n_qb, i0 = (job % n_qb) * ATT_QB;
        const int nb = (int)(n_q - i0 < ATT_QB ? n_q - i0 : ATT_QB);
        const float *qh = (const float *)((const char *)q->data + (size_t)i0 * q->nb[1]) + h * hd;
        float *oh = (float *)t->data + i0 * dim + h * hd;
        mllm_cpu_gemm_f32_packed(kp + (size_t)h * kp_head, hd, n_k, qh, q->nb[1], nb, P, (size_t)n_k);
        for (int r = 0; r < nb; r++) ops->softmax(P + (size_t)r * (size_t)n_k, (int)n_k, scale);
        mllm_cpu_gemm_f32_packed(vp + (size_t)h * vp_head, n_k, hd, P, (size_t)n_k * sizeof(float), nb, oh, (size_t)dim);
    }
}

/* n values into the cache: rounded to f16 or copied. */
static void put(bool f16, void *dst, const float *src, int64_t n) {
    if (f16) mllm_cpu_quantize_row(MLLM_DTYPE_F16, src, dst, n);
    else memcpy(dst, src, (size_t)n * sizeof(float));
}

static int64_t tok_pos(const mllm_tensor *pos, int64_t t) { return pos ? ((const int32_t *)pos->data)[t] : t; }
static int64_t tok_slot(const mllm_tensor *slot, int64_t t) { return slot ? ((const int32_t *)slot->data)[t] : 0; }

/* Positions consecutive tokens fill side by side in a row of V^T. */
#define VT_RUN 256

void mllm_compute_kv_slots_store(mllm_tensor *t, int ith, int nth) {
    const mllm_kv_slots *kv = t->pp;
    const mllm_tensor *k = t->src[0], *v = t->src[1], *pos = t->src[2], *slot = t->src[3];
    const int64_t T = k->ne[1], hd = kv->head_dim, dim = (int64_t)kv->n_head * hd, ctx = kv->n_ctx;
    const size_t es = kv->f16 ? 2 : 4, per_slot = (size_t)ctx * (size_t)dim;
    for (int64_t tt = ith; tt < T; tt += nth) {
        const int64_t p = tok_pos(pos, tt);
        const float *kr = (const float *)((const char *)k->data + (size_t)tt * k->nb[1]);
        char *K = (char *)kv->k + (size_t)tok_slot(slot, tt) * per_slot * es;
        if (kv->head_major)
            for (int64_t h = 0; h < kv->n_head; h++) put(kv->f16, K + (size_t)((h * ctx + p) * hd) * es, kr + h * hd, hd);
        else
            put(kv->f16, K + (size_t)(p * dim) * es, kr, dim);
    }
    /* V^T: each thread whole rows (value dims), a run of tokens with
       consecutive positions in one slot written as one piece */
    const int64_t per = (dim + nth - 1) / nth, c0 = per * ith < dim ? per * ith : dim;
    const int64_t c1 = c0 + per < dim ? c0 + per : dim;
    float run[VT_RUN];
    for (int64_t t0 = 0, n; t0 < T; t0 += n) {
        const int64_t p0 = tok_pos(pos, t0), s0 = tok_slot(slot, t0);
        for (n = 1; t0 + n < T && n < VT_RUN && tok_pos(pos, t0 + n) == p0 + n && tok_slot(slot, t0 + n) == s0;) n++;
        char *Vt = (char *)kv->vt + (size_t)s0 * per_slot * es;
        for (int64_t c = c0; c < c1; c++) {
            for (int64_t i = 0; i < n; i++) run[i] = ((const float *)((const char *)v->data + (size_t)(t0 + i) * v->nb[1]))[c];
            put(kv->f16, Vt + (size_t)(c * ctx + p0) * es, run, n);
        }
    }
}

typedef struct {
    const mllm_kv_slots *kv;
    const char *k, *vt;     /* one head's keys and V^T rows of the slot */
    size_t k_stride;        /* values from one key to the next */
    const float *q;         /* the block's first query of this head */
    size_t q_stride;        /* bytes */
    float *out;             /* its first output */
    size_t out_stride;      /* floats */
    int nb;                 /* queries in the block */
    int64_t n_k;            /* keys the block reads */
    int64_t causal;         /* >= 0: query r sees keys up to causal + r; -1: all */
} slot_block;

/* One (head, block of queries) over a slot: scores by the f32 tiles or
   GEMM, or the f16 tiles on queries rounded to f16; masked softmax; the
   probabilities (rounded to f16 for an f16 cache) times V^T. */
static void slot_attention_block(const slot_block *b, float *P) {
    const mllm_cpu_ops *ops = mllm_cpu_ops_get();
    const mllm_kv_slots *kv = b->kv;
    const int64_t hd = kv->head_dim, n_k = b->n_k;
    const bool f16 = kv->f16, gemm = b->nb >= ATT_GEMM_MIN_Q && !f16;
    const size_t es = f16 ? 2 : 4, vt_stride = (size_t)kv->n_ctx;
    const mllm_dtype kt = f16 ? MLLM_DTYPE_F16 : MLLM_DTYPE_F32;
    const float scale = 1.0f / sqrtf((float)hd);
    const void *xq = b->q;
    size_t xq_stride = b->q_stride;
    mllm_f16 *p16 = (mllm_f16 *)(P + (size_t)ATT_QB * (size_t)n_k); /* q, then P, as f16 */
    if (f16) {
        for (int r = 0; r < b->nb; r++)
            mllm_cpu_quantize_row(MLLM_DTYPE_F16, (const float *)((const char *)b->q + (size_t)r * b->q_stride),
                                  p16 + (size_t)r * (size_t)hd, hd);
        xq = p16;
        xq_stride = (size_t)hd * 2;
    }
    if (gemm) mllm_cpu_gemm(MLLM_DTYPE_F32, b->k, b->k_stride * es, hd, b->q, xq_stride, b->nb, P, (size_t)n_k, 0, n_k);
    else mllm_cpu_mul_mat(kt, b->k, b->k_stride * es, hd, xq, xq_stride, b->nb, P, (size_t)n_k, 0, n_k);
    for (int r = 0; r < b->nb; r++) {
        float *p = P + (size_t)r * (size_t)n_k;
        if (b->causal >= 0)
            for (int64_t c = b->causal + r + 1; c < n_k; c++) p[c] = -INFINITY;
        ops->softmax(p, (int)n_k, scale);
    }
    const void *xp = P;
    size_t xp_stride = (size_t)n_k * sizeof(float);
    if (f16) {
        mllm_cpu_quantize_row(MLLM_DTYPE_F16, P, p16, (int64_t)b->nb * n_k); /* rows are contiguous */
        xp = p16;
        xp_stride = (size_t)n_k * 2;
    }
    if (gemm) mllm_cpu_gemm(MLLM_DTYPE_F32, b->vt, vt_stride * es, n_k, P, xp_stride, b->nb, b->out, b->out_stride, 0, hd);
    else mllm_cpu_mul_mat(kt, b->vt, vt_stride * es, n_k, xp, xp_stride, b->nb, b->out, b->out_stride, 0, hd);
}

void mllm_compute_attention_slots(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth) {
    (void)nth;
    const mllm_kv_slots *kv = t->pp;
    const mllm_tensor *q = t->src[0], *pos = t->src[2], *slot = t->src[3];
    const int64_t H = kv->n_head, hd = kv->head_dim, dim = H * hd, ctx = kv->n_ctx;
    const int64_t n_runs = t->ip[0], len = q->ne[1] / n_runs, n_qb = (len + ATT_QB - 1) / ATT_QB;
    const bool causal = t->ip[1];
    const size_t es = kv->f16 ? 2 : 4, per_slot = (size_t)ctx * (size_t)dim;
    float *P = (float *)g->work + (size_t)ith * per_thread(causal ? ctx : t->ip[2], hd, kv->f16);
    for (int64_t job; (job = take(t)) < n_runs * H * n_qb;) {
        const int64_t r = job / (H * n_qb), h = job / n_qb % H, i0 = job % n_qb * ATT_QB, tok = r * len + i0;
        const char *base_k = (const char *)kv->k + (size_t)tok_slot(slot, r * len) * per_slot * es;
        const char *base_v = (const char *)kv->vt + (size_t)tok_slot(slot, r * len) * per_slot * es;
        slot_block b = {.kv = kv, .q_stride = q->nb[1], .nb = (int)(len - i0 < ATT_QB ? len - i0 : ATT_QB)};
        b.k = base_k + (size_t)(kv->head_major ? h * ctx * hd : h * hd) * es;
        b.k_stride = (size_t)(kv->head_major ? hd : dim);
        b.vt = base_v + (size_t)(h * hd * ctx) * es;
        b.q = (const float *)((const char *)q->data + (size_t)tok * q->nb[1]) + h * hd;
        b.out = (float *)t->data + tok * dim + h * hd;
        b.out_stride = (size_t)dim;
        /* causal: the run's first token is at pos0, the block's last sees keys up to pos0 + i0 + nb - 1 */
        b.causal = causal ? tok_pos(pos, r * len) + i0 : -1;
        b.n_k = causal ? b.causal + b.nb : t->ip[2];
        slot_attention_block(&b, P);
    }
}
