/* tokenize: print the token ids of a text, then each token's piece.
 *
 *     tokenize MODEL TEXT [TOKENIZER]
 *
 * Line 1: the ids, space separated (BOS included if the model adds one),
 * as `mllm tokenize` prints them. Then one "id<TAB>[piece]" line per token.
 * Shows the (buf, cap, needed) pattern: ask for the size, then fill. */
#include <mllm/mllm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, mllm_status st) {
    fprintf(stderr, "tokenize: %s: %s: %s\n", what, mllm_status_str(st), mllm_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s MODEL TEXT [TOKENIZER]\n", argv[0]);
        return 2;
    }
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 1; /* tokenizing needs no compute threads */
    if (argc > 3) lp.tokenizer_path = argv[3];
    mllm_model *model = NULL;
    mllm_status st = mllm_model_load(argv[1], &lp, &model);
    if (st != MLLM_OK) return fail("cannot load the model", st);

    const char *text = argv[2];
    size_t len = strlen(text), n = 0;
    /* First call: no buffer, only the count. */
    st = mllm_tokenize(model, text, len, 1, NULL, 0, &n);
    if (st != MLLM_OK && st != MLLM_ERR_BUFFER_TOO_SMALL) {
        mllm_model_free(model);
        return fail("cannot tokenize", st);
    }
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) {
        mllm_model_free(model);
        fprintf(stderr, "tokenize: out of memory\n");
        return 1;
    }
    st = mllm_tokenize(model, text, len, 1, ids, n, &n);
    if (st != MLLM_OK) {
        free(ids);
        mllm_model_free(model);
        return fail("cannot tokenize", st);
    }

    for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)ids[i]);
    printf("\n");
    for (size_t i = 0; i < n; i++) {
        char piece[256];
        size_t plen = 0;
        st = mllm_token_to_piece(model, ids[i], piece, sizeof piece, &plen);
        if (st != MLLM_OK) break;
        printf("%d\t[%.*s]\n", (int)ids[i], (int)plen, piece);
    }
    free(ids);
    mllm_model_free(model);
    return st == MLLM_OK ? 0 : fail("cannot get a piece", st);
}
