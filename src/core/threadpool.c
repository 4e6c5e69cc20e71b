#include "core/threadpool.h"
#include "core/alloc.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* How long a worker spins before sleeping: long enough to bridge the gap
   between two ops of one forward pass, short enough not to burn a core
   while the caller samples or waits for input. */
#define MLLM_POOL_SPIN_ITERS 200000
/* Spins in a barrier or a join before yielding the core: when there are more
   threads than free cores (a busy machine), pure spinning would stall the
   thread everyone waits for. */
#define MLLM_POOL_YIELD_AFTER 2000

static inline void relax(int *spins) {
    if (++*spins < MLLM_POOL_YIELD_AFTER) CPU_RELAX();
    else sched_yield();
}

struct mllm_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint job_gen;    /* bumped for every job */
    atomic_int n_done;      /* workers finished with the current job */
    atomic_int n_sleeping;
    atomic_bool stop;
    mllm_job_fn fn;
    void *arg;
    /* barrier */
    atomic_int bar_count;
    atomic_uint bar_gen;
};

typedef struct { mllm_pool *p; int ith; } worker_arg;

static void *worker_main(void *a) {
    mllm_pool *p = ((worker_arg *)a)->p;
    int ith = ((worker_arg *)a)->ith;
    mllm_free(a);
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->job_gen, memory_order_acquire)) == seen &&
               !atomic_load(&p->stop)) {
            if (++spins < MLLM_POOL_SPIN_ITERS) { CPU_RELAX(); continue; }
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->n_sleeping, 1);
            while (atomic_load(&p->job_gen) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->cv, &p->mu);
            atomic_fetch_sub(&p->n_sleeping, 1);
            pthread_mutex_unlock(&p->mu);
            spins = 0;
        }
        if (atomic_load(&p->stop)) break;
        seen = g;
        p->fn(p->arg, ith, p->n);
        atomic_fetch_add_explicit(&p->n_done, 1, memory_order_release);
    }
    return NULL;
}

int mllm_cpu_count(void) {
#ifdef __wasi__
    return 1; /* one thread: cmake/wasi/include/pthread.h */
#else
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
#endif
}

mllm_pool *mllm_pool_new(int n_threads) {
    if (n_threads < 1) n_threads = 1;
#ifdef __wasi__
    n_threads = 1; /* wasm32-wasi has no threads: -t N runs on the one there is */
#endif
    mllm_pool *p = mllm_calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->threads = mllm_calloc((size_t)n_threads, sizeof(pthread_t));
    if (!p->threads) { mllm_pool_free(p); return NULL; }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = mllm_malloc(sizeof *wa);
        if (!wa) { p->n = i; mllm_pool_free(p); return NULL; }
        wa->p = p;
        wa->ith = i;
        if (pthread_create(&p->threads[i], NULL, worker_main, wa) != 0) {
            mllm_free(wa);
            p->n = i;
            mllm_pool_free(p);
            return NULL;
        }
    }
    return p;
}

void mllm_pool_free(mllm_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++)
        if (p->threads && p->threads[i]) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    mllm_free(p->threads);
    mllm_free(p);
}

int mllm_pool_size(const mllm_pool *p) { return p ? p->n : 1; }

void mllm_pool_run(mllm_pool *p, mllm_job_fn fn, void *arg) {
    if (p->n == 1) { fn(arg, 0, 1); return; }
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->n_done, 0);
    atomic_fetch_add_explicit(&p->job_gen, 1, memory_order_release);
    if (atomic_load(&p->n_sleeping) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    fn(arg, 0, p->n);
    int spins = 0;
    while (atomic_load_explicit(&p->n_done, memory_order_acquire) < p->n - 1) relax(&spins);
}

void mllm_pool_barrier(mllm_pool *p) {
    if (!p || p->n == 1) return;
    unsigned gen = atomic_load_explicit(&p->bar_gen, memory_order_acquire);
    if (atomic_fetch_add_explicit(&p->bar_count, 1, memory_order_acq_rel) == p->n - 1) {
        atomic_store_explicit(&p->bar_count, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->bar_gen, 1, memory_order_release);
        return;
    }
    int spins = 0;
    while (atomic_load_explicit(&p->bar_gen, memory_order_acquire) == gen) relax(&spins);
}
