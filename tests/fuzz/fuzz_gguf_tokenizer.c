/* Fuzz target: tokenizer from GGUF metadata (tokenizer.ggml.*).
   Input: u32 length + GGUF image, then a flag byte and text to encode with
   the tokenizer if it loads (fuzz_tok_check.c). */
#include "fuzz_tok_check.h"
#include "formats/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    fz_input img = fz_take_part(&in);
    mllm_gguf *g = NULL;
    mllm_status st = mllm_gguf_open_memory(img.p, img.n, "fuzz.gguf", &g);
    fz_check_status(st);
    if (st) return 0;
    mllm_tokenizer *t = NULL;
    st = mllm_tokenizer_from_gguf(g, &t);
    fz_check_status(st);
    if (st == MLLM_OK) {
        fz_exercise_tokenizer(t, in);
        mllm_tokenizer_free(t);
    } else {
        FZ_CHECK(t == NULL);
    }
    mllm_gguf_close(g);
    return 0;
}
