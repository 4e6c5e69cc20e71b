/* Fuzz target: Hugging Face tokenizer.json (+ tokenizer_config.json).
   Input: u32 length + tokenizer.json, u32 length + tokenizer_config.json
   (length 0xffffffff = none), then a flag byte and text to encode. The JSON
   texts are passed without a trailing NUL (the API takes lengths). */
#include "fuzz_tok_check.h"
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    fz_input json = fz_take_part(&in);
    bool no_config = in.n >= 4 && in.p[0] == 0xff && in.p[1] == 0xff && in.p[2] == 0xff && in.p[3] == 0xff;
    fz_input cfg = fz_take_part(&in);
    char *js = fz_dup(json.p, json.n);
    char *cs = no_config ? NULL : fz_dup(cfg.p, cfg.n);
    mllm_tokenizer *t = NULL;
    mllm_status st = mllm_tokenizer_from_hf_memory(js, json.n, cs, cfg.n, "fuzz/tokenizer.json", &t);
    fz_check_status(st);
    free(js);
    free(cs);
    if (st == MLLM_OK) {
        fz_exercise_tokenizer(t, in);
        mllm_tokenizer_free(t);
    } else {
        FZ_CHECK(t == NULL);
    }
    return 0;
}
