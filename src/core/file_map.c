/* File mappings, and the SIGBUS guard over them: see file_map.h. */
#include "core/file_map.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "core/error.h"
#include "core/file_open.h"

/* The guarded mappings. The signal handler reads this table, so slots are
   plain atomics: a slot is claimed by a CAS on `base` (0 = free) and its
   size published after; the handler ignores a slot whose size is 0. */
typedef struct {
    _Atomic uintptr_t base;
    _Atomic size_t size;
    atomic_bool damaged;
} guard_slot;

static guard_slot g_slots[MLLM_FILE_MAP_MAX_GUARDED];
static atomic_uint g_faults; /* faults caught, ever: the fast "nothing happened" check */
#ifdef __wasi__
/* wasi-libc's mmap emulation (-D_WASI_EMULATED_MMAN) reads the file into
   memory: a file that shrinks later cannot fault, and WASI has no SIGBUS or
   sigaction, so there is nothing to install. */
static void install(void) {}
#else
static struct sigaction g_prev;
static pthread_mutex_t g_install_lock = PTHREAD_MUTEX_INITIALIZER;

static void chain(int sig, siginfo_t *info, void *uctx) {
    if (g_prev.sa_flags & SA_SIGINFO) {
        if (g_prev.sa_sigaction) { g_prev.sa_sigaction(sig, info, uctx); return; }
    } else if (g_prev.sa_handler != SIG_DFL && g_prev.sa_handler != SIG_IGN) {
        g_prev.sa_handler(sig);
        return;
    }
    /* Default action: restore it and return; the faulting access re-runs
       and the kernel delivers SIGBUS again, now fatal, with a core dump. */
    signal(sig, SIG_DFL);
}

static void on_sigbus(int sig, siginfo_t *info, void *uctx) {
    int saved = errno;
    uintptr_t a = (uintptr_t)info->si_addr;
    long pg = sysconf(_SC_PAGESIZE);
    for (size_t i = 0; info->si_code == BUS_ADRERR && pg > 0 && i < MLLM_FILE_MAP_MAX_GUARDED; i++) {
        uintptr_t b = atomic_load(&g_slots[i].base);
        size_t n = atomic_load(&g_slots[i].size);
        if (!b || !n || a < b || a - b >= n) continue;
        /* mmap is a plain system call on Linux (safe here in practice, if not
           on POSIX's list): a private zero page over the one that is gone. */
        uintptr_t page = a & ~(uintptr_t)(pg - 1);
        if (mmap((void *)page, (size_t)pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
            break;
        atomic_store(&g_slots[i].damaged, true);
        atomic_fetch_add(&g_faults, 1);
        errno = saved;
        return;
    }
    errno = saved;
    chain(sig, info, uctx);
}

/* Puts the handler in place unless it already is. Checked at every new
   mapping, not once: a program (or a test framework) that set its own
   SIGBUS handler after our first mapping gets chained to, not lost. */
static void install(void) {
    pthread_mutex_lock(&g_install_lock);
    struct sigaction cur;
    if (sigaction(SIGBUS, NULL, &cur) == 0 && !((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigbus)) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        g_prev = cur;
        if (sigaction(SIGBUS, &sa, NULL) != 0) memset(&g_prev, 0, sizeof g_prev);
    }
    pthread_mutex_unlock(&g_install_lock);
}
#endif

static void guard(void *base, size_t size) {
    install();
    for (size_t i = 0; i < MLLM_FILE_MAP_MAX_GUARDED; i++) {
        uintptr_t free_slot = 0;
        if (atomic_compare_exchange_strong(&g_slots[i].base, &free_slot, (uintptr_t)base)) {
            atomic_store(&g_slots[i].damaged, false);
            atomic_store(&g_slots[i].size, size);
            return;
        }
    }
}

static guard_slot *slot_of(const void *base) {
    for (size_t i = 0; base && i < MLLM_FILE_MAP_MAX_GUARDED; i++)
        if (atomic_load(&g_slots[i].base) == (uintptr_t)base) return &g_slots[i];
    return NULL;
}

mllm_status mllm_file_map(const char *path, size_t min_size, const char *too_short, void **base,
                          size_t *size) {
    *base = NULL;
    *size = 0;
    int fd;
    uint64_t fsize;
    mllm_status st = mllm_file_open(path, &fd, &fsize);
    if (st != MLLM_OK) return st;
    if (fsize < min_size || fsize == 0)
        st = mllm_err(MLLM_ERR_FORMAT, "%s: %s", path, too_short);
    else if (fsize > SIZE_MAX)
        st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: file too large to map", path);
    if (st != MLLM_OK) {
        close(fd);
        return st;
    }
    void *p = mmap(NULL, (size_t)fsize, PROT_READ, MAP_PRIVATE, fd, 0);
    int saved = errno; /* close() may overwrite it */
    close(fd);
    if (p == MAP_FAILED) return mllm_err(MLLM_ERR_IO, "%s: mmap failed: %s", path, strerror(saved));
    guard(p, (size_t)fsize);
    *base = p;
    *size = (size_t)fsize;
    return MLLM_OK;
}

void mllm_file_map_guard(void *base, size_t size) {
    if (base && size) guard(base, size);
}

void mllm_file_map_unguard(const void *base) {
    guard_slot *s = slot_of(base);
    if (s) {
        atomic_store(&s->size, 0); /* the handler stops matching it first */
        atomic_store(&s->base, 0);
    }
}

void mllm_file_unmap(void *base, size_t size) {
    if (!base) return;
    mllm_file_map_unguard(base);
    munmap(base, size);
}

bool mllm_file_map_damaged(const void *base) {
    if (!atomic_load(&g_faults)) return false;
    guard_slot *s = slot_of(base);
    return s && atomic_load(&s->damaged);
}

void mllm_file_map_drop(const void *p, size_t n) {
#ifdef __wasi__
    /* the emulated mapping is one malloc'd copy: no page of it can go back */
    (void)p, (void)n;
#else
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + n) & ~(page - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED);
#endif
}
