#include "runtime/ngram_lookup.h"
#include <string.h>

int mllm_ngram_lookup(const int32_t *ctx, int n_ctx, int n_min, int n_max, int cap, int32_t *out) {
    if (n_min < 1 || cap < 1) return 0;
    for (int n = n_max; n >= n_min; n--) {
        if (n_ctx < n + 1) continue;
        const int32_t *pat = ctx + n_ctx - n;
        /* Latest first: the most recent repetition is the likeliest to go on
           (a loop in the generated text, the part of the prompt being edited). */
        for (int j = n_ctx - n - 1; j >= 0; j--) {
            if (ctx[j] != pat[0] || memcmp(ctx + j, pat, (size_t)n * sizeof *ctx) != 0) continue;
            int from = j + n, k = n_ctx - from < cap ? n_ctx - from : cap;
            memcpy(out, ctx + from, (size_t)k * sizeof *ctx);
            return k;
        }
    }
    return 0;
}
