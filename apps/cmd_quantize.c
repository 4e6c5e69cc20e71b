/* mllm quantize: write a quantized GGUF from a GGUF or Hugging Face model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

enum { MAX_OVERRIDES = 64 };

static void quantize_usage(FILE *f) {
    fprintf(f,
            "usage: mllm quantize IN OUT --type TYPE [--threads N] [--tensor-type REGEX=TYPE]... [--pure]\n"
            "                     [--allow-requantize]\n"
            "\n"
            "IN: a GGUF file or a Hugging Face folder (config.json + safetensors).\n"
            "OUT: a GGUF file. Metadata of a GGUF source is copied (general.file_type\n"
            "updated); a Hugging Face source gets the standard keys and its tokenizer.\n"
            "\n"
            "TYPE (mixes as llama-quantize builds them, without an importance matrix):\n"
            "  q4_k_m q4_k_s q5_k_m q5_k_s q6_k   k-quants; _m keeps some attn_v and\n"
            "                                      ffn_down layers at q6_k\n"
            "  q8_0 q4_0 q4_1 q5_0 q5_1           output (or tied token_embd) at q6_k\n"
            "                                      (q8_0 if its rows do not fit 256)\n"
            "  mxfp4                              every matrix mxfp4, output q8_0\n"
            "  w4a32 w4a32_g64                    4-bit weights, f32 activations (ours)\n"
            "  f16 bf16 f32\n"
            "--tensor-type REGEX=TYPE  force TYPE on quantizable tensors whose name\n"
            "                          matches (first match wins), e.g. ffn_down=f16\n"
            "--pure                    no mix: every quantizable tensor gets TYPE's base\n"
            "--allow-requantize        accept an IN whose matrices are already quantized\n"
            "                          (refused by default: the errors compound)\n"
            "--threads N               quantize rows on N threads (default 2)\n");
}

static void progress(void *user, const char *line) {
    (void)user;
    fprintf(stderr, "%s\n", line);
}

int cmd_quantize(int argc, char **argv) {
    const char *pos[2] = {NULL, NULL}, *overrides[MAX_OVERRIDES];
    int n_pos = 0;
    mllm_quantize_params p;
    mllm_quantize_default_params(&p);
    p.type = NULL;
    p.n_threads = 2;
    p.tensor_types = overrides;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { quantize_usage(stdout); return 0; }
        else if (!strcmp(a, "--type")) { if (!(p.type = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) {
            const char *s = cli_value(argc, argv, &i);
            if (!s || !cli_int(a, s, 1, 256, &v)) return 2;
            p.n_threads = (int)v;
        } else if (!strcmp(a, "--tensor-type")) {
            const char *s = cli_value(argc, argv, &i);
            if (!s) return 2;
            if (p.n_tensor_types == MAX_OVERRIDES) { fprintf(stderr, "mllm quantize: too many --tensor-type\n"); return 2; }
            overrides[p.n_tensor_types++] = s;
        } else if (!strcmp(a, "--pure")) { p.pure = 1; }
        else if (!strcmp(a, "--allow-requantize")) { p.allow_requantize = 1; }
        else if (a[0] == '-' && a[1]) { fprintf(stderr, "mllm quantize: unknown option '%s'\n", a); return 2; }
        else if (n_pos < 2) { pos[n_pos++] = a; }
        else { fprintf(stderr, "mllm quantize: unexpected argument '%s'\n", a); return 2; }
    }
    if (n_pos != 2 || !p.type) {
        quantize_usage(stderr);
        return 2;
    }
    p.progress = progress;
    const double t0 = mllm_time_ms();
    mllm_quantize_stats s = {.struct_size = sizeof s};
    const mllm_status st = mllm_quantize_file(pos[0], pos[1], &p, &s);
    if (st != MLLM_OK) return cli_fail("quantize failed", st);
    const double secs = (mllm_time_ms() - t0) / 1e3;
    fprintf(stderr, "model size  = %10.2f MiB\nquant size  = %10.2f MiB (%zu of %zu tensors converted, %.2f s)\nwrote %s\n",
            (double)s.bytes_in / 1048576.0, (double)s.bytes_out / 1048576.0, s.n_quantized, s.n_tensors, secs, pos[1]);
    return 0;
}
