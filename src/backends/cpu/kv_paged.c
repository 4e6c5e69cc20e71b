/* Paged KV cache kernels: writing token rows into blocks (with the dtype's
   conversion) and the online-softmax attention over a block table. The
   block layout itself is kv/kv_layout.c. */
#include "backends/cpu/kv_paged.h"
#include <math.h>
#include <string.h>
#include "backends/cpu/kernels.h"
#include "core/dtype.h"

/* q8: int8 values with one f32 scale per head row, amax / 127 (round to
   nearest), as llama.cpp's q8_0 does per 32 values. */
static void quantize_q8(const float *x, int n, int8_t *q, float *scale) {
    float amax = 0.0f;
    for (int i = 0; i < n; i++) amax = fmaxf(amax, fabsf(x[i]));
    const float s = amax / 127.0f, inv = s > 0.0f ? 1.0f / s : 0.0f;
    for (int i = 0; i < n; i++) q[i] = (int8_t)lrintf(x[i] * inv);
    *scale = s;
}

void mllm_kv_paged_write(const mllm_kv_paged *kv, int32_t block, int off, const float *k, const float *v) {
    if (block < 0 || block >= kv->n_blocks || off < 0 || off >= kv->block_size) return;
    uint8_t *blk = kv->base + (size_t)block * kv->block_bytes;
    const int H = kv->n_head_kv, D = kv->head_dim, n = H * D;
    const size_t row = (size_t)off * (size_t)n;
    for (int w = 0; w < 2; w++) {
        const float *x = w ? v : k;
        uint8_t *dst = blk + (w ? kv->v_off : 0);
        if (kv->head_major && w) { /* V^T: value i of the row at (i, off) */
            float *vt = (float *)dst + off;
            for (int i = 0; i < n; i++) vt[(size_t)i * (size_t)kv->block_size] = x[i];
        } else if (kv->head_major) { /* head h's D values at (h, off) */
            for (int h = 0; h < H; h++)
                memcpy((float *)dst + ((size_t)h * (size_t)kv->block_size + (size_t)off) * (size_t)D, x + (size_t)h * D,
                       (size_t)D * sizeof(float));
        } else if (kv->dtype == MLLM_KV_DTYPE_F32) {
            memcpy((float *)dst + row, x, (size_t)n * sizeof(float));
        } else if (kv->dtype == MLLM_KV_DTYPE_F16) {
            mllm_f16 *h = (mllm_f16 *)dst + row;
            for (int i = 0; i < n; i++) h[i] = mllm_f32_to_f16(x[i]);
        } else {
            float *sc = (float *)(blk + (w ? kv->vs_off : kv->ks_off)) + (size_t)off * (size_t)H;
            for (int h = 0; h < H; h++) quantize_q8(x + h * D, D, (int8_t *)dst + row + (size_t)h * D, &sc[h]);
        }
    }
}

/* Head kvh of the K (which 0) or V (1) row at offset o of a block, as
   floats: the stored row itself for f32, else converted (or, for a
   transposed V, gathered) into buf. */
static const float *head_row(const mllm_kv_paged *kv, const uint8_t *blk, int o, int kvh, int which, float *buf) {
    const int D = kv->head_dim;
    const size_t i = ((size_t)o * (size_t)kv->n_head_kv + (size_t)kvh) * (size_t)D;
    const uint8_t *base = blk + (which ? kv->v_off : 0);
    if (kv->head_major) {
        const float *hb = (const float *)base + (size_t)kvh * (size_t)D * (size_t)kv->block_size;
        if (!which) return hb + (size_t)o * (size_t)D;
        for (int d = 0; d < D; d++) buf[d] = hb[(size_t)d * (size_t)kv->block_size + (size_t)o];
        return buf;
    }
    if (kv->dtype == MLLM_KV_DTYPE_F32) return (const float *)base + i;
    if (kv->dtype == MLLM_KV_DTYPE_F16) {
        mllm_cpu_get_row(MLLM_DTYPE_F16, (const mllm_f16 *)base + i, 0, D, 0, buf);
        return buf;
    }
    const int8_t *q = (const int8_t *)base + i;
    const float s = ((const float *)(blk + (which ? kv->vs_off : kv->ks_off)))[(size_t)o * (size_t)kv->n_head_kv + (size_t)kvh];
    for (int d = 0; d < D; d++) buf[d] = s * (float)q[d];
    return buf;
}

void mllm_kv_paged_read(const mllm_kv_paged *kv, int32_t block, int off, int which, float *out) {
    if (block < 0 || block >= kv->n_blocks || off < 0 || off >= kv->block_size) return;
    const uint8_t *blk = kv->base + (size_t)block * kv->block_bytes;
    for (int h = 0; h < kv->n_head_kv; h++) {
        float *dst = out + (size_t)h * (size_t)kv->head_dim;
        const float *r = head_row(kv, blk, off, h, which, dst);
        if (r != dst) memcpy(dst, r, (size_t)kv->head_dim * sizeof(float));
    }
}

void mllm_kv_paged_gather(const mllm_kv_paged *kv, const int32_t *table, int p0, int p1, int kvh, float *k, float *vt,
                          size_t vt_stride, float *row) {
    const int D = kv->head_dim, bs = kv->block_size, G = MLLM_KV_GATHER_ROWS;
    for (int p = p0; k && p < p1; p++) {
        const int32_t id = table[p / bs];
        float *dst = k + (size_t)(p - p0) * (size_t)D;
        if (id < 0 || id >= kv->n_blocks) { /* never written: zeros */
            memset(dst, 0, (size_t)D * sizeof(float));
            continue;
        }
        const float *r = head_row(kv, kv->base + (size_t)id * kv->block_bytes, p % bs, kvh, 0, row);
        memcpy(dst, r, (size_t)D * sizeof(float));
    }
    /* A head-major V: each block's run of positions is already a row
       segment per d. */
    for (int p = p0; vt && kv->head_major && p < p1;) {
        const int32_t id = table[p / bs];
        const int o = p % bs, n = bs - o < p1 - p ? bs - o : p1 - p;
        for (int d = 0; d < D; d++) {
            float *dst = vt + (size_t)d * vt_stride + (size_t)(p - p0);
            if (id < 0 || id >= kv->n_blocks) memset(dst, 0, (size_t)n * sizeof(float));
            else memcpy(dst, mllm_kv_paged_vt_row(kv, id, kvh, d) + o, (size_t)n * sizeof(float));
        }
        p += n;
    }
    /* V^T a tile of G positions at a time: each row d of vt gets G adjacent
       floats per tile instead of one, so the stores do not walk D lines of
       vt for every position. */
    for (int p = p0; vt && !kv->head_major && p < p1; p += G) {
        const int n = p1 - p < G ? p1 - p : G;
        const float *r[MLLM_KV_GATHER_ROWS];
        for (int j = 0; j < n; j++) {
            const int32_t id = table[(p + j) / bs];
            float *buf = row + (size_t)j * (size_t)D;
            if (id < 0 || id >= kv->n_blocks) { /* never written: zeros */
                memset(buf, 0, (size_t)D * sizeof(float));
                r[j] = buf;
            } else {
                r[j] = head_row(kv, kv->base + (size_t)id * kv->block_bytes, (p + j) % bs, kvh, 1, buf);
            }
        }
        float *dst = vt + (size_t)(p - p0);
        if (n == 8 && G == 8) {
            mllm_cpu_ops_get()->transpose8(dst, vt_stride, r, D);
            continue;
        }
        for (int d = 0; d < D; d++)
            for (int j = 0; j < n; j++) dst[(size_t)d * vt_stride + (size_t)j] = r[j][d];
    }
}

size_t mllm_kv_paged_scratch_floats(const mllm_kv_paged *kv, int group) {
    return (size_t)kv->head_dim + (size_t)group * (size_t)kv->block_size;
}

void mllm_kv_paged_attn_part(const mllm_kv_paged *kv, const int32_t *table, int p0, int p1, const float *q,
                             int group, int kvh, float scale, float *scratch, float *part) {
    const mllm_cpu_ops *ops = mllm_cpu_ops_get();
    const int D = kv->head_dim, bs = kv->block_size;
    const size_t ps = MLLM_KV_PART_FLOATS(D);
    float *row = scratch, *sc = scratch + D; /* a converted row; the block's scores (group x bs) */
    for (int h = 0; h < group; h++) {
        part[h * ps] = -INFINITY;
        memset(part + h * ps + 1, 0, (ps - 1) * sizeof(float));
    }
    for (int p = p0; p < p1;) {
        const int o0 = p % bs, n = bs - o0 < p1 - p ? bs - o0 : p1 - p;
        const int32_t id = table[p / bs];
        p += n;
        if (id < 0 || id >= kv->n_blocks) continue;
        const uint8_t *blk = kv->base + (size_t)id * kv->block_bytes;
        for (int j = 0; j < n; j++) {
            const float *kr = head_row(kv, blk, o0 + j, kvh, 0, row);
            for (int h = 0; h < group; h++) sc[h * bs + j] = ops->dot_f32(q + (size_t)h * D, kr, D) * scale;
        }
        /* The block's max joins the running one; what was summed so far is
           rescaled to it, then the block's exponentials are added. */
        for (int h = 0; h < group; h++) {
            float *pt = part + h * ps, *s = sc + h * bs, bm = -INFINITY;
            for (int j = 0; j < n; j++) bm = fmaxf(bm, s[j]);
            if (bm > pt[0]) {
                const float corr = expf(pt[0] - bm);
                pt[1] *= corr;
                for (int d = 0; d < D; d++) pt[2 + d] *= corr;
                pt[0] = bm;
            }
            for (int j = 0; j < n; j++) {
                s[j] = pt[0] == -INFINITY ? 0.0f : expf(s[j] - pt[0]);
                pt[1] += s[j];
            }
        }
        for (int j = 0; j < n; j++) {
            const float *vr = head_row(kv, blk, o0 + j, kvh, 1, row);
            for (int h = 0; h < group; h++) ops->axpy_f32(part + h * ps + 2, sc[h * bs + j], vr, D);
        }
    }
}

void mllm_kv_paged_merge(const float *parts, int n, size_t ps, int head_dim, float *out) {
    const mllm_cpu_ops *ops = mllm_cpu_ops_get();
    float m = -INFINITY;
    for (int i = 0; i < n; i++)
        if (parts[i * ps + 1] > 0.0f) m = fmaxf(m, parts[i * ps]);
    memset(out, 0, (size_t)head_dim * sizeof(float));
    if (m == -INFINITY) return;
    float l = 0.0f;
    for (int i = 0; i < n; i++) {
        const float *p = parts + i * ps;
        if (!(p[1] > 0.0f)) continue;
        const float w = expf(p[0] - m);
        l += p[1] * w;
        ops->axpy_f32(out, w, p + 2, head_dim);
    }
    for (int d = 0; d < head_dim; d++) out[d] /= l;
}
