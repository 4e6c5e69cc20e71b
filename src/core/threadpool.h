/* A persistent pool of worker threads. A job is a function that every thread
   (the caller is thread 0) runs with its index; inside a job, threads meet at
   mllm_pool_barrier(). No allocation and no lock on the hot path: workers
   spin briefly on an atomic generation counter, then sleep on a condvar.
   A pool may be shared by threads (one per model, lent to its sessions,
   its engine, its towers): concurrent mllm_pool_run / mllm_pool_run_help
   calls take turns, one job at a time (a job must not post another to its
   own pool). */
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
/* Runs fn(arg, ith, nth) on the caller and on the workers that take the job
   up before the caller's own call has returned; workers that come later
   skip it. Returns when every call that started has returned. fn must share
   its work out dynamically (an atomic counter of chunks: any one call may
   end up doing all of it) and must not call mllm_pool_barrier. On a busy
   machine a worker that is not scheduled costs nothing here, where
   mllm_pool_run waits a time slice for it. */
void mllm_pool_run_help(mllm_pool *p, mllm_job_fn fn, void *arg);
/* How many pause rounds an idle worker spins before it sleeps (default
   MLLM_POOL_SPIN_ITERS, about 5 ms): long bridges the gaps between the ops
   of a forward; short gives the core back to other programs sooner on a
   busy machine, for callers whose jobs are few and long. Set it before the
   first job. */
void mllm_pool_set_spin(mllm_pool *p, int iters);
/* All threads of the running job wait for each other. */
void mllm_pool_barrier(mllm_pool *p);
/* Number of online CPUs. */
int mllm_cpu_count(void);

#endif
