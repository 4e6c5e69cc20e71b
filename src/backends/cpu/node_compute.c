/* Per-thread compute functions of the ops. Work is split by rows of the
   output; the heavy lifting is in the CPU kernels (backends/cpu). */
#include <math.h>
#include <string.h>
#include "backends/cpu/kernels.h"
#include "backends/plugin.h"
#include "core/dtype.h"
#include "backends/cpu/cpu_backend.h"

static void split(int64_t n, int ith, int nth, int64_t *r0, int64_t *r1) {
    int64_t per = (n + nth - 1) / nth;
    *r0 = per * ith < n ? per * ith : n;
    *r1 = *r0 + per < n ? *r0 + per : n;
}

/* A matmul with fewer activation rows than this converts them on every
   thread (compute_matmul). */
#define OWN_COPY_ROWS 16

static int64_t n_rows(const mllm_tensor *t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

static void compute_get_rows(mllm_tensor *t, int ith, int nth) {
    const mllm_tensor *tab = t->src[0];
    for (int64_t i = ith; i < t->ne[1]; i += nth) {
        int32_t id = ((const int32_t *)t->src[1]->data)[i];
        float *dst = (float *)((char *)t->data + (size_t)i * t->nb[1]);
        mllm_cpu_get_row((mllm_dtype)tab->dtype, tab->data, tab->nb[1], t->ne[0], id, dst);
    }
}

static void compute_rmsnorm(mllm_tensor *t, int ith, int nth) {
    const mllm_cpu_ops *k = mllm_cpu_ops_get();
    const mllm_tensor *x = t->src[0], *w = t->src[1];
    int64_t r0, r1, n = t->ne[0];
    split(n_rows(t), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++)
        k->rmsnorm((float *)t->data + r * n, (const float *)x->data + r * n,
                   w ? (const float *)w->data : NULL, (int)n, t->fp[0]);
}

/* Rows per LayerNorm chunk, handed out from a shared counter (a thread
   slowed down by another process takes fewer). */
#define LN_ROWS 64

static void compute_layernorm(mllm_tensor *t, int ith, int nth) {
    (void)ith;
    (void)nth;
    const mllm_tensor *x = t->src[0], *w = t->src[1], *b = t->src[2];
    const int64_t n = t->ne[0], rows = n_rows(t);
    for (int64_t r0; (r0 = __atomic_fetch_add(&t->next_chunk, 1, __ATOMIC_RELAXED) * LN_ROWS) < rows;) {
        const int64_t nr = rows - r0 < LN_ROWS ? rows - r0 : LN_ROWS;
        mllm_cpu_layernorm_rows((float *)t->data + r0 * n, (const float *)x->data + r0 * n,
                                w ? (const float *)w->data : NULL, b ? (const float *)b->data : NULL, nr, (int)n,
                                t->fp[0]);
    }
}

static void compute_matmul(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth) {
    const mllm_tensor *w = t->src[0], *x = t->src[1], *b = t->src[2];
    const mllm_dtype_traits *tr = mllm_dtype_get(w->dtype);
    int64_t K = w->ne[0], N = w->ne[1], M = x->ne[1];
    const void *X = x->data;
    size_t xs = x->nb[1];
    float *row_buf = NULL;
    if (t->ip[3] == 2) {
        /* The packed GEMM (graph.h: mllm_graph.gemm) reads f32 rows: each
           activation row rounded through the weight's vec_dot type, as the
           dots would see it, then widened, once for all threads. */
        const mllm_dtype vt = (mllm_dtype)tr->vec_dot_type;
        xs = (size_t)K * sizeof(float);
        void *half = (char *)g->work + xs * (size_t)M + (size_t)ith * (size_t)K * sizeof(mllm_f16);
        for (int64_t m = ith; m < M; m += nth) {
            mllm_cpu_quantize_row(vt, (const float *)((const char *)x->data + (size_t)m * x->nb[1]), half, K);
            mllm_cpu_to_float(vt, half, (float *)((char *)g->work + (size_t)m * xs), K);
        }
        mllm_pool_barrier(g->pool);
        X = g->work;
    } else if (t->ip[2]) {
        row_buf = (float *)g->work + (size_t)ith * (size_t)K; /* exact: this thread's dequantized row */
    } else if (!t->ip[3] && tr->vec_dot_type != MLLM_DTYPE_F32) {
        /* Activations are converted to the weight's vec_dot_type once, as
           llama.cpp does, so quantized dots round the same way. ip[1] set:
           the previous node (q before k and v, gate before up) already
           converted this very input into the work buffer. A decode step's
           few rows: each thread converts them all into its own copy, with
           no barrier (on a shared machine a barrier waits for a thread
           that is not scheduled; here a quarter of a layer's barriers). */
        const bool own = M < OWN_COPY_ROWS;
        xs = mllm_dtype_row_size(tr->vec_dot_type, K);
        char *xc = (char *)g->work + (own ? (size_t)ith * (size_t)M * xs : 0);
        for (int64_t m = own ? 0 : ith; m < M && !t->ip[1]; m += own ? 1 : nth)
            mllm_cpu_quantize_row((mllm_dtype)tr->vec_dot_type,
                                  (const float *)((const char *)x->data + (size_t)m * x->nb[1]), xc + (size_t)m * xs,
                                  K);
        if (!t->ip[1] && !own) mllm_pool_barrier(g->pool);
        X = xc;
    }
    /* Rows are handed out in chunks (multiples of 16 rows, about 8 per
       thread) from a shared counter: a thread that is slowed down (another
       process on its core) takes fewer chunks instead of making the others
       wait at the barrier. Each row's result does not depend on the split. */
    /* Prefill takes fewer, larger chunks: each call widens or converts its
       activation rows again (the float GEMM), which pays off over more rows;
       not the packed GEMM's (ip[3]), whose rows were widened once above. */
    int64_t target = (int64_t)nth * (M >= 16 && t->ip[3] != 2 ? 3 : 8);
    int64_t chunk = ((N + target - 1) / target + 15) & ~(int64_t)15;
    if (nth == 1) chunk = N;
    for (;;) {
        int64_t c = __atomic_fetch_add(&t->next_chunk, 1, __ATOMIC_RELAXED);
        int64_t r0 = c * chunk;
        if (r0 >= N) break;
        int64_t r1 = r0 + chunk < N ? r0 + chunk : N;
        if (t->ip[3])
            mllm_cpu_gemm((mllm_dtype)w->dtype, w->data, w->nb[1], K, X, xs, M, t->data, (size_t)N, r0, r1);
        else if (row_buf)
            mllm_cpu_mul_mat_exact((mllm_dtype)w->dtype, w->data, w->nb[1], K, X, xs, M, t->data, (size_t)N, r0, r1,
                                   row_buf);
        else
            mllm_cpu_mul_mat((mllm_dtype)w->dtype, w->data, w->nb[1], K, X, xs, M, t->data, (size_t)N, r0, r1);
        if (b) { /* one add per value: the plain loop's bits, vectorised (gcc left it scalar) */
            const float *bias = (const float *)b->data + r0;
            for (int64_t m = 0; m < M; m++) {
                float *y = (float *)t->data + m * N + r0;
                mllm_cpu_ops_get()->add_f32(y, y, bias, (int)(r1 - r0));
            }
        }
    }
}

void mllm_cpu_rope_table(const mllm_rope_params *rp, int pos, float *cs, float *sn) {
    /* Same arithmetic as ggml's rope cache: theta advances by repeated float
       multiplication, so angles round exactly like the reference. */
    float theta = (float)pos;
    const float ms = rp->ext_factor != 0.0f ? rp->attn_factor * (1.0f + 0.1f * logf(1.0f / rp->freq_scale)) : 1.0f;
    for (int i = 0; i < rp->n_rot / 2; i++) {
        float ff = rp->freq_factors ? rp->freq_factors[i] : 1.0f;
        float th = rp->freq_scale * (theta / ff);
        if (rp->ext_factor != 0.0f) { /* YaRN, as ggml's rope_yarn */
            const float y = ((float)i - rp->corr[0]) / fmaxf(0.001f, rp->corr[1] - rp->corr[0]);
            const float mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * rp->ext_factor;
            th = th * (1.0f - mix) + (theta / ff) * mix;
            cs[i] = cosf(th) * ms;
            sn[i] = sinf(th) * ms;
        } else {
            cs[i] = cosf(th);
            sn[i] = sinf(th);
        }
        theta *= rp->theta_scale;
    }
}

static void compute_rope(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth) {
    const mllm_cpu_ops *k = mllm_cpu_ops_get();
    const mllm_rope_params *rp = t->pp;
    const mllm_tensor *x = t->src[0];
    int64_t D = t->ne[0], H = t->ne[1], T = t->ne[2];
    float *cs = (float *)g->work + (size_t)ith * 3 * (size_t)rp->n_rot;
    float *sn = cs + rp->n_rot / 2;
    const int32_t *pos = t->src[1]->data;
    const bool rows3 = t->src[1]->ne[0] == 3 * T;
    const int s0 = rp->mrope[0], s01 = rp->mrope[0] + rp->mrope[1];
    for (int64_t tt = 0; tt < T; tt++) {
        if (rows3) {
            /* M-RoPE: the tables of the height and width positions, then
               each frequency taken from its section's table */
            float *ch = cs + rp->n_rot, *sh = ch + rp->n_rot / 2;
            mllm_cpu_rope_table(rp, pos[tt], cs, sn);
            mllm_cpu_rope_table(rp, pos[T + tt], ch, sh);
            for (int i = s0; i < s01 && i < rp->n_rot / 2; i++) cs[i] = ch[i], sn[i] = sh[i];
            mllm_cpu_rope_table(rp, pos[2 * T + tt], ch, sh);
            for (int i = s01; i < rp->n_rot / 2; i++) cs[i] = ch[i], sn[i] = sh[i];
        } else {
            mllm_cpu_rope_table(rp, pos[tt], cs, sn);
        }
        for (int64_t h = ith; h < H; h += nth) {
            float *dst = (float *)t->data + (tt * H + h) * D;
            memcpy(dst, (const float *)x->data + (tt * H + h) * D, (size_t)D * sizeof(float));
            k->rope(dst, rp->n_rot, cs, sn, rp->neox);
        }
    }
}

static void compute_kv_store(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth) {
    const mllm_kv_layer *kv = t->pp;
    const mllm_tensor *k = t->src[0], *v = t->src[1];
    int64_t T = mllm_tensor_nelements(k) / kv->kv_dim;
    const size_t pos0 = (size_t)((const int32_t *)t->src[2]->data)[0]; /* positions are consecutive */
    for (int64_t tt = ith; tt < T; tt += nth)
        memcpy(kv->k + (pos0 + (size_t)tt) * (size_t)kv->kv_dim, (const float *)k->data + tt * kv->kv_dim,
               (size_t)kv->kv_dim * sizeof(float));
    /* V goes in transposed (graph.h): each thread fills whole value rows,
       so its writes run along positions. Past the last position written, up
       to the next multiple of 8: zeros, as attention's P x V reads that far
       (times probability 0, which must not meet a NaN in uninitialised
       memory); MLLM_KV_CAP leaves room for it. */
    int64_t d0, d1;
    split(kv->kv_dim, ith, nth, &d0, &d1);
    const float *vd = v->data;
    const int64_t end = (int64_t)pos0 + T, pad = (end + 7) / 8 * 8;
    for (int64_t d = d0; d < d1; d++)
        for (int64_t p = (int64_t)pos0; p < pad; p++)
            kv->v[((size_t)(p / MLLM_KV_VBLOCK) * (size_t)kv->kv_dim + (size_t)d) * MLLM_KV_VBLOCK +
                  (size_t)(p % MLLM_KV_VBLOCK)] = p < end ? vd[(p - (int64_t)pos0) * kv->kv_dim + d] : 0.0f;
}

/* Query tokens per attention job: every key and value row a job reads
   serves this many tokens of each query head of the group (GQA), instead of
   one, which keeps prefill attention from streaming the cache per token. */
#define ATTN_TB 16

/* Causal attention, one job per (KV head, block of ATTN_TB tokens), as two
   matmuls with the f32 matmul kernel (the structure of llama.cpp's attention
   without flash attention): scores = K x Q, dots along the head dimension,
   computed up to the block's last key; each row then masks the keys after
   its own token to probability 0, and out = V^T x P, dots along positions
   (the cache keeps V transposed for this), serves the whole block. */
static void compute_attention(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth) {
    const mllm_cpu_ops *k = mllm_cpu_ops_get();
    const mllm_kv_layer *kv = t->pp;
    const mllm_tensor *q = t->src[0];
    const int64_t D = q->ne[0], H = q->ne[1], T = q->ne[2], Hkv = t->ip[0];
    const int64_t group = H / Hkv, n_blocks = (T + ATTN_TB - 1) / ATTN_TB;
    const float scale = t->fp[0] > 0 ? t->fp[0] : 1.0f / sqrtf((float)D);
    const int window = t->ip[1];
    const bool causal = t->ip[3] == 0;
    const int32_t *pos = t->src[2]->data;
    const size_t row_bytes = (size_t)H * (size_t)D * sizeof(float);
    const size_t cap = (size_t)MLLM_KV_CAP(kv->n_ctx);
    /* per thread: P (ATTN_TB rows of cap) and one block's P x V (ATTN_TB x D) */
    float *P = (float *)g->work + (size_t)ith * ATTN_TB * (cap + (size_t)D);
    float *part = P + ATTN_TB * cap;
    for (int64_t job = ith; job < Hkv * n_blocks; job += nth) {
        const int64_t kvh = job % Hkv, t0 = (job / Hkv) * ATTN_TB;
        const int tb = (int)(T - t0 < ATTN_TB ? T - t0 : ATTN_TB);
        /* keys the block's last token sees (all stored ones when not causal) */
        const int n_max = causal ? pos[t0 + tb - 1] + 1 : pos[T - 1] + 1;
        for (int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
            const float *qh = (const float *)q->data + (t0 * H + h) * D;
            mllm_cpu_mul_mat(MLLM_DTYPE_F32, kv->k + kvh * D, (size_t)kv->kv_dim * sizeof(float), D, qh,
                             row_bytes, tb, P, cap, 0, n_max);
            /* The P x V dots run over a multiple of 8 positions (zeros past
               each row's own) and block by block in position order, so the
               f32 tile keeps every term in its 8 lanes and a token's output
               does not depend on which batch it came in: same logits with or
               without a cached prefix. */
            const int n_pv = (n_max + 7) / 8 * 8;
            for (int r = 0; r < tb; r++) {
                float *pr = P + (size_t)r * cap;
                const int n_kv = causal ? pos[t0 + r] + 1 : n_max;
                /* A sliding window: keys before n_kv - window get probability 0. */
                const int lo = window > 0 && n_kv > window ? n_kv - window : 0;
                k->softmax(pr + lo, n_kv - lo, scale);
                memset(pr, 0, (size_t)lo * sizeof(float));
                memset(pr + n_kv, 0, (size_t)(n_pv - n_kv) * sizeof(float));
            }
            float *out = (float *)t->data + t0 * t->ne[0] + h * D;
            /* out[r][d] = sum over blocks of dot(V^T block row d, P row r) */
            for (int b0 = 0; b0 < n_pv; b0 += MLLM_KV_VBLOCK) {
                const int kb = n_pv - b0 < MLLM_KV_VBLOCK ? n_pv - b0 : MLLM_KV_VBLOCK;
                const float *vb = kv->v + ((size_t)(b0 / MLLM_KV_VBLOCK) * (size_t)kv->kv_dim + (size_t)(kvh * D)) * MLLM_KV_VBLOCK;
                float *dst = b0 == 0 ? out : part;
                const size_t ds = b0 == 0 ? (size_t)t->ne[0] : (size_t)D;
                mllm_cpu_mul_mat(MLLM_DTYPE_F32, vb, MLLM_KV_VBLOCK * sizeof(float), kb, P + b0, cap * sizeof(float),
                                 tb, dst, ds, 0, D);
                if (b0 > 0)
                    for (int r = 0; r < tb; r++)
                        k->add_f32(out + (size_t)r * (size_t)t->ne[0], out + (size_t)r * (size_t)t->ne[0],
                                   part + (size_t)r * (size_t)D, (int)D);
            }
        }
    }
}

static void compute_elementwise(mllm_tensor *t, int ith, int nth) {
    const mllm_cpu_ops *k = mllm_cpu_ops_get();
    int64_t n = mllm_tensor_nelements(t);
    int64_t per = ((n + nth - 1) / nth + 15) & ~(int64_t)15;
    int64_t i0 = per * ith < n ? per * ith : n, i1 = i0 + per < n ? i0 + per : n;
    if (i0 >= i1) return;
    const float *a = (const float *)t->src[0]->data + i0, *b = (const float *)t->src[1]->data + i0;
    float *y = (float *)t->data + i0;
    if (t->op == MLLM_OP_ADD) k->add_f32(y, a, b, (int)(i1 - i0));
    else if (t->op == MLLM_OP_GELU_MUL) k->gelu_mul(y, a, b, (int)(i1 - i0));
    else k->silu_mul(y, a, b, (int)(i1 - i0));
}

static void compute_unary(mllm_tensor *t, int ith, int nth) {
    int64_t n = mllm_tensor_nelements(t), i0, i1;
    split(n, ith, nth, &i0, &i1);
    const float *x = t->src[0]->data;
    float *y = t->data;
    const float p = t->fp[0];
    if (t->op == MLLM_OP_GELU && t->ip[0]) {
        /* the vector erf: parts start at multiples of 16 values, so a value
           meets the vector loop or the scalar tail whatever the threads */
        const int64_t per = ((n + nth - 1) / nth + 15) & ~(int64_t)15;
        i0 = per * ith < n ? per * ith : n;
        i1 = i0 + per < n ? i0 + per : n;
        if (i0 < i1) mllm_cpu_ops_get()->gelu_erf(y + i0, x + i0, (int)(i1 - i0));
    } else if (t->op == MLLM_OP_GELU)
        mllm_cpu_ops_generic()->gelu_erf(y + i0, x + i0, (int)(i1 - i0));
    else if (t->op == MLLM_OP_GELU_TANH)
        for (int64_t i = i0; i < i1; i++)
            y[i] = 0.5f * x[i] * (1.0f + tanhf(0.7978845608028654f * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
    else if (t->op == MLLM_OP_SCALE)
        for (int64_t i = i0; i < i1; i++) y[i] = x[i] * p;
    else
        for (int64_t i = i0; i < i1; i++) y[i] = p * tanhf(x[i] / p);
}

/* A plugin's op: its kernel sees contiguous f32 tensors (mllm_op_custom checked them). */
static void compute_custom(mllm_tensor *t, int ith, int nth) {
    const mllm_custom_op *op = t->pp;
    mllm_op_tensor in[4], out;
    int n = 0;
    for (; n < 4 && t->src[n]; n++) {
        memcpy(in[n].ne, t->src[n]->ne, sizeof in[n].ne);
        in[n].data = t->src[n]->data;
    }
    memcpy(out.ne, t->ne, sizeof out.ne);
    out.data = t->data;
    op->def.cpu_kernel(&out, in, n, ith, nth, op->def.user);
}

size_t mllm_cpu_node_work_size(const mllm_tensor *t, int nth) {
    switch (t->op) {
    case MLLM_OP_MATMUL: {
        const mllm_dtype_traits *tr = mllm_dtype_get(t->src[0]->dtype);
        if (t->ip[3] == 2) /* rounded rows, f32, then a row of the vec_dot type per thread */
            return (size_t)t->src[0]->ne[0] * ((size_t)t->src[1]->ne[1] * sizeof(float) + (size_t)nth * sizeof(mllm_f16));
        if (t->ip[2]) return (size_t)nth * (size_t)t->src[0]->ne[0] * sizeof(float);
        if (t->ip[3] || tr->vec_dot_type == MLLM_DTYPE_F32) return 0;
        const int64_t M = t->src[1]->ne[1];
        return mllm_dtype_row_size(tr->vec_dot_type, t->src[0]->ne[0]) * (size_t)M * (M < OWN_COPY_ROWS ? (size_t)nth : 1);
    }
    case MLLM_OP_ROPE: return (size_t)nth * 3 * (size_t)((const mllm_rope_params *)t->pp)->n_rot * sizeof(float);
    case MLLM_OP_ATTENTION:
        return (size_t)nth * ATTN_TB *
               ((size_t)MLLM_KV_CAP(((const mllm_kv_layer *)t->pp)->n_ctx) + (size_t)t->src[0]->ne[0]) * sizeof(float);
    case MLLM_OP_ATTENTION_PAGED: return mllm_attention_paged_work_size(t, nth);
    case MLLM_OP_ATTENTION_SEGMENTS: return mllm_attention_segments_work_size(t, nth);
    case MLLM_OP_ATTENTION_FULL:
    case MLLM_OP_ATTENTION_SLOTS: return mllm_attention_kv_work_size(t, nth);
    default: return 0;
    }
}

void mllm_cpu_compute_node(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth) {
    switch (t->op) {
    case MLLM_OP_GET_ROWS: compute_get_rows(t, ith, nth); break;
    case MLLM_OP_RMSNORM: compute_rmsnorm(t, ith, nth); break;
    case MLLM_OP_MATMUL: compute_matmul(g, t, ith, nth); break;
    case MLLM_OP_ROPE: compute_rope(g, t, ith, nth); break;
    case MLLM_OP_KV_STORE: compute_kv_store(g, t, ith, nth); break;
    case MLLM_OP_ATTENTION: compute_attention(g, t, ith, nth); break;
    case MLLM_OP_SILU_MUL:
    case MLLM_OP_GELU_MUL:
    case MLLM_OP_ADD: compute_elementwise(t, ith, nth); break;
    case MLLM_OP_SCALE:
    case MLLM_OP_SOFTCAP:
    case MLLM_OP_GELU:
    case MLLM_OP_GELU_TANH: compute_unary(t, ith, nth); break;
    case MLLM_OP_LAYERNORM: compute_layernorm(t, ith, nth); break;
    case MLLM_OP_KV_STORE_PAGED: mllm_compute_kv_store_paged(t, ith, nth); break;
    case MLLM_OP_ATTENTION_PAGED: mllm_compute_attention_paged(g, t, ith, nth); break;
    case MLLM_OP_CUSTOM: compute_custom(t, ith, nth); break;
    case MLLM_OP_ROPE_TABLE: mllm_compute_rope_table(t, ith, nth); break;
    case MLLM_OP_ATTENTION_SEGMENTS: mllm_compute_attention_segments(g, t, ith, nth); break;
    case MLLM_OP_IM2COL: mllm_compute_im2col(t, ith, nth); break;
    case MLLM_OP_ATTENTION_FULL: mllm_compute_attention_full(g, t, ith, nth); break;
    case MLLM_OP_KV_SLOTS_STORE: mllm_compute_kv_slots_store(t, ith, nth); break;
    case MLLM_OP_ATTENTION_SLOTS: mllm_compute_attention_slots(g, t, ith, nth); break;
    default: break;
    }
}
