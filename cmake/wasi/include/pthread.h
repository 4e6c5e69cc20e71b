/* pthread.h for wasm32-wasi builds (cmake/wasi/wasi.toolchain.cmake puts
   this folder first on the include path). Debian 12's wasi-libc has no
   threads, so this is the single-threaded implementation: one thread exists,
   a mutex can never be contended, a condition wait could never be woken (it
   fails with EDEADLK instead of hanging), pthread_once and thread-specific
   keys work, and pthread_create fails with EAGAIN -- every caller in mllm
   then does the work on the calling thread (core/threadpool.c builds a pool
   of one, decoder_pack.c and quantize.c run their slices inline). */
#ifndef MLLM_WASI_PTHREAD_H
#define MLLM_WASI_PTHREAD_H
#include <errno.h>
#include <stddef.h>
#include <time.h>

typedef struct { int locked; } pthread_mutex_t;
typedef struct { int unused; } pthread_mutexattr_t;
typedef struct { int unused; } pthread_cond_t;
typedef struct { int unused; } pthread_condattr_t;
typedef struct { int unused; } pthread_attr_t;
typedef int pthread_once_t;
typedef unsigned long pthread_t;
typedef unsigned pthread_key_t;

#define PTHREAD_MUTEX_INITIALIZER {0}
#define PTHREAD_COND_INITIALIZER {0}
#define PTHREAD_ONCE_INIT 0
#define MLLM_WASI_PTHREAD_KEYS 16

static inline int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a) {
    (void)a;
    m->locked = 0;
    return 0;
}
static inline int pthread_mutex_destroy(pthread_mutex_t *m) { return m->locked ? EBUSY : 0; }
/* Locking a held mutex would deadlock the only thread: report it. */
static inline int pthread_mutex_lock(pthread_mutex_t *m) {
    if (m->locked) return EDEADLK;
    m->locked = 1;
    return 0;
}
static inline int pthread_mutex_trylock(pthread_mutex_t *m) {
    if (m->locked) return EBUSY;
    m->locked = 1;
    return 0;
}
static inline int pthread_mutex_unlock(pthread_mutex_t *m) {
    if (!m->locked) return EPERM;
    m->locked = 0;
    return 0;
}

static inline int pthread_condattr_init(pthread_condattr_t *a) { (void)a; return 0; }
static inline int pthread_condattr_destroy(pthread_condattr_t *a) { (void)a; return 0; }
static inline int pthread_condattr_setclock(pthread_condattr_t *a, clockid_t c) { (void)a; (void)c; return 0; }
static inline int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a) { (void)c; (void)a; return 0; }
static inline int pthread_cond_destroy(pthread_cond_t *c) { (void)c; return 0; }
static inline int pthread_cond_signal(pthread_cond_t *c) { (void)c; return 0; }
static inline int pthread_cond_broadcast(pthread_cond_t *c) { (void)c; return 0; }
/* No other thread can signal: waiting forever would be a hang. */
static inline int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) { (void)c; (void)m; return EDEADLK; }
static inline int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t) {
    (void)c; (void)m; (void)t;
    return ETIMEDOUT;
}

static inline int pthread_once(pthread_once_t *o, void (*fn)(void)) {
    if (!*o) {
        *o = 1;
        fn();
    }
    return 0;
}

static inline int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg) {
    (void)t; (void)a; (void)fn; (void)arg;
    return EAGAIN;
}
static inline int pthread_join(pthread_t t, void **ret) { (void)t; (void)ret; return ESRCH; }
static inline pthread_t pthread_self(void) { return 1; }

/* Thread-specific data of the one thread: a small table of values (the
   destructors would run at thread exit, which for the main thread is
   process exit: not run, as in glibc). The table is static, so a key is
   known only in the file that created it: mllm creates and reads each key
   in one file. */
typedef struct { int used; void *value; } mllm_wasi_key_slot;
static mllm_wasi_key_slot mllm_wasi_keys[MLLM_WASI_PTHREAD_KEYS];
static inline int pthread_key_create(pthread_key_t *k, void (*dtor)(void *)) {
    (void)dtor;
    for (unsigned i = 0; i < MLLM_WASI_PTHREAD_KEYS; i++)
        if (!mllm_wasi_keys[i].used) {
            mllm_wasi_keys[i].used = 1;
            *k = i;
            return 0;
        }
    return EAGAIN;
}
static inline void *pthread_getspecific(pthread_key_t k) {
    return k < MLLM_WASI_PTHREAD_KEYS ? mllm_wasi_keys[k].value : NULL;
}
static inline int pthread_setspecific(pthread_key_t k, const void *v) {
    if (k >= MLLM_WASI_PTHREAD_KEYS || !mllm_wasi_keys[k].used) return EINVAL;
    mllm_wasi_keys[k].value = (void *)v;
    return 0;
}
#endif
