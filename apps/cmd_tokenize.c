/* mllm tokenize: the ids (and pieces) the model's tokenizer gives a text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static void tok_usage(FILE *f) {
    fprintf(f,
            "usage: mllm tokenize -m MODEL -p TEXT [--pieces] [--no-bos] [--tokenizer PATH]\n"
            "\n"
            "Prints the token ids of TEXT, space separated (with --pieces: one\n"
            "'id<TAB>piece' line per token, the piece's bytes escaped as C strings).\n"
            "Special-token text (<|im_start|> ...) is parsed; BOS is added if the\n"
            "model's tokenizer asks for it, unless --no-bos.\n");
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *tok = NULL;
    bool pieces = false, no_bos = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { tok_usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { if (!(model = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) { if (!(text = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--tokenizer")) { if (!(tok = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--pieces")) pieces = true;
        else if (!strcmp(a, "--no-bos")) no_bos = true;
        else { fprintf(stderr, "mllm tokenize: unknown option '%s'\n", a); return 2; }
    }
    if (!model || !text) { tok_usage(stderr); return 2; }
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.tokenizer_path = tok;
    lp.n_threads = 1;
    mllm_model *m = NULL;
    mllm_status st = mllm_model_load(model, &lp, &m);
    if (st != MLLM_OK) return cli_fail("cannot load model", st);
    size_t n = 0, len = strlen(text);
    st = mllm_tokenize(m, text, len, !no_bos, NULL, 0, &n);
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids || (st != MLLM_OK && st != MLLM_ERR_BUFFER_TOO_SMALL) ||
        (st = mllm_tokenize(m, text, len, !no_bos, ids, n, &n)) != MLLM_OK) {
        free(ids);
        mllm_model_free(m);
        return cli_fail("cannot tokenize", st);
    }
    for (size_t i = 0; i < n; i++) {
        if (!pieces) { printf(i ? " %d" : "%d", ids[i]); continue; }
        char buf[512];
        size_t pl = 0;
        printf("%d\t", ids[i]);
        if (mllm_token_to_piece(m, ids[i], buf, sizeof buf, &pl) == MLLM_OK) {
            for (size_t j = 0; j < pl; j++) {
                unsigned char c = (unsigned char)buf[j];
                if (c == '\n') printf("\\n");
                else if (c == '\t') printf("\\t");
                else if (c == '\\') printf("\\\\");
                else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
                else putchar(c);
            }
        }
        putchar('\n');
    }
    if (!pieces) putchar('\n');
    free(ids);
    mllm_model_free(m);
    return 0;
}
