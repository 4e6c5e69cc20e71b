/* The one allocation wrapper of the library: every heap allocation goes
   through these so out-of-memory can be injected in tests (mllm_alloc_fail_after). */
#ifndef MLLM_CORE_ALLOC_H
#define MLLM_CORE_ALLOC_H
#include <stddef.h>

void *mllm_malloc(size_t n);
void *mllm_calloc(size_t count, size_t size);
void *mllm_realloc(void *p, size_t n);
/* 64-byte aligned (cache line / AVX-512 vector), freed with mllm_free_aligned. */
void *mllm_malloc_aligned(size_t n);
void mllm_free_aligned(void *p);
void mllm_free(void *p);
char *mllm_strndup(const char *s, size_t n);
/* Test hook: the n-th allocation from now fails (n < 0: never). */
void mllm_alloc_fail_after(long n);

#endif
