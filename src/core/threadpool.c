#include "core/threadpool.h"
#include "core/alloc.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
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
    atomic_int spin_iters;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* Held by the thread whose job runs: callers on other threads (the
       sessions, the engine, the towers sharing one model's pool) take turns
       instead of posting over each other's job. */
    pthread_mutex_t run_mu;
    atomic_uint job_gen;    /* 2 x the job's number, + 1 for an mllm_pool_run_help job */
    atomic_int n_done;      /* workers finished with the current job */
    atomic_int n_sleeping;
    atomic_bool stop;
    mllm_job_fn fn;
    void *arg;
    /* mllm_pool_run_help: the job's number << 32 | HELP_CLOSED once the
       caller is done | how many workers took it up; and how many of those
       have returned */
    _Atomic uint64_t help_state;
    atomic_int help_done;
    /* barrier */
    atomic_int bar_count;
    atomic_uint bar_gen;
};

typedef struct { mllm_pool *p; int ith; } worker_arg;

#define HELP_CLOSED ((uint64_t)1 << 31)

/* A help job's worker side: takes it up unless it is closed or already
   replaced by a later one (its number no longer the state's). */
static void help_join(mllm_pool *p, unsigned g, int ith) {
    uint64_t s = atomic_load_explicit(&p->help_state, memory_order_acquire);
    for (;;) {
        if ((unsigned)(s >> 32) != g >> 1 || (s & HELP_CLOSED)) return;
        if (atomic_compare_exchange_weak_explicit(&p->help_state, &s, s + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            break;
    }
    p->fn(p->arg, ith, p->n);
    atomic_fetch_add_explicit(&p->help_done, 1, memory_order_release);
}

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
            if (++spins < atomic_load_explicit(&p->spin_iters, memory_order_relaxed)) { CPU_RELAX(); continue; }
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
        if (g & 1) {
            help_join(p, g, ith);
            continue;
        }
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
    atomic_init(&p->spin_iters, MLLM_POOL_SPIN_ITERS);
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->run_mu, NULL);
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
    pthread_mutex_destroy(&p->run_mu);
    pthread_cond_destroy(&p->cv);
    mllm_free(p->threads);
    mllm_free(p);
}

int mllm_pool_size(const mllm_pool *p) { return p ? p->n : 1; }

void mllm_pool_set_spin(mllm_pool *p, int iters) {
    if (p) atomic_store_explicit(&p->spin_iters, iters > 0 ? iters : 1, memory_order_relaxed);
}

static void run_locked(mllm_pool *p, mllm_job_fn fn, void *arg) {
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->n_done, 0);
    const unsigned g = atomic_load_explicit(&p->job_gen, memory_order_relaxed);
    /* seq_cst (a full barrier): the n_sleeping load below must not pass it,
       or a worker going to sleep could miss the job */
    atomic_store(&p->job_gen, (g | 1) + 1);
    if (atomic_load(&p->n_sleeping) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    fn(arg, 0, p->n);
    int spins = 0;
    while (atomic_load_explicit(&p->n_done, memory_order_acquire) < p->n - 1) relax(&spins);
}

void mllm_pool_run(mllm_pool *p, mllm_job_fn fn, void *arg) {
    pthread_mutex_lock(&p->run_mu);
    if (p->n == 1) fn(arg, 0, 1);
    else run_locked(p, fn, arg);
    pthread_mutex_unlock(&p->run_mu);
}

static void run_help_locked(mllm_pool *p, mllm_job_fn fn, void *arg) {
    p->fn = fn;
    p->arg = arg;
    /* only the caller posts jobs, and every worker that took up the last
       one has returned: nobody reads these while they change */
    const unsigned g = (atomic_load_explicit(&p->job_gen, memory_order_relaxed) | 1) + 2; /* odd: help */
    atomic_store_explicit(&p->help_done, 0, memory_order_relaxed);
    atomic_store_explicit(&p->help_state, (uint64_t)(g >> 1) << 32, memory_order_release);
    atomic_store(&p->job_gen, g); /* seq_cst, as in mllm_pool_run */
    if (atomic_load(&p->n_sleeping) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    fn(arg, 0, p->n);
    const uint64_t s = atomic_fetch_or_explicit(&p->help_state, HELP_CLOSED, memory_order_acq_rel);
    const int entered = (int)(s & (HELP_CLOSED - 1));
    int spins = 0;
    while (atomic_load_explicit(&p->help_done, memory_order_acquire) < entered) relax(&spins);
}

void mllm_pool_run_help(mllm_pool *p, mllm_job_fn fn, void *arg) {
    pthread_mutex_lock(&p->run_mu);
    if (p->n == 1) fn(arg, 0, 1);
    else run_help_locked(p, fn, arg);
    pthread_mutex_unlock(&p->run_mu);
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
