/* The <think> filter of mllm chat: whatever the split of the streamed reply
   into pieces (tags cut anywhere), hidden output is the reply without its
   thinking parts and shown output is the reply unchanged. */
#include <stdlib.h>
#include <string.h>
#include <mllm/mllm.h>
#include "testutil.h"

typedef struct { char buf[512]; size_t n; } sink_buf;

static void sink(void *user, const char *text, size_t len) {
    sink_buf *s = user;
    memcpy(s->buf + s->n, text, len);
    s->n += len;
}

static void run(const char *reply, int show, uint64_t seed, sink_buf *out) {
    mllm_think_filter *f = NULL;
    assert_int_equal(mllm_think_filter_new(show, &f), MLLM_OK);
    size_t len = strlen(reply), at = 0;
    uint64_t x = seed * 2654435761u + 1;
    memset(out, 0, sizeof *out);
    while (at < len) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        at += 1 + x % 4; /* pieces of 1..4 bytes */
        if (at > len) at = len;
        mllm_think_filter_feed(f, reply, at, 0, sink, out);
    }
    mllm_think_filter_feed(f, reply, len, 1, sink, out);
    mllm_think_filter_free(f);
}

static void test_split_anywhere(void **state) {
    (void)state;
    struct { const char *in, *hidden; } cases[] = {
        {"<think>\nplan: say hi\n</think>\n\nHello!", "\n\nHello!"},
        {"No thinking here, <thin but not a tag.", "No thinking here, <thin but not a tag."},
        {"a<think>b</think>c<think>d</think>e", "ace"},
        {"ends inside <think>never closed", "ends inside "},
        {"<", "<"},
        {"x </think", "x </think"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (uint64_t seed = 1; seed <= 50; seed++) {
            sink_buf hid, all;
            run(cases[i].in, 0, seed, &hid);
            run(cases[i].in, 1, seed, &all);
            assert_int_equal(hid.n, strlen(cases[i].hidden));
            assert_memory_equal(hid.buf, cases[i].hidden, hid.n);
            assert_int_equal(all.n, strlen(cases[i].in));
            assert_memory_equal(all.buf, cases[i].in, all.n);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_split_anywhere)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
