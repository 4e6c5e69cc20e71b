/* The KV cache of the layers a device backend computes, and attention over
   it (dev_internal.h).

   The graph's KV store and attention nodes name a host KV layer
   (core/tensor.h's mllm_kv_layer: the session's cache). When the scheduler
   gives a layer's KV store to the device, it gives the attention that
   reads that layer to the device too (graph/sched.c), so the layer's keys
   and values are only ever written and read here: the backend keeps a
   device copy per host layer, made at the layer's first store and found
   again by the layer's host keys pointer, and the host rows of that layer
   stay unwritten. The session hands the copies back when it frees its
   cache (mllm_backend_kv_release). Everything else that reads the host
   cache directly (the paged pool of the engine and its prefix cache and
   store) uses the paged ops, which stay on the CPU. */
#include <stdlib.h>
#include <string.h>

#include "backends/dev_internal.h"
#include "core/alloc.h"

/* Attention's scores (H x tokens x keys floats) stay under this many bytes
   per launch: a long prefill runs in chunks of tokens. Chunks are whole
   multiples of MLLM_DEV_ATTN_CHUNK tokens where they can be, so their
   views start where a device can start one (CL_DEVICE_MEM_BASE_ADDR_ALIGN).
   $MLLM_DEVICE_ATTN_SCRATCH_KIB sets another bound (the tests make chunks
   of a few tokens with it). */
#define MLLM_DEV_ATTN_SCRATCH_MAX ((size_t)64 << 20)
#define MLLM_DEV_ATTN_CHUNK 128

size_t mllm_dev_attn_scratch_max(void) {
    const char *e = getenv("MLLM_DEVICE_ATTN_SCRATCH_KIB");
    char *end = NULL;
    const long long kib = e && *e ? strtoll(e, &end, 10) : 0;
    return kib > 0 && end && !*end && kib < (1ll << 30) ? (size_t)kib << 10 : MLLM_DEV_ATTN_SCRATCH_MAX;
}

bool mllm_dev_kv_supports(const mllm_tensor *t) {
    const mllm_kv_layer *kv = t->pp;
    if (!kv || !kv->k || kv->kv_dim <= 0 || kv->n_ctx <= 0) return false;
    if (t->op == MLLM_OP_KV_STORE) {
        const mllm_tensor *k = t->src[0], *v = t->src[1];
        const int64_t n = k ? mllm_tensor_nelements(k) : 0;
        return mllm_dev_f32c(k) && mllm_dev_f32c(v) && mllm_tensor_nelements(v) == n && n % kv->kv_dim == 0 &&
               mllm_dev_i32v(t->src[2], n / kv->kv_dim);
    }
    const mllm_tensor *q = t->src[0], *dep = t->src[1];
    if (!mllm_dev_f32c(q) || q->ne[3] != 1 || !dep) return false;
    const int64_t D = q->ne[0], H = q->ne[1], T = q->ne[2], Hkv = t->ip[0];
    const bool causal = t->ip[3] == 0;
    /* the CPU slides a window over non-causal attention too; no model does */
    return Hkv > 0 && H % Hkv == 0 && Hkv * D == kv->kv_dim && dep->op == MLLM_OP_KV_STORE && dep->pp == kv &&
           mllm_dev_i32v(t->src[2], T) && t->ne[0] == D * H && t->ne[1] == T && t->ip[1] >= 0 &&
           (causal || t->ip[1] == 0);
}

static void kv_free(mllm_dev_be *d, mllm_dev_kv *e) {
    d->ops->buf_free(e->k);
    d->ops->buf_free(e->v);
    *e = d->kv[--d->n_kv];
}

/* The device copy of kv, made (create) at the layer's first store. A
   copy of other sizes under the same host pointer belongs to a cache
   freed without kv_release: it is replaced. Called under run_mu. */
static mllm_status kv_copy_of(mllm_dev_be *d, const mllm_kv_layer *kv, bool create, mllm_dev_kv **out) {
    const mllm_dev_ops *ops = d->ops;
    *out = NULL;
    for (int i = 0; i < d->n_kv; i++) {
        mllm_dev_kv *e = &d->kv[i];
        if (e->host != kv->k) continue;
        if (e->n_ctx == kv->n_ctx && e->kv_dim == kv->kv_dim) return *out = e, MLLM_OK;
        kv_free(d, e);
        break;
    }
    if (!create)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s attention: the KV cache of this layer is not on the device "
                                              "(its KV store ran elsewhere)", ops->name);
    if (d->n_kv == d->cap_kv) {
        const int cap = d->cap_kv ? 2 * d->cap_kv : 16;
        mllm_dev_kv *grown = mllm_realloc(d->kv, (size_t)cap * sizeof *grown);
        if (!grown) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", ops->name);
        d->kv = grown;
        d->cap_kv = cap;
    }
    mllm_dev_kv e = {.host = kv->k, .n_ctx = kv->n_ctx, .kv_dim = kv->kv_dim};
    const size_t bytes = (size_t)kv->n_ctx * (size_t)kv->kv_dim * sizeof(float);
    mllm_status st = ops->buf_new(d->c, bytes, &e.k);
    if (!st) st = ops->buf_new(d->c, bytes, &e.v);
    if (st) {
        ops->buf_free(e.k);
        return st;
    }
    d->kv[d->n_kv] = e;
    *out = &d->kv[d->n_kv++];
    return MLLM_OK;
}

void mllm_dev_kv_release(mllm_backend *be, const mllm_kv_layer *kv) {
    mllm_dev_be *d = be->ctx;
    pthread_mutex_lock(&d->run_mu);
    for (int i = 0; i < d->n_kv; i++)
        if (d->kv[i].host == kv->k) {
            kv_free(d, &d->kv[i]);
            break;
        }
    pthread_mutex_unlock(&d->run_mu);
}

static mllm_status on_device(const mllm_dev_be *d, const mllm_tensor *t, const char *op) {
    if (t && t->buffer && t->buffer->type == &d->buft) return MLLM_OK;
    return mllm_err(MLLM_ERR_INVALID_ARG, "%s %s: tensor '%s' is not in device memory", d->ops->name, op,
                    t ? t->name : "(null)");
}

/* k and v of T tokens at consecutive positions from pos[0] (as the CPU's
   store takes them) into rows pos[0].. of the layer's copy: two device
   copies. */
mllm_status mllm_dev_kv_store(mllm_dev_be *d, mllm_dev_run_cache *rc, const mllm_tensor *t) {
    const char *op = "kv_store";
    const mllm_kv_layer *kv = t->pp;
    const mllm_tensor *k = t->src[0], *v = t->src[1];
    mllm_status st = on_device(d, k, op);
    if (!st) st = on_device(d, v, op);
    const int32_t *pos = NULL;
    if (!st) st = mllm_dev_positions(d, rc, t->src[2], &pos);
    if (st) return st;
    const int64_t T = mllm_tensor_nelements(k) / kv->kv_dim;
    for (int64_t i = 1; i < T; i++)
        if (pos[i] != pos[0] + i)
            return mllm_err(MLLM_ERR_INVALID_ARG, "%s %s: positions %d, %d are not consecutive", d->ops->name, op,
                            pos[i - 1], pos[i]);
    if (T < 1 || pos[0] < 0 || pos[0] + T > kv->n_ctx)
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s %s: positions [%d, %lld) outside a cache of %d", d->ops->name, op,
                        T ? pos[0] : 0, (long long)(T ? pos[0] + T : 0), kv->n_ctx);
    mllm_dev_kv *e = NULL;
    if ((st = kv_copy_of(d, kv, true, &e))) return st;
    const size_t row = (size_t)kv->kv_dim * sizeof(float), at = (size_t)pos[0] * row, n = (size_t)T * row;
    st = d->ops->buf_copy(e->k, at, k->buffer->data, k->buffer_offs, n);
    if (!st) st = d->ops->buf_copy(e->v, at, v->buffer->data, v->buffer_offs, n);
    return st;
}

/* Attention of q (D x H x T) over the layer's copy, in chunks of tokens
   whose scores fit d->attn_scratch_max. A chunk reads the keys up to
   its last token's position (causal; all stored ones up to the last
   token's otherwise, as the CPU). */
mllm_status mllm_dev_attention(mllm_dev_be *d, mllm_dev_run_cache *rc, const mllm_tensor *t) {
    const char *op = "attention";
    const mllm_dev_ops *ops = d->ops;
    const mllm_kv_layer *kv = t->pp;
    const mllm_tensor *q = t->src[0];
    const int64_t D = q->ne[0], H = q->ne[1], T = q->ne[2], Hkv = t->ip[0];
    const bool causal = t->ip[3] == 0;
    mllm_status st = on_device(d, q, op);
    if (!st) st = on_device(d, t, op);
    if (!st) st = on_device(d, t->src[2], op);
    const int32_t *pos = NULL;
    if (!st) st = mllm_dev_positions(d, rc, t->src[2], &pos);
    mllm_dev_kv *e = NULL;
    if (!st) st = kv_copy_of(d, kv, false, &e);
    if (st) return st;
    const size_t per_token = ops->attention_scratch(H, 1, kv->n_ctx);
    int64_t chunk = per_token ? (int64_t)(d->attn_scratch_max / per_token) : T;
    if (chunk >= T) chunk = T;
    else if (chunk > MLLM_DEV_ATTN_CHUNK) chunk -= chunk % MLLM_DEV_ATTN_CHUNK;
    else if (chunk < 1) chunk = 1;
    const size_t qrow = (size_t)(D * H) * sizeof(float);
    for (int64_t t0 = 0; t0 < T && !st; t0 += chunk) {
        const int64_t nt = T - t0 < chunk ? T - t0 : chunk;
        int64_t n_keys = causal ? 0 : (int64_t)pos[T - 1] + 1;
        for (int64_t i = t0; causal && i < t0 + nt; i++)
            if (pos[i] + 1 > n_keys) n_keys = (int64_t)pos[i] + 1;
        if (n_keys < 1 || n_keys > kv->n_ctx)
            return mllm_err(MLLM_ERR_INVALID_ARG, "%s %s: %lld keys, outside a cache of %d", ops->name, op,
                            (long long)n_keys, kv->n_ctx);
        const size_t need = ops->attention_scratch(H, nt, n_keys);
        if (!d->scratch || ops->buf_size(d->scratch) < need) {
            ops->buf_free(d->scratch);
            d->scratch = NULL;
            if ((st = ops->buf_new(d->c, need, &d->scratch))) return st;
        }
        mllm_dev_region rq, rp, ro;
        memset(&rp, 0, sizeof rp);
        memset(&ro, 0, sizeof ro);
        st = mllm_dev_region_get(d, q->buffer->data, q->buffer_offs + (size_t)t0 * qrow, (size_t)nt * qrow, false, &rq);
        const mllm_tensor *p = t->src[2];
        if (!st)
            st = mllm_dev_region_get(d, p->buffer->data, p->buffer_offs + (size_t)t0 * sizeof(int32_t),
                                     (size_t)nt * sizeof(int32_t), false, &rp);
        if (!st)
            st = mllm_dev_region_get(d, t->buffer->data, t->buffer_offs + (size_t)t0 * qrow, (size_t)nt * qrow, true,
                                     &ro);
        if (!st)
            st = ops->attention(d->c, rq.b, e->k, e->v, rp.b, ro.b, d->scratch, D, H, Hkv, nt, n_keys, t->fp[0],
                                t->ip[1], causal);
        st = mllm_dev_region_release(d, &ro, st);
        st = mllm_dev_region_release(d, &rp, st);
        st = mllm_dev_region_release(d, &rq, st);
    }
    return st;
}
