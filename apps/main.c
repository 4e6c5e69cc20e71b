#include <stdio.h>
#include <string.h>
#include "cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "mllm %s: fast LLM inference in C\n"
            "\n"
            "usage: mllm <command> [options]\n"
            "\n"
            "commands:\n"
            "  run         generate text from a prompt\n"
            "  chat        interactive chat with the model's own chat template\n"
#ifdef MLLM_NO_SERVER
            "  serve       (not in this build: it has no HTTP server)\n"
#else
            "  serve       OpenAI-compatible HTTP server\n"
#endif
            "  template    render a chat template with a JSON context\n"
            "  grammar     check a GBNF grammar or JSON Schema, print its GBNF or random texts\n"
            "  embed       print the embedding vector of texts (BERT encoders, decoders)\n"
            "  tokenize    print the token ids (and pieces) of a text\n"
            "  info        print a model's config, tensor table and traced decode graph\n"
            "  bench       time prompt processing and generation (llama-bench style)\n"
            "  perplexity  chunked perplexity of a text file\n"
            "  quantize    write a GGUF with quantized weights (q4_k_m, q8_0, ...)\n"
            "  convert     HF folder / GGUF -> .mllm (or GGUF), with quantization rules\n"
            "  synth       write a random-weight model of a real family's shape\n"
#ifdef MLLM_NO_AUDIO
            "  transcribe  speech to text with Whisper (not in this build: it reads no audio files)\n"
#else
            "  transcribe  speech to text with Whisper (CTranslate2 folders)\n"
#endif
            "\n"
            "Each command has --help. Models: GGUF files (v2/v3), Hugging Face folders\n"
            "(config.json + *.safetensors + tokenizer.json), .mllm files, and llama2.c\n"
            "checkpoints (with --tokenizer).\n",
            mllm_version());
}

int main(int argc, char **argv) {
    if (argc < 2) { usage(stderr); return 2; }
    const char *c = argv[1];
    if (!strcmp(c, "-h") || !strcmp(c, "--help") || !strcmp(c, "help")) { usage(stdout); return 0; }
    if (!strcmp(c, "--version")) { printf("mllm %s\n", mllm_version()); return 0; }
    if (!strcmp(c, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(c, "chat")) return cmd_chat(argc - 1, argv + 1);
    if (!strcmp(c, "info")) return cmd_info(argc - 1, argv + 1);
    if (!strcmp(c, "embed")) return cmd_embed(argc - 1, argv + 1);
    if (!strcmp(c, "tokenize")) return cmd_tokenize(argc - 1, argv + 1);
    if (!strcmp(c, "synth")) return cmd_synth(argc - 1, argv + 1);
    if (!strcmp(c, "template")) return cmd_template(argc - 1, argv + 1);
    if (!strcmp(c, "bench")) return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(c, "quantize")) return cmd_quantize(argc - 1, argv + 1);
    if (!strcmp(c, "perplexity")) return cmd_perplexity(argc - 1, argv + 1);
    if (!strcmp(c, "convert")) return cmd_convert(argc - 1, argv + 1);
    if (!strcmp(c, "serve")) return cmd_serve(argc - 1, argv + 1);
    if (!strcmp(c, "grammar")) return cmd_grammar(argc - 1, argv + 1);
    if (!strcmp(c, "transcribe")) return cmd_transcribe(argc - 1, argv + 1);
    fprintf(stderr, "mllm: unknown command '%s' (try mllm --help)\n", c);
    return 2;
}
