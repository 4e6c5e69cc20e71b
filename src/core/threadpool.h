/* A persistent pool of worker threads. A job is a function that every thread
   (the caller is thread 0) runs with its index; inside a job, threads meet at
   mllm_pool_barrier(). No allocation and no lock on the hot path: workers
   spin briefly on an atomic generation counter, then sleep on a condvar. */
#ifndef MLLM_CORE_THREADPOOL_H
#define MLLM_CORE_THREADPOOL_H

typedef struct mllm_pool mllm_pool;
typedef void (*mllm_job_fn)(void *arg, int ith, int nth);

/* n_threads >= 1 (1 = run jobs on the caller only). NULL on failure. */
mllm_pool *mllm_pool_new(int n_threads);
void mllm_pool_free(mllm_pool *p);
int mllm_pool_size(const mllm_pool *p);
/* Runs fn(arg, ith, nth) on all threads and returns when all are done. */
void mllm_pool_run(mllm_pool *p, mllm_job_fn fn, void *arg);
/* All threads of the running job wait for each other. */
void mllm_pool_barrier(mllm_pool *p);
/* Number of online CPUs. */
int mllm_cpu_count(void);

#endif
