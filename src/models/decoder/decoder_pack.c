/* Load-time repacking of matmul weights into the x8 kernel layouts
   (backends/cpu/repack.h). The packed copy replaces the mapped original: as
   each piece is packed, the file pages it came from are dropped from this
   process (madvise DONTNEED on a read-only file mapping just unmaps them), so
   resident memory stays about one copy of the weights, not two. A .mllm file
   that already stores packed weights skips all of this (pure mmap).

   With m->requant (a draft model's --draft-quant) matrices whose rows take
   more bytes than that type's are requantized to it on the way: each row
   goes to f32 and through the type's quantizer (what mllm convert --quant
   does), then into its packed layout when this CPU path has one. */
#include "models/decoder/decoder.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/repack.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/file_map.h"

#define ITEM_BYTES (1u << 20) /* one unit of work: about 1 MiB of weights */
#define MAX_THREADS 8

typedef struct {
    mllm_tensor *t;
    int packed;        /* target dtype (packed, or plain when only requantized) */
    int from;          /* requantized from this dtype, or -1 */
    const void *src;   /* original rows */
    void *dst;         /* in the packed buffer */
    bool drop_source;  /* src is a file mapping whose pages may be dropped */
    int64_t groups, groups_per_item, first_item;
} pack_job;

typedef struct {
    pack_job *jobs;
    int n_jobs;
    int64_t n_items;
    int64_t next; /* atomic */
    int failed;   /* atomic: a requantizing worker ran out of memory */
} pack_plan;

/* A worker's scratch for requantizing: one row of floats and one group
   of 8 quantized rows, grown as jobs need and kept until the worker ends. */
typedef struct {
    float *x;
    char *q;
    size_t x_cap, q_cap;
} requant_scratch;

static bool scratch_grow(void **p, size_t *cap, size_t bytes) {
    if (*cap >= bytes) return true;
    void *n = mllm_malloc(bytes);
    if (!n) return false;
    mllm_free(*p);
    *p = n;
    *cap = bytes;
    return true;
}

/* Groups [g0, g1) of 8 rows to f32, through the quantizer of the job's
   plain type, then packed (or copied) into dst. */
static bool requant_groups(pack_plan *pl, requant_scratch *sc, const pack_job *jb, int64_t g0, int64_t g1) {
    const int64_t K = jb->t->ne[0];
    const mllm_dtype plain = mllm_repack_plain_type((mllm_dtype)jb->packed);
    const size_t rs_in = mllm_dtype_row_size((mllm_dtype)jb->from, K), rs = mllm_dtype_row_size(plain, K);
    if (!scratch_grow((void **)&sc->x, &sc->x_cap, (size_t)K * sizeof *sc->x) ||
        !scratch_grow((void **)&sc->q, &sc->q_cap, 8 * rs)) {
        __atomic_store_n(&pl->failed, 1, __ATOMIC_RELAXED);
        return false;
    }
    float *x = sc->x;
    char *q = sc->q;
    const mllm_cpu_type *in = mllm_cpu_type_get((mllm_dtype)jb->from);
    for (int64_t g = g0; g < g1; g++) {
        for (int r = 0; r < 8; r++) {
            in->to_float((const char *)jb->src + (size_t)(8 * g + r) * rs_in, x, K);
            mllm_cpu_quantize_weight_row(plain, x, q + (size_t)r * rs, K);
        }
        char *dst = (char *)jb->dst + (size_t)g * 8 * rs;
        if (jb->packed != (int)plain) mllm_repack_groups((mllm_dtype)jb->packed, q, dst, K, 0, 1);
        else memcpy(dst, q, 8 * rs);
    }
    return true;
}

static void *pack_worker(void *arg) {
    pack_plan *pl = arg;
    requant_scratch sc = {0};
    for (;;) {
        int64_t it = __atomic_fetch_add(&pl->next, 1, __ATOMIC_RELAXED);
        if (it >= pl->n_items) break;
        int j = 0;
        while (j + 1 < pl->n_jobs && pl->jobs[j + 1].first_item <= it) j++;
        pack_job *jb = &pl->jobs[j];
        const int64_t g0 = (it - jb->first_item) * jb->groups_per_item;
        const int64_t g1 = g0 + jb->groups_per_item < jb->groups ? g0 + jb->groups_per_item : jb->groups;
        const int64_t K = jb->t->ne[0];
        if (jb->from >= 0) {
            if (!requant_groups(pl, &sc, jb, g0, g1)) break;
        } else {
            mllm_repack_groups((mllm_dtype)jb->packed, jb->src, jb->dst, K, g0, g1);
        }
        if (jb->drop_source) {
            const size_t gb = 8 * jb->t->nb[1];
            mllm_file_map_drop((const char *)jb->src + (size_t)g0 * gb, (size_t)(g1 - g0) * gb);
        }
    }
    mllm_free(sc.x);
    mllm_free(sc.q);
    return NULL;
}

/* MLLM_REPACK=0: never; =1: always, every packable matrix; unset: when this
   CPU path has kernels for the packed layouts (AVX2, NEON: all of
   them), and only into the packed types it has kernels for. The
   generic path computes packed layouts too, but as a reference, slower than
   its plain loops, so a path without packed SIMD kernels for a type keeps
   the file's layout for it. */
static bool repack_forced(void) {
    const char *e = getenv("MLLM_REPACK");
    return e && strcmp(e, "1") == 0;
}

static bool repack_enabled(void) {
    const char *e = getenv("MLLM_REPACK");
    if (e && strcmp(e, "0") == 0) return false;
    return repack_forced() || mllm_cpu_has_packed_kernels();
}

/* The matmul weights of the model; the embedding table only when it is also
   the output matrix (get_rows reads packed rows too). */
static int list_matrices(mllm_decoder *m, mllm_tensor **out) {
    int n = 0;
    out[n++] = m->output;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        mllm_decoder_layer *L = &m->layers[l];
        mllm_tensor *ts[7] = {L->wq, L->wk, L->wv, L->wo, L->w_gate, L->w_up, L->w_down};
        for (int i = 0; i < 7; i++) out[n++] = ts[i];
    }
    return n;
}

/* Whether t is requantized to rq: a plain matrix with a quantizer's way
   back to f32, whose rows take more bytes than rq's, in groups of 8 rows of
   whole rq blocks. */
static bool requant_applies(int rq, const mllm_tensor *t) {
    if (rq < 0 || t->dtype == rq || mllm_repack_plain_type((mllm_dtype)t->dtype) != (mllm_dtype)t->dtype) return false;
    const mllm_cpu_type *in = mllm_cpu_type_get((mllm_dtype)t->dtype);
    const size_t rs = mllm_dtype_row_size((mllm_dtype)rq, t->ne[0]);
    return in && in->to_float && rs > 0 && rs < t->nb[1] && t->ne[1] % 8 == 0;
}

mllm_status mllm_decoder_pack(mllm_decoder *m, const mllm_model_file *f) {
    const bool pack = repack_enabled();
    if (!pack && m->requant < 0) return MLLM_OK;
    const int n_max = 1 + 7 * m->cfg.n_layer;
    mllm_tensor **ts = mllm_malloc((size_t)n_max * sizeof *ts);
    pack_job *jobs = mllm_calloc((size_t)n_max, sizeof *jobs);
    if (!ts || !jobs) {
        mllm_free(ts);
        mllm_free(jobs);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    const int n = list_matrices(m, ts);
    int n_jobs = 0;
    size_t total = 0;
    int64_t n_items = 0;
    const bool forced = repack_forced();
    for (int i = 0; i < n; i++) {
        mllm_tensor *t = ts[i];
        if (t->ne[2] != 1 || t->ne[3] != 1 || t->mirror) continue; /* mirror: computed elsewhere */
        const bool rq = requant_applies(m->requant, t);
        const mllm_dtype plain = rq ? (mllm_dtype)m->requant : (mllm_dtype)t->dtype;
        int packed = pack ? mllm_repack_type_for(plain, t->ne[0], t->ne[1]) : -1;
        if (packed >= 0 && !forced && !mllm_cpu_has_packed_kernel((mllm_dtype)packed)) packed = -1;
        if (packed < 0 && !rq) continue;
        const mllm_weight *w = mllm_model_file_find(f, t->name);
        pack_job *jb = &jobs[n_jobs++];
        jb->t = t;
        jb->packed = packed >= 0 ? packed : (int)plain;
        jb->from = rq ? t->dtype : -1;
        jb->src = t->data;
        jb->drop_source = w && w->data == t->data && w->mapped;
        jb->groups = t->ne[1] / 8;
        const size_t gb = 8 * t->nb[1], gb_out = 8 * mllm_dtype_row_size(plain, t->ne[0]);
        jb->groups_per_item = (int64_t)(ITEM_BYTES / gb) > 0 ? (int64_t)(ITEM_BYTES / gb) : 1;
        jb->first_item = n_items;
        n_items += (jb->groups + jb->groups_per_item - 1) / jb->groups_per_item;
        jb->dst = (void *)total; /* offset for now */
        total += ((size_t)jb->groups * gb_out + 63) & ~(size_t)63;
    }
    mllm_free(ts);
    if (n_jobs == 0) {
        mllm_free(jobs);
        return MLLM_OK;
    }
    /* The kernel layouts are a buffer type of the CPU backend's own. */
    const mllm_buffer_type *bt = mllm_cpu_repack_buffer_type();
    if (!bt->alloc(bt, total, &m->packed_buf)) {
        m->packed_buf.type = NULL;
        mllm_free(jobs);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory repacking %zu bytes of weights", total);
    }
    m->packed = m->packed_buf.data;
    m->packed_size = total;
    for (int i = 0; i < n_jobs; i++) jobs[i].dst = (char *)m->packed + (size_t)jobs[i].dst;
    pack_plan pl = {jobs, n_jobs, n_items, 0, 0};
    /* MLLM_PACK_THREADS=N caps the packing threads (1: all on the calling
       thread, as the qemu instruction counts of bench/ need: their counter
       is exact for one thread only). */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    const char *pt = getenv("MLLM_PACK_THREADS");
    if (pt && atol(pt) > 0 && atol(pt) < ncpu) ncpu = atol(pt);
    int nth = ncpu < 1 ? 1 : ncpu > MAX_THREADS ? MAX_THREADS : (int)ncpu;
    pthread_t th[MAX_THREADS];
    int started = 0;
    for (int i = 1; i < nth; i++)
        if (pthread_create(&th[started], NULL, pack_worker, &pl) == 0) started++;
    pack_worker(&pl);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    if (pl.failed) {
        /* No tensor points into the buffer yet; sources already dropped
           from the mapping are read again from the file on demand. */
        m->packed_buf.type->free(&m->packed_buf);
        m->packed_buf.type = NULL;
        m->packed = NULL;
        m->packed_size = 0;
        mllm_free(jobs);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory requantizing the weights");
    }
    for (int i = 0; i < n_jobs; i++) {
        mllm_tensor *t = jobs[i].t;
        if (jobs[i].from >= 0) {
            const size_t was = t->nb[3] * (size_t)t->ne[3];
            const int64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
            mllm_tensor_set_shape(t, mllm_repack_plain_type((mllm_dtype)jobs[i].packed), 4, ne);
            m->requant_saved += was - t->nb[3] * (size_t)t->ne[3];
        }
        t->data = jobs[i].dst;
        t->dtype = jobs[i].packed;
        t->buffer = &m->packed_buf;
        t->buffer_offs = (size_t)((char *)jobs[i].dst - (char *)m->packed);
    }
    /* The embedding table is the output matrix when tied: same tensor. */
    mllm_free(jobs);
    return MLLM_OK;
}
