/* A Qwen2.5-VL checkpoint's language model on text alone (M-RoPE's three
   position rows equal: Qwen2's rotation) against transformers: the tiny
   random Qwen2.5-VL of tools/reference/make_qwen2_5_vl_tiny.py
   (tests/data/qwen2vl/tiny: bf16, the vision tower's tensors present and
   unused, a 5-D patch kernel among them), the logits of all 14 positions
   of a prompt, f32 activations (exact). Bound NMSE 1e-8 per position;
   measured 3e-13. */
#include "testutil.h"
#include <mllm/mllm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_text_logits(void **state) {
    (void)state;
    size_t len = 0;
    char *txt = tu_read_file(tu_datap("qwen2vl/text_logits.txt"), &len);
    char *p = strchr(txt, '\n') + 1;
    int32_t ids[64];
    int n = 0;
    for (char *e; n < 64; p = e) {
        long v = strtol(p, &e, 10);
        if (e == p) break;
        ids[n++] = (int32_t)v;
    }
    free(txt);
    assert_int_equal(n, 14);
    float *want = tu_read_file(tu_datap("qwen2vl/text_logits.f32"), &len);
    assert_int_equal(len, (size_t)n * 1024 * sizeof(float));
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 1;
    lp.exact = 1;
    mllm_model *m = NULL;
    if (mllm_model_load(tu_datap("qwen2vl/tiny"), &lp, &m) != MLLM_OK) fail_msg("%s", mllm_last_error());
    assert_int_equal(mllm_model_n_vocab(m), 1024);
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = 32;
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, &sp, &s), MLLM_OK);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(mllm_session_eval(s, ids + i, 1), MLLM_OK);
        double e = tu_nmse(mllm_session_logits(s), want + (size_t)i * 1024, 1024);
        if (e > worst) worst = e;
    }
    print_message("text logits vs transformers: largest NMSE %.3g over %d positions\n", worst, n);
    assert_true(worst < 1e-8);
    mllm_session_free(s);
    mllm_model_free(m);
    free(want);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_text_logits)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
