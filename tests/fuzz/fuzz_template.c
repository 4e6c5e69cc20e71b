/* Fuzz target: the chat-template interpreter (src/template). Templates come
   from model files and conversations from HTTP clients, so both are
   untrusted. Input: u32 length + template source, then the context JSON
   (no trailing NUL: passed with its length). A template that compiles is
   rendered with the context and with BOS/EOS defaults. */
#include "fuzz_util.h"
#include "core/alloc.h"
#include "template/template.h"
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    fz_input src = fz_take_part(&in);
    char *s = fz_dup(src.p, src.n);
    mllm_template *t = NULL;
    mllm_status st = mllm_template_compile(s, src.n, "fuzz", &t);
    fz_check_status(st);
    free(s);
    if (st) {
        FZ_CHECK(t == NULL);
        return 0;
    }
    char *ctx = fz_dup(in.p, in.n);
    char *out = NULL;
    size_t n = 0;
    st = mllm_template_render_json(t, ctx, in.n, "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}", &out, &n);
    fz_check_status(st);
    if (st == MLLM_OK) {
        FZ_CHECK(out != NULL && out[n] == '\0');
        mllm_free(out);
    }
    free(ctx);
    mllm_template_free(t);
    return 0;
}
