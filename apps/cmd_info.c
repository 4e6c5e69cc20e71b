/* mllm info: config, tensor table and the traced decode graph of a model. */
#include <stdio.h>
#include <string.h>
#include "api/internal.h"
#include "cli.h"
#include "core/dtype.h"

static void info_usage(FILE *f) {
    fprintf(f,
            "usage: mllm info MODEL [--tokenizer PATH] [--no-tensors] [--no-graph]\n"
            "\n"
            "Prints the model's config (as JSON), its tensor table (name, dtype, shape,\n"
            "bytes) and the ops of the traced one-token decode graph.\n");
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL, *tok = NULL;
    bool tensors = true, graph = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { info_usage(stdout); return 0; }
        else if (!strcmp(argv[i], "--tokenizer")) { if (!(tok = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(argv[i], "--no-tensors")) tensors = false;
        else if (!strcmp(argv[i], "--no-graph")) graph = false;
        else if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) { if (!(path = cli_value(argc, argv, &i))) return 2; }
        else if (argv[i][0] == '-') { fprintf(stderr, "mllm info: unknown option '%s'\n", argv[i]); return 2; }
        else path = argv[i];
    }
    if (!path) { info_usage(stderr); return 2; }
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.tokenizer_path = tok;
    lp.n_threads = 1;
    mllm_model *m = NULL;
    mllm_status st = mllm_model_load(path, &lp, &m);
    if (st != MLLM_OK) return cli_fail("cannot load model", st);
    char buf[4096];
    if (mllm_model_info_json(m, buf, sizeof buf, NULL) == MLLM_OK) printf("config: %s\n", buf);
    printf("load: %.1f ms\n", m->load_ms);
    if (tensors) {
        size_t total = 0;
        printf("tensors: %zu\n", m->file->n_weights);
        for (size_t i = 0; i < m->file->n_weights; i++) {
            const mllm_weight *w = &m->file->weights[i];
            printf("  %-36s %-5s [", w->name, mllm_dtype_name(w->dtype));
            for (int d = 0; d < w->n_dims; d++) printf(d ? ", %lld" : "%lld", (long long)w->ne[d]);
            printf("] %zu bytes\n", w->size);
            total += w->size;
        }
        printf("total weight bytes: %zu (%.1f MiB)\n", total, total / 1048576.0);
    }
    if (graph) {
        mllm_session_params sp;
        mllm_session_default_params(&sp);
        sp.n_ctx = 16;
        mllm_session *s = NULL;
        if ((st = mllm_session_new(m, &sp, &s)) != MLLM_OK) { mllm_model_free(m); return cli_fail("cannot build the graph", st); }
        printf("decode graph (traced once, one token): %d nodes, %.1f KiB activations\n", s->decode.n_nodes,
               s->decode.buf_size / 1024.0);
        mllm_graph_print(&s->decode, stdout);
        mllm_session_free(s);
    }
    mllm_model_free(m);
    return 0;
}
