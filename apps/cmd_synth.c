/* mllm synth: write a random-weight model of a real family's shape. */
#include <stdio.h>
#include <string.h>
#include "cli.h"

static void synth_usage(FILE *f) {
    fprintf(f,
            "usage: mllm synth --arch qwen3|qwen2|llama|smollm3|gemma3 --preset PRESET\n"
            "                  --dtype f32|f16|bf16|q8_0|q4_0|q4_1 --format gguf|hf -o PATH\n"
            "\n"
            "Writes a model with random weights (fixed seed: the same command writes\n"
            "the same bytes) and a working byte-level BPE tokenizer, so tests and\n"
            "benchmarks need no download. gguf: one file with standard keys and tensor\n"
            "names; hf: a folder with config.json, model.safetensors, tokenizer.json.\n"
            "Defaults: --arch qwen3 --preset tiny --dtype f32 --format gguf.\n"
            "\n"
            "--preset: tiny (what tests use; qwen3 also tiny256, rows of 256 values for\n"
            "  k-quant tests) or a real model's shape: qwen3, qwen2 and\n"
            "  llama 0.6b|1b; smollm3 3b (SmolLM3-3B); gemma3 270m|1b (Gemma-3-270M, -1B).\n"
            "\n"
            "--dtype: the type of the weight matrices; norm weights are always f32.\n"
            "  q8_0|q4_0|q4_1 (gguf only) hold the f32 model's values quantized row by\n"
            "  row; in q4_0/q4_1 files token_embd stays q8_0, as in llama.cpp's mixes.\n"
            "  hf supports f32|f16|bf16.\n");
}

static void progress(void *user, const char *msg) {
    (void)user;
    fprintf(stderr, "%s\n", msg);
}

int cmd_synth(int argc, char **argv) {
    const char *arch = "qwen3", *preset = "tiny", *dtype = "f32", *format = "gguf", *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { synth_usage(stdout); return 0; }
        else if (!strcmp(a, "--arch")) { if (!(arch = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--preset")) { if (!(preset = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--dtype")) { if (!(dtype = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--format")) { if (!(format = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) { if (!(out = cli_value(argc, argv, &i))) return 2; }
        else { fprintf(stderr, "mllm synth: unknown option '%s'\n", a); return 2; }
    }
    if (!out) { fprintf(stderr, "mllm synth: -o PATH is required\n"); return 2; }
    mllm_status st = mllm_synth_write(arch, preset, dtype, format, out, progress, NULL);
    if (st != MLLM_OK) return cli_fail("synth failed", st);
    fprintf(stderr, "wrote %s\n", out);
    return 0;
}
