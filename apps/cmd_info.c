/* mllm info: config, tensor table and the traced decode graph of a model. */
#include <stdio.h>
#include <string.h>
#include "cli.h"

static void info_usage(FILE *f) {
    fprintf(f,
            "usage: mllm info MODEL [--tokenizer PATH] [--no-tensors] [--no-graph] [--verify]\n"
            "       mllm info --architectures\n"
            "\n"
            "Prints the model's config (as JSON), its tensor table (name, dtype, shape,\n"
            "bytes) and the ops of the traced one-token decode graph.\n"
            "A CTranslate2 model (a folder with model.bin, e.g. Whisper's) gets its spec\n"
            "and variable table only (Whisper runs with mllm transcribe).\n"
            "--verify (.mllm files): recompute every tensor checksum first; exit 1 on a mismatch.\n"
            "--architectures: the architectures this build runs (GGUF general.architecture,\n"
            "Hugging Face model_type and class), from the model registry.\n");
}

/* --verify: every checksum of a .mllm v3 file. */
static int cmd_info_verify(const char *path) {
    size_t n = 0;
    mllm_status st = mllm_file_verify(path, &n);
    if (st != MLLM_OK) return cli_fail("verify failed", st);
    printf("verify: header, metadata and %zu tensor checksums OK\n", n);
    return 0;
}

static int list_architectures(void) {
    printf("%-16s %-8s %-9s %-28s %s\n", "arch", "kind", "family", "HF model_type", "HF class");
    for (size_t i = 0; i < mllm_architecture_count(); i++) {
        mllm_architecture_info a = {.struct_size = sizeof a};
        if (mllm_architecture_get(i, &a) != MLLM_OK) return cli_fail("cannot list the architectures", MLLM_ERR_INVALID_ARG);
        printf("%-16s %-8s %-9s %-28s %s\n", a.name, a.kind, a.family, a.hf_types ? a.hf_types : "-",
               a.hf_classes ? a.hf_classes : "-");
        if (a.about) printf("  %s\n", a.about);
    }
    return 0;
}

/* "  NAME DTYPE [ne0, ne1] N bytes" with the name and dtype columns this wide. */
static void print_tensor(const mllm_tensor_info *t, int name_w, int dtype_w) {
    printf("  %-*.*s %-*s [", name_w, (int)t->name_len, t->name, dtype_w, t->dtype);
    for (int d = 0; d < t->n_dims; d++) printf(d ? ", %lld" : "%lld", (long long)t->ne[d]);
    printf("] %llu bytes\n", (unsigned long long)t->size);
}

/* A Whisper model that is not a CTranslate2 folder: a converted .mllm file
   lists its tensors; an HF folder's are in its model.safetensors. */
static int info_whisper(const char *path, bool tensors) {
    mllm_file_info *f = NULL;
    if (tensors && mllm_file_info_open(path, &f) == MLLM_OK && mllm_file_info_format(f) == MLLM_FILE_MLLM) {
        size_t total = 0, len = 0;
        const char *cfg = mllm_file_info_config(f, &len);
        printf("format: .mllm v3 (a converted Whisper), config %.*s\n", len > 200 ? 200 : (int)len, cfg);
        printf("tensors: %zu\n", mllm_file_info_n_tensors(f));
        for (size_t i = 0; i < mllm_file_info_n_tensors(f); i++) {
            mllm_tensor_info t = {.struct_size = sizeof t};
            if (mllm_file_info_tensor(f, i, &t) != MLLM_OK) break;
            print_tensor(&t, 48, 7);
            total += t.size;
        }
        printf("total weight bytes: %zu (%.1f MiB)\n", total, total / 1048576.0);
    }
    mllm_file_info_close(f);
    printf("note: a Whisper model: run it with mllm transcribe -m %s AUDIO, or serve it with mllm serve "
           "(mllm run/chat do not take it)\n", path);
    return 0;
}

static void print_line(void *user, const char *text, size_t len) {
    (void)user;
    fwrite(text, 1, len, stdout);
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL, *tok = NULL;
    bool tensors = true, graph = true, verify = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { info_usage(stdout); return 0; }
        else if (!strcmp(argv[i], "--tokenizer")) { if (!(tok = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(argv[i], "--no-tensors")) tensors = false;
        else if (!strcmp(argv[i], "--no-graph")) graph = false;
        else if (!strcmp(argv[i], "--verify")) verify = true;
        else if (!strcmp(argv[i], "--architectures")) return list_architectures();
        else if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) { if (!(path = cli_value(argc, argv, &i))) return 2; }
        else if (argv[i][0] == '-') { fprintf(stderr, "mllm info: unknown option '%s'\n", argv[i]); return 2; }
        else path = argv[i];
    }
    if (!path) { info_usage(stderr); return 2; }
    if (mllm_file_is_ctranslate2(path)) return cmd_info_ct2(path, tensors);
    if (verify && cmd_info_verify(path) != 0) return 1;
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.tokenizer_path = tok;
    lp.n_threads = 1;
    mllm_model *m = NULL;
    mllm_status st = mllm_model_load(path, &lp, &m);
    if (st != MLLM_OK) return cli_fail("cannot load model", st);
    char buf[4096];
    if (mllm_model_info_json(m, buf, sizeof buf, NULL) == MLLM_OK) printf("config: %s\n", buf);
    printf("load: %.1f ms\n", mllm_model_load_ms(m));
    if (mllm_model_can_transcribe(m)) { /* Whisper: no decoder graph, no generic file */
        mllm_model_free(m);
        return info_whisper(path, tensors);
    }
    if (tensors) {
        size_t total = 0;
        printf("tensors: %zu\n", mllm_model_n_tensors(m));
        for (size_t i = 0; i < mllm_model_n_tensors(m); i++) {
            mllm_tensor_info t = {.struct_size = sizeof t};
            if (mllm_model_tensor_info(m, i, &t) != MLLM_OK) break;
            print_tensor(&t, 36, 5);
            total += t.size;
        }
        printf("total weight bytes: %zu (%.1f MiB)\n", total, total / 1048576.0);
    }
    if (graph) {
        mllm_session_params sp;
        mllm_session_default_params(&sp);
        sp.n_ctx = 16;
        mllm_session *s = NULL;
        if ((st = mllm_session_new(m, &sp, &s)) != MLLM_OK) { mllm_model_free(m); return cli_fail("cannot build the graph", st); }
        int n_nodes = 0;
        size_t act = 0;
        mllm_session_decode_graph(s, &n_nodes, &act, NULL, NULL);
        printf("decode graph (traced once, one token): %d nodes, %.1f KiB activations\n", n_nodes, act / 1024.0);
        mllm_session_decode_graph(s, NULL, NULL, print_line, NULL);
        mllm_session_free(s);
    }
    mllm_model_free(m);
    return 0;
}
