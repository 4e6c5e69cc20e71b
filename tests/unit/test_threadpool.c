/* The thread pool: every thread runs every job, barriers hold, reuse works. */
#include <stdatomic.h>
#include "core/threadpool.h"
#include "testutil.h"

typedef struct { mllm_pool *p; atomic_int hits; int phase[8]; atomic_int bad; } job;

static void fn(void *arg, int ith, int nth) {
    job *j = arg;
    atomic_fetch_add(&j->hits, 1);
    for (int round = 0; round < 50; round++) {
        j->phase[ith] = round;
        mllm_pool_barrier(j->p);
        for (int t = 0; t < nth; t++)
            if (j->phase[t] != round) atomic_fetch_add(&j->bad, 1);
        mllm_pool_barrier(j->p);
    }
}

static void test_pool(void **state) {
    (void)state;
    for (int n = 1; n <= 4; n++) {
        mllm_pool *p = mllm_pool_new(n);
        assert_non_null(p);
        assert_int_equal(mllm_pool_size(p), n);
        job j = {.p = p};
        for (int rep = 0; rep < 100; rep++) mllm_pool_run(p, fn, &j);
        assert_int_equal(atomic_load(&j.hits), 100 * n);
        assert_int_equal(atomic_load(&j.bad), 0);
        mllm_pool_free(p);
    }
    mllm_pool_free(NULL);
}

/* mllm_pool_run_help: the chunks of a counter shared out, each done once,
   whoever takes them; jobs back to back (a late worker must skip a closed
   job, never run the next one's chunks twice); mixed with mllm_pool_run. */
typedef struct {
    atomic_int next, calls;
    atomic_int done[257];
    int n;
} help_job;

static void help_fn(void *arg, int ith, int nth) {
    help_job *j = arg;
    (void)nth;
    atomic_fetch_add(&j->calls, 1);
    for (int c; (c = atomic_fetch_add(&j->next, 1)) < j->n;) {
        if (ith > 0)
            for (volatile int spin = 0; spin < 200; spin++) {}
        atomic_fetch_add(&j->done[c], 1);
    }
}

static void count_fn(void *arg, int ith, int nth) {
    (void)ith;
    (void)nth;
    atomic_fetch_add((atomic_int *)arg, 1);
}

static void test_help(void **state) {
    (void)state;
    for (int n = 1; n <= 4; n++) {
        mllm_pool *p = mllm_pool_new(n);
        assert_non_null(p);
        if (n == 3) mllm_pool_set_spin(p, 1); /* workers sleep between jobs */
        for (int rep = 0; rep < 500; rep++) {
            help_job j = {.n = 1 + rep % 257};
            mllm_pool_run_help(p, help_fn, &j);
            assert_true(atomic_load(&j.calls) >= 1 && atomic_load(&j.calls) <= n);
            for (int c = 0; c < j.n; c++) assert_int_equal(atomic_load(&j.done[c]), 1);
            if (rep % 100 == 0) {
                atomic_int hits = 0;
                mllm_pool_run(p, count_fn, &hits);
                assert_int_equal(atomic_load(&hits), n);
            }
        }
        mllm_pool_free(p);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pool), cmocka_unit_test(test_help)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
