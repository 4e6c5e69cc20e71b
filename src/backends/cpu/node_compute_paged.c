/* The paged-KV ops: storing K/V rows through block tables and attention
   that reads them back with the online softmax of backends/cpu/kv_paged.c.
   A token's positions are cut into chunks at multiples of MLLM_KV_SPLIT
   and the chunks' partials are merged in order, however the work is spread
   over threads: one job per (token, KV head) when there are enough, else
   (decode) one per chunk as well, merged after a barrier. Both give the
   same bits, so a token's output does not depend on its batch. */
#include <math.h>
#include <string.h>
#include "backends/cpu/kernels.h"
#include "core/dtype.h"
#include "backends/cpu/cpu_backend.h"

/* The block-table row of token t's sequence, or NULL when its sequence
   index or position is out of range (a caller bug: the token is skipped). */
static const int32_t *token_table(const mllm_tensor *t, int64_t tt, int *pos) {
    const mllm_tensor *tab = t->src[4];
    const int32_t s = ((const int32_t *)t->src[3]->data)[tt];
    *pos = ((const int32_t *)t->src[2]->data)[tt];
    if (s < 0 || s >= tab->ne[1] || *pos < 0) return NULL;
    return (const int32_t *)tab->data + (size_t)s * (size_t)tab->ne[0];
}

void mllm_compute_kv_store_paged(mllm_tensor *t, int ith, int nth) {
    const mllm_kv_paged *kv = t->pp;
    const int64_t kv_dim = (int64_t)kv->n_head_kv * kv->head_dim, T = t->src[2]->ne[0];
    for (int64_t tt = ith; tt < T; tt += nth) {
        int p;
        const int32_t *tab = token_table(t, tt, &p);
        if (!tab || p / kv->block_size >= t->src[4]->ne[0]) continue;
        mllm_kv_paged_write(kv, tab[p / kv->block_size], p % kv->block_size,
                            (const float *)t->src[0]->data + tt * kv_dim, (const float *)t->src[1]->data + tt * kv_dim);
    }
}

/* Positions [*lo, *hi) token tt attends to; the number of chunks. */
static int token_span(const mllm_tensor *t, int64_t tt, const int32_t **tab, int *lo, int *hi) {
    const mllm_kv_paged *kv = t->pp;
    int p;
    *tab = token_table(t, tt, &p);
    if (!*tab) return 0;
    const int window = t->ip[1];
    const int64_t cap = t->src[4]->ne[0] * (int64_t)kv->block_size;
    *hi = (int64_t)p + 1 < cap ? p + 1 : (int)cap;
    *lo = window > 0 && *hi > window ? *hi - window : 0;
    if (*lo >= *hi) return 0;
    return (*hi - 1) / MLLM_KV_SPLIT - *lo / MLLM_KV_SPLIT + 1;
}

static int max_chunks(const mllm_tensor *t) {
    const mllm_kv_paged *kv = t->pp;
    return (int)((t->src[4]->ne[0] * (int64_t)kv->block_size + MLLM_KV_SPLIT - 1) / MLLM_KV_SPLIT);
}

static bool split_chunks(const mllm_tensor *t, int nth) { return t->src[0]->ne[2] * t->ip[0] < 2 * (int64_t)nth; }

/* Positions a token of the ordered path may see, rounded up to the
   contiguous cache's V blocks. */
static size_t ordered_cap(const mllm_tensor *t) {
    const mllm_kv_paged *kv = t->pp;
    return (size_t)MLLM_KV_CAP(t->src[4]->ne[0] * (int64_t)kv->block_size);
}

/* Row stride of the V^T scratch: padded past MLLM_KV_VBLOCK, since a
   1 KiB stride puts every row d of a block in the same few L1 sets. The
   P x V matmul takes any stride, so the padding changes no bits. */
#define VT_STRIDE (MLLM_KV_VBLOCK + 16)

static size_t ordered_per_thread(const mllm_tensor *t) {
    const size_t D = (size_t)t->src[0]->ne[0], cap = ordered_cap(t), group = (size_t)(t->src[0]->ne[1] / t->ip[0]);
    /* K rows, V^T blocks, P (a row per head of the group), a block's P x V,
       converted rows */
    return cap * D + cap / MLLM_KV_VBLOCK * D * VT_STRIDE + group * cap + group * D + MLLM_KV_GATHER_ROWS * D;
}

/* Whether the ordered attention reads K and V^T where they lie in the
   blocks: head-major (f32) blocks whose size and the P x V
   tiles' (MLLM_KV_VBLOCK) divide one another, on a CPU whose f32 matmul
   has a segment kernel (ops.dot_f32_segments). */
static bool ordered_in_place(const mllm_kv_paged *kv, const mllm_cpu_ops *k) {
    const int bs = kv->block_size, vb = MLLM_KV_VBLOCK;
    return kv->head_major && k->dot_f32_segments && bs % 8 == 0 &&
           (bs % vb == 0 || vb % bs == 0);
}

/* Asks for a run of a block the attention reads next, so the first lines
   of each (scattered) block do not stall it: the hardware prefetchers
   follow a run only once it has started. */
static void prefetch_run(const float *p, size_t n) {
    const char *c = (const char *)p;
    for (size_t i = 0; i < n * sizeof(float); i += 64) __builtin_prefetch(c + i, 0, 3);
}

/* The scores of the group's query heads (rows of D floats from q, into
   P's rows cap apart) against K rows [lo, n_kv) read in their blocks: the
   f32 matmul's rows do not depend on how many a call has, so block by
   block gives the bits of one call over the gathered rows. A block id out
   of range reads as zero rows (scores 0, as the gather's zero rows). */
static void scores_in_place(const mllm_kv_paged *kv, const int32_t *tab, int lo, int n_kv, int kvh, const float *q,
                            int group, float *P, size_t cap) {
    const int bs = kv->block_size, D = kv->head_dim;
    const size_t rs = (size_t)D * sizeof(float);
    for (int p = lo; p < n_kv;) {
        const int b = p / bs, o0 = p % bs, o1 = (b + 1) * bs < n_kv ? bs : n_kv - b * bs;
        const int32_t id = tab[b];
        float *Pb = P + (size_t)b * (size_t)bs;
        if ((b + 1) * bs < n_kv && tab[b + 1] >= 0 && tab[b + 1] < kv->n_blocks)
            prefetch_run(mllm_kv_paged_k_rows(kv, tab[b + 1], kvh), (size_t)bs * (size_t)D);
        if (id < 0 || id >= kv->n_blocks) {
            for (int h = 0; h < group; h++) memset(Pb + (size_t)h * cap + o0, 0, (size_t)(o1 - o0) * sizeof(float));
        } else {
            mllm_cpu_mul_mat(MLLM_DTYPE_F32, mllm_kv_paged_k_rows(kv, id, kvh), rs, D, q, (size_t)D * sizeof(float),
                             group, Pb, cap, o0, o1);
        }
        p = b * bs + o1;
    }
}

/* out (group rows of D floats) = P's group rows (cap apart) over [b0, b0 +
   kb) (kb a multiple of 8) x V^T of those positions, read in the blocks;
   zeros from n_kv on, in blocks out of range and in blocks wholly before
   lo (where P is 0 too: a window's blocks behind it are never read). */
static void pv_in_place(const mllm_cpu_ops *k, const mllm_kv_paged *kv, const int32_t *tab, int lo, int n_kv, int kvh,
                        int b0, int kb, const float *P, size_t cap, int group, float *out) {
    const int bs = kv->block_size, seg = bs < MLLM_KV_VBLOCK ? bs : MLLM_KV_VBLOCK;
    const float *segs[MLLM_KV_VBLOCK / 8];
    for (int s = 0; s * seg < kb; s++) {
        const int p = b0 + s * seg;
        const int32_t id = tab[p / bs];
        const bool none = id < 0 || id >= kv->n_blocks || p + seg <= lo || p >= n_kv;
        segs[s] = none ? NULL : mllm_kv_paged_vt_row(kv, id, kvh, 0) + p % bs;
        /* the kernel walks every segment at once, 4 rows at a time */
        if (segs[s] && bs <= MLLM_KV_VBLOCK) prefetch_run(segs[s], (size_t)kv->head_dim * (size_t)bs);
    }
    k->dot_f32_segments(out, (size_t)kv->head_dim, kv->head_dim, segs, (size_t)bs, seg, kb, n_kv - b0, P + b0, cap,
                        group);
}

size_t mllm_attention_paged_work_size(const mllm_tensor *t, int nth) {
    const mllm_kv_paged *kv = t->pp;
    if (kv->ordered) return (size_t)nth * ordered_per_thread(t) * sizeof(float);
    const int64_t D = t->src[0]->ne[0], H = t->src[0]->ne[1], T = t->src[0]->ne[2];
    const int group = (int)(H / t->ip[0]);
    const size_t ps = MLLM_KV_PART_FLOATS(D), cmax = (size_t)max_chunks(t);
    size_t per_thread = mllm_kv_paged_scratch_floats(kv, group) + (size_t)group * cmax * ps;
    size_t n = (size_t)nth * per_thread;
    if (split_chunks(t, nth)) n += (size_t)T * (size_t)H * cmax * ps;
    return n * sizeof(float);
}

/* Chunk c (0-based from the token's first) of [lo, hi): its partials. */
static void chunk_part(const mllm_tensor *t, const int32_t *tab, int lo, int hi, int c, int64_t tt, int kvh,
                       float *scratch, float *part) {
    const mllm_kv_paged *kv = t->pp;
    const int64_t D = t->src[0]->ne[0], H = t->src[0]->ne[1];
    const int group = (int)(H / t->ip[0]);
    const int c0 = (lo / MLLM_KV_SPLIT + c) * MLLM_KV_SPLIT, p0 = c0 > lo ? c0 : lo;
    const int p1 = c0 + MLLM_KV_SPLIT < hi ? c0 + MLLM_KV_SPLIT : hi;
    const float *q = (const float *)t->src[0]->data + ((size_t)tt * (size_t)H + (size_t)kvh * (size_t)group) * (size_t)D;
    const float scale = t->fp[0] > 0 ? t->fp[0] : 1.0f / sqrtf((float)D); /* as the contiguous attention */
    mllm_kv_paged_attn_part(kv, tab, p0, p1, q, group, kvh, scale, scratch, part);
}

static void merge_heads(mllm_tensor *t, const float *parts, int n_chunks, int64_t tt, int kvh) {
    const int64_t D = t->src[0]->ne[0], H = t->src[0]->ne[1];
    const int group = (int)(H / t->ip[0]);
    const size_t ps = MLLM_KV_PART_FLOATS(D);
    for (int h = 0; h < group; h++) {
        float *out = (float *)t->data + (size_t)tt * (size_t)t->ne[0] + ((size_t)kvh * (size_t)group + (size_t)h) * (size_t)D;
        if (n_chunks == 0) memset(out, 0, (size_t)D * sizeof(float));
        else mllm_kv_paged_merge(parts + (size_t)h * ps, n_chunks, (size_t)group * ps, (int)D, out);
    }
}

/* The contiguous attention's arithmetic (compute.c, compute_attention) on
   K/V gathered from the blocks, one job per (token, KV head): K rows
   [lo, n_kv) and V^T in blocks of 256 positions (zeros outside [lo, n_kv),
   where P is 0 too), scores by the f32 matmul, one softmax, P x V by the f32
   matmul over a multiple of 8 positions block by block. The per-row sums
   of these kernels do not depend on how many rows or tokens a call has
   (the batch invariance of the contiguous path), so f32 gives its bits. */
static void attention_ordered(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth) {
    const mllm_cpu_ops *k = mllm_cpu_ops_get();
    const mllm_kv_paged *kv = t->pp;
    const mllm_tensor *q = t->src[0];
    const int64_t D = q->ne[0], H = q->ne[1], T = q->ne[2], Hkv = t->ip[0], group = H / Hkv;
    const float scale = t->fp[0] > 0 ? t->fp[0] : 1.0f / sqrtf((float)D);
    const size_t cap = ordered_cap(t), row_bytes = (size_t)H * (size_t)D * sizeof(float), VB = MLLM_KV_VBLOCK;
    float *Kg = (float *)g->work + (size_t)ith * ordered_per_thread(t);
    float *Vt = Kg + cap * (size_t)D, *P = Vt + cap / VB * (size_t)D * VT_STRIDE;
    float *part = P + (size_t)group * cap, *row = part + (size_t)group * (size_t)D;
    const bool in_place = ordered_in_place(kv, k);
    for (int64_t j = ith; j < T * Hkv; j += nth) {
        const int64_t tt = j / Hkv;
        const int kvh = (int)(j % Hkv);
        const int32_t *tab;
        int lo, n_kv;
        float *out0 = (float *)t->data + (size_t)tt * (size_t)t->ne[0] + (size_t)kvh * (size_t)group * (size_t)D;
        if (!token_span(t, tt, &tab, &lo, &n_kv)) {
            memset(out0, 0, (size_t)(group * D) * sizeof(float));
            continue;
        }
        const int n_pv = (n_kv + 7) / 8 * 8;
        const float *q0 = (const float *)q->data + ((size_t)tt * (size_t)H + (size_t)(kvh * group)) * (size_t)D;
        if (in_place) {
            scores_in_place(kv, tab, lo, n_kv, kvh, q0, (int)group, P, cap);
            for (int64_t h = 0; h < group; h++) {
                float *Ph = P + (size_t)h * cap;
                k->softmax(Ph + lo, n_kv - lo, scale);
                memset(Ph, 0, (size_t)lo * sizeof(float));
                memset(Ph + n_kv, 0, (size_t)(n_pv - n_kv) * sizeof(float));
            }
            for (int b0 = 0; b0 < n_pv; b0 += (int)VB) {
                const int kb = n_pv - b0 < (int)VB ? n_pv - b0 : (int)VB;
                pv_in_place(k, kv, tab, lo, n_kv, kvh, b0, kb, P, cap, (int)group, b0 == 0 ? out0 : part);
                for (int64_t h = 0; b0 > 0 && h < group; h++)
                    k->add_f32(out0 + (size_t)h * (size_t)D, out0 + (size_t)h * (size_t)D, part + (size_t)h * (size_t)D,
                               (int)D);
            }
            continue;
        }
        mllm_kv_paged_gather(kv, tab, lo, n_kv, kvh, Kg, NULL, 0, row);
        for (int b0 = 0; b0 < n_pv; b0 += (int)VB) {
            /* The columns P x V reads, [0, kb): the gathered ones, zeros
               around them (where P is 0 too). */
            float *vb = Vt + (size_t)(b0 / (int)VB) * (size_t)D * VT_STRIDE;
            const int kb = n_pv - b0 < (int)VB ? n_pv - b0 : (int)VB;
            const int p0 = lo > b0 ? lo : b0, p1 = n_kv < b0 + (int)VB ? n_kv : b0 + (int)VB;
            const int g0 = p0 < p1 ? p0 - b0 : kb, g1 = p0 < p1 ? p1 - b0 : kb;
            for (int64_t d = 0; d < D; d++) {
                memset(vb + (size_t)d * VT_STRIDE, 0, (size_t)g0 * sizeof(float));
                memset(vb + (size_t)d * VT_STRIDE + g1, 0, (size_t)(kb - g1) * sizeof(float));
            }
            if (p0 < p1) mllm_kv_paged_gather(kv, tab, p0, p1, kvh, NULL, vb + g0, VT_STRIDE, row);
        }
        for (int64_t h = 0; h < group; h++) {
            const float *qh = (const float *)q->data + ((size_t)tt * (size_t)H + (size_t)(kvh * group + h)) * (size_t)D;
            mllm_cpu_mul_mat(MLLM_DTYPE_F32, Kg, (size_t)D * sizeof(float), D, qh, row_bytes, 1, P + lo, cap, 0, n_kv - lo);
            k->softmax(P + lo, n_kv - lo, scale);
            memset(P, 0, (size_t)lo * sizeof(float));
            memset(P + n_kv, 0, (size_t)(n_pv - n_kv) * sizeof(float));
            float *out = out0 + (size_t)h * (size_t)D;
            for (int b0 = 0; b0 < n_pv; b0 += (int)VB) {
                const int kb = n_pv - b0 < (int)VB ? n_pv - b0 : (int)VB;
                const float *vb = Vt + (size_t)(b0 / (int)VB) * (size_t)D * VT_STRIDE;
                mllm_cpu_mul_mat(MLLM_DTYPE_F32, vb, VT_STRIDE * sizeof(float), kb, P + b0, cap * sizeof(float), 1,
                                 b0 == 0 ? out : part, b0 == 0 ? (size_t)t->ne[0] : (size_t)D, 0, D);
                if (b0 > 0) k->add_f32(out, out, part, (int)D);
            }
        }
    }
}

void mllm_compute_attention_paged(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth) {
    const mllm_kv_paged *kv = t->pp;
    if (kv->ordered) {
        attention_ordered(g, t, ith, nth);
        return;
    }
    const int64_t D = t->src[0]->ne[0], H = t->src[0]->ne[1], T = t->src[0]->ne[2], Hkv = t->ip[0];
    const int group = (int)(H / Hkv), cmax = max_chunks(t);
    const size_t ps = MLLM_KV_PART_FLOATS(D), gp = (size_t)group * ps;
    const size_t per_thread = mllm_kv_paged_scratch_floats(kv, group) + (size_t)cmax * gp;
    float *scratch = (float *)g->work + (size_t)ith * per_thread;
    float *local = scratch + mllm_kv_paged_scratch_floats(kv, group);
    const int32_t *tab;
    int lo, hi;
    if (!split_chunks(t, nth)) {
        for (int64_t j = ith; j < T * Hkv; j += nth) {
            const int64_t tt = j / Hkv;
            const int kvh = (int)(j % Hkv), n = token_span(t, tt, &tab, &lo, &hi);
            for (int c = 0; c < n; c++) chunk_part(t, tab, lo, hi, c, tt, kvh, scratch, local + (size_t)c * gp);
            merge_heads(t, local, n, tt, kvh);
        }
        return;
    }
    /* Decode: every chunk a job of its own, partials in the shared area. */
    float *shared = (float *)g->work + (size_t)nth * per_thread;
    for (int64_t j = ith; j < T * Hkv * cmax; j += nth) {
        const int64_t tt = j / (Hkv * cmax);
        const int kvh = (int)(j / cmax % Hkv), c = (int)(j % cmax);
        if (c < token_span(t, tt, &tab, &lo, &hi))
            chunk_part(t, tab, lo, hi, c, tt, kvh, scratch, shared + ((size_t)(tt * Hkv + kvh) * (size_t)cmax + (size_t)c) * gp);
    }
    mllm_pool_barrier(g->pool);
    for (int64_t j = ith; j < T * Hkv; j += nth) {
        const int64_t tt = j / Hkv;
        const int kvh = (int)(j % Hkv), n = token_span(t, tt, &tab, &lo, &hi);
        merge_heads(t, shared + (size_t)j * (size_t)cmax * gp, n, tt, kvh);
    }
}
