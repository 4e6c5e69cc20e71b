/* mllm convert: HF folder / GGUF / .mllm -> .mllm v3 or GGUF, with a
   quantization pipeline. */
#include <stdio.h>
#include <string.h>
#include "cli.h"

static void convert_usage(FILE *f) {
    fprintf(f,
            "usage: mllm convert --in MODEL --out FILE [--pipeline RULES.json | --quant DTYPE]\n"
            "                    [--to mllm|gguf] [--pack x8|none] [--config config.json] [--quiet]\n"
            "\n"
            "Converts a model (HF folder, GGUF, .mllm v1/v2/v3) to a .mllm v3 file (default)\n"

            "or to GGUF (--to gguf). Matrices keep their dtype unless --quant (one dtype:\n"
            "q4_0 q4_1 q8_0 f16 bf16 f32, or any dtype with a quantizer) or --pipeline\n"
            "(JSON rules \"tensor-name regex -> dtype\", first match wins; see pipelines/\n"
            "and docs/format.md) says otherwise. 1-D tensors (norms, biases) are f32.\n"
            "--config: the config.json of an MLLM v1/v2 file (default: beside the file).\n"
            "\n"
            "A Whisper folder (CTranslate2 or HF) converts to .mllm only: --quant f16\n"
            "(default), f32, q8_0 or q4_0, stored as mllm transcribe --weights T loads it\n"
            "(q8_0/q4_0 in the x8 layouts below), so the file loads in place (docs/audio.md).\n"
            "\n"
            "--pack x8 (default for .mllm): the matrices the CPU matmul kernels run\n"
            "(blk.N.attn_q/attn_k/attn_v/attn_output/ffn_gate/ffn_up/ffn_down.weight and\n"
            "output.weight, or token_embd.weight when tied), when q4_0/q4_1/q8_0 (q4_K/q5_K/q6_K)\n"
            "with a multiple of 8 rows and of 32 (256) columns, are stored in the\n"
            "kernels' 8-row interleaved layouts, so loading maps them as they are (no\n"
            "repack, no copy). Per block of 32 columns x 8 rows (r = 0..7):\n"
            "  q4_0x8 (dtype 202), 144 bytes: the 8 rows' f16 scales d[0..7], then 128\n"
            "    bytes; byte 32t+4r+j (t, j in 0..3) holds row r's 4-bit value 8t+j\n"
            "    (low nibble) and 8t+4+j (high nibble); value = d[r] * (nibble - 8).\n"
            "  q8_0x8 (dtype 203), 272 bytes: d[0..7], then 256 bytes; byte 32g+4r+j\n"
            "    (g in 0..7, j in 0..3) is row r's int8 value 4g+j; value = d[r] * q.\n"
            "  q4_1x8 (207), q5_0x8 (209), q4_Kx8 (205), q5_Kx8 (208), q6_Kx8 (206) interleave\n"
            "    8 blocks the same\n"
            "    way (docs/format.md, \"Kernel layouts\").\n"
            "  Same bytes per row as the plain type; rows 8g..8g+7 start where row 8g would.\n"
            "--pack none: plain GGUF block layouts (the loader then repacks a copy).\n"
            "GGUF output is never packed; a packed .mllm input is unpacked wherever the\n"
            "output is not packed (--to gguf, --pack none, another dtype).\n"
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
        else if (!strcmp(a, "--pack")) {
            const char *v = cli_value(argc, argv, &i);
            if (!v) return 2;
            if (!strcmp(v, "x8")) p.pack = MLLM_CONVERT_PACK_X8;
            else if (!strcmp(v, "none")) p.pack = MLLM_CONVERT_PACK_NONE;
            else { fprintf(stderr, "mllm convert: --pack must be x8 or none\n"); return 2; }
        }
        else if (!strcmp(a, "--to")) {
            const char *v = cli_value(argc, argv, &i);
            if (!v) return 2;
            if (!strcmp(v, "gguf")) p.to_gguf = 1;
            else if (strcmp(v, "mllm") != 0) { fprintf(stderr, "mllm convert: --to must be mllm or gguf\n"); return 2; }
        } else { fprintf(stderr, "mllm convert: unknown option '%s'\n", a); convert_usage(stderr); return 2; }
    }
    if (!p.in || !p.out) { convert_usage(stderr); return 2; }
    mllm_status st = mllm_convert(&p);
    if (st != MLLM_OK) return cli_fail("convert failed", st);
    fprintf(stderr, "wrote %s\n", p.out);
    return 0;
}
