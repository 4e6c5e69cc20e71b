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

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pool)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
