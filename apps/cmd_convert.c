/* mllm convert: HF folder / GGUF / .mllm -> .mllm v3 or GGUF, with a
   quantization pipeline. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "convert/convert.h"

static void convert_usage(FILE *f) {
    fprintf(f,
            "usage: mllm convert --in MODEL --out FILE [--pipeline RULES.json | --quant DTYPE]\n"
            "                    [--to mllm|gguf] [--config config.json] [--quiet]\n"
            "\n"
            "Converts a model (HF folder, GGUF, .mllm v1/v2/v3) to a .mllm v3 file (default)\n"
            "or to GGUF (--to gguf). Matrices keep their dtype unless --quant (one dtype:\n"
            "q4_0 q4_1 q8_0 f16 bf16 f32, or any dtype with a quantizer) or --pipeline\n"
            "(JSON rules \"tensor-name regex -> dtype\", first match wins; see pipelines/\n"
            "and docs/format.md) says otherwise. 1-D tensors (norms, biases) are f32.\n"
            "--config: the config.json of an MLLM v1/v2 file (default: beside the file).\n"
            "Prints one line per tensor on stderr.\n");
}

static void on_progress(void *user, const char *line) {
    (void)user;
    fprintf(stderr, "%s\n", line);
}

int cmd_convert(int argc, char **argv) {
    mllm_convert_params p;
    mllm_convert_default_params(&p);
    p.progress = on_progress;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { convert_usage(stdout); return 0; }
        else if (!strcmp(a, "--in") || !strcmp(a, "-i")) { if (!(p.in = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--out") || !strcmp(a, "-o")) { if (!(p.out = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--pipeline")) { if (!(p.pipeline_path = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--quant")) { if (!(p.quant = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--config")) { if (!(p.config_path = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--quiet")) p.progress = NULL;
        else if (!strcmp(a, "--to")) {
            const char *v = cli_value(argc, argv, &i);
            if (!v) return 2;
            if (!strcmp(v, "gguf")) p.to_gguf = true;
            else if (strcmp(v, "mllm") != 0) { fprintf(stderr, "mllm convert: --to must be mllm or gguf\n"); return 2; }
        } else { fprintf(stderr, "mllm convert: unknown option '%s'\n", a); convert_usage(stderr); return 2; }
    }
    if (!p.in || !p.out) { convert_usage(stderr); return 2; }
    mllm_status st = mllm_convert(&p);
    if (st != MLLM_OK) return cli_fail("convert failed", st);
    fprintf(stderr, "wrote %s\n", p.out);
    return 0;
}
