/* simple_generate: load a model, open a session, stream a continuation.
 *
 *     simple_generate MODEL PROMPT [MAX_TOKENS [TOKENIZER]]
 *
 * Greedy (temperature 0), so the same model and prompt always give the same
 * text. TOKENIZER is the tokenizer .bin a llama2.c checkpoint needs. The
 * text goes to stdout as it is generated; the token count to stderr. */
#include <mllm/mllm.h>
#include <stdio.h>
#include <stdlib.h>

/* Counts the tokens and prints each piece as soon as it arrives. */
static int on_token(void *user, int32_t id, const char *piece, size_t len) {
    int *n_tokens = user;
    if (id >= 0) (*n_tokens)++; /* id -1: held-back bytes, not a new token */
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return 0; /* non-zero would stop the generation */
}

static int fail(const char *what, mllm_status st) {
    fprintf(stderr, "simple_generate: %s: %s: %s\n", what, mllm_status_str(st), mllm_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: %s MODEL PROMPT [MAX_TOKENS [TOKENIZER]]\n", argv[0]);
        return 2;
    }
    /* The library we run against must be the one this program was built for. */
    if (mllm_abi_version() != MLLM_ABI_VERSION) {
        fprintf(stderr, "simple_generate: libmllm ABI %d, built for %d\n", mllm_abi_version(),
                MLLM_ABI_VERSION);
        return 1;
    }

    mllm_load_params lp;
    mllm_load_default_params(&lp); /* always start from the defaults */
    if (argc > 4) lp.tokenizer_path = argv[4];
    mllm_model *model = NULL;
    mllm_status st = mllm_model_load(argv[1], &lp, &model);
    if (st != MLLM_OK) return fail("cannot load the model", st);

    mllm_session_params sp;
    mllm_session_default_params(&sp);
    mllm_session *session = NULL;
    st = mllm_session_new(model, &sp, &session);
    if (st != MLLM_OK) {
        mllm_model_free(model);
        return fail("cannot create a session", st);
    }

    mllm_sampling smp;
    mllm_sampling_default(&smp);
    smp.temperature = 0.0f; /* greedy */
    smp.max_tokens = argc > 3 ? atoi(argv[3]) : 32;

    int n_tokens = 0;
    st = mllm_generate(session, argv[2], &smp, on_token, &n_tokens);
    printf("\n");
    if (st == MLLM_OK) fprintf(stderr, "generated %d tokens\n", n_tokens);
    else fail("generation failed", st);

    /* Sessions first: they point into the model. */
    mllm_session_free(session);
    mllm_model_free(model);
    return st == MLLM_OK ? 0 : 1;
}
