/* Fuzz target: llama2.c tokenizer.bin (read from a file: the loader has no
   in-memory entry point). Input: u32 length + tokenizer.bin, then a flag
   byte and text to encode with it. */
#include "fuzz_tok_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    fz_input bin = fz_take_part(&in);
    const char *path = fz_write("tokenizer.bin", bin.p, bin.n);
    FZ_CHECK(path != NULL);
    mllm_tokenizer *t = NULL;
    mllm_status st = mllm_tokenizer_from_llama2c(path, &t);
    fz_check_status(st);
    fz_remove("tokenizer.bin");
    if (st == MLLM_OK) {
        fz_exercise_tokenizer(t, in);
        mllm_tokenizer_free(t);
    } else {
        FZ_CHECK(t == NULL);
    }
    return 0;
}
