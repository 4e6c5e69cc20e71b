/* mllm_session_shift (the context shift of run, chat and the server): the
   session ends up holding exactly the first n_keep tokens, the newer half
   of the rest and the pending token, with the logits a fresh evaluation of
   those tokens gives. */
#include <stdlib.h>
#include <string.h>
#include "synth/synth.h"
#include "testutil.h"

static void test_shift_keeps_prefix_and_newer_half(void **state) {
    (void)state;
    char *path = (char *)tu_tmp("shift.gguf");
    assert_int_equal(mllm_synth_write("qwen3", "tiny", "f32", "gguf", path, NULL, NULL), MLLM_OK);
    mllm_model *m = NULL;
    assert_int_equal(mllm_model_load(path, NULL, &m), MLLM_OK);
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = 32;
    mllm_session *s = NULL, *fresh = NULL;
    assert_int_equal(mllm_session_new(m, &sp, &s), MLLM_OK);
    assert_int_equal(mllm_session_new(m, &sp, &fresh), MLLM_OK);
    int32_t ids[32];
    for (int i = 0; i < 32; i++) ids[i] = 10 + i;
    assert_int_equal(mllm_session_eval(s, ids, 32), MLLM_OK);
    assert_int_equal(mllm_session_shift(s, 4, 7), MLLM_OK);
    /* keep 4, drop (32 - 4) / 2 = 14, then the pending token */
    int32_t want[19];
    memcpy(want, ids, 4 * sizeof *ids);
    memcpy(want + 4, ids + 18, 14 * sizeof *ids);
    want[18] = 7;
    size_t n = 0;
    const int32_t *got = mllm_session_tokens(s, &n);
    assert_int_equal(n, 19);
    assert_memory_equal(got, want, sizeof want);
    assert_int_equal(mllm_session_eval(fresh, want, 19), MLLM_OK);
    int nv = mllm_model_n_vocab(m);
    assert_memory_equal(mllm_session_logits(s), mllm_session_logits(fresh), (size_t)nv * sizeof(float));
    /* n_keep past half of what is held is cut to half; no pending token. */
    assert_int_equal(mllm_session_shift(s, 100, -1), MLLM_OK);
    got = mllm_session_tokens(s, &n);
    assert_int_equal(n, 19 - 5); /* keep 9, drop (19 - 9) / 2 = 5 */
    assert_memory_equal(got, want, 9 * sizeof *want);
    assert_int_equal(mllm_session_shift(s, 0, nv), MLLM_ERR_INVALID_ARG);
    assert_int_equal(mllm_session_shift(NULL, 0, -1), MLLM_ERR_INVALID_ARG);
    mllm_session_free(fresh);
    mllm_session_free(s);
    mllm_model_free(m);
    free(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_shift_keeps_prefix_and_newer_half)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
