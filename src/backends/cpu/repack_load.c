/* Load-time repacking of matmul weights into the x8 kernel layouts
   (repack.h), the work of the repacked-weights buffer type (backends/cpu.h:
   mllm_cpu_repack_weights). The packed copy replaces the mapped original:
   as each piece is packed, the file pages it came from are dropped from
   this process (madvise DONTNEED on a read-only file mapping just unmaps
   them), so resident memory stays about one copy of the weights, not two.

   With p->requant (a draft model's --draft-quant) matrices whose rows take
   more bytes than that type's are requantized to it on the way: each row
   goes to f32 and through the type's quantizer (what mllm convert --quant
   does), then into its packed layout when this CPU path has one. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "backends/cpu.h"
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

/* Whether t is requantized to rq: a plain matrix with a quantizer's way
   back to f32, whose rows take more bytes than rq's, in groups of 8 rows of
   whole rq blocks. */
static bool requant_applies(int rq, const mllm_tensor *t) {
    if (rq < 0 || t->dtype == rq || mllm_repack_plain_type((mllm_dtype)t->dtype) != (mllm_dtype)t->dtype) return false;
    const mllm_cpu_type *in = mllm_cpu_type_get((mllm_dtype)t->dtype);
    const size_t rs = mllm_dtype_row_size((mllm_dtype)rq, t->ne[0]);
    return in && in->to_float && rs > 0 && rs < t->nb[1] && t->ne[1] % 8 == 0;
}

/* Runs the plan on up to n_threads threads (0: one per CPU), the calling
   one included. */
static void run_plan(pack_plan *pl, int n_threads) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (n_threads > 0 && n_threads < ncpu) ncpu = n_threads;
    int nth = ncpu < 1 ? 1 : ncpu > MAX_THREADS ? MAX_THREADS : (int)ncpu;
    pthread_t th[MAX_THREADS];
    int started = 0;
    for (int i = 1; i < nth; i++)
        if (pthread_create(&th[started], NULL, pack_worker, pl) == 0) started++;
    pack_worker(pl);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
}

mllm_status mllm_cpu_repack_weights(mllm_tensor *const *ts, const bool *drop_source, int n,
                                    const mllm_cpu_repack_params *p, mllm_buffer *buf, size_t *saved) {
    buf->type = NULL;
    const bool pack = p->repack == 1 || (p->repack < 0 && mllm_cpu_has_packed_kernels());
    const bool forced = p->repack == 1;
    if ((!pack && p->requant < 0) || n <= 0) return MLLM_OK;
    pack_job *jobs = mllm_calloc((size_t)n, sizeof *jobs);
    if (!jobs) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    int n_jobs = 0;
    size_t total = 0;
    int64_t n_items = 0;
    for (int i = 0; i < n; i++) {
        mllm_tensor *t = ts[i];
        if (t->ne[2] != 1 || t->ne[3] != 1) continue;
        const bool rq = requant_applies(p->requant, t);
        const mllm_dtype plain = rq ? (mllm_dtype)p->requant : (mllm_dtype)t->dtype;
        int packed = pack ? mllm_repack_type_for(plain, t->ne[0], t->ne[1]) : -1;
        if (packed >= 0 && !forced && !mllm_cpu_has_packed_kernel((mllm_dtype)packed)) packed = -1;
        if (packed < 0 && !rq) continue;
        pack_job *jb = &jobs[n_jobs++];
        jb->t = t;
        jb->packed = packed >= 0 ? packed : (int)plain;
        jb->from = rq ? t->dtype : -1;
        jb->src = t->data;
        jb->drop_source = drop_source && drop_source[i];
        jb->groups = t->ne[1] / 8;
        const size_t gb = 8 * t->nb[1], gb_out = 8 * mllm_dtype_row_size(plain, t->ne[0]);
        jb->groups_per_item = (int64_t)(ITEM_BYTES / gb) > 0 ? (int64_t)(ITEM_BYTES / gb) : 1;
        jb->first_item = n_items;
        n_items += (jb->groups + jb->groups_per_item - 1) / jb->groups_per_item;
        jb->dst = (void *)total; /* offset for now */
        total += ((size_t)jb->groups * gb_out + 63) & ~(size_t)63;
    }
    if (n_jobs == 0) {
        mllm_free(jobs);
        return MLLM_OK;
    }
    const mllm_buffer_type *bt = mllm_cpu_repack_buffer_type();
    if (!bt->alloc(bt, total, buf)) {
        buf->type = NULL;
        mllm_free(jobs);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory repacking %zu bytes of weights", total);
    }
    for (int i = 0; i < n_jobs; i++) jobs[i].dst = (char *)buf->data + (size_t)jobs[i].dst;
    pack_plan pl = {jobs, n_jobs, n_items, 0, 0};
    run_plan(&pl, p->n_threads);
    if (pl.failed) {
        /* No tensor points into the buffer yet; sources already dropped
           from the mapping are read again from the file on demand. */
        buf->type->free(buf);
        buf->type = NULL;
        mllm_free(jobs);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory requantizing the weights");
    }
    for (int i = 0; i < n_jobs; i++) {
        mllm_tensor *t = jobs[i].t;
        if (jobs[i].from >= 0) {
            const size_t was = t->nb[3] * (size_t)t->ne[3];
            const int64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
            mllm_tensor_set_shape(t, mllm_repack_plain_type((mllm_dtype)jobs[i].packed), 4, ne);
            if (saved) *saved += was - t->nb[3] * (size_t)t->ne[3];
        }
        t->data = jobs[i].dst;
        t->dtype = jobs[i].packed;
        t->buffer = buf;
        t->buffer_offs = (size_t)((char *)jobs[i].dst - (char *)buf->data);
    }
    mllm_free(jobs);
    return MLLM_OK;
}
