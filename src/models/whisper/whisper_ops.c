/* Whisper's building blocks on the thread pool: linear layers (the CPU
   matmul kernels, with bias, GELU and residual add fused after each chunk
   of output rows), LayerNorm, and multi-head attention as two matmuls per
   (head, block of queries), like the graph's attention. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "backends/cpu/kernels.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "models/whisper/whisper_internal.h"

static bool grow(void **p, size_t *cap, size_t need) {
    if (need <= *cap) return true;
    void *n = mllm_malloc_aligned(need);
    if (!n) return false;
    mllm_free_aligned(*p);
    *p = n;
    *cap = need;
    return true;
}

float *wh_scratch(mllm_whisper *w, size_t n) {
    size_t bytes = w->scratch_floats * sizeof(float);
    void *p = w->scratch;
    if (!grow(&p, &bytes, n * sizeof(float))) return NULL;
    w->scratch = p;
    w->scratch_floats = bytes / sizeof(float);
    return w->scratch;
}

typedef struct {
    mllm_whisper *w;
    const wh_linear *L;
    const float *X;
    int64_t M;
    float *Y, *acc;
    bool gelu;
    const void *Xc;   /* X converted to the weight's vec_dot type (or X) */
    size_t xc_stride;
    /* f16 / bf16 weights, many rows: Xc is f32, rounded through the
       vec_dot type (the same values the tiles would see), for the GEMM */
    bool gemm;
    int64_t chunk, next;     /* output rows per chunk; the next chunk */
    int64_t cv_chunk, cv_next; /* the same for the activation rows converted */
} lin_job;

/* Multiply-adds from which a layer is shared with the pool's workers
   (mllm_pool_run_help: the caller never waits for a worker that has not
   started, so a descheduled one on this project's loaded 2-vCPU machine
   costs nothing). Below it, waking a worker and the cache lines its
   results cross cost more than it saves: a decoder step's linears are
   0.15-0.6 M each (q8_0: 0.02-0.1 ms), its logits 20 M per sequence, its
   cross-attention 1.2 M per sequence and layer plus 2.3 MB read. jfk.wav,
   beam 5, q8_0, 2 threads, load average 11-15: decoder 0.76-1.0 s at 2-4 M
   (idle workers sleeping after 4000 pauses, whisper_load.c) against
   0.82-1.1 s on one thread; with the pool's default 5-ms spin 1.4-1.5 s
   (the spinning worker took the core the caller needed). */
#define WH_PARALLEL_MIN_MACS (4 * 1024 * 1024)

/* From this many rows on, f16 / bf16 layers run on mllm_cpu_gemm (the
   encoder, a prompt): the activations are rounded and widened once, shared
   by the threads, instead of widened again by every chunk's call (each
   thread held its own M x K float copy: 9 MB for fc2). */
#define WH_GEMM_MIN_M 16
#define WH_GEMM_MAX_K 16384

static int64_t take(int64_t *next) { return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED); }

/* The activation rows converted for the matmul, a chunk of rows at a time. */
static void convert_fn(void *arg, int ith, int nth) {
    (void)ith;
    (void)nth;
    lin_job *j = arg;
    const wh_linear *L = j->L;
    const int64_t K = L->n_in, M = j->M;
    const mllm_dtype vt = (mllm_dtype)mllm_dtype_get(L->dtype)->vec_dot_type;
    mllm_f16 half[WH_GEMM_MAX_K];
    for (;;) {
        const int64_t m0 = take(&j->cv_next) * j->cv_chunk;
        if (m0 >= M) break;
        const int64_t m1 = m0 + j->cv_chunk < M ? m0 + j->cv_chunk : M;
        for (int64_t m = m0; m < m1; m++) {
            char *dst = (char *)(uintptr_t)j->Xc + (size_t)m * j->xc_stride;
            if (!j->gemm) {
                mllm_cpu_quantize_row(vt, j->X + m * K, dst, K);
                continue;
            }
            mllm_cpu_quantize_row(vt, j->X + m * K, half, K);
            mllm_cpu_to_float(vt, half, (float *)(void *)dst, K);
        }
    }
}

static void lin_fn(void *arg, int ith, int nth) {
    (void)ith;
    (void)nth;
    lin_job *j = arg;
    const mllm_cpu_ops *k = mllm_cpu_ops_get();
    const wh_linear *L = j->L;
    const int64_t K = L->n_in, N = L->n_out, M = j->M;
    for (;;) {
        const int64_t r0 = take(&j->next) * j->chunk;
        if (r0 >= N) break;
        const int64_t r1 = r0 + j->chunk < N ? r0 + j->chunk : N;
        if (j->gemm) mllm_cpu_gemm((mllm_dtype)L->dtype, L->w, L->row_bytes, K, j->Xc, j->xc_stride, M, j->Y, (size_t)N, r0, r1);
        else mllm_cpu_mul_mat((mllm_dtype)L->dtype, L->w, L->row_bytes, K, j->Xc, j->xc_stride, M, j->Y, (size_t)N, r0, r1);
        const int n = (int)(r1 - r0);
        for (int64_t m = 0; m < M; m++) {
            float *y = j->Y + m * N + r0;
            if (L->b) k->add_f32(y, y, L->b + r0, n);
            if (j->gelu) k->gelu_erf(y, y, n);
            if (j->acc) k->add_f32(j->acc + m * N + r0, j->acc + m * N + r0, y, n);
        }
    }
}

/* fn on the pool (shared with the workers that come) or on this thread. */
static void run(mllm_whisper *w, bool parallel, mllm_job_fn fn, void *arg) {
    if (parallel && mllm_pool_size(w->pool) > 1) mllm_pool_run_help(w->pool, fn, arg);
    else fn(arg, 0, 1);
}

mllm_status wh_linear_run(mllm_whisper *w, const wh_linear *L, const float *X, int64_t M, float *Y, bool gelu,
                          float *acc) {
    const mllm_dtype_traits *tr = mllm_dtype_get(L->dtype);
    lin_job j = {.w = w, .L = L, .X = X, .M = M, .Y = Y, .acc = acc, .gelu = gelu};
    j.gemm = (L->dtype == MLLM_DTYPE_F16 || L->dtype == MLLM_DTYPE_BF16) && M >= WH_GEMM_MIN_M && L->n_in <= WH_GEMM_MAX_K;
    const int nth = mllm_pool_size(w->pool);
    const bool parallel = nth > 1 && M * (int64_t)L->n_out * L->n_in >= WH_PARALLEL_MIN_MACS;
    /* many chunks: a worker descheduled while it holds one delays the end
       by at most that chunk */
    const int64_t target = (int64_t)nth * 8;
    j.chunk = !parallel ? L->n_out : ((L->n_out + target - 1) / target + 15) & ~(int64_t)15;
    if (tr->vec_dot_type != MLLM_DTYPE_F32) {
        j.xc_stride = j.gemm ? (size_t)L->n_in * sizeof(float) : mllm_dtype_row_size((mllm_dtype)tr->vec_dot_type, L->n_in);
        if (!grow(&w->xq, &w->xq_bytes, j.xc_stride * (size_t)M))
            return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory for activations");
        j.Xc = w->xq;
        j.cv_chunk = parallel ? (M + target - 1) / target : M;
        run(w, parallel && M >= 64, convert_fn, &j);
    } else {
        j.xc_stride = (size_t)L->n_in * sizeof(float);
        j.Xc = X;
    }
    run(w, parallel, lin_fn, &j);
    return MLLM_OK;
}

typedef struct {
    const wh_norm *n;
    const float *X;
    float *Y;
    int64_t M, dim, next;
} ln_job;

#define LN_ROWS 64
static void ln_fn(void *arg, int ith, int nth) {
    (void)ith;
    (void)nth;
    ln_job *j = arg;
    for (;;) {
        const int64_t m0 = take(&j->next) * LN_ROWS;
        if (m0 >= j->M) break;
        const int64_t nr = j->M - m0 < LN_ROWS ? j->M - m0 : LN_ROWS;
        mllm_cpu_layernorm_rows(j->Y + m0 * j->dim, j->X + m0 * j->dim, j->n->gamma, j->n->beta, nr, (int)j->dim, 1e-5f);
    }
}

void wh_layernorm(mllm_whisper *w, const wh_norm *n, const float *X, int64_t M, int64_t dim, float *Y) {
    ln_job j = {n, X, Y, M, dim, 0};
    run(w, M >= 2 * LN_ROWS, ln_fn, &j); /* the encoder's 1500 rows; a decoder step's few stay here */
}

/* Queries per attention job: each key and value row read serves this many
   (48 = 8 of the GEMM's 6-row tiles; P is 48 x 1500 floats = 288 KB, in L2). */
#define ATT_QB 48
/* From this many queries in a job on, the two products run on the packed
   f32 GEMM (~1.7x the tiles on the encoder's 1500 x 1500 x 64 products);
   decoder steps (a few queries) stay on the tiles. */
#define ATT_GEMM_MIN_Q 16

typedef struct {
    const wh_attn *a;
    float *buf;
    size_t per_thread;
    int64_t n_jobs, next;
} att_job;

static void att_fn(void *arg, int ith, int nth) {
    (void)nth;
    att_job *j = arg;
    const wh_attn *a = j->a;
    const mllm_cpu_ops *k = mllm_cpu_ops_get();
    float *P = j->buf + (size_t)ith * j->per_thread;
    const int64_t n_qb = (a->n_q + ATT_QB - 1) / ATT_QB;
    const float scale = 1.0f / sqrtf((float)a->hd);
    for (;;) {
        const int64_t job = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (job >= j->n_jobs) break;
        const int64_t h = job / n_qb, i0 = (job % n_qb) * ATT_QB;
        const int nb = (int)(a->n_q - i0 < ATT_QB ? a->n_q - i0 : ATT_QB);
        const int64_t n_k = a->causal >= 0 ? (a->causal + i0 + nb < a->n_k ? a->causal + i0 + nb : a->n_k) : a->n_k;
        const bool gemm = nb >= ATT_GEMM_MIN_Q && !a->kv_f16;
        const float *qh = a->q + (size_t)i0 * a->q_stride + (size_t)(h * a->hd);
        float *oh = a->out + (size_t)i0 * a->out_stride + (size_t)(h * a->hd);
        const size_t es = a->kv_f16 ? 2 : 4; /* bytes per K / V value */
        const mllm_dtype kt = a->kv_f16 ? MLLM_DTYPE_F16 : MLLM_DTYPE_F32;
        const char *kh = (const char *)a->k + (size_t)h * (a->k_head ? a->k_head : (size_t)a->hd) * es;
        const char *vh = (const char *)a->vt + (size_t)h * (size_t)a->hd * a->vt_stride * es;
        const void *xq = qh;
        size_t xq_stride = a->q_stride * sizeof(float);
        mllm_f16 *p16 = (mllm_f16 *)(P + (size_t)ATT_QB * (size_t)n_k); /* q, then P, as f16 */
        if (a->kv_f16) {
            for (int r = 0; r < nb; r++)
                mllm_cpu_quantize_row(MLLM_DTYPE_F16, qh + (size_t)r * a->q_stride, p16 + (size_t)r * a->hd, a->hd);
            xq = p16;
            xq_stride = (size_t)a->hd * 2;
        }
        if (gemm) mllm_cpu_gemm(MLLM_DTYPE_F32, kh, a->k_stride * es, a->hd, qh, xq_stride, nb, P, (size_t)n_k, 0, n_k);
        else mllm_cpu_mul_mat(kt, kh, a->k_stride * es, a->hd, xq, xq_stride, nb, P, (size_t)n_k, 0, n_k);
        for (int r = 0; r < nb; r++) {
            float *p = P + (size_t)r * (size_t)n_k;
            if (a->causal >= 0)
                for (int64_t c = a->causal + i0 + r + 1; c < n_k; c++) p[c] = -INFINITY;
            k->softmax(p, (int)n_k, scale);
        }
        const void *xp = P;
        size_t xp_stride = (size_t)n_k * sizeof(float);
        if (a->kv_f16) {
            mllm_cpu_quantize_row(MLLM_DTYPE_F16, P, p16, (int64_t)nb * n_k); /* rows are contiguous */
            xp = p16;
            xp_stride = (size_t)n_k * 2;
        }
        if (gemm) mllm_cpu_gemm(MLLM_DTYPE_F32, vh, a->vt_stride * es, n_k, P, xp_stride, nb, oh, a->out_stride, 0, a->hd);
        else mllm_cpu_mul_mat(kt, vh, a->vt_stride * es, n_k, xp, xp_stride, nb, oh, a->out_stride, 0, a->hd);
    }
}

mllm_status wh_attention(mllm_whisper *w, const wh_attn *a) {
    const int nth = mllm_pool_size(w->pool);
    /* P (ATT_QB x n_k floats), then room for its f16 copy (or the queries') */
    att_job j = {.a = a, .per_thread = (size_t)ATT_QB * (size_t)a->n_k * (a->kv_f16 ? 2 : 1) + (size_t)ATT_QB * (size_t)a->hd};
    j.per_thread = (j.per_thread + 15) & ~(size_t)15;
    size_t bytes = w->att_floats * sizeof(float);
    void *p = w->att;
    if (!grow(&p, &bytes, j.per_thread * (size_t)nth * sizeof(float)))
        return mllm_err(MLLM_ERR_NOMEM, "whisper: out of memory for attention");
    w->att = p;
    w->att_floats = bytes / sizeof(float);
    j.buf = w->att;
    j.n_jobs = (int64_t)a->n_head * ((a->n_q + ATT_QB - 1) / ATT_QB);
    run(w, j.n_jobs > 1 && (double)a->n_q * (double)a->n_k * a->hd * a->n_head * 2 >= WH_PARALLEL_MIN_MACS, att_fn, &j);
    return MLLM_OK;
}
