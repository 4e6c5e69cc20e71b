#include "core/alloc.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_long g_fail_after = -1;

static int should_fail(void) {
    long v = atomic_load(&g_fail_after);
    if (v < 0) return 0;
    if (v == 0) { atomic_store(&g_fail_after, -1); return 1; }
    atomic_fetch_sub(&g_fail_after, 1);
    return 0;
}

void mllm_alloc_fail_after(long n) { atomic_store(&g_fail_after, n); }
void *mllm_malloc(size_t n) { return should_fail() ? NULL : malloc(n ? n : 1); }
void *mllm_calloc(size_t c, size_t s) { return should_fail() ? NULL : calloc(c ? c : 1, s ? s : 1); }
void *mllm_realloc(void *p, size_t n) { return should_fail() ? NULL : realloc(p, n ? n : 1); }
void mllm_free(void *p) { free(p); }

void *mllm_malloc_aligned(size_t n) {
    if (should_fail()) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 64) != 0) return NULL;
    return p;
}
void mllm_free_aligned(void *p) { free(p); }

char *mllm_strndup(const char *s, size_t n) {
    char *r = mllm_malloc(n + 1);
    if (!r) return NULL;
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}
