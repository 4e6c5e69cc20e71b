/* Per-thread scratch buffers of the x86 matmuls, one slot per user (see
   kernels_internal.h): grown as needed and kept, so a warm thread does not
   allocate per call; freed when the thread ends. */
#include <pthread.h>
#include <stdlib.h>

#include "backends/cpu/kernels_internal.h"
#include "core/alloc.h"

typedef struct { void *p[MLLM_X86_SCRATCH_N]; size_t cap[MLLM_X86_SCRATCH_N]; } scratch_set;
static pthread_key_t g_key;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void set_free(void *v) {
    scratch_set *s = v;
    for (int i = 0; i < MLLM_X86_SCRATCH_N; i++) mllm_free_aligned(s->p[i]);
    free(s);
}
static void key_init(void) { (void)pthread_key_create(&g_key, set_free); }

void *mllm_x86_thread_scratch(int slot, size_t bytes) {
    if (slot < 0 || slot >= MLLM_X86_SCRATCH_N) return NULL;
    pthread_once(&g_once, key_init);
    scratch_set *s = pthread_getspecific(g_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || pthread_setspecific(g_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (s->cap[slot] < bytes) {
        void *p = mllm_malloc_aligned(bytes);
        if (!p) return NULL;
        mllm_free_aligned(s->p[slot]);
        s->p[slot] = p;
        s->cap[slot] = bytes;
    }
    return s->p[slot];
}
